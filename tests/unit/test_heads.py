"""Hand-built heads point where they are told to."""

import pytest
import torch

from mhabook import pointer_head


def test_each_query_points_at_its_target():
    weights = pointer_head([2, 0, 1])
    assert weights.argmax(-1).tolist() == [2, 0, 1]
    torch.testing.assert_close(weights.sum(-1), torch.ones(3))


def test_strength_sets_the_weight_on_the_target():
    weak, strong = pointer_head([1, 1], 0.5), pointer_head([1, 1], 6.0)
    assert weak[0, 1] < 0.75 < 0.99 < strong[0, 1]


def test_no_target_means_uniform():
    weights = pointer_head([None, 0, None, 1])
    torch.testing.assert_close(weights[0], torch.full((4,), 0.25))


def test_bad_target_is_refused():
    with pytest.raises(ValueError, match="use 0 to 2"):
        pointer_head([0, 3, 1])


def test_a_pronoun_that_occurs_twice_is_refused_naming_the_fix():
    from mhabook import pronoun_heads

    tokens = "the cat sat because it was tired and it slept".split()
    with pytest.raises(
        ValueError, match=r"occurs 2 times \(positions \[4, 8\]"
    ):
        pronoun_heads(tokens, "cat", "it", ("sat", "was"))


def test_the_verb_head_looks_at_the_nearest_occurrence_of_a_verb():
    from mhabook import pronoun_heads

    tokens = "the cat sat and it sat down".split()
    names, weights = pronoun_heads(tokens, "cat", "it", "sat")
    verb = weights[names.index("verb")].argmax(-1).tolist()
    assert verb == [2, 2, 2, 2, 5, 5, 5]  # the second "sat" for its words
    coreference = weights[names.index("coreference")]
    assert coreference[4].argmax() == 1  # "it" looks at "cat"


def test_the_coreference_head_looks_at_a_referent_that_is_not_the_subject():
    from mhabook import pronoun_heads

    tokens = "the dog chased the ball because it was fun".split()
    names, weights = pronoun_heads(
        tokens, "dog", "it", ("chased", "was"), referent="ball"
    )
    assert weights[names.index("coreference")][6].argmax() == 4  # "ball"
    assert weights[names.index("subject")][6].argmax() == 1  # "dog"
    with pytest.raises(ValueError, match="referent"):
        pronoun_heads(tokens, "dog", "it", "was", referent="cat")
