"""Figures for the chapter. Every function returns its Figure or Axes."""

import base64
import io

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from cycler import cycler
from IPython import get_ipython
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from PIL import Image

# Okabe & Ito's colour-blind-safe palette (black left out: it is the text).
PALETTE = [
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#F0E442",  # yellow
]
CMAP = "viridis"  # perceptually uniform and colour-blind safe


def use_chapter_style():
    """One look for every figure in the chapter."""
    mpl.rcParams.update(
        {
            "axes.prop_cycle": cycler(color=PALETTE),
            "image.cmap": CMAP,
            # Drawn for the column: at most 4.8 in (480 px) wide, so that a
            # 390-px phone shows a figure at three quarters of its size,
            # with no text under 9 pt (9 px there, 12.5 px on a desktop).
            "figure.dpi": 100,
            "savefig.dpi": 150,
            "savefig.pad_inches": 0.02,  # the inline backend's tight box
            "figure.figsize": (4.8, 3.2),
            "font.size": 10,
            "axes.titlesize": 10,
            "axes.labelsize": 10,
            "xtick.labelsize": 9,
            "ytick.labelsize": 9,
            "legend.fontsize": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "svg.hashsalt": "mha-chapter",  # same SVG bytes on every build
        }
    )
    shell = get_ipython()  # None outside IPython and Jupyter
    if shell is not None:
        # Load the backend now: the inline one sets IPython's PNG formatter
        # as it loads (at the first figure), which would replace this one.
        plt.switch_backend(mpl.get_backend())
        png = shell.display_formatter.formatters["image/png"]
        png.for_type(Figure, page_png)


def page_png(fig):
    """A figure as the page shows it, for IPython's PNG formatter.

    Drawn at twice its size, so that it stays sharp on a high-density
    screen, and shown at its size (the width in the metadata). In 256
    colours, which a figure's flat colours and anti-aliased edges fit:
    the file is smaller than a full-colour PNG at its size.
    """
    drawn = io.BytesIO()
    fig.savefig(drawn, format="png", dpi=2 * fig.dpi, bbox_inches="tight")
    image = Image.open(drawn).convert("RGB")
    image = image.quantize(256, dither=Image.Dither.NONE)  # median cut
    saved = io.BytesIO()
    image.save(saved, format="png", optimize=True)
    png = base64.b64encode(saved.getvalue()).decode("ascii")
    return png, {"width": image.width // 2}


def _as_array(weights):
    if hasattr(weights, "detach"):
        weights = weights.detach().cpu().numpy()
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 2:
        raise ValueError(
            f"expected a 2-d array (one attention map, or one layer x head "
            f"grid), got shape {weights.shape}; "
            + (
                "select a batch item and a head first"
                if weights.ndim > 2
                else "make it 2-d, such as x.view(1, -1) for one row"
            )
        )
    return weights


def attention_heatmap(weights, tokens, ax=None, title=None, annotate=True):
    """Draw one attention map: rows are queries, columns are keys."""
    if isinstance(tokens, str):
        raise ValueError(
            f"tokens is one string, {tokens!r}: pass a list of tokens, "
            f"one per row of the map, such as text.split()"
        )
    weights = _as_array(weights)
    if weights.shape != (len(tokens), len(tokens)):
        raise ValueError(
            f"{len(tokens)} tokens need a {len(tokens)}x{len(tokens)} map, "
            f"got {weights.shape}: pass one label per row of the map (the "
            f"tokens the map was computed on), or, after changing the text, "
            f"re-run the cells that compute the map from it"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(3.6, 3.2))
    image = ax.imshow(weights, vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(tokens)), tokens, rotation=45, ha="right")
    ax.set_yticks(range(len(tokens)), tokens)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.spines[:].set_visible(False)
    if annotate:
        for (i, j), w in np.ndenumerate(weights):
            colour = "black" if w > 0.6 else "white"
            ax.text(
                j,
                i,
                f"{w:.2f}",
                ha="center",
                va="center",
                fontsize=9,
                color=colour,
            )
    if title:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def attention_heatmaps(maps, tokens, titles):
    """Several attention maps, one above the other; returns the Figure."""
    if isinstance(titles, str):
        raise TypeError(
            f"titles is one string, {titles!r}: pass a list of titles, one "
            f"per map, such as [{titles!r}, ...]"
        )
    if len(maps) != len(titles):
        raise ValueError(
            f"{len(maps)} maps and {len(titles)} titles: give one title per "
            f"map"
        )
    fig, axes = plt.subplots(
        len(maps), 1, figsize=(4.2, 3.5 * len(maps)), layout="constrained"
    )
    for ax, weights, title in zip(np.atleast_1d(axes), maps, titles):
        attention_heatmap(weights, tokens, ax=ax, title=title)
    return fig


def grid_heatmap(
    grids, titles, colorbar_label, fmt="{:.2f}", centre=None, mark=None
):
    """Layer x head grids of numbers, one above the other, on one colour
    scale.

    grids: one (layers, heads) array or a list of them; titles to match.
    centre: a value to show as neutral, on a diverging scale symmetric
    around it (say 0.5 for a share that chance puts at one half); mark: a
    (layer, head) cell to outline in every grid.
    """
    if isinstance(titles, str):
        grids, titles = [grids], [titles]
    grids = [_as_array(grid) for grid in grids]
    layers, heads = grids[0].shape
    top = max(max(grid.max() for grid in grids), 1e-9)
    low, cmap = 0.0, CMAP
    if centre is not None:
        reach = max(max(np.abs(grid - centre).max() for grid in grids), 1e-9)
        low, top, cmap = centre - reach, centre + reach, "PuOr_r"
    cell = min(0.36, 3.2 / heads)  # in: the grid fits 4.8 in with its bar
    fig, axes = plt.subplots(
        len(grids),
        1,
        squeeze=False,
        layout="constrained",
        figsize=(heads * cell + 1.6, len(grids) * (layers * cell + 0.9)),
    )
    for ax, grid, title in zip(axes[:, 0], grids, titles):
        image = ax.imshow(grid, vmin=low, vmax=top, cmap=cmap)
        ax.set_xticks(range(heads), range(heads))
        ax.set_yticks(range(layers), range(layers))
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_title(title)
        ax.spines[:].set_visible(False)
        for (i, j), v in np.ndenumerate(grid):
            text = fmt.format(v)
            if cell < 0.33:  # ".42" fits a narrow cell where "0.42" does not
                text = (
                    text.replace("0.", ".", 1)
                    if "0." in text[:2]
                    else (text.replace("-0.", "-.", 1))
                )
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=9,
                color=_text_colour(v, low, top, centre),
            )
        if mark is not None:
            ax.add_patch(
                mpl.patches.Rectangle(
                    (mark[1] - 0.5, mark[0] - 0.5),
                    1,
                    1,
                    fill=False,
                    ec="black",
                    lw=2.5,
                )
            )
    fig.colorbar(image, ax=axes[:, 0].tolist(), label=colorbar_label)
    return fig


def _text_colour(value, low, top, centre):
    """Black on light cells, white on dark ones."""
    if centre is None:
        return "black" if value > 0.6 * top else "white"
    return "white" if abs(value - centre) > 0.6 * (top - centre) else "black"


def _box(ax, x, y, w, h, text, colour):
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y - h / 2),
            w,
            h,
            boxstyle="round,pad=0.02",
            fc=colour,
            ec="#333333",
            lw=0.8,
            alpha=0.9,
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=9)


def _arrow(ax, start, end):
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=8,
            lw=0.7,
            color="#333333",
        )
    )


SHAPE_FLOW_HEADS = 12  # heads drawn at most; more: 0 to 9, a gap, the last


def shape_flow(batch, tokens, hidden, num_heads):
    """Follow the tensor shapes through one multi-head attention layer,
    top to bottom: the input, the heads (two to a row), their
    concatenation and the output projection. Sizes that do not make a
    layer (a width that does not split into the heads) are refused; of
    more than 12 heads, heads 0 to 9 and the last are drawn."""
    from ..layers.many_heads import head_dim_for

    sizes = {"batch": batch, "tokens": tokens}
    for name, size in sizes.items():
        if (
            isinstance(size, bool)
            or not hasattr(size, "__index__")
            or size < 1
        ):
            raise ValueError(
                f"{name} is {size!r}: give a whole number of at least 1"
            )
    head_dim = head_dim_for(hidden, num_heads)  # refuses what won't split
    x_shape = f"[{batch}, {tokens}, {hidden}]"
    h_shape = f"[{batch}, {tokens}, {head_dim}]"
    shown = list(range(num_heads))
    if num_heads > SHAPE_FLOW_HEADS:
        shown = list(range(SHAPE_FLOW_HEADS - 2)) + [None, num_heads - 1]
    rows = (len(shown) + 1) // 2
    height = rows + 4.2  # in row units: input, title, heads, concat, output
    fig, ax = plt.subplots(figsize=(4.8, 0.42 * height + 0.2))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, height)
    ax.axis("off")
    top = height - 0.5
    _box(ax, 5.0, top, 6.4, 0.7, f"hidden_state {x_shape}", PALETTE[4])
    ax.text(
        5.0,
        top - 1.05,
        f"{num_heads} x AttentionHead({hidden}, {head_dim})",
        ha="center",
        va="center",
        fontsize=9,
    )
    concat_y, out_y = 1.6, 0.5
    heads_top, heads_low = top - 1.35, top - 1.45 - rows
    ax.add_patch(
        FancyBboxPatch(
            (0.15, heads_low),
            9.7,
            heads_top - heads_low,
            boxstyle="round,pad=0.05",
            fc="none",
            ec="#777777",
            ls="--",
            lw=0.8,
        )
    )
    for slot, i in enumerate(shown):
        x = 2.6 if slot % 2 == 0 else 7.4
        y = top - 1.9 - slot // 2
        if i is None:
            gap = f"heads {SHAPE_FLOW_HEADS - 2} to {num_heads - 2}"
            ax.text(x, y, f"⋯ {gap} ⋯", ha="center", va="center", fontsize=9)
        else:
            _box(ax, x, y, 4.4, 0.7, f"head {i}: {h_shape}", PALETTE[1])
    _arrow(ax, (5.0, top - 0.36), (5.0, top - 0.7))
    _arrow(ax, (5.0, heads_low - 0.05), (5.0, concat_y + 0.36))
    _box(ax, 5.0, concat_y, 6.4, 0.7, f"concat {x_shape}", PALETTE[2])
    _box(ax, 5.0, out_y, 6.4, 0.7, f"output_linear {x_shape}", PALETTE[3])
    _arrow(ax, (5.0, concat_y - 0.36), (5.0, out_y + 0.36))
    return fig


def head_scatter(x, y, xlabel, ylabel, ax=None, reference=None, log=False):
    """One dot per head, y against x, with the line y = x; `reference`
    draws a dotted line at that value on both axes."""
    x, y = np.ravel(_as_array(x)), np.ravel(_as_array(y))
    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 4.0), layout="constrained")
    low, high = min(x.min(), y.min()), max(x.max(), y.max())
    ax.plot([low, high], [low, high], color="#777777", lw=0.8, ls="--")
    ax.scatter(x, y, s=14, alpha=0.8)
    if reference is not None:
        ax.axhline(reference, color="#999999", lw=0.8, ls=":")
        ax.axvline(reference, color="#999999", lw=0.8, ls=":")
    if log:
        plain = mpl.ticker.FuncFormatter(lambda v, _: f"{v:g}")
        for axis, scale in (
            (ax.xaxis, ax.set_xscale),
            (ax.yaxis, ax.set_yscale),
        ):
            scale("log")
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(mpl.ticker.NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_aspect("equal")
    return ax


def null_histogram(null, observed, xlabel, labels, ax=None, quantile=0.95):
    """A histogram of a null distribution, a dashed line at its `quantile`
    and solid lines at the `observed` values (one label each)."""
    null = np.asarray(null, dtype=float)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.8, 3.2), layout="constrained")
    ax.hist(null, bins=30, color=PALETTE[4], label=labels[0])
    bar = np.quantile(null, quantile)
    ax.axvline(
        bar,
        color="#333333",
        lw=1,
        ls="--",
        label=f"{quantile:.0%} point of the draws",
    )
    for value, label, colour in zip(observed, labels[1:], PALETTE[5:]):
        ax.axvline(value, color=colour, lw=2, label=label)
    right = max(max(observed), null.max())
    ax.set_xlim(right=right + 0.1 * (right - null.min()))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("random draws")
    # below the axes, where it covers nothing
    ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.3))
    return ax


def query_key_figure(q, keys, tokens):
    """Why a query attends: its vector, each key's, and their elementwise
    products, whose sum over dimensions is the score (BertViz's neuron
    view, drawn as heatmaps). keys: (n, d_k) for the n `tokens` shown."""
    q, keys = np.asarray(q, dtype=float), np.asarray(keys, dtype=float)
    rows = [q[None]] + [np.stack([k, q * k]) for k in keys]
    labels = ["query"] + [
        item
        for t, k in zip(tokens, keys)
        for item in (f"key {t}", f"q × k, sum {np.dot(q, k):+.1f}")
    ]
    grid = np.concatenate(rows)  # (1 + 2n, d_k)
    top = np.abs(grid).max()
    fig, ax = plt.subplots(
        figsize=(4.8, 0.3 * len(grid) + 1.3), layout="constrained"
    )
    image = ax.imshow(grid, cmap="PuOr", vmin=-top, vmax=top, aspect="auto")
    ax.set_yticks(range(len(grid)), labels)
    ax.set_xlabel("dimension of the head")
    ax.spines[:].set_visible(False)
    fig.colorbar(image, ax=ax, location="bottom", shrink=0.6, label="value")
    return fig


def paired_bars(first, second, labels, names, ylabel, ax=None):
    """Two bars per group (e.g. per layer): `first` and `second`."""
    first, second = np.asarray(first, float), np.asarray(second, float)
    x = np.arange(len(labels))
    if ax is None:
        _, ax = plt.subplots(figsize=(4.8, 3.0), layout="constrained")
    ax.bar(x - 0.2, first, width=0.4, label=names[0])
    ax.bar(x + 0.2, second, width=0.4, label=names[1])
    ax.set_xticks(x, labels)
    ax.set_ylabel(ylabel)
    top = max(first.max(), second.max())
    ax.set_ylim(0, 1.35 * top)  # room for the legend above the bars
    ax.legend(frameon=False, ncol=2, loc="upper center")
    return ax


BLOCK_PARTS = (
    ("embeddings: token + position\n+ segment, LayerNorm", False),
    ("multi-head attention", True),
    ("add the input (residual), LayerNorm", False),
    ("feed-forward: Linear, GELU, Linear", False),
    ("add the input (residual), LayerNorm", False),
)


def encoder_block(parts=BLOCK_PARTS, repeats="x 12 in BERT-base"):
    """The BERT encoder block, bottom to top; the parts the chapter builds
    are coloured, the others grey. parts: (label, built) pairs, the first
    one below the repeated block."""
    fig, ax = plt.subplots(figsize=(4.8, 4.4))
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.9, len(parts) + 0.1)
    ax.axis("off")
    for i, (label, built) in enumerate(parts):
        colour = PALETTE[1] if built else "#DDDDDD"
        _box(ax, 4.2, i, 7.8, 0.7, label, colour)
        _arrow(ax, (4.2, i - 0.7), (4.2, i - 0.3))
    ax.text(4.2, -0.85, "token ids", ha="center", fontsize=9)
    top = len(parts) - 1
    _arrow(ax, (4.2, top + 0.3), (4.2, top + 0.7))
    ax.text(4.2, top + 0.75, "to the next block", ha="center", fontsize=9)
    # the repeated block: everything above the embeddings
    ax.add_patch(
        FancyBboxPatch(
            (0.3, 0.55),
            7.9,
            top + 0.0,
            boxstyle="round,pad=0.05",
            fc="none",
            ec="#555555",
            ls="--",
            lw=0.8,
        )
    )
    ax.text(8.3, top + 0.6, repeats.replace(" in ", "\nin "), fontsize=9)
    # the residual connections skip around attention and the feed-forward
    for start, end in ((0.62, 2), (2.62, 4)):
        ax.plot([4.2, 8.6, 8.6], [start, start, end], color=PALETTE[0], lw=0.8)
        ax.add_patch(
            FancyArrowPatch(
                (8.6, end),
                (7.95, end),
                arrowstyle="-|>",
                mutation_scale=8,
                lw=0.8,
                color=PALETTE[0],
            )
        )
    ax.text(8.75, 1.3, "resid-\nual", fontsize=9, color=PALETTE[0])
    return fig


def _matrix(fig, box, values, label, cmap, frame=None, limits=None):
    """One matrix as a heatmap in `box` (left, bottom, width, height in
    figure fractions), its label above; `limits` fixes the colour scale
    (otherwise symmetric around 0)."""
    ax = fig.add_axes(box)
    if limits is None:
        top = max(float(np.abs(values).max()), 1e-9)
        limits = (-top, top)
    ax.imshow(values, cmap=cmap, vmin=limits[0], vmax=limits[1])
    ax.set_xticks([])
    ax.set_yticks([])
    ax.spines[:].set_visible(frame is not None)
    if frame is not None:
        ax.spines[:].set_color(frame)
        ax.spines[:].set_linewidth(2.0)
    ax.set_title(label, fontsize=9, pad=3)
    return ax


def head_matrices(layer, hidden_state, tokens, cell=0.19):
    """The matrices of one MultiHeadAttention layer on a small input, as
    heatmaps (after Alammar's illustrated transformer): X on top; one row
    per head with Q_i, K_i, V_i, the weights A_i and Z_i = A_i V_i; at the
    bottom Concat(Z_0, ..., Z_{h-1}) x W^O + b^O = output (b^O written,
    not drawn). Heads count from 0, as in the code. Rows of every matrix
    but W^O are the tokens. hidden_state: (T, d) or (1, T, d).
    Colours (PuOr): orange negative, purple positive, one scale per
    matrix; the weights A_i in the chapter's sequential map, on 0 to 1.
    Each head's colour frames its Z_i, its columns of the concatenation
    and its rows of W^O."""
    x = _as_array(hidden_state.reshape(hidden_state.shape[-2:]).detach())
    (num_tokens, width), num_heads = x.shape, len(layer.heads)
    if num_tokens != len(tokens) or num_tokens > 8 or width > 16:
        raise ValueError(
            f"draw a small example: at most 8 tokens (one label each, "
            f"got {len(tokens)} for {num_tokens}) and a width of at most 16"
            f" (got {width}); pass the first 8 tokens, hidden_state[:, :8], "
            f"and a layer of hidden_size 16 or less"
        )
    layer_width = layer.output_linear.out_features
    if width != layer_width:
        raise ValueError(
            f"the input has {width} features but the layer takes "
            f"{layer_width}: build the input with the layer's hidden_size"
        )
    hidden = hidden_state.reshape(1, num_tokens, width)
    rows, outputs = [], []
    for head in layer.heads:
        q, k, v = (m(hidden)[0].detach() for m in (head.q, head.k, head.v))
        z, a = (t[0].detach() for t in head(hidden))
        rows.append([_as_array(t) for t in (q, k, v, a, z)])
        outputs.append(rows[-1][-1])
    concat = np.concatenate(outputs, axis=1)  # (T, h d_k)
    w_o = _as_array(layer.output_linear.weight.detach()).T  # (h d_k, d)
    out = _as_array(layer(hidden)[0][0].detach())  # (T, d)
    d_k = concat.shape[1] // num_heads
    # layout in cells, from the top left; then figure fractions
    left, gap, wide = 5.0, 0.7, 1.8
    head_w = 3 * d_k + 2 * gap + 2 * wide + num_tokens + d_k
    low_w = 3 * width + wide + 2.4 + 5.8
    fig_w = left + max(head_w, low_w) + 0.4
    fig_h = 2.0 + (num_tokens + 2.6) * (num_heads + 1) + width + 0.3
    cell = min(cell, 4.6 / fig_w)  # 4.8 in at most, with its margins
    fig = plt.figure(figsize=(fig_w * cell, fig_h * cell))

    def place(x0, y0, w, h):  # a box from (x0, y0) cells, y down
        return (x0 / fig_w, 1 - (y0 + h) / fig_h, w / fig_w, h / fig_h)

    def token_labels(ax):
        ax.set_yticks(range(num_tokens), tokens, fontsize=9)
        ax.tick_params(length=0)

    y = 2.0
    ax = _matrix(fig, place(left, y, width, num_tokens), x, "$X$", "PuOr")
    token_labels(ax)
    colours = [PALETTE[(0, 5, 2, 3)[i % 4]] for i in range(num_heads)]
    for i, (q, k, v, a, z) in enumerate(rows):
        y += num_tokens + 2.6
        c = colours[i]
        x0 = left
        for m, name in zip((q, k, v), "QKV"):
            label = f"${name}_{{{i}}}$"
            ax = _matrix(fig, place(x0, y, d_k, num_tokens), m, label, "PuOr")
            if name == "Q":
                token_labels(ax)
            x0 += d_k + gap
        x0 += wide - gap
        box = place(x0, y, num_tokens, num_tokens)
        _matrix(fig, box, a, f"$A_{{{i}}}$", CMAP, limits=(0.0, 1.0))
        x0 += num_tokens + wide
        box = place(x0, y, d_k, num_tokens)
        _matrix(fig, box, z, f"$Z_{{{i}}}$", "PuOr", frame=c)
        fig.text(
            0.3 / fig_w,
            1 - (y - 1.0) / fig_h,
            f"head {i}",
            color=c,
            fontsize=10,
            va="center",
            fontweight="bold",
        )
    y += num_tokens + 2.6

    # Concat x W^O + b^O = output, centred on the middle of W^O; the
    # labels W^O_i sit left of their bands, clear of the x and the =
    mid = y + width / 2
    ax = _matrix(
        fig,
        place(left, mid - num_tokens / 2, width, num_tokens),
        concat,
        "Concat",
        "PuOr",
    )
    token_labels(ax)
    x0 = left + width + wide + 2.4
    ax_o = _matrix(fig, place(x0, y, width, width), w_o, "$W^O$", "PuOr")
    for i, c in enumerate(colours):
        for target, horizontal in ((ax, False), (ax_o, True)):
            start = i * d_k - 0.5
            corner = (-0.5, start) if horizontal else (start, -0.5)
            size = (width, d_k) if horizontal else (d_k, num_tokens)
            target.add_patch(
                mpl.patches.Rectangle(corner, *size, fill=False, ec=c, lw=2.0)
            )
        fig.text(
            (x0 - 0.3) / fig_w,
            1 - (y + (i + 0.5) * d_k) / fig_h,
            f"$W^O_{{{i}}}$",
            color=c,
            fontsize=9,
            ha="right",
            va="center",
        )
    for x_sign, sign in (
        (left + width + 1.0, "×"),
        (x0 + width + 2.3, "$+\\ b^O$"),
        (x0 + width + 5.0, "="),
    ):
        fig.text(
            x_sign / fig_w,
            1 - mid / fig_h,
            sign,
            fontsize=12,
            ha="center",
            va="center",
        )
    x0 += width + 5.8
    box = place(x0, mid - num_tokens / 2, width, num_tokens)
    _matrix(fig, box, out, "output", "PuOr")
    return fig


def _glyph(ax, x, top, w, h, colour, rows=0, alpha=0.85):
    """A matrix as a flat box, (x, top) its top-left corner in inches;
    `rows` > 1 draws white lines between its rows."""
    ax.add_patch(
        mpl.patches.Rectangle(
            (x, top - h), w, h, fc=colour, ec="#333333", lw=0.6, alpha=alpha
        )
    )
    for r in range(1, rows):
        ax.plot([x, x + w], [top - r * h / rows] * 2, color="white", lw=0.6)


def multi_head_overview(tokens, hidden_size, num_heads):
    """A multi-head attention layer at a glance, after Alammar's
    illustrated transformer. Top to bottom: X, one row per token; in one
    column per head, its Q_i, K_i and V_i, its weights A_i and its output
    Z_i; the concatenation, each Z_i its slice; W^O and the output. Left:
    what each row is; right: its shape in the chapter's notation and in
    numbers for these sizes. With more than four heads, heads 0, 1 and the
    last stand for all of them. The patterns in A_i are schematic."""
    from ..layers.many_heads import head_dim_for

    if len(tokens) < 1:
        raise ValueError("give at least one token: X has one row per token")
    d_k = head_dim_for(hidden_size, num_heads)  # refuses what won't split
    T, d, h = len(tokens), hidden_size, num_heads
    shown = list(range(h)) if h <= 4 else [0, 1, None, h - 1]
    colours = [PALETTE[(0, 5, 2, 3)[i % 4]] for i in range(h)]
    left, right, width = 1.4, 3.8, 4.8  # the matrices sit in between
    main = right - left
    labelled = T <= 8  # one line per row, and X's rows labelled
    x_row = max(0.15, 0.35 / T) if labelled else 0.6 / T  # in: X's rows
    tall = 0.35  # in: every other T-row matrix
    lines = T if labelled else 0
    column = main / len(shown)
    centres = [left + (k + 0.5) * column for k in range(len(shown))]
    narrow = min(main * d_k / d, column / 4.2)  # d_k wide, where it fits
    gaps = {"top": 0.08, "project": 0.55, "head": 0.22, "row": 0.2}
    gaps |= {"concat": 0.45, "mix": 0.5, "bottom": 0.08}
    height = sum(gaps.values()) + T * x_row + 5 * tall + gaps["row"]
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")

    def sides(middle, what, shape):  # what a row is, left; its shape, right
        ax.text(left - 0.1, middle, what, ha="right", va="center")
        ax.text(right + 0.12, middle, shape, ha="left", va="center")

    def heads(draw, middle):  # draw(x_mid, i) per head; "⋯" in the gap
        for x_mid, i in zip(centres, shown):
            if i is None:
                ax.text(x_mid, middle, "⋯", ha="center", va="center")
            else:
                draw(x_mid, i)

    # X, one row per token
    y = height - gaps["top"]
    _glyph(ax, left, y, main, T * x_row, PALETTE[4], rows=lines)
    for t, token in enumerate(tokens if labelled else []):
        ax.text(
            left - 0.1,
            y - (t + 0.5) * x_row,
            token,
            ha="right",
            va="center",
            fontsize=9,
        )
    if not labelled:
        ax.text(
            left - 0.1,
            y - T * x_row / 2,
            f"{T} tokens",
            ha="right",
            va="center",
        )
    ax.text(
        right + 0.12,
        y - T * x_row / 2,
        f"$X$: $T \\times d$\n{T} × {d}",
        ha="left",
        va="center",
    )
    y -= T * x_row

    # every head reads all of X through its own projections
    band = gaps["project"]
    heads(
        lambda x, i: _arrow(ax, (x, y - 0.03), (x, y - band + 0.03)),
        y - band / 2,
    )
    sides(
        y - band / 2,
        "$\\times\\, W^Q_i, W^K_i, W^V_i$",
        f"$d \\times d_k$\n{d} × {d_k}",
    )
    y -= band
    for x_mid, i in zip(centres, shown):
        if i is not None:
            ax.text(
                x_mid,
                y - gaps["head"] / 2,
                f"head {i}",
                ha="center",
                va="center",
                color=colours[i],
                fontweight="bold",
                fontsize=9,
            )
    y -= gaps["head"]

    def qkv(x_mid, i):
        for k in (-1, 0, 1):
            x0 = x_mid + k * 1.35 * narrow - narrow / 2
            _glyph(ax, x0, y, narrow, tall, colours[i], lines, alpha=0.45)

    def weights(x_mid, i):  # schematic: each head its own pattern
        x0, cell = x_mid - tall / 2, tall / T
        _glyph(ax, x0, y, tall, tall, "white", alpha=1.0)
        shift = shown.index(i) + 1  # head 0 on the next token, not itself
        for q in range(T):
            k = (q + shift) % T
            ax.add_patch(
                mpl.patches.Rectangle(
                    (x0 + k * cell, y - (q + 1) * cell),
                    cell,
                    cell,
                    fc=colours[i],
                    lw=0,
                )
            )

    def output(x_mid, i):
        _glyph(ax, x_mid - narrow / 2, y, narrow, tall, colours[i], lines)

    for draw, what, shape in (
        (qkv, "$Q_i, K_i, V_i$", f"$T \\times d_k$\n{T} × {d_k}"),
        (weights, "weights $A_i$", f"$T \\times T$\n{T} × {T}"),
        (output, "$Z_i = A_i V_i$", f"$T \\times d_k$\n{T} × {d_k}"),
    ):
        heads(draw, y - tall / 2)
        sides(y - tall / 2, what, shape)
        y -= tall + gaps["row"]
    y += gaps["row"]

    # the heads' outputs side by side: Z_i is slice i
    band, slice_w = gaps["concat"], main / h
    for x_mid, i in zip(centres, shown):
        if i is not None:
            end = (left + (i + 0.5) * slice_w, y - band + 0.03)
            _arrow(ax, (x_mid, y - 0.03), end)
    y -= band
    for i in range(h):
        colour = colours[i] if i in shown else "#DDDDDD"
        _glyph(ax, left + i * slice_w, y, slice_w, tall, colour, lines)
    sides(y - tall / 2, "Concat", f"$T \\times hd_k$\n{T} × {h * d_k}")
    y -= tall

    # W^O mixes the heads; the output has X's shape
    band = gaps["mix"]
    _arrow(ax, (left + main / 2, y - 0.03), (left + main / 2, y - band + 0.03))
    what = "$\\times\\, W^O + b^O$"
    sides(y - band / 2, what, f"$hd_k \\times d$\n{h * d_k} × {d}")
    y -= band
    _glyph(ax, left, y, main, tall, PALETTE[4], lines)
    sides(y - tall / 2, "output", f"$T \\times d$\n{T} × {d}")
    return fig


def attention_grid(maps, tokens, titles):
    """Attention maps in a grid on one 0-to-1 scale, drawn for the column:
    `maps` and `titles` are lists of rows (say, one row before training
    and one after, one column per head). The outer panels carry the token
    labels; one colour bar serves every map. Returns the Figure."""
    maps = [[_as_array(weights) for weights in row] for row in maps]
    columns = len(maps[0]) if maps else 0
    if (
        not columns
        or [len(row) for row in titles] != [len(row) for row in maps]
        or any(len(row) != columns for row in maps)
    ):
        raise ValueError(
            "give maps and titles as lists of rows, every row as long: "
            "[[map, map], [map, map]] with one title per map"
        )
    n = len(tokens)
    if any(weights.shape != (n, n) for row in maps for weights in row):
        raise ValueError(f"{n} tokens need {n}x{n} maps")
    panel = 3.4 / columns  # in: 4.8 in less labels and colour bar
    fig, axes = plt.subplots(
        len(maps),
        columns,
        squeeze=False,
        sharex=True,
        sharey=True,
        layout="constrained",
        figsize=(4.8, len(maps) * (panel + 0.3) + 0.45),
    )
    turn = 90 if max(len(token) for token in tokens) > 3 else 0
    for r, (row, names) in enumerate(zip(maps, titles)):
        for c, (weights, title) in enumerate(zip(row, names)):
            ax = axes[r, c]
            image = ax.imshow(weights, vmin=0.0, vmax=1.0)
            ax.set_xticks(range(n), tokens, rotation=turn)
            ax.set_yticks(range(n), tokens)
            ax.spines[:].set_visible(False)
            ax.set_title(title)
            if r == len(maps) - 1:
                ax.set_xlabel("key (attended to)")
            if c == 0:
                ax.set_ylabel("query (attending)")
    fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
    return fig
