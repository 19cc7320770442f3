"""The views of "What heads cost": its timing figure and its tables,
drawn from a HeadCosts record (here a made-up one)."""

from types import SimpleNamespace

import matplotlib
import pytest
import torch

from mhabook.experiments import costs
from mhabook.experiments.costs import PairedRatio
from mhabook.experiments.verdicts import compare
from mhabook.views import head_costs

matplotlib.use("Agg")

HEADS, LENGTHS = (1, 2), (5, 9)
CONTENDERS = [(name, h) for h in HEADS for name in head_costs.NAMES]


def made_up_record():
    times = torch.tensor([[1e-3], [2e-3], [3e-3]]).expand(3, len(CONTENDERS))
    return SimpleNamespace(
        lengths=LENGTHS,
        head_counts=HEADS,
        contenders=CONTENDERS,
        times={T: times for T in LENGTHS},
        peak={key: 1.5 * key[1] for key in CONTENDERS},
        score_mib=lambda h: 0.25 * h,
    )


def test_timing_figure_has_one_panel_per_length():
    fig = head_costs.timing_figure(made_up_record())
    assert len(fig.axes) == 2
    assert fig.axes[0].get_title() == "one sequence of 5 tokens"
    assert fig.get_figwidth() <= 4.8  # stacked, for a phone's column
    assert all(ax.get_ylabel() for ax in fig.axes)
    line = fig.axes[1].lines[0]  # the loop's medians, in ms
    assert list(line.get_ydata()) == [2.0, 2.0]


def test_peak_table_gives_every_layer_and_the_scores():
    table = head_costs.peak_table(made_up_record()).data
    assert "| MiB at $T$ = 9 | $h$ = 1 | $h$ = 2 |" in table
    assert "| batched | 1.50 | 3.00 |" in table
    assert "| fused (a lower bound) |" in table
    assert "| one $(1, h, T, T)$ score tensor | 0.25 | 0.50 |" in table


def test_numbers_keep_three_significant_digits_and_whole_from_100():
    texts = [head_costs.number(x) for x in (0.5912, 1.0034, 8.624, 10.94)]
    assert texts == ["0.59", "1.00", "8.62", "10.9"]
    assert head_costs.number(1234.5) == "1,234"
    # an estimate and its interval read alike, to the median's decimals
    assert head_costs.ratio_text(PairedRatio(10.94, 8.621, 13.16)) == (
        "10.9 (8.6 to 13.2)"
    )
    assert head_costs.ratio_text(PairedRatio(125.3, 98.2, 132.4)) == (
        "125 (98 to 132)"
    )
    # an interval over a factor of 2 wide: one decimal fewer, from 1 up
    assert head_costs.ratio_text(PairedRatio(4.02, 3.83, 9.75)) == (
        "4.0 (3.8 to 9.8)"
    )
    assert head_costs.ratio_text(PairedRatio(4.02, 3.83, 7.5)) == (
        "4.02 (3.83 to 7.50)"
    )
    assert head_costs.ratio_text(PairedRatio(0.5, 0.25, 0.75)) == (
        "0.50 (0.25 to 0.75)"
    )


def test_a_verdict_on_the_shown_ratio_agrees_with_its_text():
    """An end printed as 1.00 is 1 for the rule: the interval holds 1."""
    ratio = head_costs.shown(PairedRatio(0.95, 0.78, 0.9966))
    assert (ratio.median, ratio.low, ratio.high) == (0.95, 0.78, 1.0)
    assert compare(*ratio.against(1)) == "same"
    assert head_costs.ratio_text(ratio) == "0.95 (0.78 to 1.00)"
    below = head_costs.shown(PairedRatio(0.95, 0.78, 0.994))
    assert compare(*below.against(1)) == "less"
    assert head_costs.shown(PairedRatio(1234.4, 1000, 1500)).median == 1234


def test_comparisons_table_gives_the_stated_ratios_at_every_length():
    record = made_up_record()
    record.batched_loop = {T: PairedRatio(0.5, 0.25, 0.75) for T in LENGTHS}
    record.fused_batched = {T: PairedRatio(2.0, 1.5, 2.5) for T in LENGTHS}
    table = head_costs.comparisons_table(record).data
    assert "| ratio of times (95% interval) | $T$ = 5 | $T$ = 9 |" in table
    assert (
        "| batched layer over the loop, $h$ = 2 | 0.50 (0.25 to 0.75) | "
        "0.50 (0.25 to 0.75) |"
    ) in table
    assert table.count("2.00 (1.50 to 2.50)") == 2
    assert len(table.splitlines()) == 4  # header, rule, two rows


def test_page_numbers_read_the_right_fields_of_a_record(monkeypatch):
    """On a tiny record whose column j takes (j + 1) ms: at h = 4 the loop
    takes 4 ms, the batched layer 5 and the fused path 6."""

    def planted(fns, repeats, min_run_time):
        fns = list(fns)
        columns = torch.arange(1, len(fns) + 1, dtype=torch.float64)
        return columns.expand(repeats, len(fns)) * 1e-3

    monkeypatch.setattr(costs, "time_interleaved", planted)
    record = costs.head_costs_results(16, (1, 4), (5, 9), repeats=3)
    numbers = head_costs.page_numbers(record)
    assert (numbers["few"], numbers["most"]) == (1, 4)
    assert (numbers["short"], numbers["long"]) == (5, 9)
    assert numbers["ratio_short"] == "1.25 (1.25 to 1.25)"  # 5 / 4
    assert numbers["fused_ratio_short"] == "1.20 (1.20 to 1.20)"  # 6 / 5
    assert numbers["fused_ratio"] == "1.20 (1.20 to 1.20)"
    assert numbers["ops_batched_few"] == record.ops["batched", 1]
    assert numbers["ops_batched_most"] == record.ops["batched", 4]
    assert numbers["ops_batched_most"] - numbers["ops_batched_few"] == 1
    assert numbers["num_params"] == f"{4 * (16 * 16 + 16):,}"
    assert numbers["brackets"] == "rough ranges, from few repeats"  # 3
    assert (numbers["rank_low"], numbers["rank_high"]) == (1, 3)
    assert numbers["rank_coverage"] == pytest.approx(0.75)  # 1 - 2 / 8
    record.repeats = 6  # the fewest whose range holds the median 95%
    assert head_costs.page_numbers(record)["brackets"] == "95% intervals"
    record.repeats = 15
    numbers = head_costs.page_numbers(record)
    assert (numbers["rank_low"], numbers["rank_high"]) == (4, 12)


def test_page_verdicts_judge_ratios_as_printed_and_differences_by_sign():
    from mhabook.experiments.verdicts import decide

    record = made_up_record()
    record.batched_loop = {
        5: PairedRatio(0.56, 0.48, 0.60),  # shorter
        9: PairedRatio(0.98, 0.80, 1.12),  # holds 1
    }
    record.fused_batched = {
        5: PairedRatio(1.07, 1.06, 1.08),  # slower, by less than 10%
        9: PairedRatio(0.95, 0.78, 0.9996),
    }
    record.batched_loop_few = {  # at h = 1
        5: PairedRatio(0.7, 0.65, 0.75),
        9: PairedRatio(1.04, 1.01, 1.08),  # slower, inside the margin
    }
    record.heads_gain = {  # the two, paired: 12 heads' ratio over 1's
        5: PairedRatio(0.8, 0.7, 0.85),  # faster by over 10%
        9: PairedRatio(0.95, 0.85, 1.05),
    }
    record.softmax_heads = PairedRatio(11.9, 10.8, 14.2)
    record.products_ratio = PairedRatio(1.8, 1.6, 2.2)
    found = {
        name: decide(rule, args, phrases)[1]
        for name, rule, args, phrases in head_costs.page_verdicts(record)
    }
    assert found == {
        "batched_short": "faster than",
        "heads_effect_short": "lowers",  # paired: 0.7 to 0.85, below 1
        "heads_effect_long": "does not clearly change",  # holds 1
        "few_batch": "with no heads to batch",  # the fewest heads: 1
        "products_short": "slower than",
        "softmax_most": "slower than",
        "fused_short": "slower here (6–8% more time) than",
        "fused_long": "not clearly faster or slower than",  # 0.78 to 1.00
    }
    record.heads_gain[9] = PairedRatio(0.9, 0.8, 0.996)  # printed 1.00
    answer = {v[0]: v for v in head_costs.page_verdicts(record)}
    same = "does not clearly change"  # as printed, its interval holds 1
    assert decide(*answer["heads_effect_long"][1:])[1] == same
    record.head_counts = (2, 4)  # a reader's counts: h = 2 still batches
    (few,) = [
        v for v in head_costs.page_verdicts(record) if v[0] == "few_batch"
    ]
    assert decide(*few[1:])[1] == "with fewer heads to batch"


def test_ratio_table_words_every_length_and_head_count_as_printed():
    record = made_up_record()
    record.batched_loop_each = {
        (5, 1): PairedRatio(1.17, 1.14, 1.19),
        (5, 2): PairedRatio(1.5, 1.3, 1.7),  # a middle count, slower
        (9, 1): PairedRatio(0.98, 0.95, 0.996),  # printed 1.00: holds 1
        (9, 2): PairedRatio(0.87, 0.83, 0.87),
    }
    lines = head_costs.ratio_table(record).data.splitlines()
    assert lines[2:] == [
        "| 5 tokens, $h =$ 2 | 1.50 (1.30 to 1.70) | slower than the loop |",
        "| 5 tokens, $h =$ 1 | 1.17 (1.14 to 1.19) | slower than the loop |",
        "| 9 tokens, $h =$ 2 | 0.87 (0.83 to 0.87) | faster than the loop |",
        "| 9 tokens, $h =$ 1 | 0.98 (0.95 to 1.00) | within 10% of the loop |",
    ]


def test_each_timing_phrase_points_the_way_its_ratio_does():
    # a ratio below 1 is faster: no phrase for an interval that lies mostly
    # below the margin may say slower, nor the reverse (blind read 84)
    than = head_costs.THAN
    assert "faster" in than["less"] and "slower" not in than["less"]
    assert "slower" in than["more"] and "faster" not in than["more"]
    # an interval across one edge of the margin can hold a median on the
    # other side of 1 (0.98, 0.97 to 1.16): those phrases claim no direction
    undecided = "not clearly faster or slower than"
    assert than["near_less"] == than["near_more"] == undecided
    # all of it on one side of 1, though inside the margin in part: the
    # direction holds, and the phrase gives its size as the interval's
    # percentages (reads 283-284 and 286), rounded as the ratio is printed,
    # in one wording whether or not it stays inside the margin (read 354)
    less = head_costs.than(PairedRatio(0.95, 0.901, 0.98))
    assert less["under"] == "faster here (2–10% less time) than"
    wider = head_costs.than(PairedRatio(0.95, 0.88, 0.98))  # past 0.9
    assert wider["under"] == "faster here (2–12% less time) than"
    more = head_costs.than(PairedRatio(1.06, 1.004, 1.19))
    assert more["over"] == "slower here (0–19% more time) than"
    assert less["less"] == than["less"] and more["more"] == than["more"]
    assert all(len(p.split()) < 8 for p in (*less.values(), *more.values()))
