"""Show a glossary term's definition when a reader hovers over its link.

Sphinx extension. Definitions are read from the {glossary} directive and
written into the built page as a data attribute of every term link; the
CSS in book/_static/chapter.css shows it on hover or keyboard focus. Static,
no script, no third-party host.
"""

import re

from docutils import nodes
from sphinx import addnodes

TERM_LINK = re.compile(
    r'(<a class="reference internal" [^>]*?)title="([^"]*)"'
    r'([^>]*><span class="xref std std-term">)'
)


def collect_definitions(app, doctree):
    env = app.env
    if not hasattr(env, "glossary_definitions"):
        env.glossary_definitions = {}
    for glossary in doctree.findall(addnodes.glossary):
        for item in glossary.findall(nodes.definition_list_item):
            definition = " ".join(
                item.next_node(nodes.definition).astext().split()
            )
            for term in item.findall(nodes.term):
                for anchor in term["ids"]:  # e.g. term-multi-head-attention
                    env.glossary_definitions[anchor] = definition


def merge_definitions(app, env, docnames, other):
    env.glossary_definitions = {
        **getattr(env, "glossary_definitions", {}),
        **getattr(other, "glossary_definitions", {}),
    }


def add_definitions(app, doctree, docname):
    definitions = getattr(app.env, "glossary_definitions", {})
    for reference in doctree.findall(nodes.reference):
        term = reference.next_node(nodes.inline)
        if term is None or "std-term" not in term["classes"]:
            continue
        anchor = reference.get("refid") or reference.get("refuri", "")
        definition = definitions.get(anchor.rpartition("#")[2])
        if definition:
            reference["reftitle"] = definition


def title_to_data(app, pagename, templatename, context, doctree):
    """A title would show a second, native tooltip: use a data attribute."""
    body = context.get("body")
    if body:
        context["body"] = TERM_LINK.sub(
            lambda m: (
                f'{m.group(1)}data-definition="{m.group(2)}"{m.group(3)}'
            ),
            body,
        )


def setup(app):
    app.connect("doctree-read", collect_definitions)
    app.connect("env-merge-info", merge_definitions)
    app.connect("doctree-resolved", add_definitions)
    app.connect("html-page-context", title_to_data)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
