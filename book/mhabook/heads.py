"""Hand-built attention heads whose weights are chosen, not learned."""

import math

import torch

from .layers import scaled_dot_product_attention


def pointer_head(targets, strength=4.0):
    """Return the (T, T) weights of a head in which query i looks at token
    targets[i] (None: look nowhere in particular, i.e. uniformly).

    Key j is the one-hot vector e_j. The query of token i is
    strength * sqrt(T) * e_targets[i], so its scaled score is `strength` on
    the target and 0 on every other key.
    """
    num_tokens = len(targets)
    for target in targets:
        if target is not None and not 0 <= target < num_tokens:
            raise ValueError(
                f"target {target} is not a token position; use 0 to "
                f"{num_tokens - 1} or None"
            )
    K = torch.eye(num_tokens)  # (T, T): key j is e_j
    Q = torch.zeros(num_tokens, num_tokens)  # (T, T)
    for i, target in enumerate(targets):
        if target is not None:
            Q[i, target] = strength * math.sqrt(num_tokens)
    _, weights = scaled_dot_product_attention(Q, K, K)
    return weights
