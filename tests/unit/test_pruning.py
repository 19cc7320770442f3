import copy

import pytest
import torch

from chapter import glue_all_names
from mhabook.experiments import pruning
from mhabook.experiments.embedding import load_lines, sentence_embeddings
from mhabook.experiments.pruning import (
    Probe,
    SentenceBatch,
    attention_shares,
    chance_correlation,
    heads_needed_results,
    overlap_rows,
    paired_counts,
    paraphrase_rows,
    paraphrase_score,
    rank_correlation,
    round_up,
    rows_needed,
    sign_test,
    within_layer_chance,
    within_layer_correlation,
    within_layer_correlations,
    within_layer_detectable,
    within_layer_power,
)
from mhabook.layers.heads_needed import group_by_layer, heads_removed
from tiny import tiny_bert, tiny_tokenizer

PAIR = ["time flies", "fruit flies time arrow fruit", "arrow"]


def run(model, text=PAIR):
    batch = tiny_tokenizer()(text, padding=True, return_tensors="pt")
    with torch.inference_mode():
        return model(**batch).last_hidden_state  # (B, T, C)


def test_removing_no_head_changes_nothing():
    model = tiny_bert()
    before = run(model)
    with heads_removed(model, []):
        assert torch.equal(run(model), before)


def test_removing_a_head_equals_zeroing_its_value_projection_and_bias():
    model = tiny_bert(num_attention_heads=4, hidden_size=16)
    d_k = 4
    for layer, head in [(0, 0), (1, 2)]:
        twin = copy.deepcopy(model)
        value = twin.encoder.layer[layer].attention.self.value
        with torch.no_grad():
            value.weight[head * d_k : (head + 1) * d_k] = 0.0
            value.bias[head * d_k : (head + 1) * d_k] = 0.0
        with heads_removed(model, [(layer, head)]):
            hooked = run(model)
        assert torch.allclose(hooked, run(twin), atol=1e-5)
        assert not torch.allclose(hooked, run(model), atol=1e-4)


def test_check_removed_passes_the_chapters_removal_and_names_a_slip():
    from mhabook.deeper_checks import check_removed
    from mhabook.layers.heads_needed import zero_heads_hook

    model, heads = tiny_bert(num_attention_heads=4, hidden_size=16), [(1, 2)]
    batch = tiny_tokenizer()(PAIR, padding=True, return_tensors="pt")
    with heads_removed(model, heads):
        check_removed(run(model), model, batch, heads)
    for slip in (run(model), None):  # nothing removed; the wrong module
        if slip is None:
            attention = model.encoder.layer[1].attention.self  # not W^O
            hook = attention.register_forward_pre_hook(zero_heads_hook([2], 4))
            slip = run(model)
            hook.remove()
        with pytest.raises(ValueError, match=r"attention\.output\.dense"):
            check_removed(slip, model, batch, heads)


def test_removing_all_heads_of_a_layer_leaves_only_the_output_bias():
    model = tiny_bert()
    dense = model.encoder.layer[1].attention.output.dense
    with torch.no_grad():
        dense.bias.normal_()  # BERT starts its biases at zero
    seen = []
    handle = dense.register_forward_hook(lambda m, i, out: seen.append(out))
    with heads_removed(model, [(1, 0), (1, 1)]):
        run(model)
    handle.remove()
    (out,) = seen  # (B, T, C)
    assert torch.equal(out, dense.bias.expand_as(out))


def test_heads_are_put_back_after_the_block_even_after_an_error():
    model = tiny_bert()
    before = run(model)
    with pytest.raises(RuntimeError, match="inside"):
        with heads_removed(model, [(0, 0), (1, 1)]):
            assert not torch.allclose(run(model), before, atol=1e-4)
            raise RuntimeError("inside")
    assert torch.equal(run(model), before)
    for layer in model.encoder.layer:
        assert not layer.attention.output.dense._forward_pre_hooks


def test_a_head_that_does_not_exist_is_refused_with_the_ranges():
    with pytest.raises(ValueError, match=r"layers 0-1 and heads 0-1"):
        group_by_layer([(0, 0), (2, 0)], num_layers=2, num_heads=2)
    with pytest.raises(ValueError, match=r"head \(0, -1\)"):
        group_by_layer([(0, -1)], num_layers=2, num_heads=2)
    with pytest.raises(ValueError, match=r"such as \[\(0, 1\)\]"):
        group_by_layer((0, 1), num_layers=2, num_heads=2)  # one pair
    assert group_by_layer([(1, 1), (0, 1), (1, 0), (1, 1)], 2, 2) == {
        0: [1],
        1: [0, 1],
    }
    assert group_by_layer([], 2, 2) == {}


def test_the_checks_live_in_mhabook_and_the_layers_call_them():
    from mhabook import deeper_checks
    from mhabook.layers import heads_needed

    assert heads_needed.group_by_layer is deeper_checks.group_by_layer
    with pytest.raises(ValueError, match=r"heads \[4\].*heads 0-3"):
        deeper_checks.check_heads([4], 4)
    deeper_checks.check_heads([0, 3], 4)  # in range: passes
    with pytest.raises(
        ValueError, match=r"pass a list of head numbers, such as \[2\]"
    ):
        deeper_checks.check_heads(2, 4)  # one number, not a list
    with pytest.raises(ValueError, match=r"\(0, 3\), a \(layer, head\) pair"):
        deeper_checks.check_heads([(0, 3)], 4)  # every pair, not a layer's
    model = tiny_bert(num_hidden_layers=2)
    with pytest.raises(ValueError, match=r"does not exist.*layers 0-1"):
        with heads_removed(model, [(2, 0)]):
            pass


def test_the_layer_cache_gives_the_model_output_from_any_layer():
    model, tokenizer = tiny_bert(), tiny_tokenizer()
    text = PAIR + ["fruit", "time flies time flies", "arrow time"]
    batch = SentenceBatch(model, tokenizer, text, batch_size=2)
    expected = sentence_embeddings(model, tokenizer, text)  # (N, C)
    for start in range(2):
        assert torch.allclose(batch.embeddings(start), expected, atol=1e-5)
    # the recording run's own embeddings: the same numbers, not re-run
    assert torch.equal(batch.recorded, batch.embeddings())
    with heads_removed(model, [(1, 0)]):
        hooked = sentence_embeddings(model, tokenizer, text)
        cached = batch.embeddings(start=1)
    assert torch.allclose(cached, hooked, atol=1e-5)
    assert not torch.allclose(cached, expected, atol=1e-3)
    with pytest.raises(ValueError, match="non-empty"):
        SentenceBatch(model, tokenizer, [])
    long = " ".join(["time"] * model.config.max_position_embeddings)
    with pytest.raises(ValueError, match=r"sentence 2 .* positions"):
        SentenceBatch(model, tokenizer, ["time flies", long])


def test_paraphrase_score_counts_rows_closer_to_the_paraphrase():
    sentence = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    paraphrase = torch.tensor([[1.0, 0.1], [0.0, 1.0], [0.1, 1.0]])
    partner = torch.tensor([[0.0, 1.0], [1.0, 0.2], [1.0, 0.0]])
    assert paraphrase_score(sentence, paraphrase, partner) == pytest.approx(
        2 / 3
    )


def test_paraphrase_rows_say_which_rows_are_right():
    sentence = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    paraphrase = torch.tensor([[1.0, 0.1], [0.0, 1.0]])
    partner = torch.tensor([[0.0, 1.0], [1.0, 0.2]])
    right = paraphrase_rows(sentence, paraphrase, partner)
    assert right.tolist() == [True, False]


def test_overlap_rows_count_shared_words():
    rows = [
        ("the cat sat", "The cat sat down", "a dog ran"),
        ("the cat sat", "a feline rested", "the cat ran"),
    ]
    assert overlap_rows(rows).tolist() == [True, False]


def test_paired_counts_and_the_sign_test():
    a = torch.tensor([True, True, True, False, True])
    b = torch.tensor([True, False, False, True, True])
    assert paired_counts(a, b) == (2, 1)
    assert sign_test(2, 0) == pytest.approx(0.25)
    assert sign_test(2, 1) == pytest.approx(0.5)
    assert sign_test(0, 0) == 1.0  # never disagree: no evidence
    assert sign_test(0, 3) == 1.0
    assert sign_test(14, 0) == pytest.approx(2**-14)


def test_rows_needed_is_the_fewest_rows_a_sign_test_can_detect():
    assert rows_needed(0.05) == 5  # 1/32 < 0.05 <= 1/16
    assert rows_needed(1 / 16) == 5  # strictly below
    assert rows_needed(0.01) == 7
    k = rows_needed(0.05)
    assert sign_test(k, 0) < 0.05 <= sign_test(k - 1, 0)


def test_the_chance_bar_of_a_correlation_over_all_heads():
    g = torch.Generator().manual_seed(0)
    bar = chance_correlation(72, 0.95, g)
    assert 0.2 < bar < 0.28  # about 1.96 / sqrt(71) = 0.23
    assert chance_correlation(72, 0.99, g) > bar


LAYERS = torch.arange(6, dtype=torch.double)[:, None]  # (L, 1)


def test_the_within_layer_test_finds_a_trend_inside_the_layers():
    # in each layer b follows a (plus a little noise), while the layers'
    # means run the other way: over all heads, the trend is reversed
    g = torch.Generator().manual_seed(0)
    a = torch.rand(6, 12, generator=g, dtype=torch.double) + 10 * LAYERS
    b = a - 10 * LAYERS + 0.3 * torch.rand(6, 12, generator=g) - 20 * LAYERS
    assert rank_correlation(a, b) < -0.9  # between layers: reversed
    within = within_layer_correlation(a, b)
    assert within > 0.8
    assert within > within_layer_chance(a, b, 0.983, g)


def test_the_within_layer_test_ignores_a_trend_between_layers_only():
    # in each layer, b's ranks are uncorrelated with a's (rank correlation
    # exactly 0 for [1, 3, 0, 2] against [0, 1, 2, 3]), but both grow with
    # the layer: over all heads the correlation is strong
    a = torch.arange(4, dtype=torch.double) + 10 * LAYERS  # (6, 4)
    b = torch.tensor([1.0, 3.0, 0.0, 2.0]) + 10 * LAYERS
    assert rank_correlation(a, b) > 0.9
    assert within_layer_correlations(a, b).abs().max() < 1e-12
    g = torch.Generator().manual_seed(0)
    assert within_layer_chance(a, b, 0.95, g) > 0.1  # not passed


def test_the_within_layer_null_shuffles_heads_inside_each_layer_only():
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(2, 6, 12, generator=g, dtype=torch.double)
    bar = within_layer_chance(a, b, 0.95, torch.Generator().manual_seed(1))
    shifted = within_layer_chance(
        a + 5 * LAYERS, b - 7 * LAYERS, 0.95, torch.Generator().manual_seed(1)
    )
    assert shifted == bar  # the layers' means do not enter
    # the mean of 6 rank correlations over 12 heads: about 1.96 / sqrt(66)
    assert 0.2 < bar < 0.28
    one = within_layer_chance(a[:1], b[:1], 0.95, g)
    assert one == pytest.approx(chance_correlation(12, 0.95, g), abs=0.06)


def test_the_within_layer_power_is_what_the_simulation_says():
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(2, 6, 12, generator=g, dtype=torch.double)
    bar = within_layer_chance(a, b, 0.983, g)
    detectable = within_layer_detectable(bar, 6, 12)
    assert bar < detectable < 1.0
    g = torch.Generator().manual_seed(5)  # fresh draws
    assert within_layer_power(0.0, bar, 6, 12, g) < 0.03  # about 1.7%
    assert within_layer_power(detectable, bar, 6, 12, g) == pytest.approx(
        0.8, abs=0.03
    )
    assert within_layer_detectable(bar, 6, 12, power=0.5) < detectable
    # two heads a layer: every layer's correlation is +-1, so the bar is 1
    # and no true correlation passes it: reported as 1.0
    two = within_layer_chance(a[:2, :2], b[:2, :2], 0.983, g)
    assert within_layer_detectable(two, 2, 2) == 1.0


def test_attention_shares_name_what_a_head_attends_to():
    # [CLS] a b [SEP] [PAD]: head 0 looks back one token, head 1 at itself,
    # head 2 at [SEP]; the padding query is left out of the average.
    ids = torch.tensor([[2, 5, 6, 3, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 0]])
    T = 5
    back = torch.zeros(T, T)
    back[0, 0] = 1.0  # [CLS] has no previous token: it looks at itself
    for i in range(1, T):
        back[i, i - 1] = 1.0
    to_sep = torch.zeros(T, T)
    to_sep[:, 3] = 1.0
    heads = torch.stack([back, torch.eye(T), to_sep])  # (h, T, T)
    shares = attention_shares(heads[None, None], ids, mask, [2, 3])
    assert torch.allclose(shares["previous"][0], torch.tensor([0.75, 0, 0]))
    assert torch.allclose(shares["self"][0], torch.tensor([0.25, 1, 0.25]))
    assert torch.allclose(shares["special"][0], torch.tensor([0.5, 0.5, 1]))


def test_rank_correlation():
    a = torch.tensor([0.1, 0.5, 0.3, 0.9])
    assert rank_correlation(a, a * 10 + 1) == pytest.approx(1.0)
    assert rank_correlation(a, -a) == pytest.approx(-1.0)


def test_the_paraphrase_set_has_40_rows_of_three_distinct_sentences():
    rows = [
        line.split("\t") for line in load_lines("paraphrases.tsv", table=True)
    ]
    assert len(rows) == 40
    assert all(len(row) == 3 and len(set(row)) == 3 for row in rows)
    assert len({row[0] for row in rows}) == 40


WORDS = ["time", "flies", "fruit", "arrow"]


def tiny_set(seed=0):
    """Sentences and (sentence, paraphrase, partner) rows in the tiny
    tokenizer's four words."""
    g = torch.Generator().manual_seed(seed)

    def sentence(k):
        return " ".join(
            WORDS[int(j)] for j in torch.randint(4, (k,), generator=g)
        )

    sentences = [sentence(2 + i % 5) for i in range(16)]
    rows = [(sentence(3), sentence(3), sentence(3)) for _ in range(6)]
    return sentences, rows


def planted_bert():
    """A tiny BERT whose heads matter, with head (1, 0) silent (its rows
    of W^O zero) and head (0, 1) a hundred times louder than the rest."""
    model = tiny_bert(num_attention_heads=2, hidden_size=8)
    d_k = 4
    with torch.no_grad():
        for layer in model.encoder.layer:
            layer.attention.self.value.weight *= 10
            layer.attention.output.dense.weight *= 10
        silent = model.encoder.layer[1].attention.output.dense
        silent.weight[:, 0:d_k] = 0.0
        loud = model.encoder.layer[0].attention
        loud.self.value.weight[d_k:] *= 10
        loud.output.dense.weight[:, d_k:] *= 10
    return model


@pytest.fixture(scope="module")
def planted():
    sentences, rows = tiny_set()
    model = planted_bert()
    result = heads_needed_results(
        model,
        tiny_tokenizer(),
        sentences,
        rows,
        "time flies",
        every=2,
        n_orders=5,
        n_curves=2,
    )
    return model, sentences, rows, result


def test_a_silent_head_has_no_importance_and_goes_first(planted):
    _, _, _, result = planted
    assert result.importance[1, 0].item() == pytest.approx(0.0, abs=1e-6)
    assert result.order[0] == (1, 0)
    assert result.importance.flatten().sort().values[1] > 1e-5


def test_a_loud_head_matters_most_and_its_layer_leads(planted):
    _, _, _, result = planted
    assert result.order[-1] == (0, 1)
    assert int(result.importance.argmax()) == 1  # layer 0, head 1
    assert result.top_layer == 0 and result.runner_up == 1
    assert result.layer_drop[0] > result.layer_drop[1]


def test_removing_one_head_is_exact_and_the_bound_is_rounded_up(planted):
    _, _, _, result = planted
    assert result.exact_head == (0, 0)  # head h // 4 of layer 0
    assert result.exact_difference < 1e-5
    assert result.exact_moved > 100 * result.exact_difference


def test_the_curves_start_and_end_where_they_must(planted):
    model, _, rows, result = planted
    L, h = result.num_layers, result.num_heads
    assert result.by_importance[0] == pytest.approx((1.0, result.task_full))
    probe = Probe(
        model, tiny_tokenizer(), [r[c] for c in range(3) for r in rows]
    )
    every = [(layer, i) for layer in range(L) for i in range(h)]
    end = result.by_importance[L * h]
    assert end == pytest.approx((probe.fidelity(every), result.task_none))
    # the yardstick the page reads fidelity against: every head removed
    assert result.fid_none == pytest.approx(probe.fidelity(every))
    assert result.fid_none < result.fid_half < 1.0
    # fidelity's scale: a sentence against its paraphrase and its partner
    n = len(rows)
    sentence, paraphrase, partner = probe.reference.view(3, n, -1)
    cos = torch.nn.functional.cosine_similarity
    assert result.cos_paraphrase == pytest.approx(
        cos(sentence, paraphrase).mean().item()
    )
    assert result.cos_partner == pytest.approx(
        cos(sentence, partner).mean().item()
    )
    assert result.cos_paraphrase != result.cos_partner
    half = result.order[: result.half]
    assert probe.fidelity(half) == pytest.approx(result.fid_half)
    assert result.first_layer == 1  # the layer of the silent head
    layer_1 = [(1, i) for i in range(h)]
    assert probe.fidelity(layer_1) == pytest.approx(result.layer_fid)
    assert result.imp_top == sum(layer == 0 for layer, _ in half)
    assert len(result.random_half) == 5 and len(result.rest_half) == 5
    assert result.correlation["special"] == pytest.approx(
        rank_correlation(result.shares["special"], result.importance)
    )
    special = result.shares["special"]
    assert result.within["special"] == pytest.approx(
        within_layer_correlation(special, result.importance)
    )
    assert result.by_layer["self"].shape == (L,)


@pytest.mark.parametrize(
    "size, fix",
    [
        ({"num_hidden_layers": 1}, "at least 2 layers"),
        ({"num_attention_heads": 1}, "more layers or more heads"),
    ],
)
def test_a_model_too_small_is_refused_naming_what_the_page_needs(size, fix):
    sentences, rows = tiny_set()
    with pytest.raises(ValueError, match=fix):
        heads_needed_results(
            tiny_bert(**size), tiny_tokenizer(), sentences, rows
        )


def test_round_up_keeps_a_bound_a_bound():
    assert f"{round_up(1.1920929e-07):.1e}" == "1.2e-07"
    assert f"{round_up(0.261):.2g}" == "0.27"
    assert round_up(0.0) == 0.0
    g = torch.Generator().manual_seed(0)
    for x in torch.rand(200, generator=g, dtype=torch.float64) * 10.0**-7:
        x = x.item()
        assert float(f"{round_up(x):.1e}") >= x


def test_exact_numbers_state_the_layer_and_head_measured_and_a_bound():
    """The page's numbers come from the cell the reader may edit: another
    layer and head are named, and the difference is rounded up."""
    full = torch.tensor([[[1.0, -3.0]]], dtype=torch.float64)
    masked = torch.tensor([[[0.5, -3.0]]], dtype=torch.float64)
    without_i = masked + 1.234e-07
    numbers = pruning.exact_numbers(5, 11, full, masked, without_i)
    assert (numbers["one_layer"], numbers["one_i"]) == (5, 11)
    assert numbers["one_difference"] >= 1.234e-07
    assert f"{numbers['one_difference']:.2g}" == "1.3e-07"
    assert numbers["one_moved"] == 0.5 and numbers["one_scale"] == 2.0
    assert numbers["one_match"] == "to within 1.3e-07"
    same = pruning.exact_numbers(5, 11, full, masked, masked.clone())
    assert same["one_match"] == "exactly"  # not "to within 0"


def test_the_figures_draw_what_the_record_holds(planted):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mhabook.views.pruning import behaviour_scatter, pruning_curves

    _, _, _, result = planted
    fig = pruning_curves(result)
    top, bottom = fig.axes[:2]
    mean, every, spared, curve = top.get_lines()[:4]  # random, at half
    assert list(curve.get_xdata()) == list(result.by_importance)
    assert list(every.get_xdata()) == [result.half] * len(result.random_half)
    assert list(every.get_ydata()) == result.rand_fids  # all, not a few
    assert list(spared.get_ydata()) == result.rest_half  # the fair ones
    assert fig.legends[0].get_texts()[-1].get_text() == spared.get_label()
    assert bottom.get_lines()[-1].get_ydata()[0] == result.limit
    plt.close(fig)
    fig = behaviour_scatter(result)
    top, bottom = fig.axes[:2]
    assert top.get_title().endswith(f"{result.correlation['special']:+.2f}")
    assert bottom.get_title().endswith(f"{result.within['special']:+.2f}")
    dots, mean = bottom.get_lines()[1:3]  # after the zero line
    assert list(dots.get_ydata()) == result.by_layer["special"].tolist()
    assert mean.get_ydata()[0] == result.within["special"]
    plt.close(fig)


def test_the_page_numbers_are_read_off_the_record(planted):
    from mhabook.views.pruning import page_numbers

    _, _, _, result = planted
    numbers = page_numbers(result)
    drop = result.layer_drop
    assert numbers["top_layer"] == 0 and numbers["runner_up"] == 1
    assert numbers["runner_drop"] == pytest.approx(drop[1].item())
    assert numbers["top_drop"] == pytest.approx(drop[0].item())
    assert numbers["num_all"] == 4 and numbers["last_layer"] == 1
    assert result.exact_head == (0, 0)  # head h // 4 of layer 0
    assert (numbers["n_orders"], numbers["n_curves"]) == (5, 2)
    assert numbers["n_more_orders"] == 3 and numbers["n_orders_1"] == 6
    fids = [fidelity for fidelity, _ in result.random_half]
    assert (numbers["rand_low"], numbers["rand_high"]) == (
        min(fids),
        max(fids),
    )
    assert numbers["rho_within"] == result.within["special"]
    # the layers whose own correlation is below zero, of how many
    by_layer = result.by_layer["special"]
    assert numbers["num_layers"] == len(by_layer) == 2
    assert numbers["layers_negative"] == sum(float(r) < 0 for r in by_layer)
    assert numbers["fid_none"] == result.fid_none


def test_every_page_verdict_has_short_phrases_for_each_outcome(planted):
    from mhabook.experiments.verdicts import decide
    from mhabook.views.pruning import page_verdicts

    _, _, _, result = planted
    verdicts = {name: rest for name, *rest in page_verdicts(result)}
    assert len(verdicts) == len(page_verdicts(result))  # no name twice
    for name, (rule, args, phrases) in verdicts.items():
        decide(rule, args, phrases)  # its outcome has a phrase
        assert all(len(p.split()) < 8 for p in phrases.values()), name
    # the loud head's layer leads by more than the sampling noise
    outcome, phrase = decide(*verdicts["top_verdict"])
    assert outcome is True and phrase == "clears"


def test_the_page_glues_every_name_it_shows_and_shows_every_number(planted):
    """heads_needed.ipynb's Markdown shows glued values by name: the
    record's numbers and verdicts, and the names its own cells glue, cover
    them all, and every number page_numbers gives is shown."""
    import re
    from pathlib import Path

    import nbformat

    from mhabook.views.pruning import page_numbers, page_verdicts

    _, _, _, result = planted
    path = Path(__file__).parents[2] / "book" / "heads_needed.ipynb"
    cells = nbformat.read(path, as_version=4).cells
    shown = {
        name
        for cell in cells
        if cell.cell_type == "markdown"
        for name in re.findall(r"\{glue:text\}`(\w+)", cell.source)
    }
    in_cells = {
        name
        for cell in cells
        if cell.cell_type == "code"
        for name in re.findall(r"(?:glue|verdict)\(\s*\"(\w+)\"", cell.source)
    }
    code = "".join(cell.source for cell in cells if cell.cell_type == "code")
    in_cells |= glue_all_names(code)
    if "pr.exact_numbers(" in code:  # glued in a loop by the page's cell
        t = torch.zeros(1, 1, 2)
        in_cells |= set(pruning.exact_numbers(0, 0, t, t, t))
    numbers = set(page_numbers(result))
    verdicts = {name for name, *_ in page_verdicts(result)}
    assert shown - numbers - verdicts - in_cells == set()
    assert numbers | verdicts <= shown


def test_a_row_without_three_columns_is_named_with_the_file_to_fix():
    sentences, rows = tiny_set()
    rows = [*rows[:1], rows[1][:2], *rows[2:]]
    with pytest.raises(ValueError, match=r"row 1 of `rows` has 2 column") as e:
        heads_needed_results(
            tiny_bert(), tiny_tokenizer(), sentences, rows, every=2
        )
    assert "book/data/paraphrases.tsv" in str(e.value)


def test_a_sentence_longer_than_the_positions_is_named_before_any_run():
    sentences, rows = tiny_set()
    sentences = [*sentences[:2], " ".join([sentences[2]] * 8), *sentences[3:]]
    with pytest.raises(ValueError, match=r"sentence 3 .* 16 positions"):
        heads_needed_results(
            tiny_bert(), tiny_tokenizer(), sentences, rows, every=2
        )


def test_a_paraphrase_that_only_drops_a_stop_is_refused():
    sentences, rows = tiny_set()
    first = rows[0][0]
    rows = [
        *rows[:1],
        (first, first.capitalize() + ".", rows[1][2]),
        *rows[2:],
    ]
    with pytest.raises(
        ValueError, match="row 1 of `rows` gives a paraphrase that repeats"
    ):
        heads_needed_results(
            tiny_bert(), tiny_tokenizer(), sentences, rows, every=2
        )


def test_a_hook_for_a_head_that_does_not_exist_is_refused_with_the_range():
    from mhabook.layers.heads_needed import zero_heads_hook

    with pytest.raises(ValueError, match="heads 0-3"):
        zero_heads_hook([5], 4)
    with pytest.raises(ValueError, match="heads 0-3"):
        zero_heads_hook([-1], 4)
    hook = zero_heads_hook([1], 4)  # in range: slice 1 of 4 zeroed
    (out,) = hook(None, (torch.ones(1, 2, 8),))
    assert out[0, 0].tolist() == [1, 1, 0, 0, 1, 1, 1, 1]


def test_variants_side_by_side_equal_each_run_alone_with_the_hooks():
    """V variants in one batch (keep: (V, L, h)) give what each gives
    with heads_removed on the model, from any start layer."""
    from mhabook.experiments.embedding import sentence_embeddings

    model, tokenizer = (
        tiny_bert(num_attention_heads=4, hidden_size=16),
        (tiny_tokenizer()),
    )
    text = PAIR + ["fruit", "time flies time flies", "arrow time", "time"]
    batch = SentenceBatch(model, tokenizer, text, batch_size=2)
    removed = [[(1, 0)], [(1, 1), (1, 3)], [], [(1, 0), (1, 1), (1, 2)]]
    keep = torch.ones(len(removed), 2, 4)
    for v, pairs in enumerate(removed):
        for layer, head in pairs:
            keep[v, layer, head] = 0.0
    together = batch.embeddings(1, keep)  # (V, N, C)
    assert together.shape == (4, len(text), 16)
    for v, pairs in enumerate(removed):
        with heads_removed(model, pairs):
            alone = sentence_embeddings(model, tokenizer, text)
        assert torch.allclose(together[v], alone, atol=1e-5), v
    assert not torch.allclose(together[0], together[1], atol=1e-3)
    with pytest.raises(ValueError, match="start at the first layer"):
        batch.embeddings(1, torch.zeros(1, 2, 4))


def test_probe_many_equals_one_set_at_a_time_in_the_order_given():
    model, tokenizer = (
        tiny_bert(num_attention_heads=4, hidden_size=16),
        (tiny_tokenizer()),
    )
    probe = Probe(model, tokenizer, PAIR + ["fruit arrow", "time"])
    sets = [[(1, 2)], [], [(0, 0), (1, 1)], [(0, 3)]]
    many = probe.many(sets, at_once=3)  # two batches, by first layer
    for v, pairs in enumerate(sets):
        with heads_removed(model, pairs):
            expected = sentence_embeddings(
                model, tokenizer, PAIR + ["fruit arrow", "time"]
            )
        assert torch.allclose(many[v], expected, atol=1e-5), v
    assert torch.equal(many[1], probe.reference)


def test_batches_hold_one_length_each_so_nothing_is_padded():
    model, tokenizer = tiny_bert(), tiny_tokenizer()
    text = ["time", "time flies", "fruit", "arrow flies", "time", "fruit"]
    batch = SentenceBatch(model, tokenizer, text, batch_size=2)
    for tokens, _ in batch.chunks:
        assert tokens["attention_mask"].all()
    assert len(batch.chunks) == 3  # 4 one-word sentences in 2, then 2


def test_attention_shares_by_length_equal_one_padded_batch():
    from mhabook.experiments.pruning import attention_shares_by_length

    model, tokenizer = tiny_bert(), tiny_tokenizer()
    text = PAIR + ["fruit", "time flies time flies"]
    batch = tokenizer(text, padding=True, return_tensors="pt")
    with torch.inference_mode():
        attentions = model(**batch, output_attentions=True).attentions
    special = [tokenizer.cls_token_id, tokenizer.sep_token_id]
    padded = attention_shares(
        torch.stack(attentions),
        batch["input_ids"],
        batch["attention_mask"],
        special,
    )
    by_length = attention_shares_by_length(model, tokenizer, text, special)
    for name in padded:
        assert torch.allclose(by_length[name], padded[name], atol=1e-5)


def test_rows_whose_partner_is_closer_than_the_paraphrase_are_refused():
    sentences, rows = tiny_set()
    # the partner repeats the sentence: the full model always picks it,
    # as when a reader swaps the paraphrase and partner columns
    swapped = [(s, "arrow arrow arrow arrow", s) for s, _, _ in rows]
    with pytest.raises(ValueError, match="paraphrase, partner, in that"):
        heads_needed_results(
            planted_bert(),
            tiny_tokenizer(),
            sentences,
            swapped,
            "time flies",
            every=2,
            n_orders=5,
            n_curves=2,
        )


def test_more_curves_than_random_orders_are_refused():
    model, tokenizer = tiny_bert(), tiny_tokenizer()
    with pytest.raises(ValueError, match="n_curves <= n_orders"):
        pruning.heads_needed_results(
            model,
            tokenizer,
            ["time flies"] * 8,
            [("a", "b", "c")] * 2,
            n_orders=3,
            n_curves=4,
        )


def test_no_random_orders_are_refused_before_the_curves():
    with pytest.raises(ValueError, match="n_orders = 0: the ranking is set"):
        pruning.heads_needed_results(
            tiny_bert(),
            tiny_tokenizer(),
            ["time flies"] * 8,
            [("a", "b", "c")] * 2,
            n_orders=0,
            n_curves=0,
        )


def test_two_heads_a_layer_get_a_note_on_the_within_layer_ranks(capsys):
    sentences, rows = tiny_set()
    heads_needed_results(
        tiny_bert(),
        tiny_tokenizer(),
        sentences,
        rows,
        "time flies",
        every=2,
        n_orders=3,
        n_curves=1,
    )
    assert "2 heads a layer: within-layer ranks only give ±1" in (
        capsys.readouterr().out
    )
