"""Load on each page only the scripts and style sheets it uses, each once.

Sphinx extension. The Jupyter widget manager (about 3.5 MB) is dropped
from pages that show no widget in the static HTML (a notebook can hold
widget state for an output the page removes); require.js stays on the page
with the live lab, which draws BertViz's view. KaTeX's style sheet (its
formulas are typeset when the book is built) stays only on pages with
math, sphinx-design's only on pages with one of its dropdowns or cards.
tests/harness/page_budgets.json holds what each page may fetch.

Two small scripts go inline where they are needed: the search page's
summaries drop the TeX source of formulas, and a note marked
`:class: mha-file-only` shows only on a page opened from disk.
"""

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_SCRIPTS = ("bundled/require", "bundled/npm/@jupyter-widgets/")
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# The live lab (mhabook/views/live.py) draws BertViz's view: it needs
# require.js.
LIVE_VIEW = '<div class="mha-live"'
# sphinx-design's files: sphinx-design.min.css, design-tabs.js.
DESIGN = ("sphinx-design", "design-tabs")
# Sphinx's search summaries are the text of the page found: a formula's
# text would be its TeX source (KaTeX's MathML annotation) and KaTeX's
# drawing of it. Keep the MathML's plain symbols only.
SEARCH_WITHOUT_TEX = """document.addEventListener("DOMContentLoaded", () => {
  const toText = Search.htmlToText;
  Search.htmlToText = (html, anchor) => {
    const page = new DOMParser().parseFromString(html, "text/html");
    page.querySelectorAll(".katex-mathml annotation, .katex-html")
      .forEach((el) => el.remove());
    return toText(page.documentElement.outerHTML, anchor);
  };
});"""
# A note for readers who opened the page as a file (chapter.css hides
# .mha-file-only unless the page marks itself so).
FILE_ONLY = "mha-file-only"
MARK_FILE_PAGES = (
    'if (location.protocol === "file:") '
    'document.documentElement.classList.add("mha-file");'
)


def add_inline_scripts(app, pagename, templatename, context, doctree):
    """The search page's TeX-free summaries; the file:// marker where a
    page has a note for file:// readers."""
    if pagename == "search":
        app.add_js_file(None, body=SEARCH_WITHOUT_TEX)
    if FILE_ONLY in (context.get("body") or ""):
        app.add_js_file(None, body=MARK_FILE_PAGES)


def drop_unused_scripts(app, pagename, templatename, context, doctree):
    """The widget manager only on pages with a widget view, require.js
    also on the page with the live lab, KaTeX's and sphinx-design's style
    sheets only where they are used. Runs after Sphinx and myst-nb add
    them."""
    body = context.get("body") or ""
    has_math = 'class="katex' in body
    has_design = 'class="sd-' in body or " sd-" in body
    has_widget = WIDGET_VIEW in body
    has_live = LIVE_VIEW in body

    def needed(script):
        # Sphinx stores html_static_path files as "_static/<name>".
        name = str(script.filename or "").removeprefix("_static/")
        if name.startswith(DESIGN):
            return has_design
        if name.startswith("bundled/require"):
            return has_widget or has_live
        if name.startswith(WIDGET_SCRIPTS) or (
            script.attributes.get("type") == WIDGET_STATE
        ):
            return has_widget
        return True

    def needed_css(sheet):
        name = str(sheet.filename or "").removeprefix("_static/")
        if name.startswith("bundled/katex/"):
            return has_math
        if name.startswith(DESIGN):
            return has_design
        return True

    scripts = context.get("script_files", [])
    context["script_files"] = [s for s in scripts if needed(s)]
    sheets = context.get("css_files", [])
    context["css_files"] = [s for s in sheets if needed_css(s)]


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


def setup(app):
    # before the hooks below, which copy the list of scripts
    app.connect("html-page-context", add_inline_scripts, priority=400)
    app.connect("html-page-context", drop_duplicate_scripts)
    # After the math renderer's and myst-nb's hooks (both 500).
    app.connect("html-page-context", drop_unused_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
