"""Compile, once, the modules that the book build, its kernels and the tests
import: about 3,700 of the environment's 15,600.

`make install` runs this. Python compiles a module the first time a process
imports it, but `make test` starts its processes side by side: the two test
processes, the build and its first two kernels would each compile the same
modules at once (about 26 s of one core each). Two processes here split the
work, one per group.
"""

import os
import subprocess
import sys
from pathlib import Path

BOOK = Path(__file__).resolve().parent.parent / "book"
GROUPS = [
    # PyTorch and transformers, through the chapter's own package
    "mhabook.live mhabook.bertviz_view mhabook.realheads mhabook.pruning"
    " transformers.models.bert.modeling_bert"
    " transformers.models.llama.modeling_llama",
    # the build, the kernels, the exporter and the browser driver
    "sphinx.application myst_nb.sphinx_ext nbclient jupyter_cache"
    " ipykernel.kernelapp onnx onnxscript onnxruntime playwright.sync_api",
]


def main():
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["HF_HUB_OFFLINE"] = "1"
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", "import " + ", ".join(group.split())],
            cwd=BOOK,
            env=env,
        )
        for group in GROUPS
    ]
    if any(run.wait() for run in runs):
        sys.exit("compiling the imported modules failed (see above)")


if __name__ == "__main__":
    main()
