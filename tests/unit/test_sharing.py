"""The bookkeeping of "Sharing keys and values": the references, the timing
harness, the tables and the baselines of mhabook.experiments.sharing."""

import matplotlib
import numpy as np
import pytest
import torch

from mhabook.experiments import sharing
from mhabook.layers.sharing_kv import grouped_from_llama

matplotlib.use("Agg")


def test_gap_returns_the_largest_difference_and_refuses_a_real_one():
    a = torch.zeros(3)
    assert sharing.gap(a, a + 1e-7) == pytest.approx(1e-7)
    with pytest.raises(AssertionError):
        sharing.gap(a, a + 1e-3)


@pytest.mark.parametrize("is_causal", [False, True])
def test_the_references_agree_with_the_layer(is_causal):
    torch.manual_seed(0)
    llama = sharing.random_llama(32, 4, 2)
    layer = grouped_from_llama(llama)
    x = torch.randn(2, 5, 32)
    mask = torch.ones(5, 5).tril().bool() if is_causal else None
    with torch.no_grad():
        out, weights = layer(x, mask)
        ref, ref_weights = sharing.llama_output(llama, x, is_causal)
        fused = sharing.fused_output(layer, x, is_causal)
    sharing.gap(out, ref)
    sharing.gap(weights, ref_weights)
    sharing.gap(out, fused)


def test_time_steps_gives_rounds_by_lengths_and_restores_the_threads():
    threads = torch.get_num_threads()
    calls = []
    costs = sharing.time_steps(
        {"a": (calls.append, 2), "b": (lambda S: None, 1)}, [1, 2, 3], 2
    )
    assert costs["a"].shape == costs["b"].shape == (2, 3)
    assert (costs["a"] >= 0).all()
    assert len(calls) == 2 * 3 * (1 + 2)  # a warm-up call, then 2
    assert torch.get_num_threads() == threads


def test_time_steps_restores_the_threads_after_an_error():
    threads = torch.get_num_threads()

    def fails(S):
        raise RuntimeError("step failed")

    with pytest.raises(RuntimeError):
        sharing.time_steps({"a": (fails, 1)}, [1])
    assert torch.get_num_threads() == threads


def test_line_slopes_and_medians():
    lengths = [1, 2, 3]
    rows = np.array([[1.0, 3.0, 5.0], [2.0, 2.0, 2.0], [0.0, 1.0, 2.0]])
    assert sharing.line_slopes(lengths, rows) == pytest.approx([2, 0, 1])
    assert list(sharing.medians(rows)) == [1.0, 2.0, 2.0]
    assert sharing.line_fit(lengths, rows[0]) == pytest.approx((-1, 2))


def test_step_flops_counts_the_matrix_products():
    weight = torch.randn(4, 4)
    assert sharing.step_flops(lambda S: torch.randn(S, 4) @ weight, 3) == (
        2 * 3 * 4 * 4
    )


def test_markdown_table():
    table = sharing.markdown_table(["a", "b"], [[1, "x"], [2, "y"]])
    assert table.data == "| a | b |\n|---|---:|\n| 1 | x |\n| 2 | y |"


def test_mean_interval_holds_the_mean_and_is_reproducible():
    values = torch.linspace(0, 1, 50)
    low, high = sharing.mean_interval(values)
    assert low < values.mean().item() < high
    assert (low, high) == sharing.mean_interval(values)
    assert sharing.mean_interval(torch.ones(9)) == (1.0, 1.0)


def test_even_spread_rows_cover_the_real_tokens_only():
    maps = torch.rand(2, 2, 3, 4, 4)  # (L, B, h, T, T)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    even = sharing.even_spread(maps, mask)
    assert even.shape == maps.shape
    torch.testing.assert_close(even.sum(-1), torch.ones(2, 2, 3, 4))
    assert (even[:, 1, ..., 2:] == 0).all()
    assert (even[:, 1, ..., :2] == 0.5).all()


def test_the_figures_draw_from_any_number_of_heads():
    costs = {"without": np.ones((2, 3)), "with": np.ones((2, 3))}
    timing = sharing.plot_timing(costs, [1, 2, 3])
    assert len(timing.axes) == 2 and timing.get_figwidth() <= 4.8
    shift = {2: torch.tensor([0.1, 0.2]), 1: torch.tensor([0.2, 0.3])}
    fig = sharing.plot_conversion(
        4,
        shift,
        torch.tensor([0.3, 0.4]),
        {2: 0.9, 1: 0.8},
        {2: [0.9, 0.91], 1: [0.8, 0.79]},
        0.7,
    )
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == [
        "4",
        "2",
        "1",
    ]
    assert fig.get_figwidth() <= 4.8
    matplotlib.pyplot.close("all")
