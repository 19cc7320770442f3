"""Every notebook in the table of contents runs, and runs the same twice.

The notebooks' own asserts are part of the test: a claim in the text that
stops holding fails here.
"""

import pytest
from jupyter_cache import get_cache

from chapter import toc_notebooks

NOTEBOOKS = toc_notebooks()
ids = [p.stem for p in NOTEBOOKS]


def text_outputs(nb):
    """The printed and displayed text of every code cell, in order.

    Printed text is joined per cell: a kernel may split it into chunks
    differently from run to run. Cells tagged `timing` measure this
    machine's speed and are left out.
    """
    texts = []
    for cell in nb.cells:
        if cell.cell_type != "code" or "timing" in cell.metadata.get(
            "tags", []
        ):
            continue
        printed = "".join(
            output.text
            for output in cell.outputs
            if output.output_type == "stream" and output.name == "stdout"
        )
        shown = [
            output.data["text/plain"]
            for output in cell.outputs
            if "text/plain" in output.get("data", {})
        ]
        texts.append((printed, shown))
    return texts


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_notebook_runs_top_to_bottom(notebook, executed):
    nb = executed(notebook)
    assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_two_runs_give_the_same_numbers(notebook, executed, built_book):
    """The test's run and the book build's run are separate kernels."""
    cache = get_cache(built_book / ".jupyter_cache")
    _, from_build = cache.merge_match_into_file(str(notebook))
    first, second = text_outputs(executed(notebook)), text_outputs(from_build)
    assert first and first == second
