"""Import, once, what the test processes and the notebooks' kernels import,
so that Python writes those modules' bytecode before they start.

Python compiles a module the first time it imports it and keeps the
result in __pycache__ (the install compiles nothing ahead: the book
imports a fraction of the modules installed). `make test` starts several
processes at once (the test processes, the book build and its kernels);
without this, each compiled PyTorch, transformers and the rest again, side
by side, before any had written the result. Two processes share the work
(PyTorch and what imports it; everything else), each module compiled by
one of them. `make install` runs this while npm installs.
"""

import importlib
import subprocess
import sys
from pathlib import Path

BOOK = Path(__file__).resolve().parents[2] / "book"
GROUPS = {
    "torch": [
        "torch",
        "transformers",
        "transformers.models.bert.modeling_bert",
        "matplotlib.pyplot",
        "mhabook",
        "mhabook.experiments",
        "mhabook.views",
    ],
    "rest": [  # none of these imports torch
        "IPython",
        "ipykernel.kernelapp",
        "matplotlib_inline.backend_inline",
        "jupyter_client",
        "nbclient",
        "nbformat",
        "jupyter_cache",
        "myst_nb",
        "playwright.sync_api",
        "onnx",
        "onnxruntime",
        "bs4",
        "PIL.Image",
        "xdist",
    ],
}


def warm(group):
    sys.path.insert(0, str(BOOK))
    for name in GROUPS[group]:
        try:
            importlib.import_module(name)
        except ImportError as error:  # a module gone from the pins: say so
            print(f"warm_imports: {name}: {error}", file=sys.stderr)


def main(args):
    if args:
        warm(args[0])
        return 0
    rest = subprocess.Popen([sys.executable, __file__, "rest"])
    warm("torch")
    return rest.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
