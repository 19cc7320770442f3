"""Section 3's measuring helpers: operation counts, peak tensor memory,
repeated timings and the words that may be said about them."""

import torch

from mhabook import MultiHeadAttention
from mhabook.batched import AttentionConfig, batched_from_loop
from mhabook.costs import time_repeated, verdict, watch

MIB = 2**20


def test_watch_counts_new_tensors_not_views():
    x = torch.zeros(MIB // 4)  # 1 MiB of float32

    def two_copies_and_a_view():
        a = x + 1  # new: 1 MiB
        b = a * 2  # new: 1 MiB, while a is alive
        return b.view(-1, 2)  # a view: no new memory

    ops, peak = watch(two_copies_and_a_view)
    assert ops == 3
    assert peak == 2.0


def test_watch_frees_what_dies():
    x = torch.zeros(MIB // 4)

    def one_at_a_time():
        for _ in range(3):
            y = x + 1  # each result dies before the next is made
            del y

    assert watch(one_at_a_time)[1] == 1.0


def test_in_place_results_are_not_new_memory():
    x = torch.zeros(MIB // 4)

    def in_place():
        y = x + 1
        y.mul_(2)
        torch.softmax(y, 0, out=y)

    assert watch(in_place)[1] == 1.0


def test_the_loop_dispatches_more_operations_with_more_heads():
    x = torch.randn(1, 4, 16)
    counts = {}
    for h in (1, 4):
        loop = MultiHeadAttention(AttentionConfig(16, h))
        with torch.no_grad():
            counts["loop", h] = watch(loop, x)[0]
            counts["batched", h] = watch(batched_from_loop(loop), x)[0]
    assert counts["loop", 4] > 3 * counts["loop", 1]
    assert abs(counts["batched", 4] - counts["batched", 1]) <= 1


def test_the_loop_holds_every_map_twice():
    x = torch.randn(1, 64, 32)
    loop = MultiHeadAttention(AttentionConfig(32, 4))
    maps = 4 * 64 * 64 * 4 / MIB
    with torch.no_grad():
        assert watch(loop, x)[1] >= 2 * maps


def test_time_repeated_interleaves_and_sorts():
    calls = []
    times = time_repeated(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
        repeats=3,
        min_run_time=0.001,
    )
    assert set(times) == {"a", "b"}
    assert all(len(t) == 3 and t == sorted(t) for t in times.values())
    assert calls.count("a") > 0 and calls.count("b") > 0


def test_verdict_speaks_only_beyond_the_spread():
    assert verdict([1.0, 1.1], [2.0, 2.2], "x") == "2.0x faster than x"
    assert verdict([2.0, 2.2], [1.0, 1.1], "x") == "2.0x slower than x"
    overlapping = verdict([1.0, 2.1], [2.0, 3.0], "x")
    assert overlapping.startswith("not measurably faster or slower than x")
