"""Start-up hook for processes the tests run: install the network guard,
and put the Jupyter kernels the tests start behind the book build."""

import os

import netguard  # noqa: F401

# A Jupyter kernel starts a session of its own, and Linux's autogroup
# scheduler shares the cores between sessions whatever the nice of their
# processes: a test's kernel would take as much CPU as each of the build's.
# $MHA_SESSION_NICE (conftest.py sets it for the tests' processes, not for
# the build's) is the nice of such a session as a whole.
nice = os.environ.get("MHA_SESSION_NICE")
if nice and os.getsid(0) == os.getpid():
    try:
        with open("/proc/self/autogroup", "w") as autogroup:
            autogroup.write(nice)
    except OSError:  # no autogroup scheduler here
        pass
