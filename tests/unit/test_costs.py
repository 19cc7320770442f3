"""head_costs' measuring helpers: operation counts, peak tensor memory,
repeated timings and the words that may be said about them."""

import matplotlib
import pytest
import torch

from mhabook import MultiHeadAttention
from mhabook.experiments import costs, verdicts
from mhabook.experiments.costs import (
    compare_times,
    one_thread,
    time_repeated,
    watch,
)
from mhabook.layers.all_heads import AttentionConfig, batched_from_loop

matplotlib.use("Agg")

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


def time_two(**options):
    """time_repeated on two contenders that only note their calls:
    (the times, the order of the calls)."""
    calls = []
    times = time_repeated(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
        min_run_time=0.001,
        **options,
    )
    return times, calls


def test_time_repeated_interleaves_and_sorts():
    times, calls = time_two(repeats=3)
    assert set(times) == {"a", "b"}
    assert all(len(t) == 3 and t == sorted(t) for t in times.values())
    # interleaved: the calls come in runs, a's then b's, once per repeat
    runs = [
        name for i, name in enumerate(calls) if i == 0 or calls[i - 1] != name
    ]
    assert runs == ["a", "b"] * 3


def test_time_repeated_can_keep_the_repeats_paired():
    times, calls = time_two(repeats=4, keep_order=True)
    assert all(len(t) == 4 for t in times.values())
    assert calls[0] == "a" and calls[-1] == "b"  # a, then b, each repeat


def test_one_thread_restores_the_thread_count():
    before = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


@pytest.fixture
def glued(monkeypatch):
    found = {}

    def fake_glue(key, value, display):
        found[key] = value

    monkeypatch.setattr(costs, "glue", fake_glue)
    monkeypatch.setattr(verdicts, "glue", fake_glue)
    return found


def test_compare_times_speaks_only_beyond_the_spread(glued):
    assert compare_times("a", [1.0, 1.1], [2.0, 2.2]) == "less"
    assert glued["a"] == "faster" and glued["a_ratio"] == pytest.approx(0.5)
    assert compare_times("b", [2.0, 2.2], [1.0, 1.1]) == "more"
    assert glued["b"] == "slower"
    assert compare_times("c", [1.0, 2.1], [2.0, 3.0]) == "same"
    assert glued["c"] == "within the spread"
    verdicts.check_record(glued["c"], glued["c__verdict"])


def test_timing_figure_has_one_panel_per_length():
    timings = {
        (t, h): {"x": [0.001, 0.002, 0.003]} for t in (5, 9) for h in (1, 2)
    }
    fig = costs.timing_figure(timings, (5, 9), (1, 2), ["x"])
    assert len(fig.axes) == 2
    assert fig.axes[0].get_title() == "one sequence of 5 tokens"
    assert fig.get_figwidth() <= 4.8  # stacked, for a phone's column
    assert all(ax.get_ylabel() for ax in fig.axes)


def test_operations_table_gives_a_rate_only_with_flops():
    table = costs.operations_table(
        {"add": [1e-6, 2e-6, 3e-6], "mm": [1e-3, 1e-3, 1e-3]}, {"mm": 2e6}
    ).data
    assert "| `add` | 2.0 | 1.0 to 3.0 |  |" in table
    assert "| `mm` | 1000.0 | 1000.0 to 1000.0 | 2.0 |" in table
