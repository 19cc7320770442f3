"""Short answers that check themselves (book/_ext/check_answer.py and
book/_static/check-answer.js): the directive's HTML escapes every value
and reads the answer the notebook glued; the script's checking logic runs
in Node.js on its own; every check in the book reads a glued value."""

import json
import shutil
import subprocess
import sys

import nbformat
import pytest
from sphinx.application import Sphinx

from chapter import BOOK, ROOT

sys.path.insert(0, str(BOOK / "_ext"))
import check_answer  # noqa: E402

SCRIPT = ROOT / "book" / "_static" / "check-answer.js"
GLUE = "application/papermill.record/"


def glue_output(name, text):
    """A cell output as myst-nb's glue(name, value, display=False)."""
    return nbformat.v4.new_output(
        "display_data",
        data={GLUE + "text/plain": text},
        metadata={"scrapbook": {"name": name, "mime_prefix": GLUE}},
    )


PAGE = """# Checks

1. What is $d_k$?

```{check-answer}
:glue: dk
:label: d_k <for> "you"
:hint: Divide & conquer <b>bold</b>
```

2. Which?

```{check-answer}
:answer: (1, 5, 768)
:label: The shape
:hint: Three numbers.
```
"""
BAD = """# Bad

```{check-answer}
:label: no answer
:hint: none
```

```{check-answer}
:answer: 3
:label: no hint
```

```{check-answer}
:glue: never_glued
:label: x
:hint: y
```
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    src = tmp_path_factory.mktemp("check")
    (src / "conf.py").write_text(
        # page_scripts: as in the book, whose hooks rewrite the scripts.
        "extensions = ['myst_nb', 'page_scripts', 'check_answer']\n"
        "nb_execution_mode = 'off'\n"
        "exclude_patterns = ['_build']\n"
    )
    (src / "index.md").write_text("# Book\n\n```{toctree}\nchecks\nbad\n```\n")
    notebook = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("glue('dk', 64, display=False)")
    code.outputs = [glue_output("dk", "64")]
    notebook.cells = [nbformat.v4.new_markdown_cell(PAGE), code]
    notebook.metadata["kernelspec"] = {"name": "python3"}
    nbformat.write(notebook, src / "checks.ipynb")
    bad = nbformat.v4.new_notebook()
    bad.cells = [nbformat.v4.new_markdown_cell(BAD)]
    bad.metadata["kernelspec"] = {"name": "python3"}
    nbformat.write(bad, src / "bad.ipynb")
    out = src / "_build"
    warnings = (src / "warnings.txt").open("w")
    app = Sphinx(
        src, src, out / "html", out / "doctrees", "html",
        status=None, warning=warnings, freshenv=True,
    )  # fmt: skip
    app.build()
    warnings.close()
    return {
        "page": (out / "html" / "checks.html").read_text(),
        "bad": (out / "html" / "bad.html").read_text(),
        "warnings": (src / "warnings.txt").read_text(),
    }


def test_html_escapes_every_value():
    text = check_answer.answer_html('<1">', "a <b>", "x & 'y'", 'id"1')
    assert "<b>" not in text and "&lt;b&gt;" in text, text
    assert 'data-answer="&lt;1&quot;&gt;"' in text, text
    assert 'data-hint="x &amp; &#x27;y&#x27;"' in text, text
    assert 'id="id&quot;1"' in text and 'for="id&quot;1"' in text, text


def test_form_is_labelled_and_announces(built):
    page = built["page"]
    assert page.count('class="mha-check"') == 2, page
    label = '<label for="mha-check-0">d_k &lt;for&gt; &quot;you&quot;</label>'
    assert label in page, page
    assert 'role="status" aria-live="polite"' in page
    assert 'aria-describedby="mha-check-0-status"' in page
    assert 'id="mha-check-1"' in page, "each input needs its own id"
    assert "Divide &amp; conquer &lt;b&gt;bold&lt;/b&gt;" in page
    assert "<b>bold</b>" not in page


def test_answer_comes_from_the_glued_value(built):
    assert 'data-answer="64"' in built["page"]
    assert 'data-answer="(1, 5, 768)"' in built["page"]


def test_script_only_on_pages_with_a_check(built):
    assert "_static/check-answer.js" in built["page"]
    assert "check-answer.js" not in built["bad"]
    assert "_static/check-answer.css" in built["page"]
    assert "check-answer.css" not in built["bad"]


def test_bad_options_are_reported(built):
    warnings = built["warnings"]
    assert "exactly one of :answer: (the answer written out)" in warnings
    assert "check-answer needs a :hint:" in warnings
    assert "No key 'never_glued' found" in warnings
    assert 'class="mha-check"' not in built["bad"]


CASES = [
    # (typed, expected, right?)
    ("64", "64", True),
    (" 64 ", "64", True),
    ("64.0", "64", True),
    ("d_k = 64", "64", True),
    ("4x", "4", True),
    ("4 times", "4", True),
    ("4×", "4", True),
    ("65", "64", False),
    ("6", "64", False),
    ("sixty-four", "64", False),
    ("", "64", False),
    ("(1, 5, 768)", "(1, 5, 768)", True),
    ("[1,5,768]", "(1, 5, 768)", True),
    ("torch.Size([1, 5, 768])", "(1, 5, 768)", True),
    ("(1, 768, 5)", "(1, 5, 768)", False),
    ("B", "b", True),
    ("c", "b", False),
]


def run_node(program):
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js is missing: apt-get install -y nodejs")
    done = subprocess.run(
        [node, "-e", program], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_script_checks_answers():
    program = f"""
const vm = require("vm");
const context = {{}};
vm.runInNewContext(require("fs").readFileSync({json.dumps(str(SCRIPT))},
  "utf8"), context);
const cases = {json.dumps(CASES)};
console.log(JSON.stringify(cases.map(([typed, expected]) =>
  context.mhaAnswerMatches(typed, expected))));
"""
    got = run_node(program)
    wrong = [c for c, g in zip(CASES, got, strict=True) if g != c[2]]
    assert not wrong, f"the script judged these wrongly: {wrong}"


def test_script_messages():
    program = f"""
const vm = require("vm");
const context = {{}};
vm.runInNewContext(require("fs").readFileSync({json.dumps(str(SCRIPT))},
  "utf8"), context);
console.log(JSON.stringify([
  context.mhaCheckAnswer("64", "64", "Divide."),
  context.mhaCheckAnswer("8", "64", "Divide."),
  context.mhaCheckAnswer("  ", "64", "Divide."),
]));
"""
    right, wrong, empty = run_node(program)
    assert right == {"right": True, "message": "Right: 64."}
    assert wrong == {"right": False, "message": "Not yet. Hint: Divide."}
    assert empty["right"] is False and "Type an answer" in empty["message"]


def test_every_check_in_the_book_reads_a_glued_value():
    """A check's answer must come from executed code: a `:glue:` name the
    same notebook glues (never a number typed into the prose)."""
    found = 0
    for path in sorted(BOOK.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        code = "\n".join(
            c.source for c in notebook.cells if c.cell_type == "code"
        )
        for cell in notebook.cells:
            if cell.cell_type != "markdown":
                continue
            for block in cell.source.split("```{check-answer}")[1:]:
                options = block.split("```")[0]
                assert ":answer:" not in options, (
                    f"{path.name}: a check states its answer; glue it in a"
                    " code cell and give :glue: NAME"
                )
                name = options.split(":glue:")[1].split()[0]
                assert f'glue("{name}"' in code, (
                    f"{path.name}: the check reads {name!r}, which no code"
                    " cell glues"
                )
                found += 1
    assert found, "the labs' Check yourself should have answer checks"
