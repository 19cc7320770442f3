"""The rules the project writes down, each as a check: the reading budgets
on the built pages, every repository path a file names, one source for
each pinned version, this folder's README true to the tree, and eslint
seeing every browser script."""

import re
import sys

import nbformat
import pytest

from chapter import BOOK, ROOT

sys.path.insert(0, str(ROOT / "tests" / "tools"))
import code_counts  # noqa: E402
import pins  # noqa: E402
import reading_counts  # noqa: E402

# The reading budgets, in words of prose (outside dropdowns and code) on
# the built pages, as tests/tools/reading_counts.py counts them.
CHAPTER_WORDS = 6500  # every page of "The chapter" together
SECTION_4_WORDS = 1300  # book/real_heads
DEEPER_PAGE_WORDS = 2000  # each page of "Going deeper"
# What a maintainer meets behind the pages (tests/tools/code_counts.py).
HIDDEN_CODE_LINES = 900  # collapsed or removed code, all notebooks
WORDS_IN_STRINGS = 200  # prose in Python strings, notebooks and mhabook


def part(caption):
    return [p for c, p in reading_counts.toc_parts() if c == caption]


@pytest.fixture(scope="module")
def reading(built_book):
    """{page: counts} of the session's build."""
    return reading_counts.book_counts(built_book / "html")


def prose_of(reading, pages):
    missing = [page for page in pages if page not in reading]
    assert missing == [], f"not in the build: {missing}"
    return {page: reading[page]["prose"] for page in pages}


def test_the_chapter_is_read_within_its_word_budget(reading):
    prose = prose_of(reading, part("The chapter"))
    assert sum(prose.values()) <= CHAPTER_WORDS, (
        f"The chapter has {sum(prose.values())} words of prose, over its "
        f"{CHAPTER_WORDS} ({prose}): move evidence into a dropdown or a "
        "Going deeper page (tests/tools/reading_counts.py _build/html "
        "--list counts them)"
    )


def test_section_4_is_read_within_its_word_budget(reading):
    (prose,) = prose_of(reading, ["book/real_heads"]).values()
    assert prose <= SECTION_4_WORDS, (
        f"book/real_heads has {prose} words of prose, over its "
        f"{SECTION_4_WORDS}"
    )


@pytest.mark.parametrize("page", part("Going deeper"))
def test_each_going_deeper_page_is_read_within_its_word_budget(reading, page):
    (prose,) = prose_of(reading, [page]).values()
    assert prose <= DEEPER_PAGE_WORDS, (
        f"{page} has {prose} words of prose, over its {DEEPER_PAGE_WORDS}"
    )


def test_hidden_code_and_prose_in_strings_stay_within_budget():
    hidden, strings = code_counts.counts()
    assert sum(hidden.values()) <= HIDDEN_CODE_LINES, (
        f"{sum(hidden.values())} lines of hidden code, over "
        f"{HIDDEN_CODE_LINES} ({hidden}): move bookkeeping into the page's "
        "results function in mhabook"
    )
    words = sum(n for _, n, _ in strings)
    assert words <= WORDS_IN_STRINGS, (
        f"{words} words of prose in Python strings, over {WORDS_IN_STRINGS}: "
        "put sentences in Markdown (tests/tools/code_counts.py --list)"
    )


def test_code_counts_count_what_a_maintainer_meets():
    source = (
        'def f():\n    """A docstring of many more than eight words is not '
        'counted."""\n    raise ValueError("an error message of more than '
        'eight words is not counted either")\n'
        'x = "a sentence of well over eight words counts as prose here"\n'
        'y = f"{x} and an f-string of eight words or more counts"\n'
    )
    found = code_counts.prose_strings(source)
    assert [n for n, _ in found] == [11, 9]


def test_the_stated_reading_time_is_the_counted_one(reading):
    """The index and the README say how long the chapter takes to read:
    its prose at 200 words a minute and its code in view at 2.5 s a line
    (reading_counts.py), to the nearest five minutes."""
    minutes = sum(
        reading[page]["minutes"]
        for page in prose_of(reading, part("The chapter"))
    )
    folded = sum(
        reading[page]["fold"] / 200
        for page in prose_of(reading, part("The chapter"))
    )
    text = (BOOK / "index.md").read_text()
    (more,) = map(int, re.findall(r"add about (\d+) minutes more", text))
    assert abs(more - folded) <= 5, (
        f"index.md says its folded sections add about {more} minutes; they "
        f"count {folded:.0f} (tests/tools/reading_counts.py): say about "
        f"{5 * round(folded / 5)}"
    )
    for path in (BOOK / "index.md", ROOT / "README.md"):
        # "about 55 minutes," or "(about 55 minutes)", not "add about 15"
        stated = re.findall(r"about (\d+) minutes[,)]", path.read_text())
        assert stated, f"{path.name} does not say 'about N minutes' of reading"
        for n in map(int, stated):
            assert abs(n - minutes) <= 5, (
                f"{path.name} says about {n} minutes; the chapter counts "
                f"{minutes:.0f} (tests/tools/reading_counts.py): say about "
                f"{5 * round(minutes / 5)}"
            )


def test_the_budgets_name_pages_of_the_book():
    assert "book/real_heads" in part("The chapter")
    assert part("Going deeper") != []


KATEX = (
    '<span class="katex"><span class="katex-mathml"><math><semantics>'
    "<mi>Q</mi><mi>K</mi>"
    '<annotation encoding="application/x-tex">{tex}</annotation>'
    '</semantics></math></span><span class="katex-html">Q K ⊤</span>'
    "</span>"
)
INLINE, DISPLAY = KATEX.format(tex="QK^\\top"), KATEX.format(tex="x")
PAGE = f"""<html><body><article>
<p>Scores come from one product {INLINE} here.</p>
<div class="math"><span class="katex-display">{DISPLAY}
</span></div>
<ul><li>One two three four.</li></ul>
<details class="sd-dropdown"><p>Four words, folded here.</p></details>
<div class="cell docutils container"><div class="cell_input">
<pre>a = 1

b = 2</pre></div><div class="cell_output"><p>not prose</p></div></div>
<div class="cell tag_hide-input docutils container">
<div class="cell_input"><pre>hidden = 3</pre></div></div>
<p>{" ".join(["word"] * 41)}.</p>
</article></body></html>"""


def test_reading_counts_count_a_formula_as_one_word_and_skip_folds():
    counts = reading_counts.page_counts(PAGE)
    assert counts["prose"] == 7 + 4 + 41  # a formula is one word
    assert counts["fold"] == 4
    assert counts["code"] == 2  # the cell in view, blank lines not
    assert [len(reading_counts.words(s)) for s in counts["long"]] == [41]


# Paths into the repository, as files write them (`book/...`, `.ci/run`;
# `mhabook/...` is under book/), and the prefixes of paths that are not
# in it: what the build writes (`_build/`, the site's `_static/`) and
# what npm installs.
PATH = re.compile(
    r"(?<![\w./@:<>$-])((?:\.\./)?(?:book|tests|docs|binder|mhabook|\.ci"
    r"|\.github|_build|_static)/[\w./*{}<>-]*[\w*])"
)
NOT_IN_THE_REPOSITORY = (
    "_build/",
    "_static/",
    "../_static/",
    "book/_vendor/node_modules",
    "tests/js/node_modules",
)
TEXT = (".md", ".py", ".ipynb", ".js", ".mjs", ".css", ".html", ".yml")
TEXT += (".yaml", ".toml", ".cfg", ".txt", ".cff", ".json")
TEXT_NAMES = ("Makefile", "postBuild", "run", ".gitignore")


def text_files():
    for path in pins.repository_files():
        if path.name == "package-lock.json" or not path.is_file():
            continue
        if path.suffix in TEXT or path.name in TEXT_NAMES:
            yield path


def names_a_file(path):
    """Whether a path a file names is there: itself, what a glob in it
    matches, or, for a page (`book/labs.html`, `book/labs`), its source."""
    if path.startswith("mhabook/"):
        path = "book/" + path
    if "*" in path:
        return any(ROOT.glob(path))
    target = ROOT / path
    if target.exists():
        return True
    stem = target.with_suffix("") if target.suffix == ".html" else target
    return any(stem.with_suffix(s).exists() for s in (".ipynb", ".md"))


def test_every_repository_path_a_file_names_exists():
    """Files move; what names them must move with them."""
    missing = []
    for source in text_files():
        text = source.read_text(errors="replace").replace("\\.", ".")
        for number, line in enumerate(text.splitlines(), 1):
            for path in PATH.findall(line):
                if (
                    "{" in path  # an f-string's
                    or "<" in path  # a placeholder: book/<name>.ipynb
                    or path.startswith(NOT_IN_THE_REPOSITORY)
                    or names_a_file(path)
                ):
                    continue
                where = source.relative_to(ROOT)
                missing.append(f"{where}:{number}: {path}")
    assert missing == [], "paths that are not there:\n" + "\n".join(missing)


def test_every_pin_equals_its_one_source():
    """The checkpoint's version is the Makefile's CHECKPOINT; every other
    package's is requirements.txt's."""
    found = [
        f"{path.relative_to(ROOT)}:{number}: {written}, not =={want}"
        for path, number, written, want in pins.stale()
    ]
    assert found == [], (
        "pins that differ from their source (`.venv/bin/python "
        "tests/tools/pins.py --write` writes the source's):\n"
        + "\n".join(found)
    )


def test_the_colab_cells_pin_what_they_install():
    sources = pins.sources()
    checkpoint = re.search(
        r"^CHECKPOINT := (\S+)", (ROOT / "Makefile").read_text(), re.M
    ).group(1)
    for notebook in sorted(BOOK.glob("*.ipynb")):
        cells = nbformat.read(notebook, as_version=4).cells
        colab = [c for c in cells if "colab" in c.metadata.get("tags", [])]
        installs = [
            line.split("install", 1)[1].split()
            for cell in colab
            for line in cell.source.splitlines()
            if "pip install" in line
        ]
        packages = [w for words in installs for w in words if w[0] != "-"]
        for package in packages:
            name, _, version = package.partition("==")
            assert version and pins.normal(name) in sources, (
                f"{notebook.name}'s Colab cell installs {package}: pin it "
                "to the version of requirements.txt (or the Makefile's "
                "CHECKPOINT)"
            )
        assert checkpoint in packages, f"{notebook.name}: no {checkpoint}"


TESTS = ROOT / "tests"
README = TESTS / "README.md"
NAMED = re.compile(r"`([\w./<>-]+\.(?:py|json|md|js|mjs)|[\w-]+/)`")


def test_the_tests_readme_names_every_test_and_tool():
    """Every Python file of tests/ is named in tests/README.md, or sits
    in a folder it names (`netguard/`)."""
    readme = README.read_text()
    named = set(NAMED.findall(readme))
    unnamed = [
        str(path.relative_to(TESTS))
        for path in sorted(TESTS.rglob("*.py"))
        if "node_modules" not in path.parts
        and path.name not in named
        and not (
            path.parent.parent != TESTS and f"{path.parent.name}/" in named
        )
    ]
    assert unnamed == [], f"tests/README.md names none of {unnamed}"


def test_every_file_the_tests_readme_names_exists():
    missing = []
    for name in NAMED.findall(README.read_text()):
        if "<" in name:  # test_<module>.py
            continue
        here = [ROOT / name, TESTS / name, *TESTS.rglob(name.rstrip("/"))]
        if not any(p.exists() for p in here):
            missing.append(name)
    assert missing == []


ESLINT_CONFIG = TESTS / "js" / "eslint.config.mjs"


def test_eslint_sees_every_browser_script():
    """`make lint` runs eslint on book/; it lints the files its config's
    first `files` globs match: every script of the book outside npm's."""
    block = re.search(r"files: \[([^\]]*)\]", ESLINT_CONFIG.read_text())
    globs = re.findall(r'"([^"]+)"', block.group(1))
    scripts = {
        str(path.relative_to(ROOT))
        for path in pins.repository_files()
        if path.suffix == ".js"
        and path.is_relative_to(BOOK)
        and "_vendor" not in path.parts
    }
    linted = {str(p.relative_to(ROOT)) for g in globs for p in ROOT.glob(g)}
    assert scripts - linted == set(), f"add them to {ESLINT_CONFIG.name}"
