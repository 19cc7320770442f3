"""The build hooks (book/_ext/page_scripts.py, accessible_markup.py) keep
pages light and their markup accessible; BertViz's menus get names. Fast
checks on small inputs; test_pages.py checks the built pages themselves."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from sphinx.builders.html._assets import _CascadingStyleSheet, _JavaScript

from chapter import BOOK
from mhabook.views.bertviz_view import head_view_html

sys.path.insert(0, str(BOOK / "_ext"))
import accessible_markup  # noqa: E402
import page_scripts  # noqa: E402

KATEX = "_static/bundled/katex/katex.min.css"
DESIGN = "_static/sphinx-design.min.css"
APP = SimpleNamespace(config=SimpleNamespace())
# As Sphinx lists them in a page's script_files.
WIDGETS = [
    _JavaScript("_static/bundled/require.min.js"),
    _JavaScript("_static/bundled/require-paths.js"),
    _JavaScript(
        "_static/bundled/npm/@jupyter-widgets/html-manager/dist/embed-amd.js"
    ),
    _JavaScript(
        None,
        type="application/vnd.jupyter.widget-state+json",
        body="{}",
    ),
]
THEME = [
    _JavaScript("_static/scripts/bootstrap.js"),
    _JavaScript("_static/doctools.js"),
]


def kept(body):
    context = {
        "body": body,
        "script_files": [*THEME, *WIDGETS],
        "css_files": [
            _CascadingStyleSheet(KATEX),
            _CascadingStyleSheet(DESIGN),
        ],
    }
    page_scripts.drop_unused_scripts(APP, "page", "page.html", context, None)
    return [s.filename for s in context["script_files"]]


def sheets(body):
    context = {
        "body": body,
        "script_files": [],
        "css_files": [
            _CascadingStyleSheet(KATEX),
            _CascadingStyleSheet(DESIGN),
        ],
    }
    page_scripts.drop_unused_scripts(APP, "page", "page.html", context, None)
    return [s.filename for s in context["css_files"]]


def test_a_plain_page_gets_no_widget_manager_and_no_katex_style():
    assert kept("<p>text</p>") == [s.filename for s in THEME]
    assert sheets("<p>text</p>") == []


def test_a_page_with_math_gets_katex_style_only():
    body = '<span class="math"><span class="katex">x</span></span>'
    assert kept(body) == [s.filename for s in THEME]
    assert sheets(body) == [KATEX]


def test_a_page_with_a_dropdown_gets_sphinx_design_style():
    body = '<details class="sd-sphinx-override sd-dropdown">x</details>'
    assert sheets(body) == [DESIGN]


def test_a_page_showing_a_widget_gets_the_widget_manager():
    body = (
        '<script type="application/vnd.jupyter.widget-view+json">'
        '{"model_id": "1"}</script>'
    )
    assert kept(body) == [s.filename for s in THEME + WIDGETS]


def test_the_live_lab_gets_require_js_but_not_the_widget_manager():
    body = '<div class="mha-live" data-params="{}"></div>'
    assert kept(body) == [s.filename for s in THEME + WIDGETS[:2]]


def test_bibliography_entries_are_list_items():
    context = {
        "body": '<div role="list" class="citation-list">'
        '<div class="citation" id="a" role="doc-biblioentry">A</div></div>'
    }
    accessible_markup.accessible_markup(None, "refs", "", context, None)
    assert "doc-biblioentry" not in context["body"]
    assert 'id="a" role="listitem"' in context["body"]


def test_code_cell_toggles_are_named_by_their_visible_text():
    context = {
        "body": '<summary aria-label="Toggle hidden content">\n'
        '<p class="collapsed admonition-title">Show code cell content</p>'
    }
    accessible_markup.accessible_markup(None, "page", "", context, None)
    assert context["body"].startswith("<summary>\n")


@pytest.mark.parametrize(
    "menu, name", [("layer", "Layer"), ("filter", "Attention")]
)
def test_bertviz_menus_have_names_holding_their_visible_label(menu, name):
    weights = torch.softmax(torch.randn(2, 2, 6, 6), -1)
    tokens = ["[CLS]", "a", "[SEP]", "b", "c", "[SEP]"]
    html = head_view_html(weights, tokens, 3, layer=0, heads=[0]).data
    assert f'<select id="{menu}" aria-label="{name}">' in html
    assert f"{name}: <select" in html  # the visible label it repeats


def test_the_theme_macros_differ_from_the_pinned_theme_by_one_script():
    """book/_templates/static/webpack-macros.html is the theme's own, less
    the Font Awesome script: a theme upgrade that changes it fails here."""
    import pydata_sphinx_theme

    theme = (
        Path(pydata_sphinx_theme.__file__).parent
        / "theme/pydata_sphinx_theme/static/webpack-macros.html"
    ).read_text()
    ours = (BOOK / "_templates/static/webpack-macros.html").read_text()

    def body(text):
        lines = text.split("-->", 1)[1].splitlines()
        return [line for line in lines if "fontawesome" not in line]

    assert body(ours) == [
        line for line in body(theme) if "So that users can add" not in line
    ]
    assert "fontawesome.js" in theme and "fontawesome" not in body(ours)


SLOW_SERVER = """
import socket, sys, time
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sys.argv[1])  # the socket file exists from here on
time.sleep(0.5)  # ... but connects are refused until listen()
server.listen()
connection, _ = server.accept()
connection.recv(1)
"""


def test_the_katex_server_is_reached_even_when_it_listens_late(tmp_path):
    import katex_start
    from sphinxcontrib.katex import KaTeXServer

    class SlowServer(KaTeXServer):
        @classmethod
        def build_command(cls, socket=None, port=None):
            return [sys.executable, "-c", SLOW_SERVER, str(socket)]

    process, sock = katex_start.start_server_process(SlowServer, tmp_path, 10)
    try:
        assert sock.getpeername() == str(tmp_path / "katex.sock")
    finally:
        sock.close()
        process.wait(timeout=10)
        process.stdin.close()
        process.stdout.close()
