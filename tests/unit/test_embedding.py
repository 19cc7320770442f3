import pytest
import torch

from mhabook.experiments.embedding import (
    fidelity,
    load_lines,
    sentence_embeddings,
)
from tiny import tiny_bert, tiny_tokenizer


def test_the_sentence_set_has_150_distinct_sentences():
    sentences = load_lines("sentences.txt")
    assert len(sentences) == len(set(sentences)) == 150


def test_padding_does_not_change_a_sentence_embedding():
    tokenizer, model = tiny_tokenizer(), tiny_bert()
    short, long = "time flies", "fruit flies time arrow fruit"
    alone = sentence_embeddings(model, tokenizer, [short])
    padded = sentence_embeddings(model, tokenizer, [short, long])
    assert torch.allclose(alone[0], padded[0], atol=1e-5)
    assert not torch.allclose(padded[0], padded[1])


def test_fidelity_is_one_for_the_same_embeddings_and_less_otherwise():
    reference = torch.randn(5, 8)
    assert fidelity(reference, reference) == pytest.approx(1.0)
    assert fidelity(reference, reference * 3) == pytest.approx(1.0)
    assert fidelity(reference, torch.randn(5, 8)) < 0.9
    with pytest.raises(ValueError, match="same sentences"):
        fidelity(reference, torch.randn(4, 8))


def test_a_sentence_longer_than_the_positions_is_refused_by_number():
    tokenizer, model = tiny_tokenizer(), tiny_bert()
    most = model.config.max_position_embeddings
    long = " ".join(["time"] * most)  # + [CLS] and [SEP]: too long
    sentence_embeddings(model, tokenizer, ["time flies"])
    with pytest.raises(ValueError, match=r"sentence 2 .* positions"):
        sentence_embeddings(model, tokenizer, ["time flies", long])
