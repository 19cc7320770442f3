"""Rewrite the markup of docutils and myst-nb that axe-core faults.

Sphinx extension. The bibliography's entries get the list-item role their
list needs (docutils writes the deprecated doc-biblioentry), and myst-nb's
"show code cell" toggles are named by their visible text.
"""

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


def setup(app):
    app.connect("html-page-context", accessible_markup)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
