"""The figures of "Many heads, one layer" (book/mhabook/views/first_pages.py),
drawn from a small record, and the encoder-block figure of that page
checked against Hugging Face's BERT."""

import dataclasses

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from transformers import BertConfig, BertLayer, BertModel  # noqa: E402

from mhabook.experiments.training import TinyConfig, heads_learn  # noqa: E402
from mhabook.views import first_pages  # noqa: E402
from mhabook.views.plotting import BLOCK_PARTS  # noqa: E402

# one short one-head setting: the default search trains for minutes
QUICK = ((1e-2, 2),)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def runs():
    return heads_learn(TinyConfig(), [0, 1, 2], 2, 8, one_head=QUICK)


def test_one_run_is_drawn_before_and_after_per_head(runs):
    renamed = dataclasses.replace(runs, seeds=[5, 7, 9])  # run 1: seed 7
    fig = first_pages.heads_learned(renamed, TinyConfig(), run=1)
    maps = [ax for ax in fig.axes if ax.get_images()]
    assert [ax.get_title() for ax in maps] == [
        "seed 7: head 0, before",
        "seed 7: head 1, before",
        "seed 7: head 0, after",
        "seed 7: head 1, after",
    ]
    ids = first_pages.apart(runs)
    with torch.no_grad():
        expected = runs.trained[1](ids[None])[2][0, 1].numpy()
    assert (maps[3].get_images()[0].get_array() == expected).all()


def test_the_drawn_sequence_keeps_each_letter_pair_apart(runs):
    ids, _, partner, _ = runs.held_out
    gap = (partner - torch.arange(partner.shape[1])).abs()
    n = int((gap > 1).all(-1).to(torch.int8).argmax())  # the first apart
    assert (gap[n] > 1).all() and (gap[:n] <= 1).any(-1).all()
    assert first_pages.apart(runs).equal(ids[n])
    together = dataclasses.replace(runs, held_out=(ids, None, partner * 0, 0))
    assert first_pages.apart(together).equal(ids[0])  # none apart: the first


def test_every_run_is_a_column_and_the_worst_run_is_drawn():
    runs = heads_learn(TinyConfig(), [0, 1, 2], 2, 8, one_head=QUICK)
    runs.accuracy[:] = torch.tensor([[1.0, 1.0], [1.0, 0.38], [1.0, 0.9]])
    fig = first_pages.seed_runs(runs, TinyConfig())
    grid = fig.axes[0]
    values = grid.get_images()[0].get_array()
    assert values.shape == (3, 3)  # 2 jobs and the accuracy, by 3 runs
    texts = [t.get_text() for t in grid.texts]
    jobs = [str(int(i)) for row in runs.job.T for i in row]
    assert texts == jobs + ["100", "38", "90"]
    assert [t.get_text() for t in grid.get_xticklabels()] == ["0", "1", "2"]
    titles = [ax.get_title() for ax in fig.axes[1:] if ax.get_title()]
    assert titles == ["head 0, seed 1", "head 1, seed 1"]


def test_the_encoder_block_figure_matches_bert():
    """Its parts exist under these names in Hugging Face's BERT, and the
    residual is added before the LayerNorm."""
    tiny = BertConfig(
        hidden_size=8,
        num_attention_heads=2,
        intermediate_size=16,
        vocab_size=10,
        max_position_embeddings=4,
    )
    block = BertLayer(tiny).eval()
    parts = dict(block.named_modules())
    for name in (
        "attention.self",
        "attention.output.LayerNorm",
        "intermediate.dense",
        "output.dense",
        "output.LayerNorm",
    ):
        assert name in parts, name
    embeddings = BertModel(tiny).embeddings
    for name in ("position_embeddings", "token_type_embeddings", "LayerNorm"):
        assert hasattr(embeddings, name), name
    x, context = torch.randn(2, 1, 3, 8).unbind(0)
    after = block.attention.output  # dense, then LayerNorm(dense + residual)
    expected = after.LayerNorm(after.dense(context) + x)
    torch.testing.assert_close(after(context, x), expected)
    labels = " ".join(label for label, _ in BLOCK_PARTS)
    for said in (
        "position",
        "segment",
        "residual",
        "LayerNorm",
        "feed-forward",
    ):
        assert said in labels


@pytest.mark.parametrize("run", [3, -1, 1.0])
def test_a_run_that_was_not_trained_is_refused(runs, run):
    with pytest.raises(ValueError, match="pick 0 to 2"):
        first_pages.heads_learned(runs, TinyConfig(), run=run)


def test_the_tuning_table_gives_each_setting_its_score_and_marks_the_best():
    settings = ((1e-2, 1), (1e-3, 2))
    runs = heads_learn(
        TinyConfig(), seeds=[0], steps=1, held_out_size=8, one_head=settings
    )
    rows = first_pages.tuning_table(runs).data.splitlines()
    best = runs.setting_scores.index(max(runs.setting_scores))
    assert len(rows) == 2 + len(settings)
    for row, (lr, steps), score in zip(
        rows[2:], settings, runs.setting_scores
    ):
        assert row.startswith(f"| {lr:g} | {steps:,} | {score:.1%} |")
    assert [row.endswith("| yes |") for row in rows[2:]] == [
        i == best for i in range(len(settings))
    ]
    none = dataclasses.replace(runs, settings=(), setting_scores=())
    with pytest.raises(ValueError, match="one_head=\\(\\)"):
        first_pages.tuning_table(none)
