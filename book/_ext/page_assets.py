"""Serve every script the book needs from the book itself, once, and only
on the pages that need it.

Sphinx extension. The files come from the npm registry, pinned in
book/_vendor/package-lock.json and installed by `make book`; this hook
copies them to _static/bundled/ in the built site (where _config.yml points
MathJax and myst-nb's widget scripts) and rewrites the CDN addresses that
BertViz writes into its output to the same local copies.

Page weight: MathJax (about 1 MB) is dropped from pages without math, and
the Jupyter widget manager (about 3.5 MB) from pages that show no widget
in the static HTML (a notebook can hold widget state for an output the
page removes). tests/page_budgets.json holds what each page may fetch.

Accessibility: the bibliography's entries get the list-item role their
list needs (docutils writes the deprecated doc-biblioentry), and myst-nb's
"show code cell" toggles are named by their visible text.

It also serves the live lab (mhabook/live.py): it exports the bundled BERT
to ONNX (cached in _build/live/, redone only when the checkpoint changes)
and copies the model, its vocabulary, onnxruntime-web's one WebAssembly
build and the two view templates to _static/live/.

The copies stay out of a top-level _static/ on purpose: Jupyter Book
injects every file found there into every page.
"""

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE.parent / "_vendor" / "node_modules"

# destination under _static/bundled/ -> source under node_modules/
ASSETS = {
    "mathjax": "mathjax/es5",
    "require.min.js": "requirejs/require.js",
    "d3.min.js": "d3/dist/d3.min.js",
    "jquery.min.js": "jquery/dist/jquery.min.js",
    # The widget manager keeps its npm path: require-paths.js (ours, copied
    # beside these) points require.js at it, and it finds its fonts there.
    "npm/@jupyter-widgets/html-manager/dist": (
        "@jupyter-widgets/html-manager/dist"
    ),
}
OWN_FILES = ["require-paths.js"]

# What BertViz (and notebooks copying it) load from CDNs -> local file.
CDNJS = "https://cdnjs.cloudflare.com/ajax/libs"
CDN_REWRITES = {
    f"{CDNJS}/require.js/2.3.6/require.min.js": "require.min.js",
    f"{CDNJS}/d3/5.7.0/d3.min": "d3.min",
    f"{CDNJS}/jquery/2.0.0/jquery.min": "jquery.min",
}


def check_installed(app, config):
    sources = [*ASSETS.values(), "onnxruntime-web/dist"]
    missing = [src for src in sources if not (NODE_MODULES / src).exists()]
    if missing:
        raise RuntimeError(
            f"vendored assets missing from {NODE_MODULES}: {missing}. "
            f"Run `make book` (it runs `npm ci` in book/_vendor)."
        )


def rewrite_cdn_urls(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if not body:
        return
    vendor = context["pathto"]("_static/bundled", 1)
    for url, local in CDN_REWRITES.items():
        body = body.replace(url, f"{vendor}/{local}")
    context["body"] = body


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_SCRIPTS = ("bundled/require", "bundled/npm/@jupyter-widgets/")
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# The live lab (mhabook/live.py) draws BertViz's view, which needs require.js.
LIVE_VIEW = '<div class="mha-live"'


def drop_unused_scripts(app, pagename, templatename, context, doctree):
    """MathJax only on pages with math, the widget manager only on pages
    with a widget view, require.js also on the page with the live lab.
    Runs after Sphinx and myst-nb add them."""
    body = context.get("body") or ""
    has_math = 'class="math' in body
    has_widget = WIDGET_VIEW in body
    has_live = LIVE_VIEW in body
    mathjax = app.config.mathjax_path

    def needed(script):
        # Sphinx stores html_static_path files as "_static/<name>".
        name = str(script.filename or "").removeprefix("_static/")
        if name == mathjax:
            return has_math
        if name.startswith("bundled/require"):
            return has_widget or has_live
        if name.startswith(WIDGET_SCRIPTS) or (
            script.attributes.get("type") == WIDGET_STATE
        ):
            return has_widget
        return True

    scripts = context.get("script_files", [])
    context["script_files"] = [s for s in scripts if needed(s)]


# Markup of docutils and myst-nb that axe faults -> what we write instead.
ACCESSIBLE_MARKUP = {
    # A role="list" needs role="listitem" children (aria-required-children).
    'role="doc-biblioentry"': 'role="listitem"',
    # The label hid the visible "Show code cell content" (WCAG 2.5.3).
    '<summary aria-label="Toggle hidden content">': "<summary>",
}


def accessible_markup(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if body:
        for faulted, fixed in ACCESSIBLE_MARKUP.items():
            body = body.replace(faulted, fixed)
        context["body"] = body


def drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    """sphinx-thebe 0.3.1 and sphinx-togglebutton register their inline
    configuration scripts twice (once with filename None, once ''), and a
    second `const THEBE_JS_URL` is a SyntaxError in the page."""
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = (script.filename or "", str(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def copy_assets(app, exception):
    if exception or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "bundled"
    target.mkdir(parents=True, exist_ok=True)
    for name in OWN_FILES:
        shutil.copyfile(HERE / name, target / name)
    for name, src in ASSETS.items():
        source, dest = NODE_MODULES / src, target / name
        if source.is_dir():
            shutil.copytree(source, dest, dirs_exist_ok=True)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)


def copy_live_lab(target):
    """The live lab's files, into `target` (_static/live of the site)."""
    sys.path.insert(0, str(HERE.parent))
    import bertviz

    from mhabook import live

    target.mkdir(parents=True, exist_ok=True)
    for name, source in live.site_files(live.exported()).items():
        shutil.copyfile(source, target / name)
    # BertViz's template, its CDN addresses pointed at our copies:
    # live.js replaces MHA_BUNDLED with the address of _static/bundled.
    head_view = (Path(bertviz.__file__).parent / "head_view.js").read_text()
    for url, local in CDN_REWRITES.items():
        head_view = head_view.replace(url, f"MHA_BUNDLED/{local}")
    if "cdnjs" in head_view:
        raise RuntimeError("head_view.js still loads from a CDN")
    (target / "head_view.js").write_text(head_view)


def copy_live_assets(app, exception):
    if exception or app.builder.format != "html":
        return
    copy_live_lab(Path(app.outdir) / "_static" / "live")


# The theme's Font Awesome replaces its <i> icons with SVG when the page
# loads, then by default watches every change to the page for new icons,
# searching the changed element's whole subtree each time. The chapter's
# views (the head explorer, BertViz) add hundreds to thousands of SVG
# elements one at a time: the live explorer spent about 155 ms per redraw
# at 32 tokens in those searches (README, "The live lab in the browser").
# No icon is added after load (the theme adds one only for an announcement
# banner or a version warning, neither used here).
FONTAWESOME_CONFIG = "window.FontAwesomeConfig = {observeMutations: false};"


def setup(app):
    # Inline, in <head>: it runs before the theme's deferred fontawesome.js.
    app.add_js_file(None, body=FONTAWESOME_CONFIG)
    app.connect("config-inited", check_installed)
    app.connect("html-page-context", rewrite_cdn_urls)
    app.connect("html-page-context", drop_duplicate_scripts)
    app.connect("html-page-context", accessible_markup)
    # After Sphinx's MathJax hook and myst-nb's widget scripts (both 500).
    app.connect("html-page-context", drop_unused_scripts, priority=900)
    app.connect("build-finished", copy_assets)
    app.connect("build-finished", copy_live_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
