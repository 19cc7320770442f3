"""Serve every script the book needs from the book itself.

Sphinx extension. The files come from the npm registry, pinned in
book/_vendor/package-lock.json and installed by `make book`; this hook
copies them to _static/bundled/ in the built site (where _config.yml
points KaTeX's style sheet and myst-nb's widget scripts) and rewrites the
CDN addresses that BertViz writes into its output to the same local
copies. sphinx-thebe's "Live Code" loads thebe from the same folder, and
says so on the page when it cannot reach Binder (live-code.js).

The copies stay out of a top-level _static/ on purpose: Jupyter Book
injects every file found there into every page.
"""

import re
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE.parent / "_vendor" / "node_modules"

# destination under _static/bundled/ -> source under node_modules/
ASSETS = {
    # KaTeX's style sheet and the fonts it names (the formulas themselves
    # are typeset at build time by sphinxcontrib-katex).
    "katex/katex.min.css": "katex/dist/katex.min.css",
    "katex/fonts": "katex/dist/fonts",
    "require.min.js": "requirejs/require.js",
    "d3.min.js": "d3/dist/d3.min.js",
    "jquery.min.js": "jquery/dist/jquery.min.js",
    # The widget manager keeps its npm path: require-paths.js (ours, copied
    # beside these) points require.js at it, and it finds its fonts there.
    "npm/@jupyter-widgets/html-manager/dist": (
        "@jupyter-widgets/html-manager/dist"
    ),
    # Live Code: thebe's bundle (its chunks load from beside it) and style.
    "thebe": "thebe/lib",
}
# What a copied folder leaves out: source maps and TypeScript types.
SKIPPED = shutil.ignore_patterns("*.map", "types")
OWN_FILES = ["require-paths.js"]
# sphinx-thebe loads thebe from unpkg.com when a reader presses Live Code.
THEBE_CDN = re.compile(r"https://unpkg\.com/thebe@[^\"']+/lib/index\.js")
LIVE_CODE_JS = (HERE / "live-code.js").read_text()

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


def serve_thebe(app, pagename, templatename, context, doctree):
    """Point sphinx-thebe at our copy of thebe, and on pages with Live Code
    add the script that says when Binder cannot be reached."""
    local = context["pathto"]("_static/bundled/thebe/index.js", 1)
    scripts = context.get("script_files", [])
    for i, script in enumerate(scripts):
        body = script.attributes.get("body") or ""
        if THEBE_CDN.search(body):
            attributes = {
                **script.attributes,
                "body": THEBE_CDN.sub(local, body),
            }
            scripts[i] = type(script)(
                script.filename, priority=script.priority, **attributes
            )
    body = context.get("body") or ""
    if "text/x-thebe-config" in body:
        # thebe would load MathJax from cdnjs to show LaTeX outputs, which
        # the book's notebooks do not print: no MathJax.
        context["body"] = body.replace(
            "predefinedOutput: true",
            "predefinedOutput: true, mathjaxUrl: false",
        )
        app.add_js_file(None, body=LIVE_CODE_JS)


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
            shutil.copytree(source, dest, dirs_exist_ok=True, ignore=SKIPPED)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)


def setup(app):
    app.connect("config-inited", check_installed)
    app.connect("html-page-context", rewrite_cdn_urls)
    # before page_scripts.py's hooks, which copy the list of scripts
    app.connect("html-page-context", serve_thebe, priority=400)
    app.connect("build-finished", copy_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
