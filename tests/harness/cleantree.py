"""A pytest plugin: the run fails if it leaves `git status` (tracked
changes and untracked files that .gitignore does not cover) other than it
found it. The suite writes only under ignored paths (_build/, caches);
refreshing the README's images is an explicit command, `make screenshots`.

The check runs once every test and fixture has finished, in the process
that started the run: with pytest-xdist, after all the workers.
"""

import subprocess

import pytest

BEFORE = pytest.StashKey[str | None]()


def git_status(folder):
    run = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    return run.stdout if run.returncode == 0 else None  # None: not in git


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # not an xdist worker
        session.config.stash[BEFORE] = git_status(session.config.rootpath)


def pytest_sessionfinish(session):
    before = session.config.stash.get(BEFORE, None)
    if before is None:  # an xdist worker, or not in git
        return
    after = git_status(session.config.rootpath)
    if after != before:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        report = session.config.pluginmanager.get_plugin("terminalreporter")
        report.write_sep("=", "the suite changed git status", red=True)
        report.write_line(f"before:\n{before}after:\n{after}")
