"""The clean-tree check (tests/harness/cleantree.py) fails a run that
leaves a new file in a git checkout, and passes one that does not."""

import subprocess

pytest_plugins = ["pytester"]


def run_in_a_checkout(pytester, test_source):
    subprocess.run(["git", "init", "-q", str(pytester.path)], check=True)
    (pytester.path / ".gitignore").write_text("__pycache__/\n")
    pytester.makepyfile(test_source)
    return pytester.runpytest("-p", "cleantree")


def test_a_run_that_writes_a_file_fails(pytester):
    result = run_in_a_checkout(
        pytester, "def test_writes():\n    open('new.txt', 'w').close()\n"
    )
    assert result.ret == 1
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*the suite changed git status*", "*new.txt"])


def test_a_run_that_writes_nothing_passes(pytester):
    result = run_in_a_checkout(pytester, "def test_reads():\n    pass\n")
    assert result.ret == 0
    result.stdout.no_fnmatch_line("*changed git status*")
