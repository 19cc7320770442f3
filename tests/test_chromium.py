"""How the tests launch Chromium (browsing.CHROMIUM_ARGS)."""

import os
import re
from pathlib import Path

from browsing import OMNIBOX_POPUPS


def chromium_command_lines():
    """Command lines of the Chromium browser processes this process
    started (through Playwright's driver), not of their helpers."""
    parents, lines = {}, {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_text()
            line = (proc / "cmdline").read_bytes().decode().replace("\0", " ")
        except (OSError, ValueError):
            continue
        parents[int(proc.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        if "--remote-debugging-pipe" in line and "--type=" not in line:
            lines[int(proc.name)] = line

    def ours(pid):
        while pid > 1:
            if pid == os.getpid():
                return True
            pid = parents.get(pid, 1)
        return False

    return [line for pid, line in lines.items() if ours(pid)]


def test_our_disabled_features_keep_playwrights(browser):
    """Chromium reads only the last --disable-features: ours, which
    replaces the one Playwright puts first. It must hold all of it."""
    (line,) = chromium_command_lines()
    lists = re.findall(r"--disable-features=(\S+)", line)
    assert len(lists) == 2, lists
    playwrights, ours = (set(names.split(",")) for names in lists)
    assert playwrights <= ours, f"add {sorted(playwrights - ours)}"
    assert set(OMNIBOX_POPUPS) <= ours


def test_a_new_context_opens_no_omnibox_popup(browser):
    """Each browser context is a window, whose omnibox would load its
    suggestion popups as pages (chrome://omnibox-popup.top-chrome/) in a
    renderer of their own."""
    context = browser.new_context()
    context.new_page().set_content("<p>a page</p>")
    session = browser.new_browser_cdp_session()
    urls = [t["url"] for t in session.send("Target.getTargets")["targetInfos"]]
    session.detach()
    context.close()
    assert urls == ["about:blank"], urls
