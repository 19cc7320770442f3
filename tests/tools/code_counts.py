"""What a maintainer meets behind the pages: hidden code and prose in code.

    .venv/bin/python tests/tools/code_counts.py [--list]

  hidden   non-empty lines of the notebooks' code cells that a reader does
           not see without a click (hide-input, hide-cell, remove-input,
           remove-cell), per notebook
  strings  words of prose in Python string literals, in the notebooks'
           code and in book/mhabook: a string (or f-string) of eight words
           or more, docstrings, the messages of raised errors and
           failed asserts, and HTML tags aside

tests/book/test_rules.py holds them to the budgets of issue 33 (hidden code
at most 900 lines, prose in strings at most 200 words); `--list` prints
each string counted, to find where a sentence belongs in Markdown.
"""

import ast
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
WORD = re.compile(r"[A-Za-z][\w'\-]*")
TAG = re.compile(r"<[^>]*>")
PROSE_WORDS = 8


def notebooks(root=ROOT):
    return sorted((Path(root) / "book").glob("*.ipynb"))


def code_cells(path):
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            yield cell


def hidden_lines(path):
    """Non-empty lines of the notebook's hidden code cells."""
    return sum(
        len([line for line in cell.source.splitlines() if line.strip()])
        for cell in code_cells(path)
        if HIDDEN & set(cell.metadata.get("tags", []))
    )


def _text(node):
    """The literal text of a string or f-string node (its {fields} dropped)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return " ".join(_text(part) for part in node.values)
    return ""


def _skipped(tree):
    """Ids of the string nodes that do not count: docstrings and the
    messages of `raise` and `assert`."""
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            skip.add(id(body[0].value))
        if isinstance(node, ast.Raise) and node.exc is not None:
            skip.update(id(inner) for inner in ast.walk(node.exc))
        if isinstance(node, ast.Assert) and node.msg is not None:
            skip.update(id(inner) for inner in ast.walk(node.msg))
    return skip


def prose_strings(source):
    """[(words, text)] of the strings of eight words or more in source."""
    source = "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line
        for line in source.splitlines()
    )
    tree = ast.parse(source)
    skip = _skipped(tree)
    found = []
    inner = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inner.update(id(part) for part in node.values)
    for node in ast.walk(tree):
        if id(node) in skip or id(node) in inner:
            continue
        if isinstance(node, ast.JoinedStr):
            skip.update(id(part) for part in ast.walk(node))
        n = len(WORD.findall(TAG.sub(" ", _text(node))))
        if n >= PROSE_WORDS:
            found.append((n, _text(node)))
    return found


def sources(root=ROOT):
    """(name, Python source) of each notebook code cell and module."""
    for path in notebooks(root):
        for i, cell in enumerate(code_cells(path)):
            yield f"{path.name} cell {i}", cell.source
    for path in sorted((Path(root) / "book" / "mhabook").rglob("*.py")):
        yield str(path.relative_to(root)), path.read_text()


def counts(root=ROOT):
    hidden = {path.name: hidden_lines(path) for path in notebooks(root)}
    strings = [
        (name, n, text)
        for name, source in sources(root)
        for n, text in prose_strings(source)
    ]
    return hidden, strings


def main(argv):
    hidden, strings = counts()
    for name, n in hidden.items():
        print(f"{name:24} hidden {n:4}")
    print(f"{'all':24} hidden {sum(hidden.values()):4}")
    print(f"prose in strings: {sum(n for _, n, _ in strings)} words")
    if "--list" in argv:
        for name, n, text in strings:
            print(f"{n:3}  {name}: {text[:100]!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
