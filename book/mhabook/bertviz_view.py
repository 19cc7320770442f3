"""BertViz's head view, made safe to embed and light to serve."""

from bertviz import head_view
from IPython.display import HTML

# BertViz returns: a require.js tag, its <div>, then this inline script.
INLINE = '<script type="text/javascript">'


def escape_script(js):
    """Make text safe inside an inline <script>: a '</' or '<!--' in a
    string (say, a token) would otherwise end the script early."""
    return js.replace("</", "<\\/").replace("<!--", "<\\!--")


def head_view_html(
    attention,
    tokens,
    sentence_b_start,
    layer,
    heads,
    decimals=3,
    all_layers=False,
):
    """Return BertViz's head view as an IPython HTML object, open on `layer`.

    attention: (L, h, T, T), as from `model_attentions`. Only `layer` is
    serialised, or with all_layers=True every layer (so that the view's
    layer menu works); weights are rounded to `decimals` to keep pages
    small.
    """
    if attention is None or len(attention) == 0:
        raise ValueError(
            "no attention weights to show: load the model with "
            "attn_implementation='eager' and call it with "
            "output_attentions=True"
        )
    num_layers, num_heads, T, _ = attention.shape
    if not 0 <= layer < num_layers:
        raise ValueError(f"layer {layer} is not in 0..{num_layers - 1}")
    if len(tokens) != T:
        raise ValueError(f"{len(tokens)} tokens for {T} attention positions")
    include = list(range(num_layers)) if all_layers else [layer]
    layers = list(attention[:, None])  # L x (1, h, T, T)
    for shown in include:
        layers[shown] = layers[shown].double().round(decimals=decimals)
    view = head_view(
        layers,
        list(tokens),
        sentence_b_start,
        layer=layer,
        heads=heads,
        include_layers=include,
        html_action="return",
    ).data
    start, end = view.index(INLINE) + len(INLINE), view.rindex("</script>")
    html = view[:start] + escape_script(view[start:end]) + view[end:]
    return HTML(html)
