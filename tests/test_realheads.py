"""Section 4's helpers on a tiny random BERT: inputs, weights, measures."""

import pytest
import torch

from mhabook.realheads import (
    encode_pair,
    model_attentions,
    segments_from_sep,
    within_sentence_share,
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
