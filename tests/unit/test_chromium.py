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
    replaces the one Playwright puts before it. It must hold all of it."""
    # a process the browser has just forked shows its command line too
    lines = sorted(set(chromium_command_lines()))
    assert len(lines) == 1, f"expected this process's browser: {lines}"
    *before, ours = [
        set(names.split(","))
        for names in re.findall(r"--disable-features=(\S+)", lines[0])
    ]
    assert before, "Playwright's own --disable-features is gone"
    for theirs in before:
        assert theirs <= ours, f"add {sorted(theirs - ours)}"
    assert set(OMNIBOX_POPUPS) <= ours


def omnibox_popups(browser, wait_ms):
    """The omnibox popup pages a new window loads within `wait_ms`."""
    context = browser.new_context()
    session = browser.new_browser_cdp_session()
    try:
        page = context.new_page()
        page.set_content("<p>a page</p>")
        for _ in range(wait_ms // 100):
            targets = session.send("Target.getTargets")["targetInfos"]
            popups = [t["url"] for t in targets if "omnibox" in t["url"]]
            if popups:
                return popups
            page.wait_for_timeout(100)
        return []
    finally:
        session.detach()
        context.close()


def test_a_new_context_opens_no_omnibox_popup(browser):
    """Each browser context is a window, whose omnibox may load its
    suggestion popups (chrome://omnibox-popup.top-chrome/) in a renderer
    of their own: with our flags it must not. (Earlier Debian Chromiums
    loaded them without the flags; 150.0 loads none even then.)"""
    assert omnibox_popups(browser, wait_ms=2000) == []
