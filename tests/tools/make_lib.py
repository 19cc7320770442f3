"""Write book/mhabook/layers/ from the notebooks' `# @save` cells.

    .venv/bin/python tests/tools/make_lib.py          # (`make lib`)
    .venv/bin/python tests/tools/make_lib.py --check  # exit 1 on a diff

Each notebook that teaches code later pages import keeps it in cells that
start with `# @save`. This writes them, in order, into one module per
notebook (LIBRARY), headed "generated from book/<page>.ipynb by make lib;
edit the notebook", with the imports their names need (IMPORTS, or another
generated module), then sorts and formats them with ruff. The tests check
that regenerating leaves no diff, as d2l's `d2lbook build lib` does.
"""

import ast
import builtins
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
LAYERS = BOOK / "mhabook" / "layers"
# notebook -> (module of mhabook.layers, what the module holds)
LIBRARY = {
    "one_head": ("one_head", "One attention head (section 1)."),
    "many_heads": ("many_heads", "Many heads in one layer (section 2)."),
    "all_heads": ("all_heads", "All heads in one batched product, masks."),
    "heads_needed": (
        "heads_needed",
        "Removing heads through the output projection.",
    ),
    "sharing_kv": (
        "sharing_kv",
        "Sharing keys and values: grouped-query attention, the KV cache.",
    ),
}
# A name the saved cells use -> the import that gives it.
IMPORTS = {
    "math": "import math",
    "torch": "import torch",
    "nn": "from torch import nn",
    "F": "import torch.nn.functional as F",
    "dataclass": "from dataclasses import dataclass",
    "field": "from dataclasses import field",
    "contextlib": "import contextlib",
    "contextmanager": "from contextlib import contextmanager",
}


def saved_cells(notebook):
    nb = nbformat.read(notebook, as_version=4)
    return [
        cell.source.removeprefix("# @save").lstrip("\n")
        for cell in nb.cells
        if cell.cell_type == "code" and cell.source.startswith("# @save")
    ]


def defined(tree):
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    } | {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def used(tree):
    """Names the code reads but does not bind anywhere in it."""
    bound = defined(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    names = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    return names - bound - set(dir(builtins))


def modules():
    """{module name: (notebook, docstring, code)}, in LIBRARY's order."""
    found = {}
    for page, (module, doc) in LIBRARY.items():
        cells = saved_cells(BOOK / f"{page}.ipynb")
        if not cells:
            raise SystemExit(f"book/{page}.ipynb has no `# @save` cell")
        found[module] = (page, doc, "\n\n".join(cells))
    return found


def checks():
    """{name: its import}: what mhabook/checks.py defines. The saved cells
    call these checks; the notebooks import them with their other imports."""
    tree = ast.parse((BOOK / "mhabook" / "checks.py").read_text())
    return {
        name: f"from mhabook.checks import {name}" for name in defined(tree)
    }


def source(module, page, doc, code, providers):
    """The text of one generated module."""
    tree = ast.parse(code)
    imports_of = IMPORTS | checks()
    imports, local = set(), {}
    for name in sorted(used(tree)):
        if name in imports_of:
            imports.add(imports_of[name])
        elif name in providers and providers[name] != module:
            local.setdefault(providers[name], []).append(name)
        else:
            raise SystemExit(
                f"book/{page}.ipynb's saved cells use {name!r}, which no "
                f"saved cell defines: add its import to IMPORTS in {__file__}"
            )
    lines = sorted(imports) + [
        f"from .{other} import {', '.join(sorted(names))}"
        for other, names in sorted(local.items())
    ]
    header = (
        f'"""{doc}\n\nGenerated from book/{page}.ipynb by `make lib`: edit '
        f'the notebook,\nthen run `make lib`.\n"""\n'
    )
    return header + "\n" + "\n".join(lines) + "\n\n\n" + code.rstrip() + "\n"


def write(folder):
    folder.mkdir(parents=True, exist_ok=True)
    found = modules()
    providers = {}
    for module, (_, _, code) in found.items():
        for name in defined(ast.parse(code)):
            if name in providers:
                raise SystemExit(
                    f"{name} is saved in both {providers[name]} and {module}"
                )
            providers[name] = module
    written = []
    for module, (page, doc, code) in found.items():
        path = folder / f"{module}.py"
        path.write_text(source(module, page, doc, code, providers))
        written.append(path)
    ruff = Path(sys.executable).with_name("ruff")
    config = ["--config", str(ROOT / "pyproject.toml")]
    subprocess.run(
        [ruff, "check", "--quiet", "--fix", "--select", "I", *config]
        + [str(p) for p in written],
        check=True,
    )
    subprocess.run(
        [ruff, "format", "--quiet", *config] + [str(p) for p in written],
        check=True,
    )
    return written


def main(check):
    if not check:
        for path in write(LAYERS):
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        stale = [
            path.name
            for path in write(Path(tmp))
            if not (LAYERS / path.name).exists()
            or (LAYERS / path.name).read_text() != path.read_text()
        ]
    if stale:
        print(f"out of date, run `make lib`: {stale}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv))
