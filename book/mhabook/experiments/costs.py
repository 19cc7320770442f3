"""Measuring what a layer costs on this machine (head_costs): operations
dispatched, peak tensor memory, and times repeated to show their spread."""

import statistics
import weakref
from contextlib import contextmanager

import torch
from IPython.display import Markdown
from matplotlib import pyplot as plt
from myst_nb import glue
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.benchmark import Timer

from .verdicts import verdict


def _storages(tree):
    return [
        t.untyped_storage()
        for t in tree_flatten(tree)[0]
        if isinstance(t, torch.Tensor)
    ]


class _Watch(TorchDispatchMode):
    """A TorchDispatchMode: sees every operation a PyTorch function is made
    of (F.linear's addmm, a softmax's kernel), counts them, and adds up the
    bytes of the new tensors they create while those are alive."""

    def __init__(self):
        super().__init__()
        self.ops = self.live = self.peak = 0

    def _free(self, nbytes):
        self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.ops += 1
        # a view or an in-place result shares an input's memory: not new
        seen = {s.data_ptr() for s in _storages((args, kwargs))}
        for storage in _storages(out):
            if storage.data_ptr() not in seen:
                seen.add(storage.data_ptr())
                self.live += storage.nbytes()
                self.peak = max(self.peak, self.live)
                weakref.finalize(storage, self._free, storage.nbytes())
        return out


def watch(fn, *args, **kwargs):
    """Run fn once; return (operations dispatched, peak MiB of the tensors
    it created that were alive at the same time)."""
    with _Watch() as seen:
        result = fn(*args, **kwargs)
        del result
    return seen.ops, seen.peak / 2**20


def time_repeated(fns, repeats=7, min_run_time=0.02, keep_order=False):
    """Seconds per call of each fn, `repeats` times, interleaved.

    fns: {name: zero-argument callable}. Each repeat times every fn in
    turn, so that whatever else the machine does hits all of them alike.
    Returns {name: list of `repeats` times}, sorted unless keep_order, in
    which case entry r of every list comes from repeat r (paired).
    """
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            timer = Timer("fn()", globals={"fn": fn})
            measured = timer.blocked_autorange(min_run_time=min_run_time)
            times[name].append(measured.median)
    if keep_order:
        return times
    return {name: sorted(t) for name, t in times.items()}


@contextmanager
def one_thread():
    """Run the body on one thread, then restore PyTorch's thread count."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


TIME_PHRASES = {
    "less": "faster",
    "more": "slower",
    "same": "within the spread",
}


def compare_times(name, new, old):
    """Glue a verdict on two lists of repeated times of the same work.

    `name` gets 'faster' or 'slower' only when every time of `new` is
    below (above) every time of `old`; otherwise 'within the spread'.
    `name`_ratio gets the ratio of their medians, new / old.
    Returns the rule's outcome: 'less', 'more' or 'same'.
    """
    ranges = (min(new), max(new), min(old), max(old))
    outcome = verdict(name, "compare", ranges, TIME_PHRASES)
    ratio = statistics.median(new) / statistics.median(old)
    glue(f"{name}_ratio", ratio, display=False)
    return outcome


def timing_figure(timings, lengths, head_counts, names):
    """Median ms per call against heads, one panel per length, stacked;
    bars span the fastest and the slowest repeat. timings[T, h][name]:
    seconds. The legend sits above the top panel."""
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
                torch.tensor(timings[T, n][name]) * 1e3 for n in head_counts
            ]
            mid = [r.median().item() for r in runs]
            low = [m - r.min().item() for m, r in zip(mid, runs)]
            high = [r.max().item() - m for m, r in zip(mid, runs)]
            ax.errorbar(
                head_counts,
                mid,
                yerr=[low, high],
                marker="o",
                capsize=3,
                label=name,
            )
        ax.set_title(f"one sequence of {T} tokens")
        ax.set_xlabel("heads $h$")
        ax.set_xticks(head_counts)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("ms per forward pass")
    fig.legend(
        *axes[0].get_legend_handles_labels(),
        loc="outside upper center",
        ncols=len(names),
    )
    return fig


def operations_table(times, flops):
    """A Markdown table of repeated times: median, range, GFLOP/s."""
    rows = [
        "| operation | median µs | range µs | GFLOP/s (median) |",
        "|---|---:|---:|---:|",
    ]
    for name, seconds in times.items():
        us = torch.tensor(seconds) * 1e6
        rate = flops.get(name)
        rate = f"{rate / us.median().item() / 1e3:.1f}" if rate else ""
        rows.append(
            f"| `{name}` | {us.median():.1f} | "
            f"{us.min():.1f} to {us.max():.1f} | {rate} |"
        )
    return Markdown("\n".join(rows))
