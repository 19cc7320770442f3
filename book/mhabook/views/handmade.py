"""Hand-made heads for the labs: weights chosen, not learned."""

import torch

from ..experiments.inputs import word_position
from ..layers.many_heads import pointer_head


def pronoun_heads(
    tokens, subject, pronoun, verbs, strength=4.0, referent=None
):
    """Four hand-made heads for a sentence with a pronoun (the lab).

    Returns (names, weights) with weights of shape (4, T, T):
    previous token; every token to the subject; every token to its nearest
    verb (any occurrence of one of `verbs`); and coreference, where only
    the pronoun looks (at the first occurrence of `referent`, the word it
    refers to; by default the subject) while every other token spreads its
    attention evenly. A pronoun that occurs twice is refused.
    """
    if isinstance(tokens, str):
        raise TypeError(
            f"pronoun_heads takes the sentence's words, a list, not the "
            f"sentence itself: pass {tokens!r}.split()"
        )
    tokens = list(tokens)
    if isinstance(verbs, str):  # one verb
        verbs = (verbs,)
    if not tokens or not verbs:
        raise ValueError(
            "give pronoun_heads a sentence's words (sentence.split()) and at "
            "least one verb, such as verbs=('sat', 'was')"
        )
    if len(set(verbs)) != len(verbs):
        raise ValueError(
            f"verbs {tuple(verbs)} names a verb twice: give each verb once"
        )
    referent = subject if referent is None else referent
    why = "pronoun_heads looks for each word as it is written."
    named = [("subject", subject), ("pronoun", pronoun)]
    for name, word in (
        named + [("referent", referent)] + [("verbs", verb) for verb in verbs]
    ):
        word_position(tokens, word, " ".join(tokens), name=name, why=why)
    at = [i for i, token in enumerate(tokens) if token == pronoun]
    if len(at) > 1:
        raise ValueError(
            f"the pronoun {pronoun!r} occurs {len(at)} times (positions "
            f"{at}), but the coreference head lets one pronoun look at its "
            f"referent: use a sentence with {pronoun!r} once"
        )
    where = {}  # each word's first position
    for i, token in enumerate(tokens):
        where.setdefault(token, i)
    verb_at = [i for i, token in enumerate(tokens) if token in verbs]
    coreference = [None] * len(tokens)
    coreference[where[pronoun]] = where[referent]
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
