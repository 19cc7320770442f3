"""The figures of heads_needed.ipynb, drawn from its `HeadsNeeded` record
(mhabook.experiments.pruning). Each returns its Figure."""

import matplotlib.pyplot as plt
import torch

from .plotting import PALETTE

BEHAVIOURS = {
    "special": "[CLS]/[SEP]",
    "previous": "the previous token",
    "self": "the token itself",
}


def pruning_curves(result):
    """Fidelity (top) and task score (bottom) against heads removed:
    least important first, random orders as a band and their mean (with
    every order's value at `half`, and on fidelity, just right of it, the
    orders that spare the top layer), and whole layers; the task's
    threshold as a dotted line."""
    fig, axes = plt.subplots(
        2, 1, figsize=(4.8, 7), sharex=True, layout="constrained"
    )
    ks = list(result.coarse)
    lines = (
        (result.by_importance, ".-", PALETTE[0], "least important first"),
        (result.by_layers, "s--", PALETTE[5], "whole layers"),
    )
    for ax, m, label in zip(axes, (0, 1), ("fidelity", "task score")):
        values = torch.tensor(
            [[c[k][m] for k in ks] for c in result.by_random]
        )
        ax.fill_between(
            ks,
            values.min(0).values,
            values.max(0).values,
            color=PALETTE[4],
            alpha=0.35,
            label=f"{len(values)} random orders (range)",
        )
        ax.plot(ks, values.mean(0), color=PALETTE[4], label="their mean")
        at_half = [v[m] for v in result.random_half]  # every order drawn
        ax.plot(
            [result.half] * len(at_half),
            at_half,
            "_",
            color=PALETTE[4],
            markersize=9,
            label=f"{len(at_half)} random orders at {result.half}",
        )
        if m == 0:  # the fairer baseline: orders that spare the top layer
            (spared,) = ax.plot(
                [result.half + 3] * len(result.rest_half),
                result.rest_half,
                "_",
                color=PALETTE[2],
                markersize=9,
                label=f"{len(result.rest_half)} orders sparing layer "
                f"{result.top_layer}",
            )
        for curve, style, colour, name in lines:
            ys = [v[m] for v in curve.values()]
            ax.plot(list(curve), ys, style, color=colour, label=name)
        ax.set_ylabel(label)
    axes[1].set_xlabel("heads removed")
    axes[1].axhline(
        result.limit,
        color="grey",
        lw=0.8,
        ls=":",
        label="below this: a row lost",
    )
    axes[1].yaxis.set_major_formatter("{x:.0%}")
    # the task panel keeps matplotlib's limits, fitted to its data: its
    # steps are single rows, lost on an axis from 0
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(
        [*handles, spared],
        [*labels, spared.get_label()],
        loc="outside lower center",
        ncol=2,
    )
    return fig


def behaviour_scatter(result):
    """[CLS]/[SEP] against importance. Top: each head's importance (log
    scale) against its share of attention on them, dots coloured by layer.
    Bottom: the rank correlation inside each layer, their mean (the test's
    statistic) and the band that chance reaches for that mean."""
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(4.8, 6.4), layout="constrained"
    )
    L, h = result.num_layers, result.num_heads
    layer_of = torch.arange(L).repeat_interleave(h)
    points = top.scatter(
        result.shares["special"].flatten(),
        result.importance.flatten(),
        c=layer_of,
        cmap="viridis",
        s=14,
    )
    top.set_yscale("log")
    top.set_xlabel("share of attention on [CLS]/[SEP]")
    top.set_ylabel("drop in fidelity")
    top.set_title(
        f"all heads: rank correlation {result.correlation['special']:+.2f}"
    )
    fig.colorbar(points, ax=top, label="layer")
    layers = torch.arange(L)
    within = result.within["special"]
    bar = result.chance_within
    bottom.axhspan(
        -bar, bar, color=PALETTE[4], alpha=0.3, label="chance, for the mean"
    )
    bottom.axhline(0, color="grey", lw=0.8)
    bottom.plot(layers, result.by_layer["special"], "o", color=PALETTE[0])
    bottom.axhline(within, color=PALETTE[0], label="mean of the layers")
    bottom.set_xticks(layers.tolist())
    bottom.set_ylim(-1.05, 1.05)
    bottom.set_xlabel("layer")
    bottom.set_ylabel("rank correlation\ninside the layer")
    bottom.set_title(f"within layers: mean {within:+.2f}")
    bottom.legend(loc="upper left")
    return fig


def page_numbers(result):
    """{glue name: value}: every number heads_needed.ipynb states, read
    off its `HeadsNeeded` record."""
    r, top, runner_up = result, result.top_layer, result.runner_up
    return {
        "num_all": r.num_layers * r.num_heads,
        "num_heads": r.num_heads,
        "num_layers": r.num_layers,
        "last_layer": r.num_layers - 1,
        # 1. one head removed two ways: glued by the page's own cell
        # 2. each head alone
        "top_layer": top,
        "top_drop": r.layer_drop[top].item(),
        "runner_up": runner_up,
        "runner_drop": r.layer_drop[runner_up].item(),
        "median_drop": r.importance.median().item(),
        "n_choose": r.n_choose,
        "split_half": r.split_half,
        "split_bar": r.split_bar,
        "split_rest": r.split_rest,
        "split_bar_rest": r.split_bar_rest,
        "split_within": r.split_within,
        "split_bar_within": r.split_bar_within,
        # 3. many heads, and the paraphrase task
        "n_rows": r.n_rows,
        "task_full": r.task_full,
        "task_none": r.task_none,
        "fid_none": r.fid_none,
        "cos_paraphrase": r.cos_paraphrase,
        "cos_partner": r.cos_partner,
        "word_score": r.word_score,
        "p_words": r.p_words,
        "p_none": r.p_none,
        "wins_none": r.vs_none[0],
        "losses_none": r.vs_none[1],
        "room_rows": r.room_rows,
        "min_rows": r.min_rows,
        "half": r.half,
        "fid_half": r.fid_half,
        "rand_low": min(r.rand_fids),
        "rand_high": max(r.rand_fids),
        "n_orders": len(r.random_half),
        "n_orders_1": len(r.random_half) + 1,
        "n_curves": len(r.by_random),
        "n_more_orders": len(r.random_half) - len(r.by_random),
        "imp_top": r.imp_top,
        "top_removed_mean": r.top_removed_mean,
        "rest_low": min(r.rest_half),
        "rest_high": max(r.rest_half),
        "first_layer": r.first_layer,
        "layer_fid": r.layer_fid,
        "heads_fid": r.heads_fid,
        "diff_low": r.diff_low,
        "diff_high": r.diff_high,
        # 4. what the heads attend to
        "rho_special": r.correlation["special"],
        "rho_previous": r.correlation["previous"],
        "rho_self": r.correlation["self"],
        "rho_within": r.within["special"],
        "rho_top_layer": float(r.by_layer["special"][top]),  # inside it
        "layers_negative": int((r.by_layer["special"] < 0).sum()),
        "within_previous": r.within["previous"],
        "within_self": r.within["self"],
        "chance_within": r.chance_within,
        "detectable_within": r.detectable_within,
        "top_special": r.top_special,
        "rest_special": r.rest_special,
    }


TREND = {  # a correlation with importance, against its chance bar
    "negative": "move the embeddings less",
    "positive": "move the embeddings more",
    "near": "no trend shown (near the bar)",
    "neither": "no trend shown",
}


def page_verdicts(result):
    """[(name, rule, args, phrases), ...]: every verdict heads_needed.ipynb
    glues (`mhabook.views.glued.verdict`); each phrase reads true in its
    sentence whatever the outcome."""
    r = result
    return [
        (
            "top_verdict",  # the top layer's range above every other's
            "above",
            (r.top_low, r.others_high),
            {True: "clears", False: "does not clear"},
        ),
        (
            "split_verdict",
            "sign",
            (r.split_half, r.split_bar),
            {
                "positive": "agrees with",
                "negative": "reverses",
                "neither": "is not measurably related to",
            },
        ),
        (
            "split_within_verdict",  # a head's place in its layer's order
            "sign",
            (r.split_within, r.split_bar_within),
            {
                "positive": "repeats",
                "negative": "reverses",
                "neither": "does not measurably repeat",
            },
        ),
        (
            "half_verdict",
            "compare",
            (r.fid_half, r.fid_half, min(r.rand_fids), max(r.rand_fids)),
            {
                "more": "higher than in any of",
                "less": "lower than in any of",
                "same": "within the range of",
            },
        ),
        (
            "rest_verdict",
            "compare",
            (r.fid_half, r.fid_half, min(r.rest_half), max(r.rest_half)),
            {
                "more": "above all of",
                "less": "below all of",
                "same": "inside the range of",
            },
        ),
        (
            "layer_verdict",
            "compare",
            (r.diff_low, r.diff_high, 0.0, 0.0),
            {
                "less": "lowers fidelity more than",
                "more": "lowers fidelity less than",
                "same": "is not measurably different from",
            },
        ),
        (
            "task_can",  # the full model beats both rivals at 5%
            "below",
            (max(r.p_words, r.p_none), 0.05),
            {True: "can", False: "cannot"},
        ),
        (
            "verdict_within",  # the test: heads compared inside a layer
            "sign",
            (r.within["special"], r.chance_within),
            {
                "negative": "tend to move the embeddings less",
                "positive": "tend to move the embeddings more",
                "neither": "show no trend beyond chance",
            },
        ),
        (
            "power_within",  # can the test reach 80% power at all?
            "below",
            (r.detectable_within, 1.0),
            {True: "four times in five", False: "under four times in five"},
        ),
        (
            "miss_counts",  # against what a miss of the test counts
            "below",
            (r.detectable_within, 1.0),
            {True: "a trend that strong, not weaker ones", False: "no trend"},
        ),
        *(
            (f"table_{k}", "sign_near", (r.within[k], r.chance_within), TREND)
            for k in ("special", "previous", "self")
        ),
    ]
