"""Section 4's helpers on a tiny random BERT: inputs, weights, measures."""

import pytest
import torch

from mhabook.experiments.realheads import (
    claim1_test,
    claim2_null,
    coreference_examples,
    detection_power,
    encode_pair,
    flies_examples,
    lifts,
    load_table,
    model_attentions,
    offset_sums,
    own_sentence_ratio,
    position,
    query_key_products,
    referent_accuracy,
    resample_counts,
    run_example,
    run_examples,
    segments_from_sep,
    twin_flips,
    twin_halves,
    twin_null_bar,
    weighted_norms,
    within_sentence_share,
    within_shares,
    word_lifts,
)
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
    with pytest.raises(ValueError, match="not a token of sentence B"):
        position(pair, "arrow", 1)


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
    words = torch.tensor([1, 3, 4, 6, 8, 9])
    ex["pools"] = [words[:3], words[3:]]
    return ex


def test_lifts_and_the_random_target_null():
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
    torch.testing.assert_close(
        lifts(ex, ex["targets"])[:, 0, 1], torch.tensor([11.0, 5.5, 5.5])
    )
    null = claim2_null([ex], 200, torch.Generator().manual_seed(0))
    assert null.shape == (200, 1, 2)
    torch.testing.assert_close(null[:, 0, 0], torch.ones(200))
    # random targets rarely hit all three: the smallest lift is 0 mostly
    assert (null[:, 0, 1] == 0).float().mean() > 0.5
    assert null[:, 0, 1].max() <= 5.5


def test_word_lifts_leave_the_weight_on_special_tokens_out():
    T = 11
    attention = torch.zeros(1, 1, T, T)
    attention[0, 0, :, 0] = 0.5  # half of every row on [CLS]
    words = [1, 2, 3, 4, 6, 7, 8, 9]
    attention[0, 0][:, words] = 0.5 / len(words)  # the rest spread evenly
    ex = flies_synthetic(attention)
    assert (lifts(ex, ex["targets"]) < 1).all()  # below an even share
    torch.testing.assert_close(  # an even share of the words
        word_lifts(ex, ex["targets"])[:, 0, 0], torch.ones(3)
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


def test_the_evaluation_sets_use_words_the_tokenizer_keeps_whole():
    from transformers import AutoTokenizer

    from mhabook.experiments.checkpoint import bundled_path

    tokenizer = AutoTokenizer.from_pretrained(bundled_path())
    for row in load_table("flies_pairs.tsv"):
        a, target_a, b, *targets_b = row
        assert {"flies", target_a} <= set(tokenizer.tokenize(a)), row
        assert {"flies", *targets_b} <= set(tokenizer.tokenize(b)), row
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
        match="splits 'banana'.*book/data/flies_pairs.tsv needs as one "
        "token: use words the tokenizer keeps whole \\(edit the set\\), or "
        "a checkpoint whose vocabulary keeps it whole",
    ):
        flies_examples(
            tiny_bert(), tokenizer, [FLIES_ROW], "book/data/flies_pairs.tsv"
        )
    row = ["time flies and the arrow", "it", "time", "arrow"]
    with pytest.raises(ValueError, match="splits 'it'.*coreference.tsv"):
        coreference_examples(tiny_bert(), tokenizer, [row], "coreference.tsv")


def test_a_set_longer_than_the_position_table_names_the_set(tokenizer):
    row = [" ".join(["time flies"] * 5), "arrow", "fruit flies", "a", "b"]
    with pytest.raises(
        ValueError,
        match="longest input of book/data/flies_pairs.tsv is 15 tokens long, "
        "but the model's position table holds 8",
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
