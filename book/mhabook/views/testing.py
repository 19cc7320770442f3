"""Figures of the page testing_heads. Every function returns its Axes."""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from .plotting import PALETTE


def _array(values):
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=float)


def flies_bars(rows, tokens, targets, names, ax=None):
    """Two bars per token: the weight each of two queries gives it.

    rows: (2, T), the two queries' attention rows; tokens: the T tokens;
    targets: positions whose labels are set in bold; names: the queries.
    """
    rows = _array(rows)
    if rows.shape != (2, len(tokens)):
        raise ValueError(
            f"expected two rows of {len(tokens)} weights, one per query, "
            f"got shape {rows.shape}"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(4.8, 2.9), layout="constrained")
    x = np.arange(len(tokens))
    for i, (row, name) in enumerate(zip(rows, names)):
        ax.bar(x + (i - 0.5) * 0.4, row, width=0.4, label=name)
    ax.set_xticks(x, tokens, rotation=60, ha="right")
    for i in targets:
        ax.get_xticklabels()[i].set_fontweight("bold")
    ax.set_ylabel("attention weight")
    ax.set_ylim(0, 1.3 * rows.max())  # room for the legend
    ax.legend(frameon=False, ncol=2, loc="upper left")
    return ax


def interval_rows(tests, names, labels, reference=0.0, ax=None):
    """A mean and its 95% interval per row, for each of several tests.

    tests: one (R, 3) array of (mean, low, high) per test, drawn in its own
    colour and offset; names: the tests; labels: the R rows, top first;
    reference: a dotted line (no effect).
    """
    tests = [_array(t) for t in tests]
    if any(t.shape != (len(labels), 3) for t in tests):
        raise ValueError(
            f"each test needs a ({len(labels)}, 3) array of mean, low, "
            f"high, one row per label"
        )
    if ax is None:
        height = 0.3 * len(labels) * max(len(tests), 2) / 2 + 1.5
        _, ax = plt.subplots(figsize=(4.8, height), layout="constrained")
    y = np.arange(len(labels))[::-1]  # the first row on top
    step = 0.6 / max(len(tests), 1)
    markers = "osD^v"
    for i, (test, name) in enumerate(zip(tests, names)):
        shift = (len(tests) - 1) / 2 * step - i * step
        ax.errorbar(
            test[:, 0],
            y + shift,
            xerr=[test[:, 0] - test[:, 1], test[:, 2] - test[:, 0]],
            fmt=markers[i % len(markers)],
            color=PALETTE[i % len(PALETTE)],
            capsize=2,
            label=name,
        )
    ax.axvline(reference, color="#333333", lw=1, ls=":")
    ax.set_yticks(y, labels)
    ax.spines["left"].set_visible(False)
    ax.tick_params(axis="y", length=0)
    ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.4, -0.25))
    return ax


def power_curve(sizes, powers, have, target=0.8, ax=None):
    """The power of a test against the number of held-out sentences, with
    a dashed line at `target` and a dotted one at the `have` we hold."""
    if len(sizes) != len(powers) or not sizes:
        raise ValueError("need one power per size, and at least one size")
    if ax is None:
        _, ax = plt.subplots(figsize=(4.8, 2.8), layout="constrained")
    ax.plot(sizes, powers, marker="o", color=PALETTE[0])
    ax.axhline(target, color="#333333", lw=1, ls="--")
    ax.axvline(have, color="#333333", lw=1, ls=":")
    right = 1.05 * sizes[-1]
    ax.text(have, 1.02, " held out here", ha="left", va="bottom")
    ax.set_xlabel("held-out sentences")
    ax.set_ylabel("power")
    ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
    ax.set_ylim(0, 1.12)
    ax.set_xlim(0, right)
    return ax
