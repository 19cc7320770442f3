"""The students' edition (book/_ext/students_edition.py): built with
MHA_STUDENTS=1, a page keeps its exercises and checks but loses every
"Solution" and "Answer" and the hidden code cells before them, with a line
saying where they are; built without it, the page is unchanged. A small
book built in a temporary folder, as `make book-students` builds the real
one; tests/book/test_students.py checks that build where one exists."""

import sys

import nbformat
import pytest
from sphinx.application import Sphinx

from chapter import BOOK

sys.path.insert(0, str(BOOK / "_ext"))
import students_edition  # noqa: E402

QUESTIONS = """# Labs

## Check yourself

1. What is $d_k$?

```{admonition} Answer
:class: dropdown
SECRET-ANSWER-TEXT
```

```{admonition} How we know
:class: dropdown
KEPT-HOW-WE-KNOW
```

## Exercises

1. Build a head.
"""
SOLUTION = """```{admonition} Solution
:class: dropdown
SECRET-SOLUTION-TEXT
```

2. KEPT-SECOND-EXERCISE
"""
SECRETS = (
    "SECRET-ANSWER-TEXT",
    "SECRET-SOLUTION-TEXT",
    "SECRET_SOLUTION_CODE",
    "SECRET-SOLUTION-OUTPUT",
)
KEPT = ("KEPT-HOW-WE-KNOW", "KEPT-SECOND-EXERCISE", "KEPT_VISIBLE_CODE")


def notebook():
    nb = nbformat.v4.new_notebook()
    visible = nbformat.v4.new_code_cell("KEPT_VISIBLE_CODE = 1")
    hidden = nbformat.v4.new_code_cell(
        "SECRET_SOLUTION_CODE = 2", metadata={"tags": ["hide-cell"]}
    )
    hidden.outputs = [
        nbformat.v4.new_output("stream", text="SECRET-SOLUTION-OUTPUT\n")
    ]
    nb.cells = [
        nbformat.v4.new_markdown_cell(QUESTIONS),
        visible,
        hidden,
        nbformat.v4.new_markdown_cell(SOLUTION),
    ]
    nb.metadata["kernelspec"] = {"name": "python3"}
    return nb


def build(root, students, monkeypatch):
    monkeypatch.delenv("MHA_STUDENTS", raising=False)
    (root / "conf.py").write_text(
        "extensions = ['myst_nb', 'students_edition']\n"
        "nb_execution_mode = 'off'\n"
        "exclude_patterns = ['_build']\n"
        f"mha_students = {students}\n"
    )
    (root / "index.md").write_text("# Book\n\n```{toctree}\nlabs\n```\n")
    nbformat.write(notebook(), root / "labs.ipynb")
    out = root / "_build"
    Sphinx(
        root, root, out / "html", out / "doctrees", "html",
        status=None, warning=None, freshenv=True,
    ).build()  # fmt: skip
    return (out / "html" / "labs.html").read_text()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    with pytest.MonkeyPatch.context() as monkeypatch:
        return {
            students: build(
                tmp_path_factory.mktemp(f"s{students}"), students, monkeypatch
            )
            for students in (False, True)
        }


def test_teachers_edition_keeps_everything(pages):
    for text in SECRETS + KEPT:
        assert text in pages[False], f"{text} missing from the teacher's"


def test_no_solution_reaches_the_students(pages):
    leaked = [text for text in SECRETS if text in pages[True]]
    assert not leaked, f"the students' edition shows {leaked}"
    for text in KEPT:
        assert text in pages[True], f"{text} should stay for students"


def test_students_are_told_where_solutions_are(pages):
    page = pages[True]
    for note in students_edition.NOTES.values():
        assert note in page, f"the students' page should say: {note}"
    assert page.count(students_edition.NOTE_CLASS) == 2


@pytest.mark.parametrize(
    ("value", "wanted"),
    [("1", True), ("yes", True), ("", False), ("0", False), ("false", False)],
)
def test_environment_variable(monkeypatch, value, wanted):
    monkeypatch.setenv("MHA_STUDENTS", value)
    config = type("Config", (), {"mha_students": False})()
    assert students_edition.students_wanted(config) is wanted
