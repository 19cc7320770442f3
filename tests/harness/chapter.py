"""What the tests need to know about the book's layout."""

import ast
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"


def socket_kernels(manager=None):
    """The build's kernel manager class (book/_ext/execute_ahead.py):
    the tests' kernels, too, listen on Unix sockets of their own, where
    no other kernel's client can reach them."""
    if str(BOOK / "_ext") not in sys.path:
        sys.path.insert(0, str(BOOK / "_ext"))
    import execute_ahead

    return execute_ahead.socket_kernels(manager)


def toc_files():
    """Every `file:` of _toc.yml, in reading order, without extension."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found = [toc["root"]]

    def walk(entries):
        for entry in entries:
            if "file" in entry:
                found.append(entry["file"])
            walk(entry.get("sections", []))

    walk(toc.get("chapters", []))
    for part in toc.get("parts", []):
        walk(part["chapters"])
    return found


def toc_notebooks():
    return [
        ROOT / f"{name}.ipynb"
        for name in toc_files()
        if (ROOT / f"{name}.ipynb").exists()
    ]


def saved_definitions(notebook):
    """Top-level defs and classes of the notebook's `# @save` cells."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("# @save"):
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    yield node


def build_command(out, *extra):
    """The book build the README documents, into `out`, warnings as errors."""
    import sys

    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    return [
        jupyter_book,
        "build",
        str(ROOT),
        "--path-output",
        str(out),
        "-W",
        "-n",
        "--keep-going",
        *extra,
    ]


def glue_all_names(code):
    """The names `code` glues through `glue_all(name=...)`: each call's
    keywords (the names that `glue("name", ...)` patterns miss)."""
    names = set()
    for call in re.findall(r"glue_all\((?:[^()]|\([^()]*\))*\)", code):
        names |= set(re.findall(r"\b([a-z_0-9]+)=", call))
    return names


def glued_texts(nb):
    """{name: text/plain} of every value an executed notebook glued."""
    texts = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook")
            if record:
                key = record["mime_prefix"] + "text/plain"
                texts[record["name"]] = output["data"].get(key)
    return texts


def check_verdicts(texts):
    """Decide every glued verdict again from the numbers it glued;
    returns {name: record} of the verdicts checked."""
    import ast
    import json

    from mhabook.experiments.verdicts import check_record

    checked = {}
    for name, record in texts.items():
        if name.endswith("__verdict"):
            base = name.removesuffix("__verdict")
            record = ast.literal_eval(record)
            check_record(ast.literal_eval(texts[base]), record)
            checked[base] = json.loads(record)
    return checked
