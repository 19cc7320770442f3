"""Every notebook in the table of contents runs top to bottom, once.

The session's book build (`BookBuild` in conftest.py) executes the
notebooks; their asserts run there, so a claim in the text that stops
holding fails the build. These tests read the executed notebooks back from
that build's jupyter-cache, each as soon as it holds that one. Only
`one_head` runs once more, to check that its seeded numbers reproduce.
"""

import os
import re

import nbclient
import pytest
from jupyter_cache import get_cache

from chapter import (
    check_verdicts,
    glued_texts,
    socket_kernels,
    toc_notebooks,
)

NOTEBOOKS = toc_notebooks()
ids = [p.stem for p in NOTEBOOKS]
# Re-executed once more in a fresh kernel to check that seeded numbers
# reproduce: the cheapest notebook that draws random weights.
REPRODUCED = "all_heads"
GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)")
GLUE_DIRECTIVE = re.compile(r"^[`:]{3,}\{glue(?::\w+)?\}\s+(\S+)", re.M)


@pytest.fixture(scope="session")
def executed(book_build):
    """The notebook as the book build executed it, outputs included, as
    soon as the build has executed that one (a selection such as
    `-k one_head` waits for no other)."""

    def read(path):
        cache = get_cache(book_build.wait_executed([path]))
        _, nb = cache.merge_match_into_file(str(path))
        return nb

    return read


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]


def text_outputs(nb):
    """The printed and displayed text of every code cell, in order.

    Printed text is joined per cell: a kernel may split it into chunks
    differently from run to run. Cells tagged `timing` measure this
    machine's speed and are left out.
    """
    texts = []
    for cell in code_cells(nb):
        if "timing" in cell.metadata.get("tags", []):
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
def test_notebook_ran_top_to_bottom_in_the_build(notebook, executed):
    cells = code_cells(executed(notebook))
    counts = [cell.execution_count for cell in cells]
    assert counts == list(range(1, len(cells) + 1)), "not every cell ran"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_the_default_example_prints_no_note(notebook, executed):
    """A "Note:" (mhabook.experiments.inputs.note_unless) says that a claim
    of the text does not hold for the reader's input: on the book's own
    example none may print. (test_reader_edits.py checks that the edits
    that break a claim print one.)"""
    notes = [
        cell.source.splitlines()[0][:50]
        for cell in code_cells(executed(notebook))
        for output in cell.outputs
        if output.output_type == "stream" and "Note:" in output.text
    ]
    assert notes == [], f"the default example prints a Note: in {notes}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_no_cell_shows_the_reader_a_warning(notebook, executed):
    """Text on stderr (a library's warning, a progress bar) would be shown
    on the page (`stderr_output: show`): none may be written."""
    written = [
        output.text[:200]
        for cell in code_cells(executed(notebook))
        for output in cell.outputs
        if output.output_type == "stream" and output.name == "stderr"
    ]
    assert written == []


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_every_glued_name_in_the_text_was_computed(notebook, executed):
    nb = executed(notebook)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    used = set(GLUE_ROLE.findall(prose)) | set(GLUE_DIRECTIVE.findall(prose))
    glued = {
        output.metadata["scrapbook"]["name"]
        for cell in code_cells(nb)
        for output in cell.outputs
        if "scrapbook" in output.get("metadata", {})
    }
    assert used <= glued, f"glued nowhere: {sorted(used - glued)}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_every_glued_verdict_is_the_one_its_rule_gives(notebook, executed):
    """A verdict's phrase, decided again from the numbers it glued."""
    check_verdicts(glued_texts(executed(notebook)))


# A figure is drawn for the column: at most 4.8 in at 100 dpi (480 px,
# and a few px of tight bounding box), so that a 390-px phone (358 px of
# column) shows it at 0.72 of its size or more (test_phone.py checks it).
# Its PNG holds twice as many pixels, to stay sharp on a high-density
# screen; the output's metadata gives the width it is shown at.
MAX_FIGURE_PX = 495


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_every_figure_is_drawn_for_the_column_at_twice_its_size(
    notebook, executed
):
    import base64
    import io

    from PIL import Image

    wrong = []
    for cell in code_cells(executed(notebook)):
        for output in cell.outputs:
            png = output.get("data", {}).get("image/png")
            if png:
                pixels = Image.open(io.BytesIO(base64.b64decode(png))).width
                shown = output.metadata.get("image/png", {}).get("width")
                if not shown or shown > MAX_FIGURE_PX or pixels < 2 * shown:
                    first_line = cell.source.splitlines()[0][:50]
                    wrong.append((first_line, pixels, shown))
    assert wrong == [], f"figures not drawn 2x for the column: {wrong}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_notebook_seeds_in_its_imports_cell(notebook, executed):
    """The first cell after the Colab cell imports and seeds, once."""
    first = code_cells(executed(notebook))[1]
    assert "torch.manual_seed(" in first.source


def test_seeded_numbers_reproduce_in_a_fresh_kernel(executed):
    """A second run of one notebook prints what the build printed."""
    notebook = next(p for p in NOTEBOOKS if p.stem == REPRODUCED)
    from_build = executed(notebook)
    again = executed(notebook)  # a fresh copy, run again from scratch
    for cell in code_cells(again):
        cell.outputs, cell.execution_count = [], None
    nbclient.NotebookClient(
        again,
        timeout=600,
        kernel_name="python3",
        kernel_manager_class=socket_kernels(),
        resources={"metadata": {"path": str(notebook.parent)}},
    ).execute(env={**os.environ, "OMP_NUM_THREADS": "1"})  # as the build
    assert text_outputs(from_build)
    assert text_outputs(again) == text_outputs(from_build)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_no_cell_shows_what_verdict_returns(notebook, executed):
    """A cell that ends with `verdict(...)` would print its outcome (True,
    'less') under the cell: end it with `;`."""
    shown = [
        cell.source.splitlines()[0][:50]
        for cell in code_cells(executed(notebook))
        if "verdict(" in cell.source
        and "remove-cell" not in cell.metadata.get("tags", [])
        and any(o.output_type == "execute_result" for o in cell.outputs)
    ]
    assert shown == []


SENTENCE = re.compile(r"[^.!?]*?\{glue:text\}`(\w+)`[^.!?]*[.!?]?", re.S)


def rendered_sentences(prose, records):
    """(name, outcome, sentence): every sentence of `prose` that holds a
    glued verdict, rendered with each phrase its rule can give."""
    for paragraph in re.split(r"\n\s*\n", prose):
        rows = paragraph.strip().splitlines()  # a table: each row apart
        if not all(row.startswith("|") for row in rows):
            rows = [" ".join(paragraph.split())]  # prose: one run of text
        for match in (m for row in rows for m in SENTENCE.finditer(row)):
            sentence = match.group(0).strip()
            for name in re.findall(r"\{glue:text\}`(\w+)`", sentence):
                if name not in records:
                    continue
                for outcome, phrase in records[name]["phrases"]:
                    yield (
                        name,
                        outcome,
                        sentence.replace(f"{{glue:text}}`{name}`", phrase),
                    )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_every_verdict_sentence_reads_with_each_of_its_phrases(
    notebook, executed
):
    """Each sentence that holds a computed phrase, rendered with every
    phrase its rule can give: it starts with a capital where it starts a
    sentence, ends once, and stays under 45 words."""
    nb = executed(notebook)
    records = check_verdicts(glued_texts(nb))
    prose = "\n\n".join(
        c.source for c in nb.cells if c.cell_type == "markdown"
    )
    wrong = []
    for name, outcome, text in rendered_sentences(prose, records):
        body = re.sub(r"\{\w+(?::\w+)?\}`[^`]*`", "N", text)
        # a phrase may hold whole sentences: count each sentence apart
        pieces = re.split(r"(?<=[.!?])\s+(?=[A-Z\"“(])", body)
        words = max(len(piece.split()) for piece in pieces)
        starts = body.lstrip("*-([ ")[:1]
        if (
            (starts.isalpha() and not starts.isupper() and body[:1].isalpha())
            or re.search(r"[.!?]\s*[.!?]", body)
            or words > 45
        ):
            wrong.append((name, outcome, text[:160]))
    assert wrong == [], f"sentences that read wrong: {wrong}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=ids)
def test_no_name_is_glued_twice(notebook, executed):
    """A second glue of a name silently replaces the first in the text."""
    names = [
        output.metadata["scrapbook"]["name"]
        for cell in code_cells(executed(notebook))
        for output in cell.outputs
        if "scrapbook" in output.get("metadata", {})
    ]
    twice = sorted({n for n in names if names.count(n) > 1})
    assert twice == [], f"glued more than once: {twice}"
