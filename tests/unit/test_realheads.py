"""Section 4's and testing_heads' helpers on tiny random BERTs and planted
heads: inputs, weights, measures, the claim tests and the page's verdicts."""

import copy
import functools

import pytest
import torch

from mhabook.experiments import realheads
from mhabook.experiments.realheads import (
    Estimate,
    claim1_test,
    claim_one,
    claim_two,
    coreference_examples,
    correlation_bar,
    detection_power,
    encode_pair,
    first_searched_layer,
    flies_examples,
    flies_measures,
    flies_test,
    lifts,
    load_table,
    model_attentions,
    offset_sums,
    own_sentence_ratio,
    position,
    power_curve,
    pronouns_result,
    query_key_products,
    referent_accuracy,
    resample_counts,
    run_example,
    run_examples,
    same_sense_examples,
    segments_from_sep,
    share_on,
    smallest_size,
    special_shares,
    twin_flips,
    twin_halves,
    twin_null_bar,
    weighted_norms,
    within_sentence_share,
    within_shares,
)
from mhabook.experiments.verdicts import all_above, decide
from mhabook.views import testing
from tiny import tiny_bert, tiny_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


def test_a_pair_is_encoded_with_its_segments(tokenizer):
    inputs, tokens, b_start = encode_pair(
        tokenizer, tiny_bert(), "time flies", "fruit flies"
    )
    assert tokens == [
        "[CLS]",
        "time",
        "flies",
        "[SEP]",
        "fruit",
        "flies",
        "[SEP]",
    ]
    assert b_start == 4
    assert inputs["token_type_ids"].tolist() == [[0, 0, 0, 0, 1, 1, 1]]


def test_a_pair_longer_than_the_position_table_is_refused(tokenizer):
    with pytest.raises(ValueError, match="19 tokens long.*holds 8"):
        encode_pair(
            tokenizer,
            tiny_bert(max_position_embeddings=8),
            "time " * 8,
            "fruit " * 8,
        )


def test_missing_token_type_ids_are_rebuilt(tokenizer):
    def no_types(*args, **kwargs):
        encoded = tokenizer(*args, **kwargs)
        del encoded["token_type_ids"]
        return encoded

    no_types.sep_token_id = tokenizer.sep_token_id
    no_types.convert_ids_to_tokens = tokenizer.convert_ids_to_tokens
    inputs, _, b_start = encode_pair(no_types, tiny_bert(), "time", "arrow")
    assert inputs["token_type_ids"].tolist() == [[0, 0, 0, 1, 1]]
    assert b_start == 3


def test_a_single_sentence_has_no_segments_to_rebuild():
    with pytest.raises(ValueError, match="expected a sentence pair"):
        segments_from_sep(torch.tensor([[2, 5, 3]]), sep_token_id=3)


def test_attentions_are_stacked_per_layer(tokenizer):
    model = tiny_bert()
    inputs, _, _ = encode_pair(tokenizer, model, "time flies", "arrow")
    attention, hidden = model_attentions(model, inputs)
    assert attention.shape == (2, 2, 6, 6)
    assert len(hidden) == 3
    torch.testing.assert_close(attention.sum(-1), torch.ones(2, 2, 6))


def test_a_model_without_eager_attention_gets_a_clear_error(tokenizer):
    model = tiny_bert(attn_implementation="sdpa")
    inputs, _, _ = encode_pair(tokenizer, model, "time flies", "arrow")
    with pytest.raises(ValueError, match="attn_implementation='eager'"):
        model_attentions(model, inputs)


def test_within_sentence_share():
    # tokens: [CLS] a1 a2 [SEP] b1 b2 [SEP]; words at 1, 2, 4, 5
    segments = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    is_word = torch.tensor([0, 1, 1, 0, 1, 1, 0], dtype=torch.bool)
    attention = torch.zeros(1, 2, 7, 7)
    attention[0, 0, :, 1] = 1.0  # head 0: everyone looks at a1
    attention[0, 1, :, 0] = 0.5  # head 1: half to [CLS], half to b2
    attention[0, 1, :, 5] = 0.5
    share = within_sentence_share(attention, segments, is_word)
    torch.testing.assert_close(share, torch.tensor([[0.5, 0.5]]))
    attention[0, 0, 4:, 1], attention[0, 0, 4:, 4] = 0.0, 1.0  # B keeps to B
    share = within_sentence_share(attention, segments, is_word)
    assert share[0, 0] == 1.0


# --- measuring heads over sets of examples ---------------------------------


def synthetic(attention, tokens, segments):
    """An example as `run_example` returns it, from given weights."""
    special = [i for i, t in enumerate(tokens) if t.startswith("[")]
    return {
        "attention": attention,
        "tokens": tokens,
        "segments": torch.tensor(segments),
        "special": torch.tensor(special),
    }


PAIR = ["[CLS]", "a1", "a2", "a3", "[SEP]", "b1", "b2", "[SEP]"]
SEGMENTS = [0, 0, 0, 0, 0, 1, 1, 1]


def test_run_example_keeps_segments_and_special_positions(tokenizer):
    model = tiny_bert()
    pair = run_example(model, tokenizer, "time flies", "fruit flies")
    assert pair["segments"].tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert pair["special"].tolist() == [0, 3, 6]
    assert pair["attention"].shape == (2, 2, 7, 7)
    single = run_example(model, tokenizer, "time flies")
    assert single["segments"].tolist() == [0, 0, 0, 0]
    assert position(pair, "flies", 1) == 5
    with pytest.raises(ValueError, match="'arrow' is not in sentence B"):
        position(pair, "arrow", 1)
    for a, b, empty in (("time flies", "", "B"), (" ", None, "A")):
        with pytest.raises(ValueError, match=f"sentence {empty} is empty"):
            run_example(model, tokenizer, a, b)
    split = {**pair, "tokens": ["[CLS]", "time", "[SEP]", "fl", "##ies"]}
    split["segments"] = torch.tensor([0, 0, 0, 1, 1])
    with pytest.raises(ValueError, match="cuts 'flies' into pieces"):
        position(split, "flies", 1)
    with pytest.raises(ValueError, match="use 0 for sentence A or 1"):
        position(pair, "flies", 2)
    with pytest.raises(ValueError, match="lower-cases 'Flies'.*'flies'"):
        position(pair, "Flies", 1)
    with pytest.raises(ValueError, match="'fruit flies' is 2 words"):
        position(pair, "fruit flies", 1)


def pairs_of_lengths(weigh):
    """Synthetic pairs of several lengths, weights from weigh(offsets,
    same_sentence) for all tokens."""
    examples = []
    for n_a, n_b in [(1, 4), (2, 3), (3, 3), (4, 1), (4, 4)]:
        tokens = ["[CLS]"] + ["a"] * n_a + ["[SEP]"] + ["b"] * n_b + ["[SEP]"]
        seg = torch.tensor([0] * (n_a + 2) + [1] * (n_b + 1))
        T = len(tokens)
        offsets = torch.arange(T)[None, :] - torch.arange(T)[:, None]
        w = weigh(offsets, seg[:, None] == seg[None, :])  # (T, T)
        attention = (w / w.sum(-1, keepdim=True))[None, None]
        examples.append(synthetic(attention, tokens, seg.tolist()))
    return examples


def ratio_of(examples):
    sums, counts = offset_sums(examples)
    return own_sentence_ratio(sums.sum(0), counts.sum(0))


def test_a_head_that_only_looks_at_distance_has_no_sentence_preference():
    examples = pairs_of_lengths(lambda off, same: torch.exp(-off.abs() / 2))
    assert within_shares(examples).mean() > 0.6  # the raw share is fooled
    ratio = ratio_of(examples)
    assert ratio.shape == (1, 1)
    assert 0.85 < ratio.item() < 1.15


def test_a_head_that_prefers_its_sentence_has_a_ratio_above_one():
    examples = pairs_of_lengths(lambda off, same: 1.0 + 2.0 * same)
    # 3 within each query; queries differ in how much they have to share,
    # which pulls the pooled ratio down a little: the measure is cautious.
    assert 2.4 < ratio_of(examples).item() <= 3.0


def test_resampled_sums_give_one_ratio_per_resample():
    examples = pairs_of_lengths(lambda off, same: 1.0 + same)
    sums, counts = offset_sums(examples)
    pick = torch.tensor([[0, 1, 2, 3, 4], [0, 0, 1, 1, 2]])
    ratios = own_sentence_ratio(sums[pick].sum(1), counts[pick].sum(1))
    assert ratios.shape == (2, 1, 1)
    torch.testing.assert_close(ratios[0], ratio_of(examples))


def flies_synthetic(attention):
    tokens = ["[CLS]", "t", "flies", "like", "x", "[SEP]"]
    tokens += ["f", "flies", "like", "y", "[SEP]"]
    ex = synthetic(attention, tokens, [0] * 6 + [1] * 5)
    ex["flies"] = (2, 7)
    ex["targets"] = [4, 6, 9]
    return ex


def test_lifts_of_an_even_head_and_of_a_targeted_one():
    T = 11
    attention = torch.full((1, 2, T, T), 1 / T)  # head 0: even spread
    attention[0, 1, 2] = 0.0
    attention[0, 1, 2, 4] = 1.0  # head 1: flies (A) -> x only
    attention[0, 1, 7] = 0.0
    attention[0, 1, 7, [6, 9]] = 0.5  # flies (B) -> f and y
    ex = flies_synthetic(attention)
    torch.testing.assert_close(
        lifts(ex, ex["targets"])[:, 0, 0], torch.ones(3)
    )
    torch.testing.assert_close(  # 8 words: [CLS] and [SEP] left out
        lifts(ex, ex["targets"])[:, 0, 1], torch.tensor([8.0, 4.0, 4.0])
    )
    attention[0, 0, 2, [0, 5, 10]] *= 9  # parks weight off the words
    attention[0, 0, 2] /= attention[0, 0, 2].sum()
    torch.testing.assert_close(  # an even spread over the words still
        lifts(ex, ex["targets"])[:, 0, 0], torch.ones(3)
    )


def test_referent_accuracy_and_shuffled_labels():
    tokens = ["[CLS]", "n1", "n2", "it", "[SEP]"]
    examples = []
    for right, wrong in [(1, 2), (2, 1)]:
        attention = torch.zeros(1, 2, 5, 5)
        attention[0, 0, 3, right] = 1.0  # head 0: always the referent
        attention[0, 1, 3, 1] = 1.0  # head 1: always the first noun
        ex = synthetic(attention, tokens, [0] * 5)
        ex["pronoun"], ex["right"], ex["wrong"] = 3, right, wrong
        examples.append(ex)
    torch.testing.assert_close(
        referent_accuracy(examples), torch.tensor([[1.0, 0.5]])
    )
    flips = torch.tensor([[True, True], [False, True]])
    torch.testing.assert_close(
        referent_accuracy(examples, flips),
        torch.tensor([[[0.0, 0.5]], [[0.5, 1.0]]]),
    )


def test_weighted_norms_match_a_direct_computation(tokenizer):
    model = tiny_bert()
    ex = run_example(model, tokenizer, "time flies", "arrow")
    block = model.encoder.layer[1].attention
    x = ex["hidden_states"][1]
    norms = weighted_norms(block, x, ex["attention"][1])  # (h, T, T)
    h, i, j, d_k = 1, 2, 4, 4
    with torch.no_grad():
        v = block.self.value(x)[0, j, h * d_k : (h + 1) * d_k]
        w_o = block.output.dense.weight[:, h * d_k : (h + 1) * d_k]
        direct = ex["attention"][1, h, i, j] * (w_o @ v).norm()
    torch.testing.assert_close(norms[h, i, j], direct)
    with torch.no_grad():
        block.output.dense.weight[:, :d_k] = 0.0  # head 0 writes nothing
    assert weighted_norms(block, x, ex["attention"][1])[0].abs().max() == 0


def test_query_key_products_give_the_model_attention(tokenizer):
    model = tiny_bert()
    ex = run_example(model, tokenizer, "time flies", "fruit flies")
    block = model.encoder.layer[0].attention
    q, K, products, scaled = query_key_products(
        block, ex["hidden_states"][0], head=1, query=2
    )
    assert q.shape == (4,) and K.shape == products.shape == (7, 4)
    torch.testing.assert_close(products.sum(-1), K @ q)
    torch.testing.assert_close(
        scaled.softmax(-1), ex["attention"][0, 1, 2], atol=1e-6, rtol=0
    )


def test_a_layer_0_query_knows_a_word_its_place_and_its_sentence_only(
    tokenizer,
):
    from mhabook.experiments.realheads import query_of

    model = tiny_bert()
    found = [
        query_of(model, tokenizer, text, "flies", layer)
        for layer in (0, 1)
        for text in ("time flies", "fruit flies")
    ]
    (i, q0a), (j, q0b), (_, q1a), (_, q1b) = found
    assert i == j == 2 and q0a.shape == (model.config.hidden_size,)
    assert torch.equal(q0a, q0b)  # the same word in the same place
    assert not torch.allclose(q1a, q1b)  # layer 1 has read the others
    i, moved = query_of(model, tokenizer, "the time flies", "flies", 0)
    assert i == 3 and not torch.allclose(moved, q0a)  # another place
    block = model.encoder.layer[1].attention.self
    ex = run_example(model, tokenizer, "time flies")
    torch.testing.assert_close(q1a, block.query(ex["hidden_states"][1])[0, 2])
    with pytest.raises(ValueError, match="arrow"):
        query_of(model, tokenizer, "time flies", "arrow", 0)


def test_the_evaluation_sets_use_words_the_tokenizer_keeps_whole():
    from transformers import AutoTokenizer

    from mhabook.experiments.checkpoint import bundled_path

    tokenizer = AutoTokenizer.from_pretrained(bundled_path())
    for row in load_table("flies_pairs.tsv"):
        a, target_a, b, *targets_b = row
        assert {"flies", target_a} <= set(tokenizer.tokenize(a)), row
        assert {"flies", *targets_b} <= set(tokenizer.tokenize(b)), row
        # what section 4.4 says place alone can find: B's first target
        # just before its "flies", A's target and B's second last
        words_a, words_b = a.split(), b.split()
        assert words_b[words_b.index("flies") - 1] == targets_b[0], row
        assert (words_a[-1], words_b[-1]) == (target_a, targets_b[1]), row
    rows = load_table("coreference.tsv")
    assert len(rows) % 2 == 0
    for sentence, pronoun, right, wrong in rows:
        tokens = tokenizer.tokenize(sentence)
        assert tokens.count(right) == tokens.count(wrong) == 1, sentence
        assert tokens.index(pronoun) > max(
            tokens.index(right), tokens.index(wrong)
        )
    # Twins flip the answer, so any cue of position scores exactly 50%.
    for first, second in zip(rows[::2], rows[1::2]):
        assert (first[2], first[3]) == (second[3], second[2]), first
    assert all(len(row) == 2 for row in load_table("claim1_pairs.tsv"))
    # Each half of the noun phrases holds subjects (the phrase opens the
    # sentence, so its noun stands just before the verb) and objects, so no
    # one rule of place finds every held-out noun.
    phrases = load_table("noun_phrases.tsv")
    for half in (phrases[::2], phrases[1::2]):
        opens = sum(sentence.startswith(phrase) for sentence, phrase in half)
        assert 0.4 <= opens / len(half) <= 0.6, opens


def test_a_padded_batch_gives_each_input_what_it_gets_alone(tokenizer):
    model = tiny_bert()
    texts = ["time flies", "fruit flies arrow time flies"]
    pairs = ["arrow", "time"]
    batch = run_examples(model, tokenizer, texts, pairs)
    for text, pair, ex in zip(texts, pairs, batch):
        alone = run_example(model, tokenizer, text, pair)
        assert ex["tokens"] == alone["tokens"]
        torch.testing.assert_close(ex["attention"], alone["attention"])
        torch.testing.assert_close(ex["segments"], alone["segments"])
        torch.testing.assert_close(
            ex["hidden_states"][-1], alone["hidden_states"][-1]
        )
    assert batch[0]["attention"].shape[-1] < batch[1]["attention"].shape[-1]


def test_one_segment_reads_b_as_a_and_still_marks_b(tokenizer):
    model = tiny_bert()
    texts, pairs = ["time flies"], ["fruit flies arrow"]
    (ex,) = run_examples(model, tokenizer, texts, pairs)
    (one,) = run_examples(model, tokenizer, texts, pairs, one_segment=True)
    torch.testing.assert_close(one["segments"], ex["segments"])
    assert int(one["segments"].max()) == 1  # B's tokens still marked
    assert not torch.allclose(one["attention"], ex["attention"])
    # the same as a model whose segment B embedding is segment A's
    same = copy.deepcopy(model)
    table = same.embeddings.token_type_embeddings.weight
    with torch.no_grad():
        table[1] = table[0]
    (ab,) = run_examples(same, tokenizer, texts, pairs)
    torch.testing.assert_close(one["attention"], ab["attention"])


def test_a_batch_longer_than_the_position_table_is_refused(tokenizer):
    with pytest.raises(ValueError, match="position table holds 8"):
        run_examples(
            tiny_bert(max_position_embeddings=8), tokenizer, ["time " * 9]
        )


# --- bad evaluation sets and the tests of the claims -----------------------

FLIES_ROW = [
    "time flies like an arrow",
    "arrow",
    "fruit flies like a banana",
    "fruit",
    "banana",
]


def test_a_word_the_tokenizer_splits_names_the_word_and_the_set(tokenizer):
    # the tiny vocabulary lacks "banana": it cannot be one token
    with pytest.raises(
        ValueError,
        match="does not know a word of sentence B, maybe 'banana'.*"
        "book/data/flies_pairs.tsv needs it: use words in the tokenizer's "
        "vocabulary",
    ):
        flies_examples(
            tiny_bert(), tokenizer, [FLIES_ROW], "book/data/flies_pairs.tsv"
        )
    row = ["time flies and the arrow", "it", "time", "arrow"]
    with pytest.raises(ValueError, match="maybe 'it'.*coreference.tsv needs"):
        coreference_examples(tiny_bert(), tokenizer, [row], "coreference.tsv")


def test_a_set_longer_than_the_position_table_names_the_set(tokenizer):
    row = [" ".join(["time flies"] * 5), "arrow", "fruit flies", "a", "b"]
    with pytest.raises(
        ValueError,
        match="longest input of book/data/flies_pairs.tsv is 15 tokens long, "
        "but the model's position table holds 8: shorten or split its longest",
    ):
        flies_examples(
            tiny_bert(max_position_embeddings=8),
            tokenizer,
            [row],
            "book/data/flies_pairs.tsv",
        )


def test_resample_counts_draw_n_with_replacement():
    times = resample_counts(5, 100, torch.Generator().manual_seed(0))
    assert times.shape == (100, 5)
    assert torch.all(times.sum(-1) == 5)


def test_claim1_test_counts_a_head_only_where_both_halves_show_it():
    own = pairs_of_lengths(lambda off, same: 1.0 + 2.0 * same)
    result = claim1_test(own * 4, draws=50)
    assert result["replicated"].all() and result["low"] > 2
    assert not result["reversed"].any()
    other = pairs_of_lengths(lambda off, same: 1.0 + 2.0 * ~same)
    result = claim1_test(other * 4, draws=50)
    assert not result["replicated"].any() and result["high"] < 1
    assert result["reversed"].all()  # they favour the other sentence


def test_twins_stay_together_in_the_halves():
    pronouns = list(range(8))  # four twins
    assert twin_halves(pronouns) == ([0, 1, 4, 5], [2, 3, 6, 7])


def test_the_twin_null_ignores_twins_split_one_right_one_wrong():
    generator = torch.Generator().manual_seed(0)
    split = torch.tensor([True, False] * 4)  # every twin: one right
    assert twin_null_bar(split, 200, generator) == 0.5
    right = torch.ones(16, dtype=torch.bool)  # every twin right twice
    assert twin_null_bar(right, 200, generator) < 1.0
    flips = twin_flips(2000, 16, generator)  # the swaps, drawn one by one
    swapped = (right[None] ^ flips).float().mean(-1).quantile(0.95)
    assert abs(twin_null_bar(right, 2000, generator) - swapped) <= 0.125


def test_detection_power_grows_with_the_set_and_the_head():
    assert detection_power(0.5, 16, sims=500) < 0.1
    assert detection_power(0.65, 16, sims=500) < detection_power(
        0.65, 128, sims=500
    )
    assert detection_power(0.95, 32, sims=500) > 0.9


# --- the page testing_heads: planted heads -----------------------------------
# flies_synthetic's tokens: [CLS] t flies like x [SEP] f flies like y [SEP];
# "flies" at 2 (A) and 7 (B); targets x (4) in A, f (6) and y (9) in B.
T_FLIES = 11
WORDS_FLIES = [1, 2, 3, 4, 6, 7, 8, 9]  # not [CLS] (0) or [SEP] (5, 10)
N_WORDS = len(WORDS_FLIES)


def planted_flies(heads, n_pairs=8):
    """Claim-2 pairs with (L, h) = (2, 2) heads set by hand. heads maps
    (layer, head) to a function of the pair's index giving the two rows of
    "flies" (A, B) as {key: weight}; the rest of each row is spread evenly
    over the other words, and every other head spreads evenly."""
    examples = []
    for n in range(n_pairs):
        attention = torch.full((2, 2, T_FLIES, T_FLIES), 1 / T_FLIES)
        for (layer, head), rows in heads.items():
            for query, row in zip((2, 7), rows(n)):
                rest = (1 - sum(row.values())) / (N_WORDS - len(row))
                attention[layer, head, query] = 0.0
                attention[layer, head, query, WORDS_FLIES] = rest
                for key, weight in row.items():
                    attention[layer, head, query, key] = weight
        ex = flies_synthetic(attention)
        ex["like_b"] = 8
        examples.append(ex)
    return examples


def claim_head(n):
    """Does claim 2's job: each "flies" looks at its own sentence's
    targets, and little at the other's."""
    wobble = 0.02 * (n % 3)  # pairs differ a little
    return (
        {4: 0.5 + wobble, 6: 0.02, 9: 0.02},
        {4: 0.02, 6: 0.25 + wobble, 9: 0.25},
    )


def same_rows_head(n):
    """Lifts all three targets more than claim_head does, from both "flies"
    alike: a high score, and no contrast at all."""
    row = {4: 0.3, 6: 0.3 + 0.01 * (n % 2), 9: 0.3}
    return row, dict(row)


def test_flies_measures_on_a_hand_made_pair():
    ex = planted_flies({(1, 0): claim_head}, n_pairs=1)[0]
    measures = flies_measures(ex, 1, 0).tolist()
    score, con_a, con_b, riv_a, riv_b, riv_subject, riv_first_b = measures
    rest_a = (1 - 0.54) / 5  # what "flies" in A gives a word off its targets
    rest_b = (1 - 0.52) / 5
    assert score == pytest.approx(0.25 * N_WORDS)  # B's targets, the weaker
    assert con_a == pytest.approx((0.5 - 0.02) * N_WORDS)
    assert con_b == pytest.approx((0.25 - 0.02) * N_WORDS)
    # A's rivals: its subject "t" (rest_a) and B's first target "f" (0.02)
    assert riv_a == pytest.approx((0.5 - rest_a) * N_WORDS)
    assert riv_b == pytest.approx((0.25 - rest_b) * N_WORDS)  # "like"
    assert riv_subject == pytest.approx((0.5 - rest_a) * N_WORDS)
    assert riv_first_b == pytest.approx((0.5 - 0.02) * N_WORDS)


def subject_head(n):
    """In A, "flies" looks at its subject "t" (1) more than at its target
    "x" (4), and at B's first target "f" (6) less; B's "flies" spreads."""
    return {1: 0.4, 4: 0.3, 6: 0.1}, {}


def test_the_named_rivals_are_each_compared_alone():
    ex = planted_flies({(0, 0): subject_head}, n_pairs=1)[0]
    assert [int(i) for i in ex["flies"]] == [2, 7]  # the subject is at 1
    measures = flies_measures(ex, 0, 0)
    rival_max, riv_subject, riv_first_b = measures[[3, 5, 6]].tolist()
    assert riv_subject == pytest.approx((0.3 - 0.4) * N_WORDS)
    assert riv_first_b == pytest.approx((0.3 - 0.1) * N_WORDS)
    assert rival_max == pytest.approx(riv_subject)  # the stronger: subject
    test = flies_test(planted_flies({(0, 0): subject_head}), 0, 0)
    assert test.rival_subject.high < 0 < test.rival_first_b.low
    assert test.rows.shape == (7, 3)
    assert test.rows[5, 0] == pytest.approx(test.rival_subject.mean)


def test_the_claim_head_is_chosen_and_its_pattern_replicates():
    flies = planted_flies({(1, 0): claim_head})
    test = flies_test(flies)
    assert (test.layer, test.head) == (1, 0)
    assert test.score.mean == pytest.approx(0.25 * N_WORDS, rel=0.05)
    assert test.contrast_a.low > 3 and test.contrast_b.low > 1.5
    assert all_above(test.pattern_margins, 0)
    assert test.score.count_above(1.0) == 4  # every held-out pair
    assert test.rows.shape == (7, 3)
    assert test.rows[0, 0] == pytest.approx(test.score.mean - 1)


def test_a_higher_score_without_the_contrast_does_not_replicate():
    flies = planted_flies({(1, 0): claim_head, (0, 1): same_rows_head})
    test = flies_test(flies)  # the score picks the looser head
    assert (test.layer, test.head) == (0, 1)
    assert test.score.low > 2  # every target well above an even share (1)
    assert abs(test.contrast_a.mean) < 1e-5
    assert not all_above(test.pattern_margins, 0)
    upper = flies_test(flies, first=1)  # layers 1 and up: the claim head
    assert (upper.layer, upper.head) == (1, 0)
    assert all_above(upper.pattern_margins, 0)


def test_the_verdict_flips_when_the_planted_head_is_removed():
    flies = planted_flies({(1, 0): claim_head})
    assert all_above(flies_test(flies).pattern_margins, 0)
    even = planted_flies({})  # every head spreads evenly
    test = flies_test(even)
    assert test.score.mean == pytest.approx(1.0)
    assert not all_above(test.pattern_margins, 0)


def test_a_given_head_is_tested_as_given():
    flies = planted_flies({(1, 0): claim_head, (0, 1): same_rows_head})
    test = flies_test(flies, layer=1, head=0)
    assert (test.layer, test.head) == (1, 0)
    with pytest.raises(ValueError, match="at least 4 pairs"):
        flies_test(flies[:3])


def test_claim_two_reports_layer_0_and_layers_above_it():
    flies = planted_flies({(1, 0): claim_head, (0, 1): same_rows_head})
    c2 = claim_two(flies)
    assert (c2.layer0.layer, c2.layer0.head) == (0, 1)
    assert (c2.layer0_swapped.layer, c2.layer0_swapped.head) == (0, 1)
    assert (c2.upper.layer, c2.upper.head) == (1, 0)
    assert (c2.upper_swapped.layer, c2.upper_swapped.head) == (1, 0)
    assert c2.source_targets == [4, 6, 9]
    assert c2.source_rows.shape == (2, T_FLIES)
    # layer 0's "flies" in A spreads 0.3 on x, f and y: f and y lead
    assert set(c2.source_top) <= {"x", "f", "y"}
    assert c2.n_choose == c2.n_confirm == 4
    assert c2.even_scores.shape == (2, 2)


def test_a_search_kept_to_layer_0_ignores_a_better_head_above_it():
    flies = planted_flies({(1, 0): same_rows_head, (0, 0): claim_head})
    assert (flies_test(flies).layer, flies_test(flies).head) == (1, 0)
    layer0 = flies_test(flies, stop=1)
    assert (layer0.layer, layer0.head) == (0, 0)
    assert all_above(layer0.pattern_margins, 0)


def test_estimate_gives_a_mean_an_interval_and_a_count():
    estimate = Estimate.of([1.0, 2.0, 3.0, 4.0])
    assert estimate.mean == 2.5
    assert 1.0 <= estimate.low < 2.5 < estimate.high <= 4.0
    assert estimate.count_above(2.0) == 2


def small_vocab():
    from transformers import BertTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words += ["time", "flies", "like", "an", "arrow", "the", "hawk", "dart"]
    return BertTokenizerFast(vocab={w: i for i, w in enumerate(words)})


def test_same_sense_pairs_repeat_sentence_a():
    tokenizer = small_vocab()
    model = tiny_bert(vocab_size=tokenizer.vocab_size)
    rows = [["time flies like an arrow", "arrow", "x", "y", "z"]]
    (ex,) = same_sense_examples(model, tokenizer, rows)
    assert ex["tokens"][7:12] == ex["tokens"][1:6]  # B is A again
    assert ex["flies"] == (2, 8)
    assert ex["targets"] == [5, 7, 11]  # A's target; B's subject, target
    assert ex["like_b"] == 9


def planted_pronouns(referent_head=True):
    """16 twins of "[CLS] n1 n2 it [SEP]", the referent n1 and n2 in turn.
    Head (0, 0) always looks at the referent (or, with referent_head off,
    at n1 like head (0, 1)); head (0, 1) always looks at the first noun."""
    tokens = ["[CLS]", "n1", "n2", "it", "[SEP]"]
    examples = []
    for n in range(32):
        right, wrong = (1, 2) if n % 2 == 0 else (2, 1)
        attention = torch.full((1, 2, 5, 5), 0.2)
        attention[0, :, 3] = 0.0
        attention[0, 0, 3, right if referent_head else 1] = 1.0
        attention[0, 1, 3, 1] = 1.0
        ex = synthetic(attention, tokens, [0] * 5)
        ex["pronoun"], ex["right"], ex["wrong"] = 3, right, wrong
        examples.append(ex)
    return examples


def test_a_head_that_always_finds_the_referent_is_found():
    result = pronouns_result(planted_pronouns(), draws=200, sims=500)
    assert result.tied == [(0, 0)]
    assert result.held_out[0, 0] == 1.0
    assert result.held_out[0, 1] == 0.5  # position: right once per twin
    assert result.margin > 0  # the page's claim_coref: found
    assert result.majority == 0.5
    assert result.n_choose == result.n_confirm == 16
    # a head at chance passes as often as detection_power says, which on
    # 16 twins' sentences is under the nominal 5%: the test is strict
    assert result.false_alarm == detection_power(0.5, 16, 500)
    assert result.false_alarm < 0.05


def test_a_head_that_picks_by_position_is_not_found():
    result = pronouns_result(
        planted_pronouns(referent_head=False), draws=200, sims=500
    )
    assert result.accuracy.max() == 0.5
    assert result.margin <= 0  # the verdict flips: no evidence
    assert result.near_half == 2


def test_the_power_curve_finds_the_smallest_size_with_80_percent():
    sizes, powers = power_curve(0.65, 16, sims=500)
    assert sizes == sorted(sizes) and all(n % 2 == 0 for n in sizes)
    multiples = [n for n in sizes if n % 16 == 0]
    assert multiples == list(range(16, multiples[-1] + 1, 16))
    assert powers[sizes.index(multiples[-1])] >= 0.8  # the first multiple
    assert max(powers[: sizes.index(multiples[-2]) + 1]) < 0.8  # reaching
    needed = smallest_size(sizes, powers)
    assert multiples[-2] < needed <= multiples[-1]
    assert powers[sizes.index(needed)] >= 0.8
    assert needed - 2 in sizes  # one twin fewer was tried, and falls short
    assert powers[sizes.index(needed - 2)] < 0.8
    assert smallest_size(sizes, powers, target=1.01) is None
    result = pronouns_result(planted_pronouns(), draws=200, sims=500)
    assert result.power == powers[0] < 0.2  # weak on 16 held-out sentences
    assert result.needed == needed
    assert result.detectable > 0.65  # only a much better head is found
    with pytest.raises(ValueError, match="even number"):
        power_curve(0.65, 15)


def test_claim_one_counts_replicating_heads_and_special_shares():
    own = pairs_of_lengths(lambda off, same: 1.0 + 2.0 * same)
    other = pairs_of_lengths(lambda off, same: 1.0 + 2.0 * ~same)
    for ex, twin in zip(own, other):  # head 0 keeps to its own sentence,
        ex["attention"] = torch.cat([ex["attention"], twin["attention"]], 1)
    result = claim_one(own * 4)  # head 1 to the other one
    assert result.n_heads == 2 and result.bar == 1.1
    assert result.replicated == result.reversed == result.candidates == 1
    assert result.halves_bar == correlation_bar(2)
    assert result.halves_r > 0.99  # the halves agree exactly
    assert 0 < result.cls_share < 1 and 0 < result.sep_share < 1


def test_share_on_a_token():
    tokens = ["[CLS]", "a", "[SEP]", "b", "[SEP]"]
    attention = torch.zeros(1, 2, 5, 5)
    attention[0, 0, :, [2, 4]] = 0.5  # head 0: all on the two [SEP]
    attention[0, 1, :, 1] = 1.0  # head 1: none
    ex = synthetic(attention, tokens, [0, 0, 0, 1, 1])
    torch.testing.assert_close(share_on([ex], "[SEP]"), torch.tensor([0.5]))
    torch.testing.assert_close(share_on([ex], "[CLS]"), torch.tensor([0.0]))


def test_special_shares_count_nothing_where_a_link_moves_nothing(tokenizer):
    model = tiny_bert()
    ex = run_example(model, tokenizer, "time flies", "arrow")
    by_weight, _ = special_shares(model, [ex])
    direct = ex["attention"][..., ex["special"]].sum(-1).mean((-1, -2))
    torch.testing.assert_close(by_weight, direct)
    for hidden in ex["hidden_states"]:  # the special tokens carry zeros
        hidden[0, ex["special"]] = 0.0
    with torch.no_grad():
        for block in model.encoder.layer:
            block.attention.self.value.bias.zero_()
    by_weight, by_norm = special_shares(model, [ex])
    assert torch.all(by_weight > 0)
    torch.testing.assert_close(by_norm, torch.zeros(2))


def test_claim_2_searches_from_layer_1_when_there_is_one():
    assert first_searched_layer(6) == 1
    assert first_searched_layer(1) == 0
    assert correlation_bar(101) == pytest.approx(0.196)


def test_testing_results_on_a_random_bert_find_no_claim_2():
    from transformers import AutoTokenizer

    from mhabook.experiments.checkpoint import bundled_path

    tokenizer = AutoTokenizer.from_pretrained(bundled_path())
    model = tiny_bert(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        max_position_embeddings=64,
    )
    # pytest would collect `testing_results` as a test if it were imported
    results = realheads.testing_results(model, tokenizer, draws=50, sims=200)
    assert results.n_flies == 38 and results.n_pronouns == 32
    assert results.claim2.layer0.score.low < 1.02  # near an even share
    assert not all_above(results.claim2.layer0.pattern_margins, 0)
    assert results.claim2.upper.layer >= 1
    assert results.claim1.replicated <= 1
    # claim 1 again, every token read as segment A's, on every head
    assert results.one_segment.n_heads == results.claim1.n_heads
    assert not torch.equal(
        results.one_segment.ratio_all, results.claim1.ratio_all
    )
    assert results.by_weight.shape == results.by_norm.shape == (2,)
    assert results.pronouns.n_confirm == 16
    # the place control reads the layer-0 head on the odd pairs, B = A
    same = results.same_sense
    assert (same.layer, same.head) == (0, results.claim2.layer0.head)
    assert len(same.score.values) == len(results.claim2.layer0.score.values)
    upper = results.upper_same_sense  # and the best head above layer 0
    assert (upper.layer, upper.head) == (
        results.claim2.upper.layer,
        results.claim2.upper.head,
    )
    # section 4's gallery, for its table of intervals
    from mhabook.experiments import jobs

    names = [job.name for job in results.gallery]
    assert names == [*jobs.JOBS, jobs.GRAMMAR]
    numbers = testing.page_numbers(results)
    assert numbers["clear_share"] == jobs.CLEAR
    # counted as section 4 counts: the jobs that point at words
    words = [name for name in names if name not in jobs.PARKING]
    assert len(words) == len(names) - 2  # all but [CLS] and [SEP]
    assert (numbers["gallery_n"], numbers["gallery_done"]) == (len(words), 0)
    assert numbers["c1_one_segment"] == results.one_segment.replicated
    one_layer = tiny_bert(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        max_position_embeddings=64,
        num_hidden_layers=1,
    )
    with pytest.raises(ValueError, match="has 1 layer.*at least 2 layers"):
        realheads.testing_results(one_layer, tokenizer)


# --- claim 1 without the planted head, claim 2 swapped, word sense ----------


def test_claim_one_finds_no_head_without_the_planted_one():
    even = pairs_of_lengths(lambda off, same: torch.ones(off.shape))
    result = claim_one(even * 4)  # the planted head, spread evenly
    assert result.typical == pytest.approx(1.0)
    assert result.replicated == result.reversed == result.candidates == 0
    assert result.halves_bar == float("inf")  # one head: no correlation


def test_the_swapped_search_chooses_on_the_odd_pairs():
    flies = planted_flies({(1, 0): claim_head})
    for n, ex in enumerate(flies):  # head (0, 1) looks at the targets,
        if n % 2 == 1:  # on the odd pairs only
            ex["attention"][0, 1] = planted_flies(
                {(0, 1): same_rows_head}, n_pairs=1
            )[0]["attention"][0, 1]
    assert (flies_test(flies).layer, flies_test(flies).head) == (1, 0)
    swapped = flies_test(flies, swap=True)
    assert (swapped.layer, swapped.head) == (0, 1)
    assert swapped.score.mean == pytest.approx(1.0)  # even on the even
    assert len(swapped.score.values) == 4


# --- the page's verdicts, on planted heads -----------------------------------


def planted_results(flies_heads=((0, 1),), head=claim_head):
    """A `TestingHeads` record of planted heads: claim 1's head keeps to its
    own sentence; claim 2's `head` at each of `flies_heads` (every other
    head spreads evenly); a pronoun head that finds the referent."""
    pairs = [  # (L, h) = (2, 2) as claim 2's, every head keeping to its own
        ex | {"attention": ex["attention"].expand(2, 2, -1, -1).clone()}
        for ex in pairs_of_lengths(lambda off, same: 1.0 + 2.0 * same)
    ] * 4
    flies = planted_flies({where: head for where in flies_heads})
    claim2 = claim_two(flies)
    return realheads.TestingHeads(
        n_pairs=len(pairs),
        n_flies=len(flies),
        n_pronouns=32,
        claim1=claim_one(pairs, seed=0),
        claim2=claim2,
        pronouns=pronouns_result(planted_pronouns(), draws=200, sims=200),
        by_weight=torch.tensor([0.5, 0.4]),
        by_norm=torch.tensor([0.2, 0.1]),
        # the control reads the planted pairs themselves: where place alone
        # draws the pattern, the copies pass as the pairs do
        same_sense=flies_test(flies, layer=0, head=claim2.layer0.head),
        upper_same_sense=flies_test(
            flies, layer=claim2.upper.layer, head=claim2.upper.head
        ),
        gallery=[],  # section 4's jobs: none planted here
        one_segment=claim_one(pairs, seed=0),  # planted by weight alone
    )


def outcomes(results):
    """{verdict name: (outcome, phrase)} of the page's verdicts."""
    return {
        name: decide(rule, args, phrases)
        for name, rule, args, phrases in testing.page_verdicts(results)
    }


def test_the_page_finds_the_planted_claim_heads():
    results = planted_results()
    found = outcomes(results)  # claim 2's head in layer 0
    assert found["c1_answer"] == ("all", "In every head")  # keeps to its own
    # claim_head's "flies" in A: its target over its subject and B's "f"
    assert found["rival_first_b"][0] == "more"
    assert found["pattern_halves"] == (
        "all",
        "holds whichever half chooses the head",
    )
    l0 = (results.claim2.layer0, results.claim2.layer0_swapped)
    assert realheads.head8_counts(l0)[1] == 0  # the word before wins nowhere
    assert found["c2_forward"][0] is found["swap_holds"][0] is True
    assert found["same_head"] == (True, "the same head")  # one planted
    assert found["same_sense"] == (True, "still shows the weak pattern")
    assert found["c2_upper"][0] == "same"  # layer 1 spreads evenly
    assert found["upper_same_sense"] == (
        False,
        "does not show the weak pattern",
    )
    assert found["claim_coref"][0] is True
    assert found["norm_verdict"][0] is True
    upper = outcomes(planted_results(flies_heads=((1, 0),)))
    assert upper["c2_upper"] == ("more", "is above an even share")
    assert upper["pattern_halves"][0] == "none"  # layer 0 spreads evenly
    assert upper["upper_same_sense"] == (True, "also shows the weak pattern")
    # the control reads the planted pairs themselves: the same score
    assert upper["upper_same_vs"][0] == "same"


def test_the_page_verdicts_flip_when_the_planted_heads_are_removed():
    found = outcomes(planted_results(flies_heads=()))
    assert found["c2_forward"][0] is found["swap_holds"][0] is False
    assert found["same_sense_means"] == (False, "depends on B's own words")
    assert found["pattern_halves"][0] == "none"
    assert found["c2_upper"][0] == "same"


RULE_OUTCOMES = {
    "how_many": {"none", "some", "most", "all"},
    "sign": {"positive", "negative", "neither"},
    "compare": {"more", "less", "same"},
    "above": {True, False},
    "all_above": {True, False},
}


def page_markdown():
    from pathlib import Path

    import nbformat

    path = Path(__file__).parents[2] / "book" / "testing_heads.ipynb"
    nb = nbformat.read(path, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return text, code


def test_every_verdict_has_a_short_phrase_for_each_outcome():
    for name, rule, _, phrases in testing.page_verdicts(planted_results()):
        assert set(phrases) == RULE_OUTCOMES[rule], name
        for phrase in phrases.values():
            assert len(phrase.split()) < 8, (name, phrase)


def test_the_page_states_every_glued_name_and_glues_every_stated_one():
    import re

    from chapter import glue_all_names

    results = planted_results()
    glued = set(testing.page_numbers(results))
    glued |= {v[0] for v in testing.page_verdicts(results)}
    text, code = page_markdown()
    stated = set(re.findall(r"\{glue:text\}`([a-z_0-9]+)", text))
    stated |= set(re.findall(r"\{glue:md\} ([a-z_0-9]+)", text))
    in_page = set(re.findall(r'glue\(\s*"([a-z_0-9]+)"', code))
    in_page |= glue_all_names(code)
    assert glued - stated == set(), "glued, never stated"
    assert stated - glued - in_page == set(), "stated, never glued"


def test_each_verdict_sentence_reads_with_every_phrase():
    """Render each Markdown sentence that glues a verdict with each of its
    phrases: no verdict is stated without a sentence around it, and no
    sentence glues two verdicts (a sentence stitched from verdicts)."""
    import re

    text, _ = page_markdown()
    sentences = re.split(r"(?<=[.?!])\s+|\n\|", text)
    verdicts = testing.page_verdicts(planted_results())
    names = {v[0] for v in verdicts}
    for name, _, _, phrases in verdicts:
        role = f"{{glue:text}}`{name}`"
        uses = [s for s in sentences if role in s]
        assert uses, f"{name} is never stated"
        for sentence in uses:
            others = set(re.findall(r"\{glue:text\}`([a-z_0-9]+)`", sentence))
            assert others & names == {name}, sentence
            for phrase in phrases.values():
                assert phrase in sentence.replace(role, phrase)


def test_query_key_products_refuse_a_head_that_does_not_exist(tokenizer):
    model = tiny_bert()  # 2 heads
    ex = run_example(model, tokenizer, "time flies", "fruit flies")
    block = model.encoder.layer[0].attention
    with pytest.raises(ValueError, match="head 2 does not exist.*heads 0-1"):
        query_key_products(block, ex["hidden_states"][0], head=2, query=0)
    with pytest.raises(ValueError, match="query 7 is not a position"):
        query_key_products(block, ex["hidden_states"][0], head=1, query=7)


def test_a_row_with_the_wrong_columns_names_the_file_line_and_columns(
    tmp_path, monkeypatch
):
    from mhabook.experiments import embedding

    text = "# a comment\n\ntime flies\tfruit flies\nlike an arrow\tx\textra\n"
    (tmp_path / "claim1_pairs.tsv").write_text(text, encoding="utf-8")
    monkeypatch.setattr(embedding, "DATA", tmp_path)
    monkeypatch.setattr(realheads, "DATA", tmp_path)
    with pytest.raises(
        ValueError,
        match=r"book/data/claim1_pairs.tsv, line 4, has 3 tab-separated "
        r"column\(s\) where 2 are expected \(sentence A; sentence B\)",
    ):
        load_table("claim1_pairs.tsv")
    (tmp_path / "claim1_pairs.tsv").write_text(
        text.replace("\tx\textra", "\tx")
    )
    assert load_table("claim1_pairs.tsv")[1] == ["like an arrow", "x"]


def test_a_rate_that_is_not_a_chance_is_refused():
    for rate in (80, -0.5, 1.01):
        with pytest.raises(ValueError, match=r"not a chance.*0\.8 for 80%"):
            power_curve(rate, 16, sims=10)
        with pytest.raises(ValueError, match="not a chance between 0 and 1"):
            detection_power(rate, 16, sims=10)
    assert detection_power(1.0, 16, sims=50) == 1.0  # 1 itself is a chance
    assert detection_power(0.0, 16, sims=50) == 0.0  # and so is 0


def test_an_empty_column_names_the_file_the_line_and_the_column(
    tmp_path, monkeypatch
):
    from mhabook.experiments import embedding

    monkeypatch.setattr(embedding, "DATA", tmp_path)
    monkeypatch.setattr(realheads, "DATA", tmp_path)
    text = "# A, then B\ntime flies\tfruit flies\nthe cat slept\t\n"
    (tmp_path / "claim1_pairs.tsv").write_text(text, encoding="utf-8")
    with pytest.raises(
        ValueError,
        match=r"book/data/claim1_pairs.tsv, line 3, has an empty column "
        r"\(sentence B\)",
    ):
        load_table("claim1_pairs.tsv")
    (tmp_path / "claim1_pairs.tsv").write_text(text.replace("\t\n", "\t \n"))
    with pytest.raises(ValueError, match="line 3, has an empty column"):
        load_table("claim1_pairs.tsv")  # blank is empty too
    (tmp_path / "claim1_pairs.tsv").write_text(text.replace("\t\n", "\tx\n"))
    rows = load_table("claim1_pairs.tsv")
    assert rows == [["time flies", "fruit flies"], ["the cat slept", "x"]]
    assert [row.line for row in rows] == [2, 3]


def test_a_word_missing_from_a_set_names_its_line(
    tmp_path, monkeypatch, tokenizer
):
    from mhabook.experiments import embedding

    monkeypatch.setattr(embedding, "DATA", tmp_path)
    monkeypatch.setattr(realheads, "DATA", tmp_path)
    good = "time flies fruit\tflies\tfruit\ttime\n"
    (tmp_path / "coreference.tsv").write_text(
        "# sentence, pronoun, right, wrong\n"
        + good
        + "fruit flies time\tflies\tfruit\tarrow\n"  # no "arrow" in it
    )
    rows = load_table("coreference.tsv")
    with pytest.raises(
        ValueError,
        match="'arrow' is not in sentence A.*; book/data/coreference.tsv, "
        "line 3, needs it: spell 'arrow' as sentence A has it, or put it",
    ):
        coreference_examples(
            tiny_bert(), tokenizer, rows, "book/data/coreference.tsv"
        )
    (tmp_path / "flies_pairs.tsv").write_text(
        "time flies arrow\tfruit\tfruit flies arrow\tfruit\tarrow\n"
    )
    with pytest.raises(
        ValueError,
        match="'fruit' is not in sentence A.*flies_pairs.tsv, line 1, needs"
        ".*a header line begins with #",
    ):
        flies_examples(
            tiny_bert(),
            tokenizer,
            load_table("flies_pairs.tsv"),
            "book/data/flies_pairs.tsv",
        )
    (ex,) = coreference_examples(tiny_bert(), tokenizer, [list(rows[0])])
    assert (ex["pronoun"], ex["right"]) == (2, 3)  # plain lists still work


def test_a_repeated_row_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(realheads, "DATA", tmp_path)
    row = "time flies like an arrow\tfruit flies like a banana\n"
    (tmp_path / "claim1_pairs.tsv").write_text("# pairs\n" + row + row)
    with pytest.raises(ValueError, match="line 3, repeats line 2"):
        load_table("claim1_pairs.tsv")
    capital = "Time flies like an arrow\tapples fall\n"  # line 2's A
    (tmp_path / "claim1_pairs.tsv").write_text("# pairs\n" + row + capital)
    with pytest.raises(ValueError, match="line 3, repeats a sentence of li"):
        load_table("claim1_pairs.tsv")


def test_stray_spaces_are_dropped_and_a_twin_must_differ(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(realheads, "DATA", tmp_path)
    row = "time flies like an arrow \tfruit flies like a banana\n"
    (tmp_path / "claim1_pairs.tsv").write_text(row)  # a spreadsheet's space
    assert load_table("claim1_pairs.tsv")[0][0] == "time flies like an arrow"
    twin = "the dog chased the cat because it was hungry\tit\tdog\tcat\n"
    flipped = "the dog chased the cat because it was hungry\tit\tcat\tdog\n"
    (tmp_path / "coreference.tsv").write_text(twin + flipped)
    with pytest.raises(ValueError, match="line 2, repeats the sentence of"):
        load_table("coreference.tsv")


def test_a_comment_after_a_row_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(realheads, "DATA", tmp_path)
    row = "time flies like an arrow\tfruit flies like a banana  # mine\n"
    (tmp_path / "claim1_pairs.tsv").write_text("# a comment line\n" + row)
    with pytest.raises(ValueError, match="line 2, holds a comment after"):
        load_table("claim1_pairs.tsv")


def test_a_header_with_a_name_of_its_own_is_still_a_header(
    tmp_path, monkeypatch
):
    from mhabook.experiments import embedding

    monkeypatch.setattr(realheads, "DATA", tmp_path)
    monkeypatch.setattr(embedding, "DATA", tmp_path)
    header = "original sentence\tparaphrase\tpartner\n"  # two of three
    row = "a cat sat\tthe cat sat down\ta dog ran\n"
    (tmp_path / "paraphrases.tsv").write_text(header + row)
    with pytest.raises(ValueError, match="line 1, looks like a header"):
        load_table("paraphrases.tsv")
    (tmp_path / "paraphrases.tsv").write_text(row + "a\tparaphrase\tpartner\n")
    assert len(load_table("paraphrases.tsv")) == 2  # below the rows: a row


def test_a_pronoun_that_occurs_twice_is_refused():
    from transformers import AutoTokenizer

    from mhabook.experiments.checkpoint import bundled_path
    from tiny import tiny_bert

    tokenizer = AutoTokenizer.from_pretrained(bundled_path())

    row = ["it is late so the cat ran because it was wet", "it", "cat", "so"]
    with pytest.raises(ValueError, match="'it' occurs 2 times.*write the"):
        realheads.coreference_examples(
            tiny_bert(vocab_size=len(tokenizer)), tokenizer, [row], "c.tsv"
        )
    row = ["the dog saw the cat and the dog ran because it hid", "it"]
    row += ["dog", "cat"]  # which "dog" the pronoun follows is not read
    with pytest.raises(ValueError, match="candidate 'dog' occurs 2 times"):
        realheads.coreference_examples(
            tiny_bert(vocab_size=len(tokenizer)), tokenizer, [row], "c.tsv"
        )


def test_testing_results_refuse_no_draws_or_sims():
    with pytest.raises(ValueError, match="sims = 0: each null and each"):
        realheads.testing_results(None, None, sims=0)


def test_coreference_rows_must_pair_into_twins(tmp_path, monkeypatch):
    monkeypatch.setattr(realheads, "DATA", tmp_path)
    one = "the cup hit the jar because it was hard\tit\tcup\tjar\n"
    two = "the cup hit the jar because it was soft\tit\tjar\tcup\n"
    (tmp_path / "coreference.tsv").write_text(one + two)
    rows = load_table("coreference.tsv")
    realheads.check_twins(rows, "coreference.tsv")  # a twin: no error
    with pytest.raises(ValueError, match="has 1 sentences.*missing twin"):
        realheads.check_twins(rows[:1], "coreference.tsv")
    same = one.replace("\tjar\n", "\tcup\n") + two.replace(
        "\tjar\t", "\tcup\t"
    )
    (tmp_path / "coreference.tsv").write_text(same)
    with pytest.raises(ValueError, match="line 1, names 'cup' as both cand"):
        realheads.check_twins(load_table("coreference.tsv"), "coreference.tsv")
    unswapped = two.replace("jar\tcup", "cup\tjar")
    (tmp_path / "coreference.tsv").write_text(one + unswapped)
    with pytest.raises(ValueError, match="lines 1 and 2, are not twins"):
        realheads.check_twins(load_table("coreference.tsv"), "coreference.tsv")


def test_a_capitalised_pronoun_is_named_before_the_twins_are_checked(
    tmp_path, monkeypatch, tokenizer
):
    monkeypatch.setattr(realheads, "DATA", tmp_path)
    (tmp_path / "claim1_pairs.tsv").write_text("time flies\tfruit flies\n")
    (tmp_path / "flies_pairs.tsv").write_text("# no rows: not read here\n")
    monkeypatch.setattr(realheads, "flies_examples", lambda *args: [])
    one = "time flies fruit\tflies\tfruit\ttime\n"
    two = "fruit flies time\tFlies\ttime\tfruit\n"  # not "flies": no twin
    (tmp_path / "coreference.tsv").write_text(one + two)
    with pytest.raises(ValueError, match="lower-cases 'Flies'.*write it 'fl"):
        realheads.load_sets(tiny_bert(), tokenizer)


def test_the_recipes_example_reads_flies_in_a_on_the_source_pair():
    numbers = testing.page_numbers(planted_results())  # claim_head at (0, 1)
    assert numbers["ex_words"] == N_WORDS
    assert numbers["ex_share"] == pytest.approx(0.5)  # A's target, pair 0
    assert numbers["ex_lift"] == pytest.approx(0.5 * N_WORDS)
    rest = (1 - 0.54) / (N_WORDS - 3)  # the word before: an even rest
    assert numbers["ex_before"] == pytest.approx(rest)
    tokens = planted_flies({})[0]["tokens"]
    assert numbers["ex_before_word"] == tokens[1]  # "flies" in A is at 2
    assert numbers["ex_target"] == tokens[4]


def test_a_layer_the_model_lacks_and_a_sentence_that_is_not_text():
    model = tiny_bert()
    num_layers = len(model.encoder.layer)
    assert (
        realheads.attention_block(model, 0) is model.encoder.layer[0].attention
    )
    for layer in (num_layers, -1, 1.0, True):
        with pytest.raises(ValueError, match=f"0 to {num_layers - 1}"):
            realheads.attention_block(model, layer)
    with pytest.raises(TypeError, match="give each sentence as a string"):
        realheads.run_example(model, tiny_tokenizer(), "time flies", 3)


def test_the_recipes_subject_weight_is_a_share_of_the_weight_on_words():
    import dataclasses

    results = planted_results()
    rows = results.claim2.source_rows.clone()
    rows[0] = rows[0] / 2  # "flies" in A: half its weight moves to [CLS]
    rows[0, 0] += 0.5
    claim2 = dataclasses.replace(results.claim2, source_rows=rows)
    moved = testing.page_numbers(dataclasses.replace(results, claim2=claim2))
    before = testing.page_numbers(results)
    # the subject's share of the words' weight is unchanged, as the target's
    assert moved["ex_share"] == pytest.approx(before["ex_share"])
    assert moved["ex_before"] == pytest.approx(before["ex_before"])
    assert rows[0, 1] == pytest.approx(before["ex_before"] / 2)  # raw: half


def test_a_model_with_one_segment_embedding_is_refused_a_pair():
    from mhabook.experiments.realheads import encode_pair

    model = tiny_bert(type_vocab_size=1)
    with pytest.raises(ValueError, match="type_vocab_size=2"):
        encode_pair(tiny_tokenizer(), model, "time flies", "time flies")


def test_a_model_of_no_layers_is_refused_before_it_runs(tokenizer):
    model = tiny_bert(num_hidden_layers=0)
    inputs = tokenizer("time flies", return_tensors="pt")
    with pytest.raises(ValueError, match="0 layers.*1 layer or more"):
        model_attentions(model, inputs)


def test_a_header_line_or_a_sentence_read_twice_is_refused(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(realheads, "DATA", tmp_path)
    row = "time flies like an arrow\tfruit flies like a banana\n"
    (tmp_path / "claim1_pairs.tsv").write_text(
        "Sentence A\tsentence B\n" + row
    )
    with pytest.raises(ValueError, match="line 1, looks like a header"):
        load_table("claim1_pairs.tsv")
    swapped = "fruit flies like a banana\tthe cat slept\n"
    (tmp_path / "claim1_pairs.tsv").write_text(row + swapped)
    with pytest.raises(
        ValueError, match="line 2, repeats a sentence of line 1"
    ):
        load_table("claim1_pairs.tsv")
    (tmp_path / "claim1_pairs.tsv").write_text(row)
    assert load_table("claim1_pairs.tsv") == [row.strip().split("\t")]
    same = "the soup is cold\tthe soup is cold\tthe bread is warm\n"
    (tmp_path / "paraphrases.tsv").write_text("  # indented comment\n" + same)
    with pytest.raises(ValueError, match="line 2, holds one sentence twice"):
        load_table("paraphrases.tsv")


def test_a_flies_pair_must_be_built_like_the_sources():
    from mhabook.experiments.realheads import check_template

    source = ["time flies like an arrow", "arrow"]
    source += ["fruit flies like a banana", "fruit", "banana"]
    check_template(source)  # nothing to say
    check_template(["news flies like fire", "fire", *source[2:]])  # no "a"
    check_template(["Time Flies like an Arrow", "arrow", *source[2:]])  # case
    far = ["time flies fast like an arrow", "arrow", *source[2:]]
    with pytest.raises(ValueError, match="not built like the source's pair"):
        check_template(far, "flies_pairs.tsv")
    before = ["the arrow flies like an arrow", "arrow", *source[2:]]
    with pytest.raises(ValueError, match="not built like the source's pair"):
        check_template(before)  # "arrow" is also the word before "flies"
    first = ["flies like an arrow", "arrow", *source[2:]]
    with pytest.raises(ValueError, match="a word before 'flies' in A"):
        check_template(first)  # no word before "flies": no rival to name
    apart = [*source[:2], "fruit the flies like a banana", "fruit", "banana"]
    with pytest.raises(ValueError, match="flies_pairs.tsv is not built"):
        check_template(apart, "flies_pairs.tsv")


def test_a_set_cut_below_eight_rows_is_refused(monkeypatch):
    rows = [("time flies", "fruit flies")] * 3
    set_to = functools.partial(monkeypatch.setattr, realheads)
    set_to("load_table", lambda name: rows)
    set_to("run_examples", lambda *args: [{}] * 3)
    set_to("flies_examples", lambda *args: [{}] * 38)
    set_to("coreference_examples", lambda *args: [{}] * 32)
    set_to("check_twins", lambda *args: None)
    with pytest.raises(ValueError, match=r"pairs.tsv has 3 rows.*at least 8"):
        realheads.load_sets(None, None)
