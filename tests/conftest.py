"""Offline by construction: every test, and every process a test starts,
runs under the network guard in tests/netguard. A test during which anything
tried to reach beyond localhost fails."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUARD = Path(__file__).resolve().parent / "netguard"
LOG = ROOT / "_build" / "netguard.log"

LOG.parent.mkdir(exist_ok=True)
LOG.write_text("")
os.environ["NETGUARD_LOG"] = str(LOG)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(
        None, [str(GUARD), str(ROOT / "book"), os.environ.get("PYTHONPATH")]
    )
)
sys.path.insert(0, str(GUARD))
import netguard  # noqa: E402,F401  (installs the guard in this process)


@pytest.fixture(autouse=True)
def no_network():
    """Fail the test if it, or a process it started, tried the network."""
    before = LOG.read_text()
    yield
    attempts = LOG.read_text()[len(before) :]
    LOG.write_text(before)
    assert not attempts, f"network access attempted:\n{attempts}"


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """Build the whole book once, cold, with warnings as errors."""
    import subprocess

    from chapter import build_command

    out = tmp_path_factory.mktemp("book")
    run = subprocess.run(build_command(out), capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    return out / "_build"


@pytest.fixture(scope="session")
def executed():
    """Execute a notebook top to bottom (once per session), as a reader
    would: from its own folder, failing on the first error."""
    import nbclient
    import nbformat

    done = {}

    def run(path):
        if path not in done:
            nb = nbformat.read(path, as_version=4)
            nbclient.NotebookClient(
                nb,
                timeout=600,
                kernel_name="python3",
                resources={"metadata": {"path": str(path.parent)}},
            ).execute()
            done[path] = nb
        return done[path]

    return run
