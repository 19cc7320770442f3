"""Offline by construction: every test, and every process a test starts,
runs under the network guard in tests/harness/netguard. A test during
which anything tried to reach beyond localhost fails.

`make test` runs the tests on several processes (pytest-xdist, one more
than the cores, at most four): each has its own guard log, browser and
server, and they share one book build.
"""

import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUARD = Path(__file__).resolve().parent / "harness" / "netguard"
WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # None in a plain run
LOG = ROOT / "_build" / f"netguard{'-' + WORKER if WORKER else ''}.log"

# One PyTorch thread per core a test process has to itself: the processes
# (and the book build's kernels) already keep every core busy, and more
# OpenMP threads than cores spin instead of working (the unit tests took
# twice the CPU time). Child processes (kernels, the build) inherit it.
if WORKER and "OMP_NUM_THREADS" not in os.environ:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    threads = max(1, (os.cpu_count() or 1) // workers)
    os.environ["OMP_NUM_THREADS"] = str(threads)

# The kernels the tests start run behind the book build's (see
# harness/netguard/sitecustomize.py; BookBuild.start leaves this out).
os.environ["MHA_SESSION_NICE"] = "10"

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


def needs_book(item):
    return bool(
        {"built_book", "executed_cache", "executed"} & set(item.fixturenames)
    )


# Files whose tests go to the processes one parameter at a time: each
# test of test_pages.py reads one page, which the process that runs them
# loads once.
SPLIT_BY_PARAMETER = {"tests/browser/test_pages.py"}


def unit_of(nodeid):
    """The tests `make test` hands to one process together: a file, or in
    SPLIT_BY_PARAMETER the tests of one parameter of it."""
    path = nodeid.split("::")[0]
    if path in SPLIT_BY_PARAMETER and nodeid.endswith("]"):
        return path + nodeid[nodeid.index("[") :]
    return path


@pytest.hookimpl(optionalhook=True)  # a run without pytest-xdist
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's loadscope, with unit_of's units (its loadgroup
    cannot group tests under pytest 9, whose node ids it cannot change)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return unit_of(nodeid)

    return ByUnit(config, log)


def pytest_collection_modifyitems(items):
    """The files none of whose tests need the book build run first, while
    it builds. The others follow: whole files, those with the most tests
    first, then the units a file is split into (test_pages.py: one per
    page), small ones that even out the processes' ends. (`make test`
    hands out units in this order: --no-loadscope-reorder.)"""
    units = {}
    for item in items:
        units.setdefault(unit_of(item.nodeid), []).append(item)

    def order(unit):
        tests = units[unit]
        needs = any(map(needs_book, tests))
        split = unit.endswith("]")
        return (needs, needs and split, -len(tests) if needs else 0)

    items[:] = [
        item for unit in sorted(units, key=order) for item in units[unit]
    ]
    # the notebooks the selected tests name, for the build to run first
    named = {
        f"book/{item.callspec.params['notebook'].stem}"
        for item in items
        if needs_book(item)
        and hasattr(item, "callspec")
        and hasattr(item.callspec.params.get("notebook"), "stem")
    }
    from chapter import toc_notebooks

    if len(named) < len(toc_notebooks()):  # else the usual order
        os.environ["MHA_EXECUTE_FIRST"] = ",".join(sorted(named))


@pytest.fixture(autouse=True)
def no_network():
    """Fail the test if it, or a process it started, tried the network."""
    before = LOG.read_text()
    yield
    attempts = LOG.read_text()[len(before) :]
    LOG.write_text(before)
    assert not attempts, f"network access attempted:\n{attempts}"


class BookBuild:
    """One book build for all the test processes, in `folder` (the one
    they share): the first process to start() runs it in the background.

    It is the longest part of the run. Each process that starts or needs
    it runs its own tests at nice 10 from then on (the build's processes
    stay at 0), so that while it builds, the build gets most of the CPU.
    The build has a network-guard log of its own: wait() fails if the
    build, or a kernel it started, tried the network.
    """

    TIMEOUT = 1800  # s: a build that never ends fails the tests waiting

    def __init__(self, folder):
        self.folder = folder
        self.process = None  # the build, in the process that started it
        self.out = folder / "book" / "_build"
        self.log = folder / "book-build.log"
        self.guard_log = folder / "netguard-build.log"
        self.done = folder / "book-done.txt"  # empty, or why it failed

    def start(self):
        import subprocess
        import threading

        from filelock import FileLock

        from chapter import build_command

        with FileLock(self.folder / "book.lock"):
            if not self.log.exists():  # no process has started it
                env = {**os.environ, "NETGUARD_LOG": str(self.guard_log)}
                env.pop("MHA_SESSION_NICE", None)  # the build comes first
                with open(self.log, "w") as log:
                    try:
                        build = subprocess.Popen(
                            build_command(self.out.parent),
                            stdout=log,
                            stderr=log,
                            env=env,
                        )
                    except OSError as error:
                        self.finished(f"the book build did not start: {error}")
                        raise
                self.process = build
                threading.Thread(target=self.finish, args=(build,)).start()
        niceness = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, max(niceness, 10))

    def finish(self, build):
        failure = "the book build failed:\n"
        try:
            if build.wait() == 0:
                failure = ""
            else:
                reports = (self.out / "html" / "reports").glob("*.log")
                failure += "".join(
                    [self.log.read_text()[-9000:]]
                    + [
                        f"\n--- {r.name}\n{r.read_text()[-3000:]}"
                        for r in sorted(reports)
                    ]
                )
        finally:
            self.finished(failure)

    def finished(self, failure):
        written = self.done.with_suffix(".part")
        written.write_text(failure)
        written.rename(self.done)  # at once: never read half-written

    def poll(self, ready):
        """Wait until `ready()` or the build has ended: whether it is."""
        self.start()  # if it has not started yet
        deadline = time.monotonic() + self.TIMEOUT
        while not self.done.exists():
            if ready():
                return True
            if time.monotonic() > deadline:
                pytest.fail(f"the book build ran over {self.TIMEOUT} s")
            time.sleep(0.5)
        return ready()

    def wait(self):
        self.poll(lambda: False)
        if failure := self.done.read_text():
            pytest.fail(failure)
        attempts = (
            self.guard_log.read_text() if self.guard_log.exists() else ""
        )
        assert not attempts, f"the book build tried the network:\n{attempts}"
        return self.out

    def wait_executed(self, notebooks):
        """The build's jupyter-cache, once it holds every notebook executed
        (before Sphinx writes the pages), whatever becomes of the build."""
        import nbformat
        from jupyter_cache import get_cache

        cache = self.out / ".jupyter_cache"
        sources = [nbformat.read(path, as_version=4) for path in notebooks]

        def all_cached():
            # the build writes __version__.txt once it has made the
            # database; get_cache() before that would make it too
            if not (cache / "__version__.txt").exists():
                return False
            try:
                db = get_cache(cache)
                for source in sources:
                    db.match_cache_notebook(source)
            except Exception:  # not yet cached, or the database is busy
                return False
            return True

        if not self.poll(all_cached):
            self.wait()  # fails with why the build failed
            pytest.fail("the build ended without executing every notebook")
        return cache


BOOK = pytest.StashKey[BookBuild]()


def pytest_addoption(parser):
    parser.addoption(
        "--build-book-first",
        action="store_true",
        help="start the book build as the session starts, before the tests"
        " are collected (for a run that needs it, such as `make test`)",
    )


def pytest_sessionstart(session):
    config = session.config
    # pytest's own temporary folder, as pytest-xdist reads it
    folder = config._tmp_path_factory.getbasetemp()
    if WORKER:
        folder = folder.parent  # the folder all the workers share
    config.stash[BOOK] = BookBuild(folder)
    controller = not WORKER and config.getoption("numprocesses", None)
    if config.getoption("build_book_first") and not controller:
        config.stash[BOOK].start()


def pytest_sessionfinish(session, exitstatus):
    """After a run that passed, the tested build becomes _build/html."""
    import shutil

    build = session.config.stash.get(BOOK, None)
    running = build is not None and build.process is not None
    if running and not WORKER and build.process.poll() is None:
        # One process and its tests are done: none waits for the rest of
        # the build (under xdist, another process still may).
        build.process.terminate()
        return
    if WORKER or build is None or exitstatus != 0:
        return
    if build.done.exists() and not build.done.read_text():
        target = ROOT / "_build" / "html"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(build.out / "html", target)


@pytest.fixture(scope="session", autouse=True)
def book_build(request):
    """Start the book build as the first test starts, if one needs it."""
    build = request.config.stash[BOOK]
    if any(needs_book(item) for item in request.session.items):
        build.start()
    return build


@pytest.fixture(scope="session")
def built_book(book_build):
    """The whole book, built once, cold, with warnings as errors.

    This build is the suite's only execution of the notebooks: their
    asserts run there, and tests/book/test_notebooks.py reads the executed
    notebooks back from the build's jupyter-cache.
    """
    return book_build.wait()


@pytest.fixture(scope="session")
def executed_cache(book_build):
    """The build's jupyter-cache, as soon as every notebook has run."""
    from chapter import toc_notebooks

    return book_build.wait_executed(toc_notebooks())


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
