"""Measuring what a layer costs on this machine (section 3): operations
dispatched, peak tensor memory, and times repeated to show their spread."""

import statistics
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.benchmark import Timer


def _storages(tree):
    return [
        t.untyped_storage()
        for t in tree_flatten(tree)[0]
        if isinstance(t, torch.Tensor)
    ]


class _Watch(TorchDispatchMode):
    """Sees every PyTorch operation below autograd: counts them, and adds
    up the bytes of the new tensors they create while those are alive."""

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


def time_repeated(fns, repeats=7, min_run_time=0.02):
    """Seconds per call of each fn, `repeats` times, interleaved.

    fns: {name: zero-argument callable}. Each repeat times every fn in
    turn, so that whatever else the machine does hits all of them alike.
    Returns {name: sorted list of `repeats` times}.
    """
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            timer = Timer("fn()", globals={"fn": fn})
            measured = timer.blocked_autorange(min_run_time=min_run_time)
            times[name].append(measured.median)
    return {name: sorted(t) for name, t in times.items()}


def verdict(new, old, against):
    """Compare two lists of repeated times of the same work, in words:
    '2.3x faster than <against>', 'slower', or no measurable difference.

    Says faster or slower only when every time of one is below every time
    of the other (the ranges do not overlap); otherwise it says there is
    no measurable difference.
    """
    ratio = statistics.median(old) / statistics.median(new)
    if max(new) < min(old):
        return f"{ratio:.1f}x faster than {against}"
    if min(new) > max(old):
        return f"{1 / ratio:.1f}x slower than {against}"
    return (
        f"not measurably faster or slower than {against} (the ranges overlap)"
    )
