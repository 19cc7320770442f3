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


def save_random_bert(
    folder, layers=3, heads=4, hidden=64, seed=0, **overrides
):
    """Save a randomly initialised BERT with the bundled tokenizer in `folder`.

    Its shape is unlike the bundled model's, so a page that hard-codes
    6 layers, 12 heads or width 384 fails on it. Returns the folder.
    """
    from pathlib import Path

    from transformers import AutoTokenizer

    from mhabook.experiments.checkpoint import bundled_path

    folder = Path(folder)
    tokenizer = AutoTokenizer.from_pretrained(bundled_path())
    torch.manual_seed(seed)
    settings = dict(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        max_position_embeddings=128,
    )
    model = BertModel(BertConfig(**{**settings, **overrides}))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


if __name__ == "__main__":  # tests/harness/tiny.py FOLDER: a random BERT
    import sys

    print(save_random_bert(sys.argv[1]))
