"""Import, in one process, what the test processes and the notebooks'
kernels import, so that Python writes those modules' bytecode once.

Python compiles a module the first time it imports it and keeps the
result in __pycache__ (the install compiles nothing ahead: the book
imports a fraction of the modules installed). `make test` starts several
processes at once (the test processes, the book build and its kernels);
without this, each of them compiled PyTorch, transformers and the rest
again, side by side, before any wrote the result. `make install` runs it
while npm installs.
"""

import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# what the kernels import beyond the test modules (the tests' own
# imports come from collecting them)
KERNEL_SIDE = [
    "ipykernel.kernelapp",
    "matplotlib_inline.backend_inline",
    "matplotlib.pyplot",
    "bertviz",
    "myst_nb",
    "mhabook",
    "mhabook.experiments",
    "mhabook.views",
]


def main():
    import pytest

    # imports every test module, as each test process does, and runs none
    code = pytest.main(
        ["--collect-only", "-q", "-p", "no:cacheprovider", str(ROOT / "tests")]
    )
    sys.path[:0] = [str(ROOT / "book")]
    for name in KERNEL_SIDE:
        importlib.import_module(name)
    return code


if __name__ == "__main__":
    sys.exit(main())
