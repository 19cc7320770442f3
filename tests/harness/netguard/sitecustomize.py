"""Start-up hook for processes the tests run: install the network guard."""

import netguard  # noqa: F401
