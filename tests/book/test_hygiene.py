"""The repository's rules for notebooks and the table of contents."""

import re
import subprocess
import sys

import nbformat
import pytest
import yaml

from chapter import BOOK, ROOT, saved_definitions, toc_files, toc_notebooks

ALL_NOTEBOOKS = sorted(
    p for p in BOOK.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
)


@pytest.mark.parametrize("notebook", ALL_NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(notebook):
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{notebook.name}: outputs committed"
            assert cell.execution_count is None, f"{notebook.name}: count"


def test_every_toc_entry_exists():
    for name in toc_files():
        candidates = [ROOT / f"{name}{ext}" for ext in (".md", ".ipynb")]
        assert any(p.exists() for p in candidates), f"{name} is missing"


def test_every_notebook_is_in_the_toc():
    assert sorted(toc_notebooks()) == ALL_NOTEBOOKS


def test_notebooks_install_nothing():
    for notebook in ALL_NOTEBOOKS:
        for cell in nbformat.read(notebook, as_version=4).cells:
            if cell.cell_type == "code" and "colab" not in cell.metadata.get(
                "tags", []
            ):
                assert "pip install" not in cell.source, notebook.name


def test_regenerating_the_layers_leaves_no_diff():
    """book/mhabook/layers/ is written from the `# @save` cells by `make
    lib`: one source for each taught layer, the notebook."""
    run = subprocess.run(
        [sys.executable, ROOT / "tests" / "tools" / "make_lib.py", "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_generated_module_says_so_and_nothing_else_is_there():
    folder = BOOK / "mhabook" / "layers"
    for path in folder.glob("*.py"):
        if path.name != "__init__.py":
            assert f"Generated from book/{path.stem}.ipynb by `make lib`" in (
                path.read_text()
            ), path.name
    names = {p.stem for p in folder.glob("*.py")} - {"__init__"}
    pages = {
        p.stem
        for p in toc_notebooks()
        if any(True for _ in saved_definitions(p))
    }
    assert names == pages


@pytest.mark.parametrize("notebook", toc_notebooks(), ids=lambda p: p.name)
def test_colab_cell_comes_first_and_clones_the_configured_repository(
    notebook,
):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    code = [
        c
        for c in nbformat.read(notebook, as_version=4).cells
        if c.cell_type == "code"
    ]
    first = code[0]
    assert "colab" in first.metadata.get("tags", [])
    assert 'if "google.colab" in sys.modules:' in first.source
    assert f'"{config["repository"]["url"]}"' in first.source


SMALL_TEXT = re.compile(r"fontsize\s*=\s*(\d+(?:\.\d+)?)|\b(x{1,2}-small)\b")


def test_no_figure_text_is_set_below_9_points():
    """9 pt is 12.5 px at the figures' 100 dpi: 9 px on a phone, where a
    figure drawn for the column shows at three quarters of its size."""
    sources = [*(BOOK / "mhabook").rglob("*.py"), *ALL_NOTEBOOKS]
    small = []
    for path in sources:
        text = path.read_text()
        for match in SMALL_TEXT.finditer(text):
            size = match.group(1)
            if match.group(2) or float(size) < 9:
                small.append(f"{path.name}: {match.group(0)}")
    assert small == []


def test_every_repository_path_a_page_names_exists():
    """A page that points at a file (`tests/unit/test_gqa.py`) names one
    that is there: files move, and the prose must move with them."""
    missing = []
    for page in [*ALL_NOTEBOOKS, *BOOK.glob("*.md")]:
        for path in re.findall(
            r"`((?:tests|book)/[\w/.-]+\.\w+)`", page.read_text()
        ):
            if not (ROOT / path).exists():
                missing.append(f"{page.name}: {path}")
    assert missing == []
