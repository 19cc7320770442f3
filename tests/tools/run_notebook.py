"""Execute one notebook of the book, as the build would, and report.

    .venv/bin/python tests/tools/run_notebook.py book/real_heads.ipynb [FOLDER]

With FOLDER (a checkpoint), the notebook loads it through $MHA_CHECKPOINT.
Writes the executed copy to _build/run/<name>.ipynb (or to the folder in
$MHA_RUN_OUT) and prints the error, if a cell failed, and every glued
value; exits 1 if a cell failed.
"""

import os
import sys
import time
from pathlib import Path

import nbclient
import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "harness"))
from chapter import socket_kernels  # noqa: E402


def run(path, checkpoint=None):
    path = Path(path).resolve()
    env = {"HF_HUB_OFFLINE": "1"}
    if checkpoint:
        env["MHA_CHECKPOINT"] = str(Path(checkpoint).resolve())
    os.environ.update(env)
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = nbclient.NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        kernel_manager_class=socket_kernels(),
        resources={"metadata": {"path": str(path.parent)}},
    )
    error = None
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:
        error = e
    out = Path(os.environ.get("MHA_RUN_OUT", ROOT / "_build" / "run"))
    out = out / path.name
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    print(
        f"{path.name}: {time.perf_counter() - start:.1f} s, written to {out}"
    )
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook", {})
            name = record.get("name")
            if name and not name.endswith("__verdict"):
                text = output["data"].get(record["mime_prefix"] + "text/plain")
                print(f"  {name} = {str(text)[:120]}")
    if error:
        print(error)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run(*sys.argv[1:]))
