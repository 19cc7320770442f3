"""The head explorer: one self-contained HTML+JS view of several heads.

Like BertViz's views, the JavaScript lives in its own file (explorer.js)
with a placeholder, the data goes in as JSON, and each view gets a unique
element id. Nothing is loaded from anywhere: the view works in JupyterLab,
classic Notebook, VS Code, Colab and a static page alike.
"""

import json
import uuid
from pathlib import Path

import torch
from IPython.display import HTML, display

HERE = Path(__file__).parent
# The heads' colours, in the explorer and in BertViz's head view: the four
# of Okabe & Ito's colours that stand out at least 3:1 against the page in
# light mode (white) and in dark mode (#121212 and the theme's #14181e),
# Paul Tol's olive, and a grey, which stay apart in the three kinds of
# colour blindness. (Okabe & Ito's orange, sky blue and yellow are too
# light on white; black and Tol's wine vanish on a dark page.)
HEAD_PALETTE = [
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#999933",  # olive (Tol)
    "#808080",  # grey
]
# BERT's 12 heads: the colours run out at head 6, so heads 6 to 11 take
# them again with a mark (dashed arcs and lines, a hollow swatch) and a
# label (their name, their number in BertViz's squares).
HEAD_COLOURS = HEAD_PALETTE * 2


def escape_script(text):
    """Make text safe inside an inline <script>: a '</' or '<!--' in a
    string (say, a token) would otherwise end the script early."""
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def safe_json(value):
    """JSON that cannot end the <script> it is pasted into."""
    # ensure_ascii (the default) escapes U+2028 and friends too
    return escape_script(json.dumps(value))


def head_explorer(
    tokens, weights, head_names, query=0, title=None, html_action="view"
):
    """Show (or with html_action="return", return) the head explorer.

    weights: (h, T, T) attention weights, one map per head, rows summing
    to one; head_names: h names; query: the token selected at first, its
    position or the token itself.
    """
    weights = torch.as_tensor(weights, dtype=torch.float64)
    num_tokens = len(tokens)
    if weights.ndim != 3 or weights.shape[1:] != (num_tokens, num_tokens):
        raise ValueError(
            f"weights must be (heads, T, T) = (h, {num_tokens}, "
            f"{num_tokens}) for {num_tokens} tokens; got "
            f"{tuple(weights.shape)}: stack one (T, T) map per head"
        )
    if len(head_names) != len(weights):
        raise ValueError(
            f"{len(head_names)} head names for {len(weights)} heads: pass "
            f"one name per head, {len(weights)} names, or one map per name"
        )
    if len(weights) > len(HEAD_COLOURS):
        raise ValueError(
            f"at most {len(HEAD_COLOURS)} heads fit the palette; pass a "
            f"selection such as weights[:{len(HEAD_COLOURS)}]"
        )
    if isinstance(query, str):
        if query not in tokens:
            raise ValueError(
                f"query {query!r} is not one of the tokens: pass one of them "
                f"or its position, 0 to {num_tokens - 1}"
            )
        query = list(tokens).index(query)
    if not 0 <= query < num_tokens:
        raise ValueError(
            f"query {query} is not in 0..{num_tokens - 1}: pick a query "
            f"token from 0 to {num_tokens - 1}"
        )
    if html_action not in ("view", "return"):
        raise ValueError("html_action must be 'view' or 'return'")
    element_id = f"mha-explorer-{uuid.uuid4().hex}"
    params = {
        "id": element_id,
        "tokens": [str(token) for token in tokens],
        "heads": [
            {
                "name": str(name),
                "colour": colour,
                "weights": weights[h].round(decimals=3).tolist(),
            }
            for h, (name, colour) in enumerate(zip(head_names, HEAD_COLOURS))
        ],
        "query": query,
        "title": title or "Head explorer",
    }
    script = (HERE / "explorer.js").read_text()
    script = script.replace("EXPLORER_PARAMS", safe_json(params))
    style = (HERE / "explorer.css").read_text()
    view = HTML(
        f'<div id="{element_id}" class="mha-explorer-root">'
        f"<noscript>The head explorer needs JavaScript.</noscript></div>\n"
        f"<style>{style}</style>\n<script>{script}</script>"
    )
    if html_action == "return":
        return view
    display(view)
    return None


def layer_explorer(
    tokens, attention, query=0, title=None, keep=0, html_action="view"
):
    """The explorer on one layer's heads, attention (h, T, T), named
    "head 0", "head 1", ...

    A layer with more heads than there are colours shows the first ones,
    and always head `keep`.
    """
    attention = torch.as_tensor(attention)
    shown = list(range(min(len(attention), len(HEAD_COLOURS))))
    if keep not in shown:
        shown[-1] = keep
    names = [f"head {i}" for i in shown]
    return head_explorer(
        tokens, attention[shown], names, query, title, html_action
    )


def heads_panel(tokenizer, model, text, layer=0):
    """A panel for a running notebook: type a sentence, pick a layer, and
    see that layer's heads in the explorer (the model runs in the kernel).
    """
    last = model.config.num_hidden_layers - 1
    if isinstance(layer, bool) or layer not in range(last + 1):
        raise ValueError(
            f"layer is {layer!r}, but this model's layers are 0 to {last}: "
            f"pass one of them (layer={last} for the last)"
        )
    import ipywidgets as widgets

    limit = model.config.max_position_embeddings

    def show(text, layer):
        encoded = tokenizer(text, return_tensors="pt")
        if encoded["input_ids"].shape[1] > limit:
            print(f"That text is over {limit} tokens; shorten it.")
            return
        with torch.no_grad():
            result = model(**encoded, output_attentions=True)
        tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
        layer_explorer(
            tokens, result.attentions[layer][0], title=f"Layer {layer}"
        )

    return widgets.interactive(
        show,
        {"manual": True, "manual_name": "Show heads"},
        text=widgets.Text(value=text, description="Sentence"),
        layer=widgets.IntSlider(
            value=layer,
            min=0,
            max=last,
            description="Layer",
        ),
    )
