"""Let a reader open any figure full size: a tap or a click on it.

Sphinx extension. Each image a notebook drew (in _images/) is wrapped in a
link to its own file, so that a phone opens it at full resolution, to
zoom, and a desktop in a new tab. The image keeps its alt text, which
names the link.
"""

import re

IMAGE = re.compile(r'(<img\b[^>]*\bsrc="([^"]*_images/[^"]+)"[^>]*>)')


def link_figures(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if body and "_images/" in body:
        context["body"] = IMAGE.sub(
            r'<a class="mha-figure-link" href="\2">\1</a>', body
        )


def setup(app):
    app.connect("html-page-context", link_figures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
