"""Short answers that check themselves in the page, offline.

Sphinx extension. The ``check-answer`` directive puts a labelled input
under a question; book/_static/check-answer.js compares what the reader
types with the expected answer, says "right" or gives the hint in a
status line that screen readers announce, and leaves the worked answer
in its dropdown. The expected answer is a value the notebook glued
(``:glue: dk_512``, so it comes from executed code) or, where no code
computes it, written out (``:answer: 4``)::

    ```{check-answer}
    :glue: dk_512
    :label: d_k for d = 512 and h = 8
    :hint: Each head gets an equal share of the d dimensions.
    ```

Without JavaScript (and in print) the input stays hidden: the question
and its dropdown read as before.
"""

import html

from docutils import nodes
from docutils.parsers.rst import Directive, directives

SCRIPT = "check-answer.js"
STYLE = "check-answer.css"
MARK = 'class="mha-check"'


class CheckAnswerError(ValueError):
    pass


def answer_html(answer, label, hint, element_id):
    """The input's HTML, every value escaped. Hidden until the script
    shows it (so a page without JavaScript shows no dead input)."""
    esc = html.escape
    return (
        f'<form {MARK} data-answer="{esc(answer)}" data-hint="{esc(hint)}"'
        f" hidden>\n"
        f'<label for="{esc(element_id)}">{esc(label)}</label>\n'
        f'<input id="{esc(element_id)}" type="text" autocomplete="off"'
        f' spellcheck="false" aria-describedby="{esc(element_id)}-status">\n'
        f'<button type="submit">Check</button>\n'
        f'<p id="{esc(element_id)}-status" class="mha-check-status"'
        f' role="status" aria-live="polite"></p>\n'
        f"</form>\n"
    )


def glued_text(document, key):
    """The text/plain of a value the notebook glued (myst-nb)."""
    from myst_nb.ext.glue.utils import RetrievalError, retrieve_glue_data

    try:
        data = retrieve_glue_data(document, key).data
    except RetrievalError as exc:
        raise CheckAnswerError(
            f"check-answer: {exc} Glue it in a code cell of this notebook"
            " or give :answer: instead."
        ) from None
    text = data.get("text/plain", "")
    # Python's repr of a glued str keeps its quotes.
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    return text


class CheckAnswer(Directive):
    has_content = False
    option_spec = {
        "answer": directives.unchanged_required,
        "glue": directives.unchanged_required,
        "label": directives.unchanged_required,
        "hint": directives.unchanged_required,
    }

    def run(self):
        opts = self.options
        try:
            if ("answer" in opts) == ("glue" in opts):
                raise CheckAnswerError(
                    "check-answer needs exactly one of :answer: (the"
                    " answer written out) and :glue: (a glued name)."
                )
            for needed in ("label", "hint"):
                if not opts.get(needed, "").strip():
                    raise CheckAnswerError(
                        f"check-answer needs a :{needed}: (the"
                        f" {'input' if needed == 'label' else 'wrong answer'}"
                        f"'s text)."
                    )
            answer = opts.get("answer") or glued_text(
                self.state.document, opts["glue"].strip()
            )
            if not answer.strip():
                raise CheckAnswerError("check-answer: the answer is empty.")
        except CheckAnswerError as exc:
            return [
                self.state.document.reporter.error(str(exc), line=self.lineno)
            ]
        env = self.state.document.settings.env
        element_id = f"mha-check-{env.new_serialno('mha-check')}"
        text = answer_html(
            answer.strip(),
            opts["label"].strip(),
            opts["hint"].strip(),
            element_id,
        )
        return [nodes.raw("", text, format="html")]


def add_script(app, pagename, templatename, context, doctree):
    """The checking script and its style, only on pages with a question
    to check."""
    if MARK in (context.get("body") or ""):
        app.add_js_file(SCRIPT, defer="defer")
        app.add_css_file(STYLE)


def setup(app):
    app.add_directive("check-answer", CheckAnswer)
    # Before page_scripts.py's hooks, which replace the page's list.
    app.connect("html-page-context", add_script, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
