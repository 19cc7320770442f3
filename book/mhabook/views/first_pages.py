"""Figures of "Many heads, one layer" drawn from its record: the tiny
model's heads before and after training, and every training run at once.
Each function returns its Figure or its Markdown."""

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..checks import _whole  # a whole number, not a bool
from ..experiments.training import JOBS, token_names
from .plotting import attention_grid
from .sharing import markdown_table


def _maps(model, ids):
    """(h, T, T): the attention maps of a tiny model on one sequence."""
    with torch.no_grad():
        return model(ids[None])[2][0]


def apart(runs):
    """(T,) ids: the first held-out sequence whose two copies of each letter
    never stand side by side, so that no token's match is also its previous
    token; the first held-out sequence if none is."""
    ids, _, partner, _ = runs.held_out  # (N, T) each
    gap = (partner - torch.arange(partner.shape[1])).abs()  # (N, T)
    found = (gap > 1).all(-1).nonzero()  # (k, 1)
    return ids[int(found[0, 0]) if len(found) else 0]


def heads_learned(runs, config, run=0):
    """One run's heads on a held-out sequence (`apart`): before training
    (top row) and after (bottom row), one column per head."""
    if not _whole(run) or not 0 <= run < len(runs.seeds):
        raise ValueError(
            f"run {run!r} is not one of the {len(runs.seeds)} runs: pick 0 "
            f"to {len(runs.seeds) - 1}"
        )
    ids = apart(runs)
    maps = [_maps(m[run], ids) for m in (runs.untrained, runs.trained)]
    titles = [
        [
            f"seed {runs.seeds[run]}: head {i}, {when}"
            for i in range(len(maps[0]))
        ]
        for when in ("before", "after")
    ]
    return attention_grid(maps, token_names(config, ids), titles)


def seed_runs(runs, config):
    """Every run, one column each: for each job, the head that puts the
    most weight on its target (its number; the colour is that weight),
    and the matching job's accuracy in percent. Below: the heads of the
    run with the lowest matching accuracy, after training."""
    seeds, h = len(runs.seeds), runs.after.shape[1]
    values = torch.cat([runs.specialist.T, runs.accuracy[:, 1:].T]).numpy()
    labels = [[str(int(i)) for i in row] for row in runs.job.T] + [
        [f"{100 * a:.0f}" for a in runs.accuracy[:, 1]]
    ]
    fig = plt.figure(figsize=(4.8, 4.0), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.0, 2.5])
    ax = top.subplots()
    ax.imshow(values, vmin=0.0, vmax=1.0, aspect="auto")
    for (r, c), text in np.ndenumerate(np.array(labels)):
        colour = "black" if values[r, c] > 0.6 else "white"
        ax.text(c, r, text, ha="center", va="center", color=colour, size=9)
    rows = [f"{job.split()[0]}: head" for job in JOBS] + ["matching: % right"]
    ax.set_yticks(range(3), rows)
    ax.set_xticks(range(seeds), [str(s) for s in runs.seeds])
    ax.set_xlabel("seed (one training run each)")
    ax.spines[:].set_visible(False)
    ax.tick_params(length=0)
    worst = runs.worst
    ids = apart(runs)
    maps = _maps(runs.trained[worst], ids)
    titles = [f"head {i}, seed {runs.seeds[worst]}" for i in range(h)]
    names = token_names(config, ids)
    axes = bottom.subplots(1, h, sharey=True, squeeze=False)[0]
    for i, (axis, title) in enumerate(zip(axes, titles)):
        image = axis.imshow(maps[i].numpy(), vmin=0.0, vmax=1.0)
        axis.set_xticks(range(len(names)), names, rotation=90)
        axis.set_yticks(range(len(names)), names)
        axis.set_title(title)
        axis.set_xlabel("key (attended to)")
        axis.spines[:].set_visible(False)
    axes[0].set_ylabel("query (attending)")
    bottom.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    return fig


def tuning_table(runs):
    """The one head's settings (`HeadsLearn.settings`) as a Markdown table:
    each setting's learning rate, steps and validation score (both jobs
    averaged, `tune_one_head`), the one the runs used marked."""
    if not runs.settings:
        raise ValueError(
            "these runs tried no one-head settings (one_head=()): run "
            "tr.heads_learn with its default one_head to fill the table"
        )
    header = ["learning rate", "steps", "validation score", "chosen"]
    rows = [
        [f"{lr:g}", f"{steps:,}", f"{score:.1%}"]
        + ["yes" if (lr, steps) == runs.one_head_setting else ""]
        for (lr, steps), score in zip(runs.settings, runs.setting_scores)
    ]
    return markdown_table(header, rows)
