"""Serve a built book on 127.0.0.1 and look at it in Debian's Chromium.

Shared by the browser tests, the page-weight command
(tests/benchmarks/page_weight.py) and `make screenshots`
(tests/tools/screenshots.py): how pages are served and opened, what each
page fetches, its weight budget (page_budgets.json, beside this file) and
the axe-core audit.
"""

import contextlib
import functools
import http.server
import json
import re
import shutil
import threading
from pathlib import Path

from chapter import BOOK, ROOT

# Features Playwright 1.65 disables on every launch (its
# chromiumSwitches.ts). Chromium reads only the last --disable-features, so
# ours repeats them; test_chromium.py checks that none is lost.
PLAYWRIGHT_DISABLED = [
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
]
# Headless Chromium still builds each window's toolbar: its omnibox loads
# its suggestion popups (two WebUI pages, from these three features) in a
# renderer of their own, for every browser context a test opens, which
# costs more CPU than most of our pages.
OMNIBOX_POPUPS = [
    "WebUIOmniboxPopup",
    "WebUIOmniboxAimPopup",
    "WebUIOmniboxFullPopup",
]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-features=" + ",".join(PLAYWRIGHT_DISABLED + OMNIBOX_POPUPS),
]
BUDGETS = Path(__file__).with_name("page_budgets.json")
AXE = BOOK / "_vendor" / "node_modules" / "axe-core" / "axe.min.js"
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SCREENSHOTS = ROOT / "_build" / "screenshots"
PHONE = {"width": 390, "height": 844}
# Theme problems axe reports that we do not fix, as (axe rule id, CSS
# selector of the theme's element): excluded only on that element.
THEME_EXCEPTIONS = [
    # pydata-sphinx-theme 0.17.1's colour-mode button is named "Color mode"
    # while its icon's title reads "Light", "Dark" or "System Settings";
    # the theme's script switches the icons, so no static name fits all.
    ("label-content-name-mismatch", "button.theme-switch-button"),
]

# What a fetched file is for, by where the build puts it (first match).
KINDS = [
    ("_static/bundled/katex/", "KaTeX"),
    ("_static/bundled/npm/@jupyter-widgets/", "widget manager"),
    ("_static/bundled/", "view scripts"),  # require.js, d3, jQuery
    ("_static/live/", "live lab"),  # its scripts and styles, before the button
    ("_static/chapter.", "chapter"),  # the book's own CSS and JS
    ("_static/glossary.", "chapter"),
    ("_static/", "theme"),
]


def kind_of(path):
    for prefix, kind in KINDS:
        if prefix in path:
            return kind
    return "page"  # the HTML itself, its figures


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(directory):
    """Serve `directory` on a free port of 127.0.0.1; yields its URL."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=directory)
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def launch(playwright):
    executable = shutil.which("chromium")
    if executable is None:
        raise RuntimeError(
            "Chromium is missing: apt-get install -y chromium (or make"
            " chromium)"
        )
    return playwright.chromium.launch(
        executable_path=executable, args=CHROMIUM_ARGS
    )


def settle(page):
    """Wait until the page's fonts (KaTeX's among them) have loaded."""
    page.evaluate("() => document.fonts.ready.then(() => true)")


def record_fetches(page):
    """Start counting what `page` fetches; returns the list it fills
    with finished requests (read their sizes once the page is idle)."""
    finished = []
    page.on("requestfinished", lambda request: finished.append(request))
    return finished


def weigh(requests, base):
    """Bytes of response bodies (uncompressed: the test server sends no
    encoding), by kind of file."""
    by_kind = {}
    for request in requests:
        path = request.url.removeprefix(base)
        size = request.sizes()["responseBodySize"]
        by_kind[kind_of(path)] = by_kind.get(kind_of(path), 0) + size
    return by_kind


def budget(name):
    """The bytes page `name` may fetch, and how that figure is made."""
    table = json.loads(BUDGETS.read_text())
    entry = table["pages"].get(name, table["default"])
    parts = {"theme": table["theme_kib"]}
    for need in entry["needs"]:
        parts[need] = table["needs_kib"][need]
    parts["content"] = entry["content_kib"]
    return sum(parts.values()) * 1024, parts


def audit(page, exceptions=()):
    """axe-core's WCAG 2.1 A and AA rules (experimental ones included) on
    the page as it is now. Returns the violations, each with the nodes
    that fail, less those an exception (rule id, CSS selector) covers."""
    page.add_script_tag(path=AXE)
    return page.evaluate(
        """async ([tags, exceptions]) => {
            const ids = axe.getRules(tags).map((rule) => rule.ruleId);
            const result = await axe.run(document, {
                runOnly: {type: "rule", values: ids},
                resultTypes: ["violations"],
                elementRef: true,
            });
            const excepted = (id, node) => exceptions.some(([rule, css]) =>
                rule === id && node.element.matches(css));
            return result.violations.map((v) => ({
                id: v.id,
                impact: v.impact,
                help: v.help,
                targets: v.nodes.filter((n) => !excepted(v.id, n))
                    .map((n) => n.target.join(" ")),
            })).filter((v) => v.targets.length);
        }""",
        [WCAG_TAGS, [list(e) for e in exceptions]],
    )


def harness_page(html_dir, name, body):
    """Write `body` as the page <html_dir>/<name>/index.html, with
    BertViz's CDN addresses rewritten as the book build does; returns its
    path relative to the site."""
    import sys

    sys.path.insert(0, str(BOOK / "_ext"))
    from vendored import CDN_REWRITES

    for url, local in CDN_REWRITES.items():
        body = body.replace(url, f"../_static/bundled/{local}")
    folder = html_dir / name
    folder.mkdir(exist_ok=True)
    (folder / "index.html").write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
        f"{body}</body></html>"
    )
    return f"{name}/index.html"


def open_page(browser, base, path, viewport=None, dark=False):
    """Open a page of the site in a fresh context (an empty cache);
    returns (page, problems). `viewport` defaults to a desktop's; `dark`
    is a reader whose system prefers dark colours."""
    context = browser.new_context(
        viewport=viewport or {"width": 1280, "height": 900},
        color_scheme="dark" if dark else "light",
    )
    return open_in(context, base, path)


def open_in(context, base, path):
    """Open a page of the site in `context`, with every request off the
    site aborted; returns (page, problems). Only those requests come to
    Python: Playwright matches the pattern, and lets the site's own pass
    without a round trip (a page makes dozens)."""
    problems = {"external": [], "failed": [], "errors": [], "dialogs": []}

    def abort(route):
        problems["external"].append(route.request.url)
        route.abort()

    page = context.new_page()
    page.route(re.compile(f"^(?!{re.escape(base)}/)"), abort)
    page.fetched = record_fetches(page)
    page.on(
        "console",
        lambda m: m.type == "error" and problems["errors"].append(m.text),
    )
    page.on("pageerror", lambda e: problems["errors"].append(str(e)))
    page.on("requestfailed", lambda r: problems["failed"].append(r.url))
    page.on(
        "response",
        lambda r: (
            r.status >= 400
            and problems["failed"].append(f"{r.status} {r.url}")
        ),
    )
    page.on(
        "dialog",
        lambda d: (problems["dialogs"].append(d.message), d.dismiss()),
    )
    page.goto(f"{base}/{path}", wait_until="networkidle")
    settle(page)
    return page, problems


def once_each(open_one):
    """open_one(path) -> (page, problems), called once per path, each page
    then given 300 ms to settle; the pages opened are in `.opened`."""
    opened = {}

    def load(path):
        if path not in opened:
            opened[path] = open_one(path)
            opened[path][0].wait_for_timeout(300)
        return opened[path]

    load.opened = opened
    return load


def serious(violations):
    """Critical and serious violations: (rule id, help, elements)."""
    return [
        (v["id"], v["help"], v["targets"])
        for v in violations
        if v["impact"] in ("critical", "serious")
    ]
