"""The tiny two-job task of section 2, the model trained on it, and the
record of several runs side by side."""

import dataclasses

import pytest
import torch

from mhabook.experiments.training import (
    IGNORE,
    HeadsLearn,
    TinyAttentionModel,
    TinyConfig,
    heads_learn,
    job_scores,
    loss_and_accuracy,
    make_batch,
    previous_only_accuracy,
    token_names,
    train,
    train_runs,
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


def test_one_head_is_refused_with_what_to_set():
    with pytest.raises(ValueError, match="num_attention_heads=1: set it to 2"):
        heads_learn(TinyConfig(num_attention_heads=1), seeds=[0], steps=1)


@pytest.mark.parametrize("steps", [0, 2.5])
def test_no_steps_or_a_fraction_of_one_is_refused(steps):
    with pytest.raises(ValueError, match="whole number of steps of 1"):
        heads_learn(TinyConfig(), seeds=[0], steps=steps)


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


# Several runs side by side (section 2's record)


def test_runs_side_by_side_train_as_they_would_alone():
    """Each run of train_runs is the run that train() gives its seed, to
    float rounding: the stacked Adam does not mix the runs."""
    config = TinyConfig()
    seeds, steps = [0, 3], 15
    untrained, trained, losses = train_runs(config, seeds, steps)
    assert losses.shape == (steps, len(seeds))
    for run, seed in enumerate(seeds):
        torch.manual_seed(seed)
        alone = TinyAttentionModel(config)
        start = {k: v.clone() for k, v in alone.state_dict().items()}
        alone_losses = train(alone, config, steps=steps, seed=seed)
        for key, value in untrained[run].state_dict().items():
            assert torch.equal(value, start[key]), key
        for key, value in trained[run].state_dict().items():
            if key.endswith(".k.bias"):
                # A key bias adds q . b to every score of a row, which the
                # softmax ignores: its gradient is 0 up to rounding, and
                # Adam scales that noise up to steps of lr. The loss never
                # sees it.
                continue
            torch.testing.assert_close(
                value, alone.state_dict()[key], atol=1e-5, rtol=1e-4
            )
        torch.testing.assert_close(
            losses[:, run], torch.tensor(alone_losses), atol=1e-5, rtol=1e-4
        )


def record(after, accuracy):
    """A HeadsLearn with planted scores (runs, h, 2) and accuracies."""
    runs = len(after)
    return HeadsLearn(
        seeds=tuple(range(runs)),
        steps=1,
        untrained=[],
        trained=[],
        held_out=(),
        accuracy=torch.tensor(accuracy),
        before=torch.full_like(torch.tensor(after), 0.125),
        after=torch.tensor(after),
        chance=0.14,
        previous_floor=0.34,
        one_head_accuracy=torch.zeros(runs, 2),
    )


def test_the_record_finds_which_runs_split_the_work():
    runs = record(
        after=[
            [[0.99, 0.14], [0.14, 0.98]],  # head 0 previous, head 1 matching
            [[0.13, 0.97], [0.99, 0.12]],  # the other way round
            [[0.99, 0.16], [0.97, 0.16]],  # both heads on the previous token
            [[0.40, 0.14], [0.14, 0.45]],  # one head per job, but weakly
        ],
        accuracy=[[1.0, 1.0], [1.0, 0.99], [1.0, 0.38], [0.6, 0.5]],
    )
    assert runs.split.tolist() == [True, True, False, False]
    assert runs.job.tolist() == [[0, 1], [1, 0], [0, 0], [0, 1]]
    torch.testing.assert_close(runs.specialist[1], torch.tensor([0.99, 0.97]))
    torch.testing.assert_close(runs.other[0], torch.tensor([0.14, 0.14]))
    assert runs.worst == 2


def test_heads_learn_scores_every_run_on_the_held_out_set():
    config = TinyConfig()
    runs = heads_learn(
        config, seeds=[0, 1], steps=2, held_out_size=32, one_head=((1e-2, 2),)
    )
    assert runs.seeds == (0, 1) and runs.steps == 2
    assert runs.one_head_setting == (1e-2, 2) and runs.n_settings == 1
    assert len(runs.setting_scores) == 1
    spread = runs.numbers(config)  # the one-head runs, run by run
    assert spread["one_tuned"] == runs.setting_scores[0]  # its one setting
    both = runs.one_head_accuracy.mean().item()  # the runs, jobs averaged
    assert spread["one_both"] == both
    matching = runs.one_head_accuracy[:, 1]
    assert spread["one_match_min"] == matching.min().item()
    assert spread["one_match_max"] == matching.max().item()
    assert spread["one_solved"] == (matching >= 0.9).sum().item()
    two = (runs.accuracy[:, 1] >= 0.9).sum().item()  # the 2-head runs
    assert spread["two_solved"] == two
    assert runs.accuracy.shape == (2, 2) and runs.after.shape == (2, 2, 2)
    ids, _, partner, _ = runs.held_out
    assert ids.shape == (32, config.num_tokens)
    for seed in runs.seeds:  # none of the runs' first batches
        first = make_batch(config, 32, torch.Generator().manual_seed(seed))
        assert not torch.equal(first[0], ids)
    with torch.no_grad():
        expected = job_scores(runs.trained[1](ids)[2], partner)
    torch.testing.assert_close(runs.after[1], expected)
    i = torch.arange(1, config.num_tokens)
    assert runs.chance == (partner[:, i] == i - 1).float().mean().item()
    assert runs.previous_floor == previous_only_accuracy(
        partner, config.num_digits
    )
    # the same runs with one head of the same width, as train() gives them
    assert runs.one_head_accuracy.shape == (2, 2)
    one = TinyConfig(num_attention_heads=1)
    torch.manual_seed(1)
    model = TinyAttentionModel(one)
    train(model, one, steps=2, seed=1)
    with torch.no_grad():
        expected = torch.tensor(loss_and_accuracy(model, runs.held_out)[1])
    torch.testing.assert_close(
        runs.one_head_accuracy[1], expected, atol=0.01, rtol=0
    )


def test_the_previous_token_floor_counts_position_0_as_a_guess():
    # letters a a b b: the previous token is the match at positions 1
    # and 3 only; position 0 has no previous token, position 2 a wrong one
    partner = torch.tensor([[1, 0, 3, 2]])
    # 2 of 4 positions right for sure, the other 2 right 1 time in 4; over
    # positions 1 to 3 alone it would be 2/3 + 1/3 / 4 = 0.75
    assert previous_only_accuracy(partner, 4) == pytest.approx(0.625)


def split_and_unsplit():
    """Two runs on 100 held-out sequences: the first splits the jobs, the
    second puts both heads on the previous token and matches 38%."""
    runs = record(
        after=[
            [[0.9876, 0.14], [0.14, 0.9712]],  # head 0 previous, 1 matching
            [[0.99, 0.16], [0.97, 0.16]],  # both heads on the previous token
        ],
        accuracy=[[1.0, 0.9987], [1.0, 0.38]],
    )
    return dataclasses.replace(runs, held_out=(torch.zeros(100, 8),))


def test_the_numbers_are_what_the_record_holds_rounded_as_the_text_reads():
    runs = split_and_unsplit()
    numbers = runs.numbers(TinyConfig())
    assert numbers["job_previous"] == 0 and numbers["job_matching"] == 1
    assert numbers["specialist_min"] == 0.971  # "at least": rounded down
    assert numbers["before_max"] == 0.13  # "no more than": rounded up
    assert numbers["accuracy_floor"] == "99.8"  # 99.87% read "at least"
    assert numbers["split_count"] == 1 and numbers["worst_seed"] == 1
    assert numbers["worst_accuracy"] == pytest.approx(0.38)
    assert numbers["two_match"] == pytest.approx((0.9987 + 0.38) / 2)
    assert numbers["n_sequences"] == 100 and numbers["tiny_head_width"] == 16
    assert runs.worst_margin == pytest.approx(2 * (0.38 * 0.62 / 100) ** 0.5)


def test_the_page_verdicts_read_the_first_and_the_weakest_run():
    from mhabook.experiments.verdicts import decide

    runs = split_and_unsplit()
    found = {
        name: decide(rule, args, phrases)[1]
        for name, rule, args, phrases in runs.page_verdicts(TinyConfig())
    }
    assert found["first_split"] == "each job got a head"
    assert found["sharp"] == "sharp"  # at least 0.971 on its job
    assert found["worst_heads"] == "both heads took the previous-token job"
    # 0.38 against the floor 0.34, two standard errors 0.097 on 100
    assert found["floor_verdict"] == "is within chance of that mark"
    above = dataclasses.replace(runs, previous_floor=0.15)
    verdicts = {v[0]: v for v in above.page_verdicts(TinyConfig())}
    assert decide(*verdicts["floor_verdict"][1:])[1] == (
        "is above that mark beyond chance"
    )


def test_the_seeds_are_named_as_a_range_only_when_they_are_one():
    from mhabook.experiments.training import seed_list

    assert seed_list(range(12)) == "0 to 11"
    assert seed_list([7, 0, 3]) == "7, 0 and 3"
    assert seed_list([4, 5]) == "4 and 5"
    assert seed_list([2]) == "2"


def test_one_digit_is_refused_since_the_matching_answer_needs_no_lookup():
    with pytest.raises(ValueError, match="num_digits = 1.*use 2 or more"):
        TinyConfig(num_digits=1)
    with pytest.raises(ValueError, match="num_letters = 27: .* use 1 to 26"):
        TinyConfig(num_letters=27)
    # two tokens: one pair of letters, so the jobs share their target
    with pytest.raises(ValueError, match="num_tokens = 2: .*use 4 or more"):
        TinyConfig(num_letters=1, num_tokens=2)


def test_a_repeated_seed_is_refused_since_its_run_would_count_twice():
    with pytest.raises(ValueError, match=r"seeds \[0, 0, 1\] repeat a seed"):
        heads_learn(TinyConfig(), seeds=[0, 0, 1], steps=1)


def test_the_one_head_control_is_tuned_on_seeds_and_sequences_of_its_own():
    from mhabook.experiments.training import tune_one_head

    config = TinyConfig()
    validation = make_batch(config, 64, torch.Generator().manual_seed(99))
    settings = ((1e-2, 1), (1e-2, 150))  # one step learns next to nothing
    few, many = tune_one_head(config, [20, 21], validation, settings)
    assert many > few  # one score per setting, in their order
    (alone,) = tune_one_head(config, [20, 21], validation, settings[:1])
    assert alone == few  # the same seeds and sequences give the same score
    runs = heads_learn(
        config, seeds=[0], steps=1, held_out_size=8, one_head=()
    )
    assert runs.n_settings == 0 and runs.one_head_accuracy.isnan().all()
