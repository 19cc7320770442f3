"""Print how long CI's two steps take on a fresh clone, and how busy the
machine's cores were meanwhile.

Run with `make bench-ci` (Linux: it reads /proc/stat). It clones the
committed HEAD into a temporary folder and runs what `.ci/run` runs there,
`make install` then `make test`, with empty uv and npm caches, as on a new
machine. Chromium must already be installed (`make chromium`). Issue
target: both steps within 5 minutes on a 2-core machine. Not a test: the
figures are printed for the closing notes of a change.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import recorded  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def busy_seconds():
    """Core-seconds this machine's cores have spent busy since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split()[1:8]]
    user, nice, system, _idle, _iowait, irq, softirq = fields
    ticks = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / ticks


def main():
    cores = os.cpu_count()
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(
            ["git", "clone", "-q", str(ROOT), str(clone)], check=True
        )
        env = {
            **os.environ,
            "UV_CACHE_DIR": f"{tmp}/uv-cache",
            "npm_config_cache": f"{tmp}/npm-cache",
        }
        print(f"{cores} cores\n")
        print("| step | seconds | cores busy, core-s | share of all cores |")
        print("| --- | ---: | ---: | ---: |")
        total = 0.0
        for step in (["make", "install"], ["make", "test"]):
            start, busy = time.perf_counter(), busy_seconds()
            run = subprocess.run(
                step, cwd=clone, env=env, capture_output=True, text=True
            )
            seconds = time.perf_counter() - start
            used = busy_seconds() - busy
            total += seconds
            print(
                f"| `{' '.join(step)}` | {seconds:.1f} | {used:.0f} | "
                f"{used / seconds / cores:.0%} |"
            )
            if run.returncode != 0:
                print(run.stdout[-3000:], run.stderr[-3000:])
                raise SystemExit(f"{' '.join(step)} failed")
        print(f"| both | {total:.1f} | | |")


if __name__ == "__main__":
    with recorded("CI on a fresh clone (`make bench-ci`)", markdown=True):
        main()
