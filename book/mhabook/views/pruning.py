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
    least important first, random orders as a band and their mean, and
    whole layers; the task's threshold as a dotted line."""
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
            label="random orders (range)",
        )
        ax.plot(
            ks, values.mean(0), color=PALETTE[4], label="random orders (mean)"
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
        label="threshold: half a row below full",
    )
    axes[1].yaxis.set_major_formatter("{x:.0%}")
    axes[1].set_ylim(0, 1.05)  # from 0: one row is a small step
    fig.legend(
        *axes[1].get_legend_handles_labels(),
        loc="outside lower center",
        ncol=2,
    )
    return fig


def behaviour_scatter(result):
    """Each head's importance (log scale) against the share of its
    attention on [CLS]/[SEP], the previous token and itself, one panel
    each, dots coloured by layer."""
    fig, axes = plt.subplots(
        3, 1, figsize=(4.8, 8.4), sharey=True, layout="constrained"
    )
    importance = 1000 * result.importance.flatten()
    layer_of = torch.arange(result.num_layers)
    layer_of = layer_of.repeat_interleave(result.num_heads)
    for ax, (name, share) in zip(axes, result.shares.items()):
        points = ax.scatter(
            share.flatten(), importance, c=layer_of, cmap="viridis", s=14
        )
        ax.set_xlabel(f"share of attention: {BEHAVIOURS[name]}")
        ax.set_ylabel("drop in fidelity (thousandths)")
        ax.set_title(f"rank correlation {result.correlation[name]:+.2f}")
    axes[0].set_yscale("log")
    fig.colorbar(points, ax=axes.tolist(), label="layer", location="bottom")
    return fig
