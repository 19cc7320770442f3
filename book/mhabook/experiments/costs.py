"""What a layer costs on this machine (head_costs): parameters, FLOPs,
operations dispatched, peak tensor memory, and times repeated to show their
spread. `head_costs_results` makes every measurement the page states."""

import math
import os
import platform
import weakref
from dataclasses import dataclass
from functools import partial

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.benchmark import Timer
from torch.utils.flop_counter import FlopCounterMode

from ..checks import unchecked  # timings leave out the input checks
from ..layers.all_heads import AttentionConfig, batched_from_loop
from ..layers.many_heads import MultiHeadAttention, head_dim_for


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


def block_size(timer, min_run_time):
    """Calls per block: enough for one block to run >= min_run_time, from
    one call timed after a first (warm-up) call."""
    timer.timeit(1)
    once = timer.timeit(1).mean
    return max(1, math.ceil(min_run_time / max(once, 1e-9)))


def run_order(repeat, n):
    """The order in which `time_interleaved` runs n fns at a repeat:
    rotated every two repeats, every odd repeat reversed."""
    order = [(repeat // 2 + k) % n for k in range(n)]
    return order[::-1] if repeat % 2 else order


def time_interleaved(fns, repeats=15, min_run_time=0.02):
    """(repeats, len(fns)) tensor of seconds per call.

    fns: a sequence of zero-argument callables. Each repeat times every fn
    once (interleaved), so that whatever else the machine does hits all of
    them alike. The order is rotated every two repeats and reversed every
    other repeat, so that no fn always runs first, and none mostly runs
    right after another (a rotation alone would run b after a in 2 of 3
    repeats of three fns). Each time is the mean per call of one block of calls
    (torch.utils.benchmark's Timer, on one thread) that runs >=
    min_run_time; a fn's block size is set once, before the repeats. Row r
    of every column comes from repeat r, so the columns are paired (see
    paired_ratio). The layers' input checks are off while timing
    (`checks.unchecked`): the loop layer calls them once per head, so with
    them on it would also time validation.
    """
    fns = list(fns)
    if not fns or not all(callable(fn) for fn in fns):
        raise ValueError(
            "time_interleaved needs a list of zero-argument callables "
            "(pass list(d.values()) for a dict of them)"
        )
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    timers = [Timer("fn()", globals={"fn": fn}, num_threads=1) for fn in fns]
    times = torch.zeros(repeats, len(fns), dtype=torch.float64)
    with unchecked():
        blocks = [block_size(timer, min_run_time) for timer in timers]
        for r in range(repeats):
            for i in run_order(r, len(fns)):
                times[r, i] = timers[i].timeit(blocks[i]).mean
    return times


@dataclass
class PairedRatio:
    """How many times slower a is than b, repeat by repeat."""

    median: float  # median over repeats of times[:, a] / times[:, b]
    low: float  # 95% interval of that median (median_ranks)
    high: float
    of_medians: float = float("nan")  # median of a / median of b

    def against(self, bar=1.0):
        """The arguments of the verdict rule `compare`: the interval
        against `bar` (1: the two took the same time)."""
        return (self.low, self.high, bar, bar)

    def beyond(self, margin):
        """The arguments of the verdict rule `ratio_margin`: the interval
        and the margin a gap must clear either way."""
        return (self.low, self.high, margin)


def median_ranks(n, level=0.95):
    """(k, coverage): of n repeats sorted, the k-th smallest and the k-th
    largest bound an interval that holds the median of the distribution
    they were drawn from with probability `coverage`, at least `level`,
    whatever that distribution (the sign test's interval: the median lies
    outside it only if fewer than k repeats fall on one side of it).
    Where no k reaches `level` (n < 6 at 95%), k = 1: the whole range,
    with its lower coverage."""

    def coverage(k):
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n

    k = 1
    while k < (n + 1) // 2 and coverage(k + 1) >= level:
        k += 1
    return k, coverage(k)


def _ends(values, level=0.95):
    """(low, high): `median_ranks`' interval of values (N,)."""
    k, _ = median_ranks(len(values), level)
    ordered = values.sort().values
    return ordered[k - 1].item(), ordered[-k].item()


def _table(times):
    times = torch.as_tensor(times, dtype=torch.float64)
    if times.dim() != 2 or times.shape[0] < 2:
        raise ValueError(
            f"need a (repeats, contenders) table with at least 2 repeats, "
            f"got shape {tuple(times.shape)}: time with repeats >= 2"
        )
    return times


def paired_ratio(times, a, b, over=None):
    """PairedRatio of columns a and b of a time_interleaved table.

    The ratio is taken within each repeat (paired), so that a slow moment
    of the machine, which slows both, cancels. low and high are the 2.5th
    and 97.5th percentiles of the median over 2,000 bootstrap resamples of
    the repeats (a fixed seed: the same times give the same interval).
    over=(c, d) divides each repeat's a / b by its c / d: how far one
    ratio moves from another, paired the same way.
    """
    times = _table(times)
    mid = times.quantile(0.5, dim=0)  # each column's median
    ratios, of_medians = times[:, a] / times[:, b], mid[a] / mid[b]
    if over is not None:
        c, d = over
        ratios = ratios / (times[:, c] / times[:, d])
        of_medians = of_medians / (mid[c] / mid[d])
    return PairedRatio(
        ratios.quantile(0.5).item(),
        *_ends(ratios),
        of_medians.item(),
    )


@dataclass
class Term:
    """A time in seconds: a median over repeats and a 95% interval of it
    (median_ranks, as paired_ratio's)."""

    median: float
    low: float
    high: float

    def against(self, bar=0.0):
        """The arguments of the verdict rule `compare`: the interval
        against `bar` (0: no difference)."""
        return (self.low, self.high, bar, bar)


def median_term(values):
    """The Term of per-repeat values (N,), N >= 2.

    Its ends are repeats' values of the same ranks as paired_ratio's, so
    the Term of a - b lies above 0 exactly when paired_ratio(a over b)
    lies above 1: both say that at least N + 1 - k repeats of a were the
    slower.
    """
    values = _table(torch.as_tensor(values)[:, None])[:, 0]
    return Term(values.quantile(0.5).item(), *_ends(values))


def machine():
    """This machine's CPU, as Linux names it, its cores and PyTorch."""
    try:
        with open("/proc/cpuinfo") as info:
            lines = [line for line in info if line.startswith("model name")]
        cpu = lines[0].split(":", 1)[1].strip()
    except (OSError, IndexError):
        cpu = platform.processor() or platform.machine()
    return f"{cpu}, {os.cpu_count()} cores; PyTorch {torch.__version__}"


@dataclass
class HeadCosts:
    """Every number "What heads cost" states, at one width.

    Keys (name, h): name is "loop", "batched" or "fused" (the batched
    layer with need_weights=False); h a head count. Times are seconds per
    call on one thread, `repeats` repeats interleaved (time_interleaved);
    `times[T]` has one column per `contenders` entry. Ratios are paired
    (paired_ratio): the first named over the second, at h = max(heads).
    """

    width: int
    head_counts: tuple
    lengths: tuple  # short, ..., long
    repeats: int
    min_run_time: float  # seconds of calls behind each time
    machine: str
    params: dict  # (name, h) -> parameters
    flops: dict  # (name, h, T) -> FLOPs PyTorch's counter saw
    peak: dict  # (name, h) -> peak MiB at the long length
    ops: dict  # (name, h) -> operations dispatched at the short length
    contenders: list  # (name, h) of the columns of times[T]
    times: dict  # T -> (repeats, len(contenders)) seconds
    batched_loop_each: dict  # (T, h) -> PairedRatio, batched / loop
    # T -> PairedRatio: batched / loop at most heads over the same at
    # fewest, within each repeat: what going to more heads does to it
    heads_gain: dict
    fused_batched: dict  # T -> PairedRatio, fused / batched
    loop_heads: dict  # T -> PairedRatio, loop at most / fewest heads
    batched_heads: dict  # T -> PairedRatio, the same for batched
    softmax: dict  # h -> median seconds, over the long length's scores
    softmax_heads: PairedRatio  # most heads' softmax / fewest heads'
    # at the short length, most heads: the loop's 3h one-head projections,
    # called as the loop calls them, over the batched layer's one
    products_ratio: PairedRatio
    per_op: float  # median seconds of a one-element add: one dispatch

    @property
    def batched_loop(self):
        """T -> PairedRatio, batched / loop at the most heads."""
        most = self.head_counts[-1]
        return {T: self.batched_loop_each[T, most] for T in self.lengths}

    @property
    def batched_loop_few(self):
        """The same at the fewest heads: at h = 1, nothing to batch."""
        few = self.head_counts[0]
        return {T: self.batched_loop_each[T, few] for T in self.lengths}

    def score_mib(self, num_heads):
        """MiB of one (1, h, T, T) float32 tensor at the long length."""
        return num_heads * self.lengths[-1] ** 2 * 4 / 2**20

    def ops_per_head(self):
        """The loop's extra operations for each head it adds."""
        few, most = self.head_counts[0], self.head_counts[-1]
        extra = self.ops["loop", most] - self.ops["loop", few]
        return extra / (most - few)


def _projections(loop, x):
    """Every head's query, key and value projection, as the loop runs
    them: (3h,) results (B, T, d_k)."""
    return [p(x) for head in loop.heads for p in (head.q, head.k, head.v)]


def _flops(module, x):
    """The FLOPs PyTorch's counter sees in module(x)."""
    with FlopCounterMode(display=False) as counter:
        module(x)
    return counter.get_total_flops()


def _layers(width, num_heads, seed):
    """(loop, batched) layers holding the same seeded random weights."""
    torch.manual_seed(seed + num_heads)
    loop = MultiHeadAttention(AttentionConfig(width, num_heads))
    return loop, batched_from_loop(loop)


def head_costs_results(
    width=768,
    head_counts=(1, 4, 12),
    lengths=(13, 256),
    repeats=15,
    min_run_time=0.02,
    seed=0,
):
    """HeadCosts of the loop and the batched layer at `width`, for each
    head count, on one sequence of each length (random inputs, seeded
    random weights). Memory and the softmax are measured at the longest
    length; operations, projections and dispatch at the shortest. `repeats`:
    odd, at least 3."""
    if len(set(head_counts)) != len(head_counts):
        raise ValueError(
            f"head counts {tuple(head_counts)} repeat one: give each head "
            f"count once, such as (1, 4, 12)"
        )
    head_counts, lengths = tuple(sorted(head_counts)), tuple(sorted(lengths))
    for h in head_counts:
        head_dim_for(width, h)  # a ValueError that names the fix
    if len(head_counts) < 2 or len(set(lengths)) != 2 or lengths[0] < 1:
        raise ValueError(
            f"need two head counts or more, and exactly two different "
            f"lengths of 1 token or more, a short and a long one (the page "
            f"compares them); got {head_counts} and {lengths}: use head "
            f"counts such as (1, 4, 12) and lengths such as (13, 256)"
        )
    if repeats < 3 or repeats % 2 == 0:
        raise ValueError(
            f"repeats must be odd and at least 3, got {repeats}: then a "
            f"median is one repeat's time, and a difference's sign agrees "
            f"with its ratio's (see median_term)"
        )
    few, most = head_counts[0], head_counts[-1]
    short, long = lengths[0], lengths[-1]
    names = ("loop", "batched", "fused")
    contenders = [(name, h) for h in head_counts for name in names]
    layers = {h: _layers(width, h, seed) for h in head_counts}
    torch.manual_seed(seed)
    inputs = {T: torch.randn(1, T, width) for T in lengths}
    params, flops, peak, ops, times, columns = {}, {}, {}, {}, {}, {}
    with torch.no_grad():
        for h, (loop, layer) in layers.items():
            for name, module in (("loop", loop), ("batched", layer)):
                params[name, h] = sum(p.numel() for p in module.parameters())
                for T, x in inputs.items():
                    flops[name, h, T] = _flops(module, x)
                ops[name, h] = watch(module, inputs[short])[0]
                peak[name, h] = watch(module, inputs[long])[1]
            peak["fused", h] = watch(layer, inputs[long], need_weights=False)[
                1
            ]
        scores = {h: torch.randn(1, h, long, long) for h in (few, most)}
        loop, layer = layers[most]
        one = torch.ones(1)  # adding two: about no work, all dispatch
        for T, x in inputs.items():
            fns = {}
            for name, h in contenders:
                lo, la = layers[h]
                fns[name, h] = {
                    "loop": partial(lo, x),
                    "batched": partial(la, x),
                    "fused": partial(la, x, need_weights=False),
                }[name]
            if T == short:  # the projections alone, and one dispatch
                fns["small"] = partial(_projections, loop, x)
                fns["large"] = partial(layer.qkv, x)
                fns["add"] = partial(torch.add, one, one)
            if T == long:  # the softmax over the scores, as the layer's
                for h, s in scores.items():
                    fns["softmax", h] = partial(torch.softmax, s, dim=-1)
            times[T] = time_interleaved(fns.values(), repeats, min_run_time)
            columns[T] = list(fns)

    def ratio(T, a, b, over=None):
        at = columns[T].index
        over = over and tuple(map(at, over))
        return paired_ratio(times[T], at(a), at(b), over)

    def per_length(a, b, over=None):
        return {T: ratio(T, a, b, over) for T in lengths}

    soft = {
        h: times[long][:, columns[long].index(("softmax", h))] for h in scores
    }
    add = times[short][:, columns[short].index("add")]  # (repeats,)
    return HeadCosts(
        width=width,
        head_counts=head_counts,
        lengths=lengths,
        repeats=repeats,
        min_run_time=min_run_time,
        machine=machine(),
        params=params,
        flops=flops,
        peak=peak,
        ops=ops,
        contenders=contenders,
        times={T: t[:, : len(contenders)] for T, t in times.items()},
        batched_loop_each={
            (T, h): ratio(T, ("batched", h), ("loop", h))
            for T in lengths
            for h in head_counts
        },
        heads_gain=per_length(
            ("batched", most),
            ("loop", most),
            over=(("batched", few), ("loop", few)),
        ),
        fused_batched=per_length(("fused", most), ("batched", most)),
        loop_heads=per_length(("loop", most), ("loop", few)),
        batched_heads=per_length(("batched", most), ("batched", few)),
        softmax={h: t.quantile(0.5).item() for h, t in soft.items()},
        softmax_heads=ratio(long, ("softmax", most), ("softmax", few)),
        products_ratio=ratio(short, "small", "large"),
        per_op=add.quantile(0.5).item(),
    )
