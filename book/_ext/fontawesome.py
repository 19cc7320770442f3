"""Keep the theme's Font Awesome from watching the page for new icons.

Sphinx extension. The theme's Font Awesome replaces its <i> icons with SVG
when the page loads, then by default watches every change to the page for
new icons, searching the changed element's whole subtree each time. The
chapter's views (the head explorer, BertViz) add hundreds to thousands of
SVG elements one at a time, and each redraw would pay for those searches.
No icon is added after load (the theme adds one only for an announcement
banner or a version warning, neither used here).
"""

FONTAWESOME_CONFIG = "window.FontAwesomeConfig = {observeMutations: false};"


def setup(app):
    # Inline, in <head>: it runs before the theme's deferred fontawesome.js.
    app.add_js_file(None, body=FONTAWESOME_CONFIG)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
