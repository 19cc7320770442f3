"""The build hooks behind the pages' smaller fixes (book/_ext): Live Code
served from the site, TeX-free search summaries, the note for pages
opened from disk, and the live lab's head view in the book's colours.
Fast checks on small inputs; tests/browser/ checks the built pages."""

import shutil
import sys

from sphinx.builders.html._assets import _JavaScript

from chapter import BOOK

sys.path.insert(0, str(BOOK / "_ext"))
import live_lab  # noqa: E402
import page_scripts  # noqa: E402
import vendored  # noqa: E402

THEBE_CONFIG = (
    'const THEBE_JS_URL = "https://unpkg.com/thebe@0.8.2/lib/index.js";'
    ' const thebe_selector = ".thebe,.cell"'
)
# as sphinx-thebe writes it into a page's body
PAGE_CONFIG = (
    '<script type="text/x-thebe-config">\n{\n    requestKernel: true,\n'
    "    predefinedOutput: true\n}\n</script>"
)


class App:
    """Sphinx's app, as far as the hooks use it: scripts added to a page."""

    def __init__(self):
        self.added = []

    def add_js_file(self, filename, **attributes):
        self.added.append((filename, attributes))


def page(body, scripts=()):
    return {
        "body": body,
        "script_files": list(scripts),
        "pathto": lambda name, resource: "../" + name,
    }


def test_live_code_loads_thebe_from_the_site():
    app = App()
    context = page(PAGE_CONFIG, [_JavaScript(None, body=THEBE_CONFIG)])
    vendored.serve_thebe(app, "book/one_head", "page.html", context, None)
    (script,) = context["script_files"]
    assert "unpkg" not in script.attributes["body"]
    assert '"../_static/bundled/thebe/index.js"' in script.attributes["body"]
    assert "mathjaxUrl: false" in context["body"]  # no MathJax from cdnjs
    assert app.added == [(None, {"body": vendored.LIVE_CODE_JS})]


def test_a_page_without_live_code_gets_no_script():
    app = App()
    context = page("<p>text</p>", [_JavaScript(None, body=THEBE_CONFIG)])
    vendored.serve_thebe(app, "book/notation", "page.html", context, None)
    assert app.added == []


def test_thebe_is_copied_without_maps_or_types(tmp_path):
    source = tmp_path / "lib"
    (source / "types").mkdir(parents=True)
    for name in ("index.js", "12.index.js", "index.js.map", "thebe.css"):
        (source / name).write_text("x")
    (source / "types" / "index.d.ts").write_text("x")
    shutil.copytree(source, tmp_path / "out", ignore=vendored.SKIPPED)
    copied = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert copied == ["12.index.js", "index.js", "thebe.css"]
    assert vendored.ASSETS["thebe"] == "thebe/lib"


def test_the_search_page_alone_gets_tex_free_summaries():
    app = App()
    page_scripts.add_inline_scripts(app, "search", "search.html", {}, None)
    assert app.added == [(None, {"body": page_scripts.SEARCH_WITHOUT_TEX})]
    app = App()
    page_scripts.add_inline_scripts(
        app, "book/one_head", "page.html", page("<p>x</p>"), None
    )
    assert app.added == []


def test_a_note_for_file_readers_gets_its_marker():
    app = App()
    body = '<div class="admonition note mha-file-only">...</div>'
    page_scripts.add_inline_scripts(
        app, "book/labs", "page.html", page(body), None
    )
    assert app.added == [(None, {"body": page_scripts.MARK_FILE_PAGES})]
    assert "location.protocol" in page_scripts.MARK_FILE_PAGES


def test_the_live_head_view_has_the_books_colours_and_keys():
    from mhabook.views.bertviz_view import BERTVIZ_COLOURS

    template = f"const params = PYTHON_PARAMS;\n    {BERTVIZ_COLOURS}\n"
    patched = live_lab.with_access(template)
    assert "schemeCategory10" not in patched
    assert "mhaBertvizAccess(document.getElementById(" in patched
    assert "PYTHON_PARAMS.head_numbers" in patched
