"""mhabook.experiments.sharing, the page "Sharing keys and values": the
references, the timing of decoding steps, the memory of the cache, the one
results call, and the page's figures and tables (mhabook.views.sharing)."""

from types import SimpleNamespace

import matplotlib
import pytest
import torch

from mhabook.experiments import costs, sharing
from mhabook.views import sharing as views
from tiny import tiny_bert, tiny_tokenizer

matplotlib.use("Agg")


def test_gap_returns_the_largest_difference_and_refuses_a_real_one():
    a = torch.zeros(3)
    assert sharing.gap(a, a + 1e-7) == pytest.approx(1e-7)
    with pytest.raises(AssertionError, match="differ by 1.0e-03"):
        sharing.gap(a, a + 1e-3)


@pytest.mark.parametrize("is_causal", [False, True])
def test_the_references_agree_with_the_layer(is_causal):
    torch.manual_seed(0)
    llama = sharing.random_llama(32, 4, 2)
    layer = sharing.grouped_from_llama(llama)
    x = torch.randn(2, 5, 32)
    mask = torch.ones(5, 5).tril().bool() if is_causal else None
    with torch.no_grad():
        out, weights = layer(x, mask)
        ref, ref_weights = sharing.llama_output(llama, x, is_causal)
        fused = sharing.fused_output(layer, x, is_causal)
    sharing.gap(out, ref)
    sharing.gap(weights, ref_weights)
    sharing.gap(out, fused)


def test_check_references_compares_every_pair_and_decodes():
    checks = sharing.check_references([(4, 4), (4, 2)], head_dim=4, tokens=5)
    # g = h only: 2 masks x (output, weights); every pair: 2 masks
    assert checks.counts == {
        "multi-head (g = h)": 4,
        "fused, enable_gqa": 4,
        "Llama": 8,
    }
    assert 0 <= checks.largest_gap < 1e-5
    assert checks.decode_kv_heads == (8, 2, 1) and checks.decode_gap < 1e-5


def test_check_references_stops_at_a_layer_that_differs(monkeypatch):
    wrong = sharing.fused_output

    def off_by_one(layer, x, is_causal):  # a reference that is 1 off
        return wrong(layer, x, is_causal) + 1

    monkeypatch.setattr(sharing, "fused_output", off_by_one)
    with pytest.raises(AssertionError, match="differ by"):
        sharing.check_references([(4, 2)], head_dim=4, tokens=5)


@pytest.mark.parametrize("num_layers", [1, 2, 3])
def test_a_cached_step_computes_what_the_step_without_it_does(num_layers):
    without, cached = sharing.decoding_steps(16, 4, 2, 6, num_layers)
    with torch.no_grad():
        for S in (1, 3, 6, 2):  # in any order: the cache is rewound
            torch.testing.assert_close(
                cached(S)[:, -1], without(S), rtol=1e-5, atol=1e-5
            )


def test_the_rerun_flops_are_what_pytorch_counts():
    import dataclasses

    from torch.utils.flop_counter import FlopCounterMode

    names = [f.name for f in dataclasses.fields(sharing.Timing)]
    sizes = dict(width=16, num_heads=4, num_kv_heads=2, lengths=(4, 8))
    timing = sharing.Timing(**(dict.fromkeys(names) | sizes))
    without, cached = sharing.decoding_steps(16, 4, 2, 8)
    for S in timing.lengths:
        for step, flops in [
            (without, timing.flops_without),
            (cached, timing.flops_cached),
        ]:
            with torch.no_grad(), FlopCounterMode(display=False) as counter:
                step(S)
            assert counter.get_total_flops() == flops(S)
    # d = 16, g d_k = 8: token S's query and output 4 d^2, the keys and
    # values of all S tokens 4 S d g d_k, one query's scores 4 S d
    expected = (1024 + 8 * 512 + 8 * 64) / (1024 + 4 * 512 + 4 * 64)
    assert timing.flop_growth == pytest.approx(expected)
    # cached: the key and value of token S alone
    cached_8 = 1024 + 512 + 8 * 64
    assert timing.flop_ratio == pytest.approx(
        (1024 + 8 * 512 + 8 * 64) / cached_8
    )


def test_a_stack_rerun_asks_its_top_layer_for_token_S_alone():
    from torch.utils.flop_counter import FlopCounterMode

    without, _ = sharing.decoding_steps(16, 4, 2, 8, num_layers=2)
    S, d, gd_k = 8, 16, 8
    below = 4 * S * d * d + 4 * S * d * gd_k + 4 * S * S * d  # all S
    top = 4 * d * d + 4 * S * d * gd_k + 4 * S * d  # one query, S keys
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        without(S)
    assert counter.get_total_flops() == below + top
    # the stack's arithmetic ratio, without over cached, as the page gives
    import dataclasses

    names = [f.name for f in dataclasses.fields(sharing.Timing)]
    sizes = dict(width=16, num_heads=4, num_kv_heads=2, lengths=(4, S))
    timing = sharing.Timing(
        **(dict.fromkeys(names) | sizes | {"stack_layers": 2})
    )
    _, cached = sharing.decoding_steps(16, 4, 2, 8, num_layers=2)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        cached(S)
    assert timing.stack_flop_ratio == (below + top) / counter.get_total_flops()


def planted_times(lengths, repeats, a=100e-6, b=1e-6, c=1e-7):
    """A time_interleaved table in which one layer's step without the
    cache costs c S^2 and its cached step a + b S; the stack's, at the
    longest S, 3 c S^2 and 2 (a + b S): a ratio 1.5 times one layer's."""
    S = torch.tensor(lengths, dtype=torch.float64)
    top = S[-1:]
    row = torch.cat([c * S**2, a + b * S, 3 * c * top**2, 2 * (a + b * top)])
    return row.repeat(repeats, 1)


def test_time_decoding_reads_the_planted_costs(monkeypatch):
    lengths, seen = (4, 8, 16), []

    def fake(fns, repeats, min_run_time):
        seen.extend(fns)
        return planted_times(lengths, repeats)

    monkeypatch.setattr(sharing, "time_interleaved", fake)
    timing = sharing.time_decoding(16, 4, 2, lengths, repeats=3)
    assert len(seen) == 2 * 3 + 2  # and the stack's two steps
    outputs = [fn() for fn in seen]  # each a real step of a tiny stack
    assert outputs[-1].shape == (1, 1, 16) and outputs[-2].shape == (1, 16)
    assert timing.without.shape == timing.cached.shape == (3, 3)
    assert timing.speedup.median == pytest.approx(1e-7 * 256 / 116e-6)
    assert timing.stack_layers == 2
    assert timing.stack_speedup.median == pytest.approx(
        1.5 * timing.speedup.median
    )
    assert timing.growth_without.median == pytest.approx(4.0)
    assert timing.growth_with.median == pytest.approx(116e-6 / 104e-6)
    # at each S: the medians of the planted steps, paired ratios of them
    cached = [(100 + S) * 1e-6 for S in lengths]
    for S, off, on, ratio, step in zip(
        lengths,
        timing.without_steps,
        timing.cached_steps,
        timing.speedups,
        cached,
    ):
        assert (off.median, off.low, off.high) == pytest.approx(
            (1e-7 * S**2,) * 3
        )
        assert (on.median, on.low, on.high) == pytest.approx((step,) * 3)
        assert ratio.median == pytest.approx(1e-7 * S**2 / step)
    assert timing.speedup is timing.speedups[-1]
    assert timing.half == 8


def test_time_decoding_times_each_step_on_a_tiny_layer():
    timing = sharing.time_decoding(16, 4, 2, (2, 4), 2, min_run_time=1e-4)
    assert timing.cached.shape == (2, 2) and (timing.cached > 0).all()
    assert isinstance(timing.speedup, costs.PairedRatio)


@pytest.mark.parametrize(
    "lengths, repeats", [((4, 16), 3), ((1, 2), 3), ((4, 8), 1)]
)
def test_time_decoding_says_what_lengths_it_needs(lengths, repeats):
    with pytest.raises(ValueError, match="half the longest"):
        sharing.time_decoding(16, 4, 2, lengths, repeats)
    with pytest.raises(ValueError, match="give 2 or more"):
        sharing.time_decoding(16, 4, 2, (4, 8), 3, stack_layers=1)


def test_the_memory_of_the_cache():
    assert sharing.kv_cache_bytes(2, 3, 4, 5, bytes_per_number=1) == 240
    memory = sharing.memory()
    assert memory.llama_ratio == 4
    assert memory.kib_per_token["Llama 2 7B"] == 2 * 32 * 32 * 128 * 2 / 1024
    assert memory.gib["Llama 3 8B"] == 4.0  # 32k tokens
    C, d_k = 768, 64
    mha, mqa = 4 * (C * C + C), 2 * (C * C + C) + 2 * d_k * (C + 1)
    assert memory.params_mqa_share == pytest.approx(mqa / mha)
    assert memory.mqa_cache_ratio == 12
    assert memory.mistral_window_mib == 512


def test_sharing_results_makes_every_part_on_a_tiny_bert(monkeypatch):
    monkeypatch.setattr(  # without: S^2 µs; cached: 1 µs at every S
        sharing,
        "time_interleaved",
        lambda fns, repeats, min_run_time: planted_times(
            (2, 4), repeats, a=1e-6, b=0.0, c=1e-6
        ),
    )
    model = tiny_bert(num_attention_heads=4)
    sentences = [
        "time flies",
        "fruit flies like an arrow",
        "arrow",
        "time",
    ] * 3
    results = sharing.sharing_results(
        model,
        tiny_tokenizer(),
        sentences,
        pairs=[(4, 2)],
        timing=dict(width=16, lengths=(2, 4), repeats=2, min_run_time=1e-4),
        probe_size=2,
    )
    assert results.checks.pairs == ((4, 2),)
    assert results.timing.lengths == (2, 4)
    assert results.memory.llama_ratio == 4
    assert results.conversion.kv_counts == [2, 1]
    assert results.conversion.n_sentences == 12
    numbers = views.page_numbers(results, "tiny")
    assert numbers["model_name"] == "tiny"
    assert (numbers["s_min"], numbers["s_half"], numbers["s_max"]) == (2, 2, 4)
    assert numbers["speedup_text"] == "16.0 (16.0 to 16.0)"  # 16 µs / 1 µs
    assert numbers["speedup_first"] == "4.00 (4.00 to 4.00)"  # at S = 2
    assert numbers["growth_without_text"] == "4.00 (4.00 to 4.00)"  # 16 / 4
    assert numbers["growth_of_medians"] == "4.00"  # median by median
    assert numbers["growth_with_text"] == "1.00 (1.00 to 1.00)"
    assert numbers["stack_layers"] == 2
    assert (numbers["g_first"], numbers["g_last"]) == (2, 1)
    assert numbers["share_last"] == results.conversion.share_lost(1)
    assert numbers["kv_list"] == "2, 1"


def test_mean_interval_holds_the_mean_and_is_reproducible():
    values = torch.linspace(0, 1, 50)
    low, high = sharing.mean_interval(values)
    assert low < values.mean().item() < high
    assert (low, high) == sharing.mean_interval(values)
    assert sharing.mean_interval(torch.ones(9)) == (1.0, 1.0)


# The views


def test_the_tables_show_the_record():
    memory = sharing.memory()
    table = views.cache_table(memory).data
    assert "| Llama 3 8B | 32 | 8 | 128 | 4 |" in table
    assert "GiB at 32k tokens" in table
    assert "BERT" not in table  # an encoder keeps no cache
    term = costs.Term
    timing = SimpleNamespace(
        lengths=(2, 4),
        without_steps=(term(1e-3, 5e-4, 2e-3), term(4e-3, 3e-3, 5e-3)),
        cached_steps=(term(3e-6, 2e-6, 4e-6), term(5e-6, 4.5e-6, 6e-6)),
        speedups=(
            costs.PairedRatio(333.3, 250, 400),
            costs.PairedRatio(800, 700, 900),
        ),
    )
    rows = views.timing_table(timing).data.splitlines()
    assert rows[0] == (
        "| $S$ | without, ms | with, µs | without / with (95%) |"
    )
    assert rows[2:] == [
        "| 2 | 1 | 3 | 333 (250 to 400) |",
        "| 4 | 4 | 5 | 800 (700 to 900) |",
    ]
    assert views.span_us(timing.cached_steps) == "3 to 5"
    slow = costs.Term(0.16501, 0.15681, 0.18126)  # seconds: 3 digits in ms
    assert views._three(slow, 1e3) == ("165", "(157 to 181)")
    assert views.markdown_table(["a", "b"], [[1, "x"]]).data == (
        "| a | b |\n|---|---:|\n| 1 | x |"
    )


def test_the_text_helpers_round_as_they_say():
    assert views.estimate_text(1.5e-6, 1e-6, 2.25e-6, 1e6, 2) == (
        "1.50 (1.00 to 2.25)"
    )
    assert views.estimate_text(1234.4, 1000, 1500) == "1,234 (1,000 to 1,500)"
    assert views.span(torch.tensor([0.5, 0.0123, 0.25])) == "0.012 to 0.5"


def test_the_speed_phrases_read_each_outcome():
    ratio = costs.PairedRatio(70.4, 66.2, 88.3)
    assert views.faster_phrases(ratio)["more"] == (
        "70.4 (66.2 to 88.3) times faster"
    )
    slower = views.faster_phrases(costs.PairedRatio(0.25, 0.2, 0.5))
    assert slower["less"] == "4.0 (2.0 to 5.0) times slower"  # 1 / x
    wide = views.faster_phrases(costs.PairedRatio(68.04, 43.31, 108.6))
    assert wide["more"] == "68 (43 to 109) times faster"  # over 2 wide
    assert slower["same"] == "not measurably faster"


def test_the_figures_draw_from_any_number_of_heads(monkeypatch):
    monkeypatch.setattr(
        sharing,
        "time_interleaved",
        lambda fns, repeats, min_run_time: planted_times((2, 4), repeats),
    )
    timing = sharing.time_decoding(16, 4, 2, (2, 4), repeats=2)
    fig = views.plot_timing(timing)
    assert len(fig.axes) == 2 and fig.get_figwidth() <= 4.8
    tokenizer, sentences = tiny_tokenizer(), ["time flies", "arrow"] * 5
    for heads, ticks in [(4, ["4", "2", "1"]), (1, ["1", "1"])]:
        model = tiny_bert(num_attention_heads=heads, hidden_size=8)
        conversion = sharing.grouped_bert.conversion(
            model, tokenizer, sentences
        )
        fig = views.plot_conversion(conversion)
        labels = [t.get_text() for t in fig.axes[1].get_xticklabels()]
        assert labels == ticks and fig.get_figwidth() <= 4.8
    matplotlib.pyplot.close("all")


def test_a_model_of_one_head_is_refused_and_of_a_prime_h_starts_at_h(
    monkeypatch,
):
    monkeypatch.setattr(
        sharing,
        "time_interleaved",
        lambda fns, repeats, min_run_time: planted_times((2, 4), repeats),
    )
    tokenizer, sentences = (
        tiny_tokenizer(),
        ["time flies", "arrow", "time"] * 4,
    )
    kwargs = dict(
        pairs=[(2, 1)],
        timing=dict(width=16, lengths=(2, 4), repeats=2, min_run_time=1e-4),
        probe_size=2,
    )
    with pytest.raises(ValueError, match="1 attention head per layer.*2 or"):
        sharing.sharing_results(
            tiny_bert(num_attention_heads=1), tokenizer, sentences, **kwargs
        )
    model = tiny_bert(num_attention_heads=2)  # h = 2: only g = 1 below it
    results = sharing.sharing_results(model, tokenizer, sentences, **kwargs)
    assert results.conversion.kv_counts == [1]
    numbers = views.page_numbers(results, "tiny")
    assert (numbers["g_first"], numbers["g_last"]) == (2, 1)  # one step
    assert float(numbers["fid_first"]) == 1.0  # g = h changes nothing
    assert results.conversion.fidelity(1) < 1.0
    assert numbers["fid_last"] != numbers["fid_first"]  # shown apart
    assert float(numbers["fid_last"]) == pytest.approx(
        results.conversion.fidelity(1), abs=1e-3
    )
    assert len(results.conversion.fidelity_drops()) == 2  # a step, 2 halves


def test_distinct_adds_decimals_until_unequal_values_read_unequal():
    assert views.distinct(1.0, 0.99955) == ["1.0000", "0.9996"]
    assert views.distinct(0.91234, 0.5) == ["0.912", "0.500"]
    assert views.distinct(0.5, 0.5) == ["0.500", "0.500"]  # equal stays


def test_the_page_verdicts_read_each_outcome():
    """Every verdict has a short phrase for the outcome its rule gives."""
    from mhabook.experiments.verdicts import decide

    ratio = costs.PairedRatio

    def record(stack):
        timing = SimpleNamespace(
            speedup=ratio(70.1, 59.0, 81.4),
            speedups=[ratio(0.9, 0.8, 0.95), ratio(70.1, 59.0, 81.4)],
            stack_speedup=stack,
            growth_without=ratio(4.9, 4.0, 6.0),
            growth_with=ratio(1.8, 1.4, 2.6),
            first_fall=(256, 512),
            flop_growth=2.6,  # below growth_without's interval
        )
        conversion = SimpleNamespace(
            kv_counts=[2, 1],
            fidelity_drops=lambda: [0.1, 0.2],
            shift_growth=lambda: [0.1, 0.1],
            vs_none=lambda g: (0.001, 0.01, 0.5),
        )
        return SimpleNamespace(timing=timing, conversion=conversion)

    for stack in [ratio(76.4, 50.7, 83.6), ratio(20, 15, 25)]:
        verdicts = {n: rest for n, *rest in views.page_verdicts(record(stack))}
        vs_flops = decide(*verdicts["growth_vs_flops"])[1]
        assert vs_flops == "above its arithmetic's"
        fell = decide(*verdicts["cached_steady"])[1]  # names where it fell
        assert fell == "fell from S = 256 to 512"
        # slower at the shortest length: the box says so, with its ratio
        first = decide(*verdicts["speed_first_verdict"])[1]
        assert first == "1.11 (1.05 to 1.25) times slower"
        for name, (rule, args, phrases) in verdicts.items():
            decide(rule, args, phrases)  # its outcome has a phrase
            assert all(len(p.split()) < 8 for p in phrases.values()), name
    for growth, words in [
        # 2.61 to 3.36 against 2.57: above it, but not all by the margin
        # 2.61 / 2.57 = 1.016 to 3.36 / 2.57 = 1.307
        (ratio(2.85, 2.61, 3.36), "above its arithmetic's, by 2–31%"),
        # holding 2.57 and crossing 2.57 * 1.1: no direction claimed
        (ratio(2.7, 2.4, 3.2), "not clearly above or below its arithmetic's"),
        (ratio(2.6, 2.4, 2.7), "within 10% of its arithmetic's"),
        # an end printed as the arithmetic's, or within 0.5% of it, holds
        # it: not "below, by 0-17%" (1.64 to 2.56 against 2.57)
        (
            ratio(2.2, 1.64, 2.57),
            "not clearly above or below its arithmetic's",
        ),
        (
            ratio(2.2, 1.64, 2.562),
            "not clearly above or below its arithmetic's",
        ),
        (ratio(2.2, 1.64, 2.55), "below its arithmetic's, by 1–36%"),
    ]:
        record_close = record(ratio(76.4, 50.7, 83.6))
        record_close.timing.growth_without = growth
        record_close.timing.flop_growth = 2.57
        found = {n: rest for n, *rest in views.page_verdicts(record_close)}
        assert decide(*found["growth_vs_flops"])[1] == words
    # a low end of 1.04 over a span past 2x prints "1.0": growth not shown
    record_near = record(ratio(76.4, 50.7, 83.6))
    record_near.timing.growth_with = ratio(1.1, 1.04, 2.1)
    found = {n: rest for n, *rest in views.page_verdicts(record_near)}
    assert views.ratio_text(ratio(1.1, 1.04, 2.1)) == "1.1 (1.0 to 2.1)"
    assert decide(*found["growth_with_verdict"])[1] == (
        "changed by a noisy factor"
    )


def test_kv_cache_bytes_refuses_a_negative_size_naming_it():
    with pytest.raises(ValueError, match="'tokens': -5"):
        sharing.kv_cache_bytes(1, 2, 64, -5, bytes_per_number=4)
    with pytest.raises(ValueError, match="'kv_heads': 0}; use 1 or more"):
        sharing.kv_cache_bytes(80, 0, 128, 1000)
    assert sharing.kv_cache_bytes(1, 2, 64, 0) == 0  # an empty cache


def test_a_grouped_class_that_tiles_the_heads_is_refused():
    from mhabook.layers.sharing_kv import GroupedQueryAttention

    sharing.check_like_checked(GroupedQueryAttention)  # the checked one

    class Tiled(GroupedQueryAttention):  # a reader's edit: repeat, not
        def forward(self, hidden_state, mask=None, cache=None):  # interleave
            repeat = torch.Tensor.repeat_interleave
            torch.Tensor.repeat_interleave = lambda t, n, dim: t.repeat(
                *[n if i == dim else 1 for i in range(t.dim())]
            )
            try:
                return super().forward(hidden_state, mask, cache)
            finally:
                torch.Tensor.repeat_interleave = repeat

    with pytest.raises(ValueError, match="repeat_interleave, not repeat"):
        sharing.check_like_checked(Tiled)


def test_first_fall_reads_each_length_against_the_next():
    term = costs.Term
    fall = sharing.Timing.first_fall.fget

    def at(*medians):
        steps = [term(m, m, m) for m in medians]
        lengths = tuple(32 * 2**i for i in range(len(medians)))
        return SimpleNamespace(cached_steps=steps, lengths=lengths)

    assert fall(at(1e-6, 1e-6, 2e-6)) is None  # held, then rose
    assert fall(at(1.3e-4, 1.6e-4, 1.1e-4, 2e-4)) == (64, 128)  # one dip
