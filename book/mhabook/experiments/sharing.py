"""The bookkeeping of "Sharing keys and values": the references the
grouped layer is checked against, the timing harness, the tables and the
figures. The layer itself is in gqa.py, taught in `# @save` cells.

Shape letters: B batch, T tokens, C hidden size, h query heads, g key/value
heads, d_k = C // h, S tokens so far, L layers.
"""

import time

import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import Markdown
from matplotlib import pyplot as plt
from torch.utils.flop_counter import FlopCounterMode
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaAttention

from ..layers.all_heads import causal_mask

# The references


def gap(a, b):
    """The largest difference between a and b, after asserting that they
    are equal to within 1e-5."""
    assert torch.allclose(a, b, rtol=1e-5, atol=1e-5)
    return (a - b).abs().max().item()


def fused_output(layer, x, is_causal):
    """The grouped layer's own projections, attended by PyTorch's fused
    F.scaled_dot_product_attention with enable_gqa=True (no copies)."""
    B, T, C = x.shape
    h, g, d_k = layer.num_heads, layer.num_kv_heads, layer.head_dim
    Q = layer.q(x).view(B, T, h, d_k).transpose(1, 2)  # (B, h, T, d_k)
    kv = layer.kv(x).view(B, T, 2, g, d_k)  # (B, T, 2, g, d_k)
    K, V = kv.permute(2, 0, 3, 1, 4)  # 2 x (B, g, T, d_k)
    context = F.scaled_dot_product_attention(
        Q, K, V, is_causal=is_causal, enable_gqa=True
    )  # (B, h, T, d_k)
    return layer.output_linear(context.transpose(1, 2).reshape(B, T, C))


def random_llama(hidden_size, heads, kv_heads):
    """A randomly initialised Hugging Face LlamaAttention, in eval mode."""
    config = LlamaConfig(
        hidden_size=hidden_size,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        attn_implementation="eager",  # returns its attention weights
    )
    return LlamaAttention(config, layer_idx=0).eval()


def llama_output(llama, x, is_causal):
    """(output, weights) of LlamaAttention with its rotation turned off
    (cos 1, sin 0: the identity) and, if causal, its additive mask."""
    B, T, _ = x.shape
    cos = torch.ones(B, T, llama.head_dim)  # rotation by angle 0:
    sin = torch.zeros(B, T, llama.head_dim)  # the identity
    mask = None
    if is_causal:
        mask = torch.zeros(T, T).masked_fill(~causal_mask(T), -torch.inf)
        mask = mask.expand(B, 1, T, T)  # (B, 1, T, T), added to scores
    return llama(x, position_embeddings=(cos, sin), attention_mask=mask)


# Timing


def cpu_seconds(step, length, calls):
    """The CPU time of this thread for step(length): the least disturbed
    of `calls` calls, after one warm-up call."""
    step(length)  # warm-up
    times = []
    for _ in range(calls):
        start = time.thread_time()
        step(length)
        times.append(time.thread_time() - start)
    return min(times)


def time_steps(steps, lengths, rounds=5):
    """{name: (rounds, len(lengths)) array of seconds} for steps =
    {name: (step, calls)}, on one thread, the rounds one after another.

    PyTorch is limited to one thread while it times, so that time spent
    waiting for other programs does not count; the thread count it had is
    put back afterwards, even after an error.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    costs = {name: [] for name in steps}
    try:
        with torch.inference_mode():
            for _ in range(rounds):
                for name, (step, calls) in steps.items():
                    row = [cpu_seconds(step, S, calls) for S in lengths]
                    costs[name].append(row)
    finally:
        torch.set_num_threads(threads)
    return {name: np.array(rows) for name, rows in costs.items()}


def step_flops(step, length):
    """The FLOPs of the matrix products of one call step(length)."""
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        step(length)
    return counter.get_total_flops()


def line_slopes(lengths, rows):
    """The slope of a straight line fitted to each row (seconds per token)."""
    return np.array([np.polyfit(lengths, row, 1)[0] for row in rows])


def line_fit(lengths, row):
    """(intercept, slope) of the straight line fitted to one row: the fixed
    part of a step's cost (seconds) and its cost per token (seconds)."""
    slope, intercept = np.polyfit(lengths, row, 1)
    return float(intercept), float(slope)


def plot_timing(costs, lengths):
    """Fig. kv-timing, two panels stacked: the median and range of the
    rounds without the cache (top, a parabola fitted, in ms) and with it
    (bottom, a line fitted, in µs)."""
    fig, axes = plt.subplots(2, 1, figsize=(4.6, 6.2), layout="constrained")
    grid = np.linspace(0, max(lengths), 100)
    for ax, name, unit, scale, degree in [
        (axes[0], "without", "ms", 1e3, 2),
        (axes[1], "with", "µs", 1e6, 1),
    ]:
        t = costs[name] * scale
        median = np.median(t, axis=0)
        spread = [median - t.min(0), t.max(0) - median]
        ax.errorbar(
            lengths,
            median,
            yerr=spread,
            fmt="o",
            capsize=3,
            label=f"median and range of {len(t)} rounds",
        )
        fit = np.polyval(np.polyfit(lengths, median, degree), grid)
        ax.plot(grid, fit, label=["", "line", "parabola"][degree] + " fit")
        ax.set_title(f"{name} the cache")
        ax.set_xlabel("tokens so far $S$")
        ax.set_ylabel(f"CPU {unit} per new token")
        ax.set_ylim(0, 1.35 * float(t.max()))  # room for the legend
        ax.legend(loc="upper left")
    return fig


# Tables and the real checkpoint


def markdown_table(header, rows):
    """A Markdown table: a header row, then right-aligned number columns."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|---|" + "---:|" * (len(header) - 1))
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return Markdown("\n".join(lines))


def mean_interval(values, draws=1000, seed=0):
    """(low, high): the 95% bootstrap range of the mean of `values` (N,)."""
    values = torch.as_tensor(values, dtype=torch.float64)
    generator = torch.Generator().manual_seed(seed)
    picks = torch.randint(
        len(values), (draws, len(values)), generator=generator
    )
    means = values[picks].mean(-1)  # (draws,)
    low, high = means.quantile(0.025).item(), means.quantile(0.975).item()
    return low, high


def even_spread(maps, attention_mask):
    """Attention maps (L, B, h, T, T) of the same shape in which every real
    token's row spreads evenly over the sentence's real tokens."""
    real = attention_mask[:, None, None, :].to(maps.dtype)  # (B, 1, 1, T)
    even = real / real.sum(-1, keepdim=True)  # (B, 1, 1, T)
    return even.expand_as(maps[0]).expand_as(maps)  # (L, B, h, T, T)


def plot_conversion(num_heads, shift, to_even, fid, fid_halves, fid_none):
    """Fig. kv-checkpoint, two panels stacked, each legend below its panel.
    Top: each layer's attention moved, one line per g, and an even spread
    dashed. Bottom: the fidelity against g, on all the sentences (a line)
    and on each half (hollow triangles set beside the line's points), and
    the fidelity with every head removed dashed. shift, fid, fid_halves:
    {g: ...} for the g's below h."""
    fig, axes = plt.subplots(2, 1, figsize=(4.6, 7.6), layout="constrained")
    kv_counts = list(fid)
    layers = np.arange(len(to_even))
    for g in kv_counts:
        axes[0].plot(layers, shift[g], marker="o", label=f"g = {g}")
    axes[0].plot(layers, to_even, "k--", label="to an even spread")
    axes[0].set_xlabel("layer")
    axes[0].set_ylabel("attention moved\n(total variation)")
    axes[0].set_xticks(layers)
    top = max(float(to_even.max()), *(float(s.max()) for s in shift.values()))
    axes[0].set_ylim(0, 1.05 * top)
    axes[0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    ks = [num_heads] + kv_counts
    axes[1].plot(
        ks,
        [1.0] + [fid[g] for g in kv_counts],
        marker="o",
        label="all sentences",
        zorder=3,
    )
    for half, style, step in zip((0, 1), ("^", "v"), (-0.15, 0.15)):
        axes[1].plot(
            [g * 2**step for g in kv_counts],  # beside the line's points
            [fid_halves[g][half] for g in kv_counts],
            style,
            markersize=8,
            markerfacecolor="none",
            color="grey",
            label=f"half {half + 1} of them",
            zorder=2,
        )
    axes[1].axhline(fid_none, color="k", ls="--", label="every head removed")
    axes[1].set_xscale("log", base=2)
    axes[1].set_xticks(ks, [str(k) for k in ks])
    axes[1].minorticks_off()
    axes[1].set_xlim(num_heads * 2**0.4, min(kv_counts) * 2**-0.4)  # inverted
    axes[1].set_xlabel("key/value heads $g$ per layer")
    axes[1].set_ylabel("fidelity\n(mean cosine to the original)")
    low = min(fid_none, *fid.values())  # zoom in on what the lines span
    axes[1].set_ylim(low - 0.1 * (1 - low), 1 + 0.05 * (1 - low))
    axes[1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    return fig


def medians(rows):
    """The median over the rounds (axis 0) of a (rounds, lengths) array."""
    return np.median(rows, axis=0)
