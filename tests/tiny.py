"""A tiny random BERT and its tokenizer, for tests that download nothing."""

import torch
from transformers import BertConfig, BertModel, BertTokenizerFast

WORDS = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "time",
    "flies",
    "fruit",
    "arrow",
]


def tiny_tokenizer():
    return BertTokenizerFast(vocab={w: i for i, w in enumerate(WORDS)})


def tiny_bert(seed=0, **overrides):
    """A 2-layer, 2-head BERT of width 8 with random weights."""
    torch.manual_seed(seed)
    settings = dict(
        vocab_size=len(WORDS),
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
        attn_implementation="eager",
    )
    return BertModel(BertConfig(**{**settings, **overrides})).eval()
