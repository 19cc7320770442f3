"""head_costs' measurements: operation counts, peak tensor memory,
interleaved timings, paired ratios, and the page's one results function."""

import math
from collections import Counter

import pytest
import torch

from mhabook import MultiHeadAttention
from mhabook.experiments import costs
from mhabook.experiments.costs import watch
from mhabook.experiments.verdicts import compare
from mhabook.layers.all_heads import AttentionConfig, batched_from_loop

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


def test_time_interleaved_balances_the_order():
    calls = []
    fns = [lambda n=n: calls.append(n) for n in "abc"]
    times = costs.time_interleaved(fns, repeats=6, min_run_time=0.001)
    assert times.shape == (6, 3) and bool((times > 0).all())
    assert set(calls) == set("abc")
    # rotated every two repeats, every other one reversed: in six repeats,
    # every order of the three, so each fn runs right after each other as
    # often, where a rotation alone runs b after a in 2 of 3 repeats
    orders = [
        "".join("abc"[i] for i in costs.run_order(r, 3)) for r in range(6)
    ]
    assert orders == ["abc", "cba", "bca", "acb", "cab", "bac"]
    after = Counter(o[k : k + 2] for o in orders for k in (0, 1))
    assert set(after.values()) == {2} and len(after) == 6
    assert [costs.run_order(r, 2) for r in range(4)] == [
        [0, 1],
        [1, 0],
        [1, 0],
        [0, 1],
    ]


def test_time_interleaved_times_the_loop_without_its_per_head_checks():
    from mhabook import checks

    loop = MultiHeadAttention(AttentionConfig(32, 4))
    wrong = torch.randn(1, 5, 32), torch.randn(1, 6, 8)  # T of 5 and 6
    with pytest.raises(ValueError, match="each key comes with its value"):
        checks.check_qkv(wrong[1][:, :5], wrong[1], wrong[1][:, :5])
    seen = []

    def step():  # what the checks do while timed: nothing
        checks.check_qkv(wrong[1][:, :5], wrong[1], wrong[1][:, :5])
        seen.append(loop(wrong[0])[0].shape)

    costs.time_interleaved([step], repeats=2, min_run_time=0.001)
    assert seen and set(seen) == {(1, 5, 32)}
    with pytest.raises(ValueError, match="the layer takes"):  # on again
        loop(torch.randn(5, 32, 1))


def test_time_interleaved_wants_callables():
    with pytest.raises(ValueError, match="callables"):
        costs.time_interleaved({"a": lambda: None})


def test_paired_ratio_cancels_what_slows_both():
    # the machine's speed swings 10-fold between repeats; a always takes
    # twice b's time: unpaired ranges overlap, the paired ratio does not
    machine = torch.tensor([1.0, 10.0, 3.0, 7.0, 2.0, 5.0])
    times = torch.stack([2 * machine, machine], dim=1)
    r = costs.paired_ratio(times, 0, 1)
    assert (r.median, r.low, r.high) == pytest.approx((2.0, 2.0, 2.0))
    assert costs.paired_ratio(times, 1, 0).median == pytest.approx(0.5)
    # the ratio of the medians, unpaired: 2 * median / median
    assert r.of_medians == pytest.approx(2.0)
    times[0, 0] = 100.0  # one slow repeat of a moves a's median
    assert costs.paired_ratio(times, 0, 1).of_medians == pytest.approx(
        times[:, 0].quantile(0.5) / machine.quantile(0.5)
    )


def test_paired_ratio_interval_is_the_sign_tests():
    gen = torch.Generator().manual_seed(1)
    times = 1 + torch.rand(15, 2, generator=gen, dtype=torch.float64)
    r = costs.paired_ratio(times, 0, 1)
    ratios = (times[:, 0] / times[:, 1]).sort().values
    assert r.median == pytest.approx(ratios[7].item())
    # 15 repeats: the 4th smallest and 4th largest ratio (a table value)
    assert (r.low, r.high) == (ratios[3].item(), ratios[11].item())


def test_median_ranks_reach_95_percent_with_the_narrowest_interval():
    def chance(k, n):  # that at most k - 1 of n fall below the median
        return sum(math.comb(n, i) for i in range(k)) / 2**n

    for n in range(6, 60):
        k, coverage = costs.median_ranks(n)
        assert coverage == pytest.approx(1 - 2 * chance(k, n))
        assert coverage >= 0.95 > 1 - 2 * chance(k + 1, n)
    assert costs.median_ranks(15) == (4, pytest.approx(0.9648, abs=1e-4))
    # too few repeats for 95%: the whole range, and what it does hold
    assert costs.median_ranks(5) == (1, pytest.approx(1 - 2 / 32))


def test_the_sign_interval_holds_the_median_as_often_as_it_says():
    gen = torch.Generator().manual_seed(4)
    n, trials = 15, 4000
    draws = torch.empty(trials, n).exponential_(generator=gen)  # skewed
    held = 0
    for values in draws:
        term = costs.median_term(values)
        held += term.low <= math.log(2) <= term.high  # the true median
    _, coverage = costs.median_ranks(n)
    assert abs(held / trials - coverage) < 0.015  # about 5 sd of 0.003


def test_paired_ratio_needs_two_repeats():
    with pytest.raises(ValueError, match="repeats >= 2"):
        costs.paired_ratio(torch.ones(1, 2), 0, 1)


def test_median_term_brackets_the_median():
    term = costs.median_term(torch.tensor([1.0, 2.0, 3.0, 6.0, 9.0]))
    assert term.median == pytest.approx(3.0)
    assert 1.0 <= term.low <= 3.0 <= term.high <= 9.0
    assert term.low < term.high


def test_a_difference_and_its_ratio_agree_on_their_sign():
    # the intervals' ends have the same ranks, so the difference's
    # interval is above 0 exactly when the ratio's is above 1
    gen = torch.Generator().manual_seed(3)
    for trial in range(20):
        times = 1 + torch.rand(7, 2, generator=gen, dtype=torch.float64)
        times[:, 0] += 0.1 * trial - 0.5
        r = costs.paired_ratio(times, 0, 1)
        d = costs.median_term(times[:, 0] - times[:, 1])
        assert (r.low > 1) == (d.low > 0) and (r.high < 1) == (d.high < 0)
        assert (r.median > 1) == (d.median > 0)


# head_costs_results, at a tiny width. The timer is replaced by one that
# runs each contender once and gives column j the time (j + 1) ms, scaled
# by a factor that changes from repeat to repeat (the machine's speed):
# every paired ratio is then known exactly.
SPEED = torch.tensor([1.0, 3.0, 2.0], dtype=torch.float64)
WIDTH, HEADS, LENGTHS = 16, (1, 4), (5, 9)


def planted_times(fns, repeats, min_run_time):
    fns = list(fns)
    for fn in fns:
        fn()
    columns = torch.arange(1, len(fns) + 1, dtype=torch.float64) * 1e-3
    return SPEED[:repeats, None] * columns  # (repeats, len(fns))


@pytest.fixture(scope="module")
def record():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(costs, "time_interleaved", planted_times)
        return costs.head_costs_results(
            WIDTH, HEADS, LENGTHS, repeats=3, min_run_time=1e-3
        )


def test_results_count_parameters_and_flops(record):
    d = WIDTH
    assert (record.repeats, record.min_run_time) == (3, 1e-3)
    assert set(record.params.values()) == {4 * (d * d + d)}
    for (_, _, T), flops in record.flops.items():
        assert flops == 8 * T * d**2 + 4 * T**2 * d
    assert len(record.flops) == 2 * len(HEADS) * len(LENGTHS)


def test_results_count_operations_and_memory(record):
    assert record.ops["loop", 4] > 3 * record.ops["loop", 1]
    assert record.ops["batched", 4] - record.ops["batched", 1] <= 1
    per_head = (record.ops["loop", 4] - record.ops["loop", 1]) / 3
    assert record.ops_per_head() == per_head
    grown = record.peak["batched", 4] - record.peak["batched", 1]
    assert grown >= record.score_mib(4) - record.score_mib(1) > 0
    # the fused path holds no (B, h, T, T) weights
    assert record.peak["fused", 4] < record.peak["batched", 4] - grown / 2
    assert record.score_mib(1) == 9 * 9 * 4 / 2**20


def test_results_pair_the_right_columns(record):
    # columns: (loop, batched, fused) x h = 1, 4; then at T = 5 the
    # projections (small, large) and the add, at T = 9 the two softmaxes
    assert record.contenders == [
        (name, h) for h in HEADS for name in ("loop", "batched", "fused")
    ]
    for T in LENGTHS:
        assert record.times[T].shape == (3, 6)
        for ratios, expected in (
            (record.batched_loop, 5 / 4),
            (record.batched_loop_few, 2 / 1),  # h = 1: nothing to batch
            (record.fused_batched, 6 / 5),
            (record.loop_heads, 4 / 1),
            (record.batched_heads, 5 / 2),
        ):
            r = ratios[T]  # paired: the machine's speed cancels
            assert (r.median, r.low, r.high) == pytest.approx((expected,) * 3)
    for (_, h), r in record.batched_loop_each.items():  # at every h
        expected = {1: 2 / 1, 4: 5 / 4}[h]
        assert (r.median, r.low, r.high) == pytest.approx((expected,) * 3)
    assert len(record.batched_loop_each) == len(LENGTHS) * len(HEADS)
    assert record.softmax_heads.median == pytest.approx(8 / 7)
    # batched / loop at h = 4 (5 / 4) over the same at h = 1 (2 / 1)
    for gain in record.heads_gain.values():  # at every length
        assert (gain.median, gain.low, gain.high) == pytest.approx(
            (5 / 8,) * 3
        )
        assert gain.of_medians == pytest.approx(5 / 8)
    assert list(record.heads_gain) == list(record.lengths)
    assert record.softmax == {1: pytest.approx(14e-3), 4: pytest.approx(16e-3)}


def test_results_time_the_projections_and_one_dispatch(record):
    # at T = 5, after the six layers: the small projections (7 ms), the
    # large one (8 ms) and the add (9 ms), at the machine's speed
    assert record.per_op == pytest.approx(9e-3 * SPEED.median().item())
    assert record.products_ratio.median == pytest.approx(7 / 8)


def test_against_gives_the_rule_an_interval_and_its_bar():
    assert costs.PairedRatio(0.9, 0.8, 0.95).against(1) == (0.8, 0.95, 1, 1)
    assert compare(*costs.PairedRatio(0.9, 0.8, 0.95).against(1)) == "less"
    assert compare(*costs.PairedRatio(1.0, 0.8, 1.2).against(1)) == "same"
    assert compare(*costs.Term(2.0, 1.0, 3.0).against(0)) == "more"


def test_results_refuse_what_they_cannot_measure():
    with pytest.raises(ValueError, match="does not split"):
        costs.head_costs_results(WIDTH, (1, 3), LENGTHS, repeats=3)
    for repeats in (1, 4):
        with pytest.raises(ValueError, match="odd and at least 3"):
            costs.head_costs_results(WIDTH, HEADS, LENGTHS, repeats=repeats)
    with pytest.raises(ValueError, match="a short and a long one"):
        costs.head_costs_results(WIDTH, HEADS, LENGTHS[:1], repeats=3)
    with pytest.raises(ValueError, match="repeat one"):
        costs.head_costs_results(WIDTH, (1, 1, 2), LENGTHS, repeats=3)
    for lengths in ((13, 13), (5, 9, 13)):  # the page reads two
        with pytest.raises(ValueError, match="exactly two different lengths"):
            costs.head_costs_results(WIDTH, HEADS, lengths, repeats=3)
