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
    """Build the whole book once, cold, with warnings as errors.

    This build is the suite's only execution of the notebooks: their
    asserts run here, and tests/test_notebooks.py reads the executed
    notebooks back from the build's jupyter-cache.
    """
    import subprocess

    from chapter import build_command

    out = tmp_path_factory.mktemp("book")
    run = subprocess.run(build_command(out), capture_output=True, text=True)
    if run.returncode != 0:
        reports = sorted((out / "_build" / "html" / "reports").glob("*.log"))
        failed = "".join(
            f"\n--- {r.name}\n{r.read_text()[-3000:]}" for r in reports
        )
        pytest.fail(
            f"the book build failed:\n{run.stdout[-6000:]}"
            f"{run.stderr[-3000:]}{failed}"
        )
    return out / "_build"


def _git_status():
    import subprocess

    run = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return run.stdout if run.returncode == 0 else None


GIT_STATUS = pytest.StashKey[str | None]()


def pytest_sessionstart(session):
    """What `git status` says before any test runs (None outside git)."""
    session.config.stash[GIT_STATUS] = _git_status()


def pytest_collection_modifyitems(config, items):
    """The clean-tree check runs last, after everything it watches."""
    last = [i for i in items if i.name == "test_the_suite_leaves_git_clean"]
    items[:] = [i for i in items if i not in last] + last


@pytest.fixture
def git_status_at_start(request):
    return request.config.stash[GIT_STATUS], _git_status


@pytest.fixture(scope="session")
def site(built_book):
    """The built site, served on 127.0.0.1: (base URL, html folder)."""
    from browsing import serve

    html = built_book / "html"
    with serve(html) as base:
        yield base, html


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, one for the whole session: Playwright's sync API
    runs one instance at a time, so every browser test shares it."""
    from playwright.sync_api import sync_playwright

    from browsing import launch

    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()
