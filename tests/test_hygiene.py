"""The repository's rules for notebooks and the table of contents."""

import ast
import inspect

import nbformat
import pytest
import yaml

import mhabook
import mhabook.batched
import mhabook.gqa
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


def _package_definitions():
    found = {}
    for module in vars(mhabook).values():
        if inspect.ismodule(module) and module.__name__.startswith("mhabook."):
            for node in ast.parse(inspect.getsource(module)).body:
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    found[node.name] = node
    return found


def test_every_layer_in_the_package_is_taught_in_a_saved_cell():
    taught = {
        node.name for nb in toc_notebooks() for node in saved_definitions(nb)
    }
    for module in (mhabook.layers, mhabook.batched, mhabook.gqa):
        tree = ast.parse(inspect.getsource(module))
        defined = {
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.ClassDef)
        }
        assert defined <= taught, f"not taught: {defined - taught}"


@pytest.mark.parametrize("notebook", toc_notebooks(), ids=lambda p: p.name)
def test_saved_cells_match_the_package(notebook):
    """A `# @save` cell is taught in the notebook and imported from mhabook
    by later sections: the two copies must be the same code."""
    package = _package_definitions()
    for node in saved_definitions(notebook):
        assert node.name in package, f"{node.name} is not in mhabook"
        assert ast.dump(node) == ast.dump(package[node.name]), (
            f"{node.name} in {notebook.name} differs from mhabook's copy"
        )


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
