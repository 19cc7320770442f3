"""BertViz's head view, made safe to embed and light to serve."""

import html
import json
import re
from pathlib import Path

from bertviz import head_view
from IPython.display import HTML

from .explorer import HEAD_COLOURS, escape_script

# BertViz returns: a require.js tag, its <div>, then this inline script.
INLINE = '<script type="text/javascript">'
PARAMS = "const params = "
FILTERS = [
    "All",
    "Sentence A -> Sentence A",
    "Sentence B -> Sentence B",
    "Sentence A -> Sentence B",
    "Sentence B -> Sentence A",
]
# BertViz writes each sentence-to-sentence filter out in full, doubling the
# weights on the page. With every layer on the page we write "All" only and
# cut the four filters from it in the browser, as BertViz would
# (bertviz_filters.js).
CUT_FILTERS = (Path(__file__).with_name("bertviz_filters.js")).read_text()
# Buttons under the view that open it on one layer and head.
PRESETS_JS = (Path(__file__).with_name("head_presets.js")).read_text()
# Keys, head numbers and marks for the view, once BertViz has drawn it.
ACCESS_JS = (Path(__file__).with_name("bertviz_access.js")).read_text()
# BertViz colours head i with d3's ten colours (head 10 as head 0): ours
# instead, the explorer's palette. params.head_numbers, where a page sets
# it, names the heads drawn (the live lab draws a group of them).
BERTVIZ_COLOURS = "headColors = d3.scaleOrdinal(d3.schemeCategory10);"
OUR_COLOURS = (
    "headColors = ((c) => (i) => c[((params.head_numbers || [])[i] ?? i)"
    f" % c.length])({json.dumps(HEAD_COLOURS)});"
)


def use_our_colours(script):
    """BertViz's head_view.js with the explorer's head colours."""
    if BERTVIZ_COLOURS not in script:
        raise ValueError(
            "BertViz's head_view.js no longer sets headColors as expected: "
            "update BERTVIZ_COLOURS in mhabook/views/bertviz_view.py"
        )
    return script.replace(BERTVIZ_COLOURS, OUR_COLOURS)


# BertViz's two menus follow a bare text label; give them accessible names
# that hold that visible text (an unnamed <select> fails WCAG 4.1.2).
SELECT_NAMES = {
    '<select id="layer">': '<select id="layer" aria-label="Layer">',
    '<select id="filter">': '<select id="filter" aria-label="Attention">',
}


def name_selects(html):
    """Give BertViz's layer and attention menus accessible names."""
    for bare, named in SELECT_NAMES.items():
        html = html.replace(bare, named)
    return html


def head_view_html(
    attention,
    tokens,
    sentence_b_start,
    layer,
    heads,
    decimals=3,
    all_layers=False,
    presets=(),
):
    """Return BertViz's head view as an IPython HTML object, open on `layer`.

    attention: (L, h, T, T), as from `model_attentions`. Only `layer` is
    serialised, or with all_layers=True every layer (so that the view's
    layer menu works); weights are rounded to `decimals` to keep pages
    small. presets: (label, layer, head) triples, or `Job`s (with a
    label, a layer and a head), each a button under the view that opens
    it on that head alone; presets serialise every layer.
    """
    if attention is None or len(attention) == 0:
        raise ValueError(
            "no attention weights to show: load the model with "
            "attn_implementation='eager' and call it with "
            "output_attentions=True"
        )
    num_layers, num_heads, T, _ = attention.shape
    if not 0 <= layer < num_layers:
        raise ValueError(
            f"layer {layer} is not in 0..{num_layers - 1}: use a layer "
            f"from 0 to {num_layers - 1}"
        )
    if len(tokens) != T:
        raise ValueError(
            f"{len(tokens)} tokens for {T} attention positions: pass one "
            f"token per position, the tokens of the input the weights are of"
        )
    presets = [
        (p.label, p.layer, p.head) if hasattr(p, "label") else p
        for p in presets
    ]
    all_layers = all_layers or bool(presets)
    for label, at_layer, head in presets:
        if not (0 <= at_layer < num_layers and 0 <= head < num_heads):
            raise ValueError(
                f"preset {label!r} names layer {at_layer}, head {head}; the "
                f"model has layers 0..{num_layers - 1} and heads "
                f"0..{num_heads - 1}: pick a layer and a head in those ranges"
            )
    if heads is not None and len(heads) == 0:
        raise ValueError(
            "heads=[] would show no head: pass None for every head, or a "
            "list such as [2]"
        )
    bad = [h for h in heads or [] if not 0 <= h < num_heads]
    if bad:
        raise ValueError(
            f"heads {bad} do not exist: the model has heads "
            f"0..{num_heads - 1}; pass heads from 0 to {num_heads - 1}"
        )
    include = list(range(num_layers)) if all_layers else [layer]
    layers = list(attention[:, None])  # L x (1, h, T, T)
    for shown in include:
        layers[shown] = layers[shown].double().round(decimals=decimals)
    cut = all_layers and sentence_b_start is not None
    view = head_view(
        layers,
        list(tokens),
        None if cut else sentence_b_start,
        layer=layer,
        heads=heads,
        include_layers=include,
        html_action="return",
    ).data
    if cut:
        view = cut_filters_in_browser(view, sentence_b_start)
    start, end = view.index(INLINE) + len(INLINE), view.rindex("</script>")
    script = use_our_colours(view[start:end]) + access_call(view)
    page = view[:start] + escape_script(script) + view[end:]
    view = HTML(name_selects(page) + preset_buttons(page, presets))
    view.layer, view.heads = layer, heads  # what it opens on, for the text
    return view


def access_call(view):
    """Script that gives `view` keys, head numbers and marks (ACCESS_JS),
    for the end of BertViz's own."""
    root = re.search(r'id="(bertviz-[0-9a-f]+)"', view).group(1)
    return (
        f"\n{ACCESS_JS}\nmhaBertvizAccess(document.getElementById("
        f'"{root}"), {json.dumps(HEAD_COLOURS)});\n'
    )


def preset_buttons(view, presets):
    """A row of buttons that open `view` on one head each, and their script."""
    if not presets:
        return ""
    root = re.search(r'id="(bertviz-[0-9a-f]+)"', view).group(1)
    buttons = "".join(
        f'<button type="button" data-layer="{int(layer)}" '
        f'data-head="{int(head)}" aria-pressed="false">'
        f"{html.escape(label)}</button>"
        for label, layer, head in presets
    )
    return (
        f'<div class="mha-head-presets" role="group" '
        f'aria-label="Open the view on a head">{buttons}</div>'
        f"<script>{PRESETS_JS}\nmhaHeadPresets(document.getElementById("
        f'"{root}"), document.currentScript.previousElementSibling);</script>'
    )


def cut_filters_in_browser(view, sentence_b_start):
    """Give a one-filter head view BertViz's sentence filters, cut from
    "All" by the page (CUT_FILTERS) rather than written out."""
    options = "".join(
        f'<option value="{i}">{name}</option>'
        for i, name in enumerate(FILTERS)
    )
    menu = '<select id="layer"></select>'
    view = view.replace(
        menu, f'{menu} Attention: <select id="filter">{options}</select>'
    )
    start = view.index(PARAMS) + len(PARAMS)
    end = view.index("; // HACK", start)
    call = f"mhaCutFilters({view[start:end]}, {int(sentence_b_start)})"
    view = view[:start] + call + view[end:]
    start = view.index(INLINE) + len(INLINE)
    return view[:start] + "\n" + CUT_FILTERS + view[start:]
