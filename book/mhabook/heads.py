"""Hand-built attention heads whose weights are chosen, not learned."""

import math

import torch

from .layers import scaled_dot_product_attention


def pointer_head(targets, strength=4.0):
    """(T, T) weights of a head in which query i looks at token targets[i]
    (None: nowhere in particular, i.e. uniformly). Key j is e_j; query i is
    strength * sqrt(T) * e_targets[i], so its scaled score is `strength` on
    the target and 0 on every other key."""
    num_tokens = len(targets)
    K = torch.eye(num_tokens)  # (T, T): key j is e_j
    Q = torch.zeros(num_tokens, num_tokens)  # (T, T)
    for i, target in enumerate(targets):
        if target is not None and not 0 <= target < num_tokens:
            raise ValueError(
                f"target {target} is not a token position; use 0 to "
                f"{num_tokens - 1} or None"
            )
        if target is not None:
            Q[i, target] = strength * math.sqrt(num_tokens)
    _, weights = scaled_dot_product_attention(Q, K, K)
    return weights


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
