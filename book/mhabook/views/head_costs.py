"""The figure and tables of "What heads cost", drawn from its HeadCosts
record (mhabook.experiments.costs.head_costs_results)."""

from IPython.display import Markdown
from matplotlib import pyplot as plt

from ..experiments.costs import PairedRatio, median_ranks
from ..experiments.verdicts import decide

NAMES = ("loop", "batched", "fused")


def timing_figure(record, names=NAMES):
    """Median ms per call against heads, one panel per length, stacked;
    bars span the fastest and the slowest repeat. The legend sits above
    the top panel."""
    lengths, heads = record.lengths, record.head_counts
    fig, axes = plt.subplots(
        len(lengths),
        1,
        figsize=(4.6, 2.7 * len(lengths) + 0.5),
        layout="constrained",
        squeeze=False,
    )
    axes = axes[:, 0]
    for ax, T in zip(axes, lengths):
        for name in names:
            runs = [
                record.times[T][:, record.contenders.index((name, h))] * 1e3
                for h in heads
            ]
            mid = [r.median().item() for r in runs]
            low = [m - r.min().item() for m, r in zip(mid, runs)]
            high = [r.max().item() - m for m, r in zip(mid, runs)]
            ax.errorbar(
                heads, mid, yerr=[low, high], marker="o", capsize=3, label=name
            )
        ax.set_title(f"one sequence of {T} tokens")
        ax.set_xlabel("heads $h$")
        ax.set_xticks(heads)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("ms per forward pass")
    fig.legend(
        *axes[0].get_legend_handles_labels(),
        loc="outside upper center",
        ncols=len(names),
    )
    return fig


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|:--|" + "--:|" * (len(header) - 1))
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return Markdown("\n".join(lines))


def peak_table(record, names=NAMES):
    """Peak MiB of each layer (rows) at each head count (columns), at the
    longest length, under a row of one (1, h, T, T) score tensor's MiB."""
    heads = record.head_counts
    label = {"fused": "fused (a lower bound)"}  # its kernel's own is unseen
    rows = [
        [label.get(name, name)]
        + [f"{record.peak[name, h]:.2f}" for h in heads]
        for name in names
    ]
    scores = [f"{record.score_mib(h):.2f}" for h in heads]
    rows.append(["one $(1, h, T, T)$ score tensor"] + scores)
    header = [f"MiB at $T$ = {record.lengths[-1]}"]
    return _table(header + [f"$h$ = {h}" for h in heads], rows)


def digits(x):
    """Decimals for a ratio of about `x`: three significant digits, whole
    from 100 up. Fifteen repeats do not support more."""
    return 2 if abs(x) < 10 else 1 if abs(x) < 100 else 0


def number(x, decimals=None):
    """A ratio to `decimals` (default `digits(x)`): '0.59', '1.00', '8.62',
    '10.9', '130'."""
    return f"{x:,.{digits(x) if decimals is None else decimals}f}"


def _printed(ratio):
    """A PairedRatio's median, low and high as text, all to the median's
    decimals, so the three read alike: '10.9', '8.6', '13.2'. A ratio of
    1 or more whose interval spans over a factor of 2 gets one decimal
    fewer, as the repeats pin it down no better: '3.2', '1.6', '8.5'."""
    d = digits(ratio.median)
    if d > 0 and ratio.median >= 1 and ratio.high > 2 * ratio.low:
        d -= 1
    return [number(x, d) for x in (ratio.median, ratio.low, ratio.high)]


def shown(ratio):
    """The PairedRatio as `ratio_text` prints it, so that a verdict decided
    on it agrees with the printed numbers: an interval printed '0.90 to
    1.00' holds 1, and says the two cannot be told apart."""
    values = (float(x.replace(",", "")) for x in _printed(ratio))
    return PairedRatio(*values, ratio.of_medians)


def interval_text(ratio):
    """'0.82 to 0.99': a PairedRatio's 95% interval (see `_printed`)."""
    _, low, high = _printed(ratio)
    return f"{low} to {high}"


def ratio_text(ratio):
    """'0.86 (0.82 to 0.99)': a PairedRatio's median and interval."""
    return "{} ({} to {})".format(*_printed(ratio))


def ratio_table(r):
    """The batched layer's time over the loop's at each length and head
    count (`batched_loop_each`), most heads first, each row worded as the
    page's verdicts are: judged as printed, by `than`."""
    lines = ["| input | batched / loop | the batched layer was |"]
    lines.append("|---|---|---|")
    for T in r.lengths:
        for h in reversed(r.head_counts):
            ratio = r.batched_loop_each[T, h]
            args = shown(ratio).beyond(MATTERS)
            words = decide("ratio_margin", args, than(ratio))[1]
            text = f"{T} tokens, $h =$ {h} | {ratio_text(ratio)}"
            lines.append(f"| {text} | {words} the loop |")
    return Markdown("\n".join(lines))


def comparisons_table(record):
    """The two paired ratios the page states (rows) at each length
    (columns), with their 95% intervals, at the most heads: the batched
    layer over the loop, and the fused path over the batched layer."""
    most = record.head_counts[-1]
    rows = [
        (f"batched layer over the loop, $h$ = {most}", record.batched_loop),
        (
            f"fused path over the batched layer, $h$ = {most}",
            record.fused_batched,
        ),
    ]
    return _table(
        ["ratio of times (95% interval)"]
        + [f"$T$ = {T}" for T in record.lengths],
        [
            [name] + [ratio_text(ratios[T]) for T in record.lengths]
            for name, ratios in rows
        ],
    )


# What the brackets hold: with fewer than 6 repeats, even the range of the
# ratios holds their median with less than 95% (`costs.median_ranks`).
BRACKETS = {True: "95% intervals", False: "rough ranges, from few repeats"}


def interval_ranks(repeats):
    """{glue name: value}: the sorted ratios, counted from the smallest,
    that bound a paired ratio's interval, and the chance that it holds
    the median (`costs.median_ranks`)."""
    k, coverage = median_ranks(repeats)
    return {
        "rank_low": k,
        "rank_high": repeats + 1 - k,
        "rank_coverage": coverage,  # the chance it holds the median
    }


def page_numbers(r):
    """{glue name: value}: every number the page head_costs states, from
    a HeadCosts record (costs.head_costs_results)."""
    few, most = r.head_counts[0], r.head_counts[-1]
    short, long = r.lengths[0], r.lengths[-1]
    ranks = interval_ranks(r.repeats)
    return {
        "cpu": r.machine.split(";")[0],
        "width": r.width,
        "few": few,
        "most": most,
        "short": short,
        "long": long,
        "repeats": r.repeats,
        "brackets": BRACKETS[ranks["rank_coverage"] >= 0.95],
        **ranks,
        "num_params": f"{r.params['batched', few]:,}",
        "flops_short": f"{r.flops['batched', few, short] / 1e6:,.0f} million",
        "flops_long": f"{r.flops['batched', few, long] / 1e6:,.0f} million",
        "peak_batched_few": r.peak["batched", few],
        "peak_batched_most": r.peak["batched", most],
        "peak_fused_most": r.peak["fused", most],
        "scores_mib_extra": r.score_mib(most) - r.score_mib(few),
        "ops_per_head": round(r.ops_per_head()),
        "ops_loop_few": r.ops["loop", few],
        "ops_loop_most": r.ops["loop", most],
        "ops_batched_few": r.ops["batched", few],
        "ops_batched_most": r.ops["batched", most],
        "min_run_ms": r.min_run_time * 1e3,
        "ratio_short": ratio_text(r.batched_loop[short]),
        "ratio_table": ratio_table(r),  # every length and head count
        "ratio_short_few": ratio_text(r.batched_loop_few[short]),
        "ratio_long_few": ratio_text(r.batched_loop_few[long]),
        "heads_gain_short": ratio_text(r.heads_gain[short]),
        "heads_gain_long": ratio_text(r.heads_gain[long]),
        "ratio_short_of_medians": number(r.batched_loop[short].of_medians),
        "ratio_long_of_medians": number(r.batched_loop[long].of_medians),
        "ratio_long": ratio_text(r.batched_loop[long]),
        "fused_ratio_short": ratio_text(r.fused_batched[short]),
        "fused_ratio": ratio_text(r.fused_batched[long]),
        "softmax_few_us": r.softmax[few] * 1e6,
        "softmax_most_us": r.softmax[most] * 1e6,
        "softmax_ratio": ratio_text(r.softmax_heads),
        "products_ratio": ratio_text(r.products_ratio),
        "per_op_us": r.per_op * 1e6,
        "matters": MATTERS,  # the margin a time ratio must clear
    }


# A gap in time smaller than this share may not repeat: another build on
# the same machine can land outside one build's interval (the page says so).
MATTERS = 0.1
THAN = {  # a paired ratio of times against 1 +- MATTERS, as printed
    "less": "faster than",
    "more": "slower than",
    "same": f"within {MATTERS:.0%} of",
    # crossing one edge of the margin: no direction is claimed, as the
    # median can lie on the other side of 1 (blind reads 84 and 85)
    "near_less": "not clearly faster or slower than",
    "near_more": "not clearly faster or slower than",
    # "under" and "over", all on one side of 1 but not all beyond the
    # margin, come from `than`, with the interval's size (reads 283-286)
    "wide": "not clearly faster or slower than",  # crosses both edges
}
EFFECT = {  # the batched/loop ratio at most heads over at fewest, paired
    "less": "lowers",
    "same": "does not clearly change",
    "more": "raises",
}
FEW_BATCH = {  # whether the fewest heads timed is 1, as the text assumes
    True: "with no heads to batch",
    False: "with fewer heads to batch",
}


def percents(a, b):
    """'2–10%': two fractions as a range of percentages."""
    return f"{round(100 * a)}–{round(100 * b)}%"


def than(ratio):
    """THAN for one PairedRatio of times, as printed (`shown`): where its
    interval lies on one side of 1 but not all beyond MATTERS, the phrase
    gives the interval as percentages: 'faster here (2–12% less
    time) than' (one wording, whether or not all of it is inside
    MATTERS)."""
    low, high = shown(ratio).low, shown(ratio).high
    less, more = percents(1 - high, 1 - low), percents(low - 1, high - 1)
    return THAN | {
        "under": f"faster here ({less} less time) than",
        "over": f"slower here ({more} more time) than",
    }


def page_verdicts(r):
    """[(name, rule, args, phrases), ...]: every verdict the page
    head_costs glues from a HeadCosts record. A ratio is judged as printed
    (`shown`), so the verdict agrees with the interval the page shows."""
    short, long = r.lengths[0], r.lengths[-1]
    gain_short, gain_long = (shown(r.heads_gain[T]) for T in (short, long))
    ratios = [
        ("batched_short", r.batched_loop[short]),
        ("products_short", r.products_ratio),
        ("softmax_most", r.softmax_heads),
        ("fused_short", r.fused_batched[short]),
        ("fused_long", r.fused_batched[long]),
    ]
    return [
        (name, "ratio_margin", shown(ratio).beyond(MATTERS), than(ratio))
        for name, ratio in ratios
    ] + [
        ("few_batch", "above", (int(r.head_counts[0] == 1), 0), FEW_BATCH),
        ("heads_effect_short", "compare", gain_short.against(1), EFFECT),
        ("heads_effect_long", "compare", gain_long.against(1), EFFECT),
    ]
