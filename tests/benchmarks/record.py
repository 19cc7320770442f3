"""Write a benchmark's printed figures into docs/benchmarks.md.

Each `make bench-*` command runs its script under `recorded(title)`: what
the script prints still reaches the terminal, and, when it finishes, it
replaces the section headed `## <title>` of docs/benchmarks.md (or is
appended), under a line saying when, on what machine and with which
versions it was measured. Nobody edits those figures by hand.
"""

import contextlib
import datetime
import io
import os
import platform
import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"
HEAD = """# Benchmarks

Written by the `make bench-*` commands, each into its own section (the
section is replaced when the command runs again). Figures are medians with
their spread, measured on the machine each section names: read them as
that machine's, not as general laws.
"""


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores"


def versions():
    found = [f"Python {platform.python_version()}"]
    for name in ("torch", "transformers", "onnxruntime", "jupyter_book"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "__version__"):
            found.append(f"{name} {module.__version__}")
    return ", ".join(found)


def write(title, body, markdown):
    text = DOC.read_text() if DOC.exists() else HEAD
    stamp = (
        f"Measured {datetime.date.today().isoformat()} on {machine()}; "
        f"{versions()}."
    )
    shown = body.strip() if markdown else f"```text\n{body.strip()}\n```"
    section = f"## {title}\n\n{stamp}\n\n{shown}\n"
    pattern = re.compile(
        rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.M | re.S
    )
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(text)


class Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, s):
        for stream in self.streams:
            stream.write(s)
        return len(s)

    def flush(self):
        for stream in self.streams:
            stream.flush()


@contextlib.contextmanager
def recorded(title, markdown=False):
    """Print as usual; on success, write what was printed under `title`."""
    captured = io.StringIO()
    with contextlib.redirect_stdout(Tee(sys.stdout, captured)):
        yield
    write(title, captured.getvalue(), markdown)
