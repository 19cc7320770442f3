"""Change one cell of a notebook by its content, as a reader would.

    .venv/bin/python tests/tools/edit_notebook.py book/one_head.ipynb \\
        'text = "' 'time flies like an arrow' 'the cat sat on the mat'

finds the one cell whose source contains the first string, replaces the
second string in it by the third, and writes the notebook back in the
repository's format (nbformat's, which the notebooks are kept in), every
other cell untouched. Each string must be found exactly once: a cell
matched twice, or a change that could land in two places, is an error.
tests/book/test_reader_edits.py makes its edits with `edit_source`.
"""

import sys

import nbformat


def find_cell(nb, contains):
    """The index of the one cell whose source contains `contains`."""
    found = [i for i, c in enumerate(nb.cells) if contains in c.source]
    if len(found) != 1:
        raise ValueError(
            f"{len(found)} cells contain {contains!r}: give a string that "
            f"only the cell to change contains"
        )
    return found[0]


def edit_source(source, old, new):
    """`source` with its one `old` replaced by `new`."""
    if source.count(old) != 1:
        raise ValueError(
            f"{old!r} occurs {source.count(old)} times in the cell: give a "
            f"string it holds once"
        )
    return source.replace(old, new)


def edit(nb, contains, old, new):
    """Change the cell that contains `contains`, in place; its index."""
    index = find_cell(nb, contains)
    nb.cells[index].source = edit_source(nb.cells[index].source, old, new)
    return index


def main(path, contains, old, new):
    nb = nbformat.read(path, as_version=4)
    index = edit(nb, contains, old, new)
    nbformat.write(nb, path)
    print(f"{path}: cell {index} changed")


if __name__ == "__main__":
    main(*sys.argv[1:])
