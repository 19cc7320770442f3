"""The figures and tables of "Sharing keys and values", drawn from the
SharingKV record that mhabook.experiments.sharing.sharing_results returns.
Every function returns its Figure or its Markdown."""

import numpy as np
from IPython.display import Markdown
from matplotlib import pyplot as plt

from ..experiments.costs import PairedRatio
from .head_costs import (
    MATTERS,
    interval_ranks,
    number,
    percents,
    ratio_text,
    shown,
)


def markdown_table(header, rows):
    """A Markdown table: a header row, then right-aligned number columns."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|---|" + "---:|" * (len(header) - 1))
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return Markdown("\n".join(lines))


def _median_and_range(ax, lengths, times, scale, label, **style):
    """Points at the median over the repeats, bars over their range."""
    t = np.asarray(times) * scale  # (repeats, lengths)
    median = np.median(t, axis=0)
    spread = [median - t.min(0), t.max(0) - median]
    ax.errorbar(
        lengths, median, yerr=spread, fmt="o-", capsize=3, label=label, **style
    )
    return t


def plot_timing(timing):
    """Fig. kv-timing, two panels stacked, one layer's decoding step
    against S: without the cache (top, ms) and with it (bottom, µs), each
    the median and range of the repeats."""
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(4.6, 6.0), layout="constrained"
    )
    lengths, repeats = list(timing.lengths), timing.repeats
    label = f"median and range of {repeats} repeats"
    t = _median_and_range(top, lengths, timing.without, 1e3, label)
    top.set_title("without the cache: all keys and values")
    top.set_ylabel("ms per new token")
    top.set_ylim(0, 1.3 * float(t.max()))  # room for the legend
    t = _median_and_range(bottom, lengths, timing.cached, 1e6, label)
    bottom.set_title("with the cache: one token, S cached")
    bottom.set_ylabel("µs per new token")
    bottom.set_ylim(0, 1.3 * float(t.max()))
    for ax in (top, bottom):
        ax.set_xlabel("tokens so far $S$")
        ax.set_xlim(0, 1.04 * max(lengths))
        ax.legend(loc="upper left")
    return fig


def timing_table(timing):
    """Tab. kv-time: at each S, the step without the cache (ms) and with
    it (µs), each the median over the repeats, and the paired ratio of
    the two (without / with) with its 95% interval."""
    rows = [
        [S, _three(off, 1e3)[0], _three(on, 1e6)[0], ratio_text(ratio)]
        for S, off, on, ratio in zip(
            timing.lengths,
            timing.without_steps,
            timing.cached_steps,
            timing.speedups,
        )
    ]
    header = ["$S$", "without, ms", "with, µs", "without / with (95%)"]
    return markdown_table(header, rows)


def _three(term, scale):
    """('165', '(157 to 181)'): a Term times `scale`, each number to three
    significant digits."""
    mid, low, high = (
        f"{float(f'{scale * x:.3g}'):,g}"
        for x in (term.median, term.low, term.high)
    )
    return mid, f"({low} to {high})"


def estimate_text(mid, low, high, scale=1.0, digits=0):
    """'215 (180 to 260)': an estimate and its interval, times `scale`."""
    mid, low, high = (f"{scale * x:,.{digits}f}" for x in (mid, low, high))
    return f"{mid} ({low} to {high})"


def faster_phrases(ratio):
    """{outcome of the rule `compare`: phrase} for a PairedRatio of times,
    without the cache over with it: '70 (66 to 88) times faster'."""
    x, low, high = ratio.median, ratio.low, ratio.high
    up = ratio_text(ratio)  # '68 (43 to 109)'
    down = ratio_text(PairedRatio(1 / x, 1 / high, 1 / low))
    return {
        "more": f"{up} times faster",
        "same": "not measurably faster",
        "less": f"{down} times slower",
    }


GROWTH = {  # the time's growth over its arithmetic's, against 1 +- MATTERS;
    # "under" and "over" are added with their size by `page_verdicts`
    "less": "below its arithmetic's",
    "more": "above its arithmetic's",
    "same": f"within {MATTERS:.0%} of its arithmetic's",
    "near_less": "not clearly above or below its arithmetic's",
    "near_more": "not clearly above or below its arithmetic's",
    "wide": "not clearly above or below its arithmetic's",
}


def page_verdicts(r):
    """[(name, rule, args, phrases), ...]: every verdict the page
    sharing_kv glues from a SharingKV record; each phrase reads true in
    its sentence whatever the outcome."""
    t, c = r.timing, r.conversion
    stack, one, grow = t.stack_speedup, t.speedup, t.growth_without
    closer = {"clearly": "clearly closer to", "barely": "barely closer to"}
    closer |= {"neither": "not measurably closer to", "below": "farther from"}
    # as printed: an interval whose end is printed as the arithmetic's
    # growth, or within 0.5% of it, holds it: not "below" or "above" it
    arithmetic = round(t.flop_growth, 2)
    low, high = shown(grow).low / arithmetic, shown(grow).high / arithmetic
    if 0.995 < high < 1:  # "below it, by 0-17%" would hold it
        high = 1.0
    if 1 < low < 1.005:
        low = 1.0
    by_how_much = {  # on one side of 1, not all beyond MATTERS
        "under": f"below its arithmetic's, by {percents(1 - high, 1 - low)}",
        "over": f"above its arithmetic's, by {percents(low - 1, high - 1)}",
    }
    fall = t.first_fall  # (S, next S) where the cached median fell, or None
    fell = f"fell from S = {fall[0]} to {fall[1]}" if fall else "fell"
    return [
        (
            "speed_verdict",
            "compare",
            shown(one).against(1),
            faster_phrases(one),
        ),
        (  # the same at the shortest length
            "speed_first_verdict",
            "compare",
            shown(t.speedups[0]).against(1),
            faster_phrases(t.speedups[0]),
        ),
        (
            "stack_verdict",
            "compare",
            shown(stack).against(1),
            faster_phrases(stack),
        ),
        (
            "growth_vs_flops",  # its growth over its arithmetic's, as THAN
            "ratio_margin",
            (low, high, MATTERS),
            GROWTH | by_how_much,
        ),
        (
            "cached_steady",
            "above",
            (int(fall is None), 0),
            {True: "did not fall at any length", False: fell},
        ),
        (
            "growth_with_verdict",
            "compare",
            shown(t.growth_with).against(1),  # as printed
            {
                "more": "grew",
                "less": "fell",
                "same": "changed by a noisy factor",
            },
        ),
        (
            "verdict_fid",
            "all_above",
            (c.fidelity_drops(), 0),
            {
                True: "falls at every step",
                False: "does not fall at every step",
            },
        ),
        (
            "verdict_shift",
            "all_above",
            (c.shift_growth(), 0),
            {True: "all move further", False: "do not all move further"},
        ),
        (
            "last_vs_none",
            "above_by",
            (*c.vs_none(c.kv_counts[-1]), 0.1),
            closer,
        ),
    ]


def distinct(*values, digits=3):
    """The values as text with `digits` decimals, or with as many more (up
    to 6) as it takes for unequal values to read unequal: 1.0 and 0.99955
    give '1.0000' and '0.9996', never '1.000' twice."""
    for places in range(digits, 7):
        texts = [f"{v:.{places}f}" for v in values]
        if len(set(texts)) == len(set(values)):
            break
    return texts


def span(values):
    """'0.38 to 0.64': the smallest and the largest of `values`, to two
    significant digits."""
    return f"{values.min().item():.2g} to {values.max().item():.2g}"


def cache_table(memory):
    """Tab. kv-models: the heads, the cache per token (KiB, all layers)
    and per sequence of memory.tokens tokens (GiB), for each model."""
    rows = [
        [
            name,
            h,
            g,
            f"{memory.kib_per_token[name]:,.0f}",
            f"{memory.gib[name]:.3g}",
        ]
        for name, (_, h, g, _) in memory.models.items()
    ]
    header = [
        "model",
        "$h$",
        "$g$",
        "KiB per token",
        f"GiB at {memory.tokens // 1024}k tokens",
    ]
    return markdown_table(header, rows)


def plot_conversion(conversion):
    """Fig. kv-checkpoint, two panels stacked, each legend below its panel.
    Top: each layer's attention moved, one line per g, and an even spread
    dashed. Bottom: the fidelity against g, on all the sentences (a line)
    and on each half (hollow triangles set beside the line's points), and
    the fidelity with every head removed dashed."""
    c = conversion
    fig, axes = plt.subplots(2, 1, figsize=(4.6, 7.6), layout="constrained")
    kv_counts, num_heads = list(c.kv_counts), c.num_heads
    layers = np.arange(len(c.to_even))
    for g in kv_counts:
        axes[0].plot(layers, c.shift[g], marker="o", label=f"g = {g}")
    axes[0].plot(layers, c.to_even, "k--", label="to an even spread")
    axes[0].set_xlabel("layer")
    axes[0].set_ylabel("attention moved\n(total variation)")
    axes[0].set_xticks(layers)
    top = max(
        float(c.to_even.max()), *(float(s.max()) for s in c.shift.values())
    )
    axes[0].set_ylim(0, 1.05 * top)
    axes[0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    ks = [num_heads] + kv_counts
    axes[1].plot(
        ks,
        [c.fidelity(g) for g in ks],
        marker="o",
        label="all sentences",
        zorder=3,
    )
    for half, style, step in zip((0, 1), ("^", "v"), (-0.15, 0.15)):
        axes[1].plot(
            [g * 2**step for g in kv_counts],  # beside the line's points
            [c.fidelity_half(g, half) for g in kv_counts],
            style,
            markersize=8,
            markerfacecolor="none",
            color="grey",
            label=f"half {half + 1} of them",
            zorder=2,
        )
    fid_none = c.fidelity_none
    axes[1].axhline(fid_none, color="k", ls="--", label="every head removed")
    axes[1].set_xscale("log", base=2)
    axes[1].set_xticks(ks, [str(k) for k in ks])
    axes[1].minorticks_off()
    axes[1].set_xlim(num_heads * 2**0.4, min(kv_counts) * 2**-0.4)  # inverted
    axes[1].set_xlabel("key/value heads $g$ per layer")
    axes[1].set_ylabel("fidelity\n(mean cosine to the original)")
    low = min(fid_none, *(c.fidelity(g) for g in kv_counts))  # zoom in
    axes[1].set_ylim(low - 0.1 * (1 - low), 1 + 0.05 * (1 - low))
    axes[1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    return fig


def page_numbers(r, model_name):
    """{glue name: value}: every number the page sharing_kv states, from
    a SharingKV record and the loaded model's name."""
    t, c = r.timing, r.conversion
    first, last = c.kv_counts[0], c.kv_counts[-1]
    if first == last:  # one g below h (h prime): the step is from g = h
        first = c.num_heads
    fids = distinct(c.fidelity(first), c.fidelity(last), c.fidelity_none)
    return {
        "model_name": model_name,
        "proof_pairs": len(r.checks.pairs),
        "proof_largest": r.checks.largest_gap,
        "decode_largest": r.checks.decode_gap,
        "decode_g": ", ".join(str(g) for g in r.checks.decode_kv_heads),
        "s_min": t.lengths[0],
        "s_max": t.lengths[-1],
        "s_half": t.half,
        "n_repeats": t.repeats,
        **interval_ranks(t.repeats),
        "min_run_ms": t.min_run_time * 1e3,
        "t_width": t.width,
        "t_heads": t.num_heads,
        "t_kv_heads": t.num_kv_heads,
        "speedup_text": ratio_text(t.speedup),
        "speedup_first": ratio_text(t.speedups[0]),
        "speedup_first_of_medians": number(t.speedups[0].of_medians),
        "speedup_of_medians": number(t.speedup.of_medians),
        "growth_without_text": ratio_text(t.growth_without),
        "growth_of_medians": number(t.growth_without.of_medians),
        "flop_growth": t.flop_growth,
        "flop_ratio": t.flop_ratio,
        "stack_flop_ratio": t.stack_flop_ratio,
        "growth_with_text": ratio_text(t.growth_with),
        "stack_layers": t.stack_layers,
        "llama_ratio": r.memory.llama_ratio,
        "context_k": r.memory.tokens // 1024,
        "mistral_window_mib": r.memory.mistral_window_mib,
        "params_mqa_share": r.memory.params_mqa_share,
        "mqa_cache_ratio": r.memory.mqa_cache_ratio,
        "num_heads": c.num_heads,
        "num_layers": len(c.to_even),  # the loaded model's
        "kv_list": ", ".join(str(g) for g in c.kv_counts),
        "n_sentences": c.n_sentences,
        "probe_size": c.probe_size,
        "g_first": first,
        "g_last": last,
        # as text, with the decimals that keep unequal values apart
        **dict(zip(("fid_first", "fid_last", "fid_none"), fids)),
        "share_last": c.share_lost(last),
        "other_mean": c.other_mean,
        "shift_last": span(c.shift[last]),
        "even_range": span(c.to_even),
        "barely": 0.1,  # "barely": keeps less than a tenth of the distance
    }


def span_us(terms):
    """'410 to 1,340': the smallest and the largest median of `terms`
    (Terms in seconds), in µs."""
    medians = [1e6 * term.median for term in terms]
    return f"{min(medians):,.0f} to {max(medians):,.0f}"
