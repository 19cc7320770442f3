"""Sentence embeddings of a loaded BERT, and how far a change moves them.

all-MiniLM-L6-v2 is used as a sentence encoder: the mean of its last hidden
states over a sentence's tokens (padding left out). The same pooling serves
bert-base-uncased. Sections that change the model (removing heads, sharing
keys and values) compare its embeddings with the unchanged model's.
"""

import re
import unicodedata
from pathlib import Path

import torch
import torch.nn.functional as F

DATA = Path(__file__).resolve().parents[2] / "data"


# Tokens a tokenizer reads as markers even when typed in a sentence.
SPECIAL = re.compile(r"\[(CLS|SEP|MASK|PAD|UNK)\]", re.IGNORECASE)


def same_text(text):
    """`text` as an uncased tokenizer reads it: lower case, accents and
    format characters (a zero-width space) dropped, one space between
    words. Two lines with the same `same_text` are one sentence."""
    letters = unicodedata.normalize("NFD", text.casefold())
    letters = "".join(  # accents and invisible format characters dropped
        c
        for c in letters
        if not unicodedata.combining(c) and unicodedata.category(c) != "Cf"
    )
    return " ".join(letters.split())


def same_words(text):
    """The words of `text` as an uncased tokenizer reads them
    (`same_text`), without punctuation."""
    return tuple(re.findall(r"\w+", same_text(text)))


def load_lines(name, repeats=False, table=False):
    """The non-empty, non-comment lines of book/data/<name> (a byte-order
    mark, as some editors save one, is dropped, wherever it stands); a
    ValueError if none, if a line repeats an earlier one (unless
    `repeats`): it would count twice, or if a line holds a tab (unless
    `table`): it is a row of a table, not one sentence."""
    path = DATA / name
    if not path.is_file():
        there = ", ".join(
            sorted(p.name for p in DATA.glob("*") if p.is_file())
        )
        raise FileNotFoundError(
            f"no file {name!r} in {DATA}: use one of {there}, or put yours "
            f"there"
        )
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as error:
        line = path.read_bytes()[: error.start].count(b"\n") + 1
        raise ValueError(
            f"book/data/{name}, line {line}, is not UTF-8 text: save the "
            f"file as UTF-8 (an editor's 'Save with encoding' menu)"
        ) from None
    kept, seen = [], {}
    for number, line in enumerate(lines, 1):
        line = line.replace("\ufeff", "")  # a mark where two files joined
        text = line.strip()
        if not text or text[0] == "#":  # indented or not, a comment
            if kept and text:  # a "#" among the rows, not in the header
                print(
                    f"Note: book/data/{name}, line {number}: # line, skipped"
                )
            continue
        if "\t" in text and not table:
            raise ValueError(
                f"book/data/{name}, line {number}, holds tab-separated "
                f"columns, and load_lines reads one sentence a line: use "
                f"load_table for a table"
            )
        special = SPECIAL.search(text)
        if special:
            raise ValueError(
                f"book/data/{name}, line {number}, holds {special[0]}, which "
                f"the tokenizer reads as its own marker, not as a word: "
                f"write the sentence's words alone"
            )
        key = same_words(text)
        if key in seen and not repeats:
            raise ValueError(
                f"book/data/{name}, line {number}, repeats line "
                f"{seen[key]} (capitals, accents, spaces and punctuation "
                f"aside): it would count twice. Delete one"
            )
        seen.setdefault(key, number)
        kept.append(line)
    if not kept:
        raise ValueError(
            f"book/data/{name} has no lines but blank ones and comments: "
            f"put its rows back (git checkout book/data/{name})"
        )
    return kept


def check_lengths(model, tokenizer, sentences):
    """Refuse a sentence longer than the model's positions, naming it."""
    most = model.config.max_position_embeddings
    ids = tokenizer(list(sentences), verbose=False)["input_ids"]
    for number, (sentence, row) in enumerate(zip(sentences, ids), 1):
        if len(row) > most:
            raise ValueError(
                f"sentence {number} ({sentence[:40]!r}...) is {len(row)} "
                f"tokens, more than the model's {most} positions: shorten "
                f"or split it"
            )


def sentence_embeddings(model, tokenizer, sentences, batch_size=64):
    """(N, d): each sentence's mean-pooled last hidden state."""
    if isinstance(sentences, str):
        raise TypeError(
            "sentences is one string: pass a list of sentences, [sentence]"
        )
    if not sentences:
        raise ValueError("no sentences to embed: pass a non-empty list")
    check_lengths(model, tokenizer, sentences)
    pooled = []
    with torch.inference_mode():
        for start in range(0, len(sentences), batch_size):
            batch = tokenizer(
                list(sentences[start : start + batch_size]),
                padding=True,
                return_tensors="pt",
            )
            hidden = model(**batch).last_hidden_state  # (B, T, d)
            mask = batch["attention_mask"].unsqueeze(-1)  # (B, T, 1)
            mask = mask.to(hidden.dtype)
            pooled.append((hidden * mask).sum(1) / mask.sum(1))  # (B, d)
    return torch.cat(pooled)  # (N, d)


def fidelity(reference, changed):
    """Mean cosine similarity of each sentence's changed embedding to its
    reference embedding: 1 means the change moved nothing."""
    if reference.shape != changed.shape:
        raise ValueError(
            f"embeddings of different shapes, {tuple(reference.shape)} and "
            f"{tuple(changed.shape)}: embed the same sentences with both "
            f"models"
        )
    return F.cosine_similarity(reference, changed, dim=-1).mean().item()
