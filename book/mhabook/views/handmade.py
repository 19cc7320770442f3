"""Hand-made heads for the labs: weights chosen, not learned."""

import torch

from ..layers.many_heads import pointer_head


def pronoun_heads(tokens, subject, pronoun, verbs, strength=4.0):
    """Four hand-made heads for a sentence with a pronoun (the lab).

    Returns (names, weights) with weights of shape (4, T, T):
    previous token; every token to the subject; every token to its nearest
    verb; and coreference, where only the pronoun looks (at the subject)
    while every other token spreads its attention evenly.
    """
    where = {}
    for i, token in enumerate(tokens):
        where.setdefault(token, i)
    missing = [w for w in (subject, pronoun, *verbs) if w not in where]
    if missing:
        raise ValueError(f"{missing} not among the tokens {list(tokens)}")
    verb_at = [where[v] for v in verbs]
    coreference = [None] * len(tokens)
    coreference[where[pronoun]] = where[subject]
    heads = {
        "previous token": [max(i - 1, 0) for i in range(len(tokens))],
        "subject": [where[subject]] * len(tokens),
        "verb": [
            min(verb_at, key=lambda v: (abs(v - i), v))
            for i in range(len(tokens))
        ],
        "coreference": coreference,
    }
    weights = torch.stack([pointer_head(t, strength) for t in heads.values()])
    return list(heads), weights  # (4, T, T)
