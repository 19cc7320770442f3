"""Figures return what they drew, and refuse data they cannot draw."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from mhabook import (  # noqa: E402
    PALETTE,
    attention_heatmap,
    attention_heatmaps,
    grid_heatmap,
    shape_flow,
    use_chapter_style,
)
from mhabook.views.plotting import encoder_block  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_heatmap_labels_queries_and_keys():
    ax = attention_heatmap(torch.eye(3), ["a", "b", "c"], title="t")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert ax.get_title() == "t"
    assert len(ax.texts) == 9


def test_heatmap_refuses_a_batch_of_maps():
    with pytest.raises(ValueError, match="select a batch item"):
        attention_heatmap(torch.ones(1, 3, 3), ["a", "b", "c"])


def test_heatmap_refuses_mismatched_tokens():
    with pytest.raises(ValueError, match="3 tokens need a 3x3 map"):
        attention_heatmap(np.eye(2), ["a", "b", "c"])


def test_side_by_side_maps():
    fig = attention_heatmaps([np.eye(2)] * 2, ["a", "b"], ["one", "two"])
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["one", "two"]


def test_grid_heatmap_has_one_label_per_cell():
    fig = grid_heatmap(np.arange(6).reshape(2, 3) / 6, "t", "share")
    assert len(fig.axes[0].texts) == 6
    assert fig.axes[0].get_title() == "t"


def test_grid_heatmaps_side_by_side_share_one_scale():
    fig = grid_heatmap([np.zeros((2, 3)), np.ones((2, 3))], ["a", "b"], "w")
    grids = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in grids] == ["a", "b"]
    assert {ax.images[0].get_clim() for ax in grids} == {(0.0, 1.0)}


def test_shape_flow_names_every_shape():
    fig = shape_flow(1, 5, 768, 12)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert texts.count("[1, 5, 64]") == 12
    assert "[1, 5, 768]" in texts and "output_linear" in texts


def test_chapter_style_uses_the_palette():
    use_chapter_style()
    colours = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    assert colours == PALETTE


def test_head_scatter_draws_one_dot_per_head_and_the_diagonal():
    from mhabook.views.plotting import head_scatter

    ax = head_scatter(np.full((2, 3), 0.5), np.full((2, 3), 0.6), "x", "y")
    assert len(ax.collections[0].get_offsets()) == 6
    assert len(ax.lines) == 1


def test_null_histogram_marks_each_observed_value():
    from mhabook.views.plotting import null_histogram

    ax = null_histogram(np.random.rand(50), [0.5, 0.7], "s", ["n", "a", "b"])
    assert len(ax.lines) == 3  # the 95% line and the two observed values
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["n", "95% point of the draws", "a", "b"]


def test_query_key_figure_sums_each_product_row():
    from mhabook.views.plotting import query_key_figure

    q, keys = np.array([1.0, 2.0]), np.array([[1.0, 1.0], [0.0, -1.0]])
    fig = query_key_figure(q, keys, ["a", "b"])
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [
        "query",
        "key a",
        "q × k, sum +3.0",
        "key b",
        "q × k, sum -2.0",
    ]


def test_paired_bars_draw_two_bars_per_group():
    from mhabook.views.plotting import paired_bars

    ax = paired_bars(
        [0.5, 0.4, 0.3], [0.2, 0.1, 0.3], range(3), ["w", "n"], "s"
    )
    assert len(ax.patches) == 6


def test_grid_heatmap_centres_a_diverging_scale_and_marks_a_cell():
    fig = grid_heatmap(
        np.array([[0.4, 0.5], [0.5, 0.8]]), "t", "s", centre=0.5, mark=(1, 0)
    )
    image = fig.axes[0].images[0]
    assert image.get_clim() == pytest.approx((0.2, 0.8))
    (box,) = [p for p in fig.axes[0].patches if not p.get_fill()]
    assert box.get_xy() == (-0.5, 0.5)


def test_encoder_block_colours_only_the_parts_the_chapter_builds():
    fig = encoder_block()
    boxes = {
        t.get_text(): t
        for t in fig.axes[0].texts
        if "attention" in t.get_text()
    }
    assert "multi-head attention" in boxes
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts.count("add the input (residual), LayerNorm") == 2
    colours = {
        matplotlib.colors.to_hex(p.get_facecolor())
        for p in fig.axes[0].patches
        if isinstance(p, matplotlib.patches.FancyBboxPatch)
        and p.get_facecolor()[3] > 0  # the dashed frame has no fill
    }
    assert colours == {PALETTE[1].lower(), "#dddddd"}


def test_head_matrices_draws_every_matrix_of_a_small_layer():
    from types import SimpleNamespace

    from mhabook import MultiHeadAttention
    from mhabook.views.plotting import head_matrices

    torch.manual_seed(0)
    config = SimpleNamespace(hidden_size=8, num_attention_heads=2)
    layer = MultiHeadAttention(config)
    x = torch.randn(1, 5, 8)
    fig = head_matrices(layer, x, list("abcde"))
    titles = [ax.get_title() for ax in fig.axes]
    assert len(fig.axes) == 1 + 5 * 2 + 3
    assert titles[0] == "$X$" and titles[-1] == "output"
    assert "$Z_{0}$" in titles and "$Z_{1}$" in titles  # from 0, as code
    assert "$W^O$" in titles
    shown = fig.axes[-1].images[0].get_array()
    expected = layer(x)[0][0].detach().numpy()
    np.testing.assert_allclose(shown, expected, rtol=1e-6)


def test_head_matrices_refuses_a_large_layer():
    from types import SimpleNamespace

    from mhabook import MultiHeadAttention
    from mhabook.views.plotting import head_matrices

    config = SimpleNamespace(hidden_size=32, num_attention_heads=2)
    with pytest.raises(ValueError, match="draw a small example"):
        head_matrices(MultiHeadAttention(config), torch.randn(3, 32), "abc")
    small = MultiHeadAttention(
        SimpleNamespace(hidden_size=8, num_attention_heads=2)
    )
    with pytest.raises(
        ValueError, match="has 12 features but the layer takes 8"
    ):
        head_matrices(small, torch.randn(3, 12), "abc")


def test_page_png_draws_twice_the_pixels_it_is_shown_at_in_256_colours():
    import base64
    import io

    from PIL import Image

    from mhabook.views.plotting import page_png

    use_chapter_style()
    fig = attention_heatmap(torch.eye(3), ["a", "b", "c"]).figure
    png, metadata = page_png(fig)
    image = Image.open(io.BytesIO(base64.b64decode(png)))
    assert image.mode == "P" and len(image.getcolors()) <= 256
    assert image.width // 2 == metadata["width"] <= 3.6 * fig.dpi


def test_overview_labels_every_shape_from_the_sizes_it_is_given():
    from matplotlib.figure import Figure

    from mhabook.views.plotting import multi_head_overview

    fig = multi_head_overview(list("abc"), 8, 2)
    assert isinstance(fig, Figure)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts[:3] == ["a", "b", "c"]  # X's rows are the tokens
    assert ["head 0", "head 1"] == [t for t in texts if "head" in t]
    joined = " ".join(texts)
    for shape in ("3 × 8", "8 × 4", "3 × 4", "3 × 3", "8 × 8"):
        assert shape in joined, shape
    assert "768" not in joined and "64" not in joined
    slices = [  # the concatenation: one slice of width d_k per head
        p
        for p in fig.axes[0].patches
        if isinstance(p, matplotlib.patches.Rectangle)
        and p.get_width() == pytest.approx(2.4 / 2)
    ]
    assert len(slices) == 2


def test_overview_draws_heads_0_1_and_the_last_of_many_in_the_column():
    from mhabook.views.plotting import multi_head_overview

    use_chapter_style()
    fig = multi_head_overview("time flies like an arrow".split(), 768, 12)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert [t for t in texts if "head" in t] == ["head 0", "head 1", "head 11"]
    assert "⋯" in texts
    joined = " ".join(texts)
    for shape in ("5 × 768", "768 × 64", "5 × 64", "5 × 5", "768 × 768"):
        assert shape in joined, shape
    fig.canvas.draw()
    assert fig.get_tightbbox().width <= 4.8  # in: nothing sticks out


def test_overview_refuses_sizes_that_do_not_split_and_no_tokens():
    from mhabook.views.plotting import multi_head_overview

    with pytest.raises(ValueError, match="such as 4 or 6"):
        multi_head_overview(list("abc"), 768, 5)
    with pytest.raises(ValueError, match="at least one token"):
        multi_head_overview([], 768, 12)


def test_attention_grid_draws_rows_of_maps_on_one_scale():
    from mhabook.views.plotting import attention_grid

    maps = [[np.eye(3), np.eye(3)], [np.ones((3, 3)) / 3, np.eye(3)]]
    titles = [["a", "b"], ["c", "d"]]
    fig = attention_grid(maps, ["x", "y", "z"], titles)
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == ["a", "b", "c", "d"]
    assert {ax.images[0].get_clim() for ax in panels} == {(0.0, 1.0)}
    assert len(fig.axes) == 5  # four maps and one colour bar
    shown = panels[2].images[0].get_array()
    np.testing.assert_allclose(shown, maps[1][0])
    assert fig.get_size_inches()[0] <= 4.8


def test_attention_grid_refuses_ragged_rows_and_wrong_maps():
    from mhabook.views.plotting import attention_grid

    with pytest.raises(ValueError, match="every row as long"):
        attention_grid([[np.eye(2)], [np.eye(2)] * 2], "ab", [["a"], ["b"]])
    with pytest.raises(ValueError, match="2 tokens need 2x2 maps"):
        attention_grid([[np.eye(3)]], "ab", [["a"]])


def test_shape_flow_refuses_a_width_that_does_not_split():
    with pytest.raises(ValueError, match="768.*7.*such as 6 or 8"):
        shape_flow(1, 5, 768, 7)
    with pytest.raises(ValueError, match="tokens is 0: give a whole number"):
        shape_flow(1, 0, 768, 12)


def test_shape_flow_of_many_heads_draws_the_first_ten_and_the_last():
    fig = shape_flow(1, 5, 768, 64)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert texts.count("[1, 5, 12]") == 11
    assert "head 9:" in texts and "head 63:" in texts
    assert "head 10:" not in texts and "heads 10 to 62" in texts
    twelve = shape_flow(1, 5, 768, 12).get_size_inches()[1]
    assert fig.get_size_inches()[1] == twelve


def test_head_matrices_and_heatmaps_name_the_fix_for_their_sizes():
    from mhabook import MultiHeadAttention
    from mhabook.layers.all_heads import AttentionConfig
    from mhabook.views.plotting import head_matrices

    layer = MultiHeadAttention(AttentionConfig(8, 2))
    with pytest.raises(ValueError, match="pass the first 8 tokens"):
        head_matrices(layer, torch.randn(1, 9, 8), list("abcdefghi"))
    with pytest.raises(ValueError, match="pass one label per row"):
        attention_heatmap(torch.eye(3), ["a", "b"])


def test_heatmap_refuses_a_string_for_the_tokens():
    with pytest.raises(ValueError, match=r"one string.*list.*text\.split"):
        attention_heatmap(np.eye(5), "time flies like an arrow")


def test_flies_bars_draws_both_rows_and_wants_a_name_for_each():
    from mhabook.views.testing import flies_bars

    rows, tokens = torch.rand(2, 3), ["time", "flies", "fast"]
    ax = flies_bars(rows, tokens, [1], ["A", "B"])
    assert len(ax.patches) == 6
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["A", "B"]
    plt.close("all")
    with pytest.raises(ValueError, match="two names"):
        flies_bars(rows, tokens, [1], ["A"])


def test_source_pair_bars_title_the_head_and_bold_the_targets():
    from types import SimpleNamespace

    from mhabook.views.testing import source_pair_bars

    record = SimpleNamespace(
        source_rows=torch.rand(2, 4),
        source_tokens=["time", "flies", "fruit", "flies"],
        source_targets=[2],
    )
    ax = source_pair_bars(record, 3)
    assert ax.get_title() == "layer 0, head 3, the source's pair"
    weights = [t.get_fontweight() for t in ax.get_xticklabels()]
    assert weights == ["normal", "normal", "bold", "normal"]
    plt.close("all")


def test_heatmaps_refuse_a_title_count_that_does_not_match():
    maps = [torch.eye(3), torch.eye(3)]
    with pytest.raises(TypeError, match="one string"):
        attention_heatmaps(maps, ["a", "b", "c"], "two maps")
    with pytest.raises(ValueError, match="one title per map"):
        attention_heatmaps(maps, ["a", "b", "c"], ["only one"])
