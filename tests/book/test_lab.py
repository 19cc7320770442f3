"""`make lab` starts JupyterLab from the project's environment on book/,
with a kernel the notebooks name. Checked without starting a server: the
target's command, run with `--version`, and the kernels it would offer."""

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import nbformat
import pytest

from chapter import ROOT, toc_notebooks

ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")


@pytest.fixture(scope="module")
def lab_command():
    """`make lab`'s command line: (environment, argv)."""
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", "lab"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    joined = dry.stdout.replace("\\\n", " ")
    line = next(x for x in joined.splitlines() if " lab " in f"{x} ")
    words = shlex.split(line)
    env = {}
    while ASSIGNMENT.match(words[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    return env, words


def run(env, argv):
    return subprocess.run(
        argv,
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_make_lab_runs_the_pinned_jupyterlab_on_book(lab_command):
    env, argv = lab_command
    assert argv[:2] == [".venv/bin/jupyter", "lab"]
    assert "--notebook-dir=book" in argv
    pinned = next(
        line.split("==")[1]
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.startswith("jupyterlab==")
    )
    assert run(env, [*argv[:2], "--version"]).strip() == pinned


def test_the_notebooks_kernel_is_the_environments_python(lab_command):
    env, argv = lab_command
    specs = json.loads(run(env, [argv[0], "kernelspec", "list", "--json"]))
    names = {
        nbformat.read(p, as_version=4).metadata.kernelspec.name
        for p in toc_notebooks()
    }
    for name in names:
        assert name in specs["kernelspecs"], f"no kernel {name!r}"
        spec = specs["kernelspecs"][name]["spec"]
        # jupyter_client runs a bare "python" as its own interpreter
        venv_bin = (ROOT / argv[0]).parent
        python = spec["argv"][0]
        if python in ("python", "python3"):
            python = str(venv_bin / "python")
        assert Path(python).parent.resolve() == venv_bin.resolve(), python
