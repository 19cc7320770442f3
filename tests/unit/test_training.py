"""The tiny two-job task of section 2 and the model trained on it."""

import pytest
import torch

from mhabook.experiments.training import (
    IGNORE,
    TinyAttentionModel,
    TinyConfig,
    job_scores,
    loss_and_accuracy,
    make_batch,
    token_names,
    train,
)


def batch(config=None, size=64, seed=0):
    config = config or TinyConfig()
    return make_batch(config, size, torch.Generator().manual_seed(seed))


def test_every_letter_occurs_twice_and_partners_point_at_each_other():
    config = TinyConfig()
    ids, previous, partner, digit = batch(config)
    letters = ids // config.num_digits
    positions = torch.arange(config.num_tokens).expand_as(partner)
    assert torch.equal(letters.gather(1, partner), letters)
    assert (partner != positions).all()
    assert torch.equal(partner.gather(1, partner), positions)
    assert torch.equal(digit, (ids % config.num_digits).gather(1, partner))
    assert (previous[:, 0] == IGNORE).all()
    assert torch.equal(previous[:, 1:], letters[:, :-1])


def test_the_same_seed_gives_the_same_batch():
    for a, b in zip(batch(seed=3), batch(seed=3)):
        assert torch.equal(a, b)


def test_token_names():
    assert token_names(TinyConfig(), torch.tensor([0, 11])) == ["a0", "c3"]


def test_an_odd_length_is_refused_with_the_rule():
    with pytest.raises(
        ValueError,
        match=r"must be even and at most 2 \* num_letters = 16, got 7",
    ):
        batch(TinyConfig(num_tokens=7))


def test_job_scores_find_a_head_built_for_each_job():
    config = TinyConfig()
    _, _, partner, _ = batch(config)
    B, T = partner.shape
    weights = torch.zeros(B, 2, T, T)
    weights[:, 0, torch.arange(1, T), torch.arange(T - 1)] = 1.0  # previous
    weights[:, 1].scatter_(-1, partner[..., None], 1.0)  # matching
    scores = job_scores(weights, partner)
    assert scores[0, 0] == 1.0 and scores[1, 1] == 1.0
    assert scores[1, 0] < 0.5 and scores[0, 1] < 0.5


def test_training_is_deterministic_and_learns():
    config = TinyConfig()
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = TinyAttentionModel(config)
        runs.append((model, train(model, config, steps=60)))
    assert runs[0][1] == runs[1][1]
    losses = runs[0][1]
    assert losses[-1] < 0.7 * losses[0]
    _, accuracy = loss_and_accuracy(runs[0][0], batch(config, 256, seed=9))
    assert len(accuracy) == 2


def test_training_restores_the_thread_count():
    threads = torch.get_num_threads()
    config = TinyConfig()
    train(TinyAttentionModel(config), config, steps=1)
    assert torch.get_num_threads() == threads
