"""Offline by construction: every test, and every process a test starts,
runs under the network guard in tests/netguard. A test during which anything
tried to reach beyond localhost fails.

`make test` runs the tests on several processes (pytest-xdist, one per
core, at most four): each has its own guard log, browser and server, and
they share one book build.
"""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUARD = Path(__file__).resolve().parent / "netguard"
WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # None in a plain run
LOG = ROOT / "_build" / f"netguard{'-' + WORKER if WORKER else ''}.log"

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

# The run fails if it leaves `git status` other than it found it.
pytest_plugins = ["cleantree"]


def pytest_collection_modifyitems(items):
    """Tests that need the book build run after those that do not, so
    that while one process builds, the others have tests to run."""
    items.sort(key=lambda item: "built_book" in item.fixturenames)


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
    notebooks back from the build's jupyter-cache. The first process to
    need it builds it; the others wait for it, or for its failure.
    """
    import subprocess

    from filelock import FileLock

    from chapter import build_command

    shared = tmp_path_factory.getbasetemp()
    if WORKER:
        shared = shared.parent  # the folder all the workers share
    out, failure = shared / "book", shared / "book-failed.txt"
    with FileLock(shared / "book.lock"):
        if failure.exists():
            pytest.fail(failure.read_text())
        if not (out / "_build" / "html" / "index.html").exists():
            run = subprocess.run(
                build_command(out), capture_output=True, text=True
            )
            if run.returncode != 0:
                reports = (out / "_build" / "html" / "reports").glob("*.log")
                failed = "".join(
                    f"\n--- {r.name}\n{r.read_text()[-3000:]}"
                    for r in sorted(reports)
                )
                failure.write_text(
                    f"the book build failed:\n{run.stdout[-6000:]}"
                    f"{run.stderr[-3000:]}{failed}"
                )
                pytest.fail(failure.read_text())
    return out / "_build"


@pytest.fixture(scope="session")
def site(built_book):
    """The built site, served on 127.0.0.1: (base URL, html folder)."""
    from browsing import serve

    html = built_book / "html"
    with serve(html) as base:
        yield base, html


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, one per test process: Playwright's sync API
    runs one instance at a time, so every browser test of the process
    shares it."""
    from playwright.sync_api import sync_playwright

    from browsing import launch

    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()


@pytest.fixture
def visit(browser, site):
    """Open a page for one test: visit(path, viewport=None)."""
    from browsing import open_page

    base, _ = site
    pages = []

    def visit_and_track(path, viewport=None):
        page, problems = open_page(browser, base, path, viewport)
        pages.append(page)
        return page, problems

    yield visit_and_track
    for page in pages:
        page.context.close()
