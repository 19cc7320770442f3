"""The students' edition: the book without its solutions.

Sphinx extension. With the setting `mha_students` true (or the
environment variable MHA_STUDENTS=1, which `make book-students` sets),
every admonition titled "Solution" or "Answer" leaves the page, with the
code cells hidden right before it (`hide-cell`: a solution's code), and a
line says where they are. The notebooks still run whole, so a solution
that breaks still breaks the build. Without the setting, nothing changes.

The students' build keeps its pages in its own folder but shares the
execution cache of `make book` (_build/.jupyter_cache), so it runs no
notebook that the teacher's edition has already run.
"""

import os
from pathlib import Path

from docutils import nodes

# An admonition with one of these titles is a solution.
SOLUTION_TITLES = {"solution", "answer"}
NOTES = {
    "solution": "Solutions are in the teacher's edition.",
    "answer": "The worked answer is in the teacher's edition.",
}
NOTE_CLASS = "mha-teacher-note"


def students_wanted(config):
    env = os.environ.get("MHA_STUDENTS", "").strip().lower()
    return bool(config.mha_students) or env not in ("", "0", "false", "no")


def solution_kind(node):
    """ "solution" or "answer" for a solution's admonition, else None."""
    if not isinstance(node, nodes.admonition) or not node.children:
        return None
    title = node.children[0]
    if not isinstance(title, nodes.title):
        return None
    kind = title.astext().strip().lower()
    return kind if kind in SOLUTION_TITLES else None


def is_hidden_code_cell(node):
    return (
        isinstance(node, nodes.container)
        and node.get("nb_element") == "cell_code"
        and "tag_hide-cell" in node.get("classes", [])
    )


def remove_solutions(doctree):
    """Drop solutions (and their hidden code cells) from a doctree; a note
    takes each one's place. Returns how many were removed."""
    removed = 0
    for admonition in list(doctree.findall(solution_kind)):
        kind = solution_kind(admonition)
        parent = admonition.parent
        index = parent.index(admonition)
        while index > 0 and is_hidden_code_cell(parent[index - 1]):
            parent.remove(parent[index - 1])
            index -= 1
        note = nodes.paragraph("", "", nodes.emphasis(text=NOTES[kind]))
        note["classes"].append(NOTE_CLASS)
        parent.replace(admonition, note)
        removed += 1
    return removed


def on_doctree_read(app, doctree):
    if students_wanted(app.config):
        remove_solutions(doctree)


def share_cache(app, config):
    """The students' build reads the notebooks `make book` executed."""
    if "nb_execution_cache_path" not in config:  # without myst-nb
        return
    if students_wanted(config) and not config.nb_execution_cache_path:
        config.nb_execution_cache_path = str(
            Path(app.srcdir, "_build", ".jupyter_cache")
        )


def setup(app):
    app.add_config_value("mha_students", False, "env")
    app.connect("config-inited", share_cache)
    app.connect("doctree-read", on_doctree_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
