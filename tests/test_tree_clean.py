"""The suite writes only under ignored paths (_build/, caches): running it
leaves `git status` as it found it. Refreshing the README's images is an
explicit command, `make screenshots`."""

import pytest


def test_the_suite_leaves_git_clean(git_status_at_start):
    before, status = git_status_at_start
    if before is None:
        pytest.skip("not a git checkout: nothing to compare")
    assert status() == before, "the suite changed tracked or new files"
