"""Print how long the book takes to build and what each notebook costs.

Run with `make bench-build`. Targets on a 2-core machine: cold build
<= 40 s, cached rebuild <= 10 s. Nothing here is a pass/fail test; the
numbers are printed side by side for the closing notes of a change.
"""

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import recorded  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "harness"))

from chapter import build_command, toc_notebooks  # noqa: E402

# Runs in a fresh interpreter so that RUSAGE_CHILDREN sees only its kernel.
EXECUTE = """
import resource, sys, time
import nbclient, nbformat
path = sys.argv[1]
nb = nbformat.read(path, as_version=4)
start = time.perf_counter()
nbclient.NotebookClient(
    nb, timeout=600, kernel_name="python3",
    resources={"metadata": {"path": sys.argv[2]}},
).execute()
seconds = time.perf_counter() - start
peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"{seconds:.1f} {peak_mib:.0f}")
"""


def build(out, *extra):
    start = time.perf_counter()
    subprocess.run(build_command(out, *extra), check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    with tempfile.TemporaryDirectory() as out:
        cold = build(out)
        unchanged = build(out)
        all_pages = build(out, "--all")
    print(f"{'cold build (executes every notebook)':<48} {cold:6.1f} s")
    print(f"{'cached rebuild, nothing changed':<48} {unchanged:6.1f} s")
    print(f"{'cached rebuild of every page (--all)':<48} {all_pages:6.1f} s")
    print()
    print(f"{'notebook':<28} {'execution':>10} {'kernel peak RSS':>16}")
    for notebook in toc_notebooks():
        run = subprocess.run(
            [
                sys.executable,
                "-c",
                EXECUTE,
                str(notebook),
                str(notebook.parent),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        seconds, peak = run.stdout.split()
        print(f"{notebook.name:<28} {seconds:>8} s {peak:>12} MiB")
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n(this script's own peak: {own:.0f} MiB)")


if __name__ == "__main__":
    with recorded("The book build (`make bench-build`)", markdown=False):
        main()
