"""The checks the taught layers call (book/mhabook/checks.py): each
refusal names the fix, and what is fine passes untouched."""

import copy
import inspect
from types import SimpleNamespace

import pytest
import torch
from torch import nn
from transformers import BertConfig

from mhabook.checks import (
    check_attention_mask,
    check_bool_mask,
    check_head,
    check_input,
    check_like_loop,
    check_num_tokens,
    check_padding,
    check_padding_ignored,
    check_qkv,
    check_split,
    check_targets,
    check_through_w_o,
    check_weights,
    takes_config,
)


@takes_config
class Layer(nn.Module):
    """A layer of the taught kind: one config, an (B, T, d) input."""

    def __init__(self, config):
        super().__init__()
        self.linear = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_state, mask=None):
        return self.linear(hidden_state)


def config(hidden_size=8, num_attention_heads=2):
    return SimpleNamespace(
        hidden_size=hidden_size, num_attention_heads=num_attention_heads
    )


def test_a_config_layer_keeps_its_signature_and_works():
    assert list(inspect.signature(Layer.__init__).parameters) == [
        "self",
        "config",
    ]
    for layer in (Layer(config()), Layer(config=config())):
        assert layer(torch.randn(2, 3, 8)).shape == (2, 3, 8)
        assert layer(hidden_state=torch.randn(1, 3, 8)).shape == (1, 3, 8)
    twin = copy.deepcopy(Layer(config()))
    with pytest.raises(ValueError, match="hidden_state"):
        twin(torch.randn(3, 8))  # the copy checks its input too


@pytest.mark.parametrize(
    "args, error, fix",
    [
        ((8, 2), TypeError, r"use Layer\(BertConfig\(hidden_size=8, num"),
        (({"hidden_size": 8},), TypeError, r"use Layer\(BertConfig\(\*\*"),
        ((config(8.0, 2),), TypeError, "whole-number hidden_size"),
        ((config(8.0, 2),), TypeError, "hidden_size=8, num_attention_heads=2"),
        ((BertConfig,), TypeError, r"use Layer\(BertConfig\(\)\), with the"),
        ((config(True, 2),), TypeError, "whole-number hidden_size"),
        ((config(), config()), TypeError, "takes one config"),
        ((config(10, 4),), ValueError, "such as 2 or 5"),
        ((config(8, 0),), ValueError, r"each is at least 1"),
    ],
)
def test_a_config_the_layer_cannot_use_is_refused_before_init(
    args, error, fix
):
    with pytest.raises(error, match=fix):
        Layer(*args)


@pytest.mark.parametrize(
    "x, fix",
    [
        (torch.randn(5, 8), r"hidden_state\[None\] for a batch of one"),
        (torch.randn(2, 8), r"token axis, hidden_state\[:, None\]"),
        (torch.randn(1, 5, 6), "give it 8 features"),
        (torch.randn(1, 1, 5, 8), r"reshape it to \(batch, tokens, 8\)"),
        ([[0.0] * 8], "pass a tensor"),
    ],
)
def test_an_input_that_is_not_batch_tokens_width_is_refused(x, fix):
    with pytest.raises(ValueError, match=rf"\(B, T, d\) with d = 8: .*{fix}"):
        Layer(config())(x)
    with pytest.raises(ValueError, match=fix):
        check_input(x, 8)


def test_an_input_of_another_dtype_than_the_weights_names_the_cast():
    layer = Layer(config())
    with pytest.raises(
        ValueError, match=r"torch.float64.*hidden_state\.float\(\)"
    ):
        layer(torch.randn(1, 3, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"hidden_state\.to\(torch.float64\)"):
        check_input(torch.randn(1, 3, 8), 8, torch.float64)
    assert check_input(torch.randn(1, 3, 8), 8, torch.float32) is None
    assert layer.double()(torch.randn(1, 3, 8).double()).dtype == torch.float64


@takes_config
class Slipped(nn.Module):
    """A layer with a reader's slip in its forward, chosen by `slip`."""

    def __init__(self, config):
        super().__init__()
        self.h = config.num_attention_heads
        self.slip = None

    def forward(self, hidden_state):
        B, T, d = hidden_state.shape
        weights = torch.full((B, self.h, T, T), 1 / T)
        out = (weights @ hidden_state[:, None]).mean(1)  # (B, T, d)
        if self.slip == "stack on dim 0":  # (h, B, T, T)
            weights = weights.transpose(0, 1)
        if self.slip == "transpose(1, 2)":  # fails inside PyTorch
            weights @ hidden_state.transpose(1, 2)
        if self.slip == "no reshape":  # (B, h, T, d_k) out
            out = hidden_state.view(B, T, self.h, -1).transpose(1, 2)
        return out, weights


@pytest.mark.parametrize(
    "slip, error, fix",
    [
        ("stack on dim 0", ValueError, r"\(3, 2, 4, 4\), not .*axis 1"),
        ("transpose(1, 2)", ValueError, "check the forward's code"),
        ("no reshape", ValueError, r"not the input's \(B, T, d\)"),
    ],
)
def test_a_slip_in_a_layers_forward_is_named_where_it_happens(
    slip, error, fix
):
    layer = Slipped(config(12, 3 if slip == "stack on dim 0" else 2))
    x = torch.randn(2, 4, 12)
    out, weights = layer(x)  # no slip: it works
    assert out.shape == x.shape and weights.shape[:2] == (2, layer.h)
    layer.slip = slip
    with pytest.raises(error, match=fix):
        layer(x)


def test_a_slip_in_a_hook_on_a_part_of_the_layer_names_the_hook():
    from mhabook import MultiHeadAttention

    layer = MultiHeadAttention(config(12, 2))

    def slipped(module, args):  # the heads' slices, split the wrong way
        (context,) = args
        return (context.view(2, 4, 5, -1).flatten(2),)

    layer.output_linear.register_forward_pre_hook(slipped)
    with pytest.raises(ValueError, match="or the hook on output_linear"):
        layer(torch.randn(2, 4, 12))


def test_split_names_the_nearest_head_counts():
    assert check_split(768, 12) is None
    with pytest.raises(ValueError, match="such as 4 or 6"):
        check_split(768, 5)
    with pytest.raises(TypeError, match="whole numbers"):
        check_split(768.0, 12)


def test_masks_that_are_not_bool_or_do_not_fit_are_refused():
    scores = torch.zeros(2, 3, 4)
    assert (
        check_attention_mask(torch.ones(3, 4, dtype=torch.bool), scores)
        is None
    )
    with pytest.raises(ValueError, match=r"mask.bool\(\)"):
        check_attention_mask(torch.ones(3, 4), scores)
    with pytest.raises(ValueError, match=r"\(T_q, T_k\) = \(3, 4\)"):
        check_attention_mask(torch.ones(4, 3, dtype=torch.bool), scores)
    assert check_bool_mask(torch.ones(2, 3, 3, dtype=torch.bool), 2, 3) is None
    with pytest.raises(ValueError, match=r"\(B, T, T\) = \(2, 3, 3\)"):
        check_bool_mask(torch.ones(3, 3, 3, dtype=torch.bool), 2, 3)
    with pytest.raises(ValueError, match=r"mask.bool\(\)"):
        check_bool_mask(torch.ones(3, 3, dtype=torch.int64), 2, 3)


def test_pointer_targets_are_positions_and_strength_is_positive():
    assert check_targets([1, None, torch.tensor(0)], 4.0) is None
    for wrong in ([1.5, 0], [0, 2], [-1, 0]):
        with pytest.raises(ValueError, match="use 0 to 1"):
            check_targets(wrong, 4.0)
    with pytest.raises(ValueError, match="keep 0 < strength < inf"):
        check_targets([1, 0], 0.0)
    with pytest.raises(ValueError, match="targets is empty: give one"):
        check_targets([], 4.0)
    from mhabook.checks import check_strength

    assert check_strength(4.0) is None
    with pytest.raises(ValueError, match="keep 0 < strength < inf"):
        check_strength(float("inf"))


def test_weights_to_copy_must_have_the_keys_and_shapes():
    target = {"a": torch.zeros(2, 3), "b": torch.zeros(3)}
    assert (
        check_weights(target, {"a": torch.ones(2, 3), "b": torch.ones(3)})
        is None
    )
    with pytest.raises(
        ValueError, match=r"missing \['b'\], unexpected \['c'\]"
    ):
        check_weights(target, {"a": torch.ones(2, 3), "c": torch.ones(3)})
    with pytest.raises(ValueError, match=r"no q.bias, .*keeps its bias"):
        check_weights({"a": target["a"]}, {"a": target["a"], "q.bias": 1})
    with pytest.raises(ValueError, match=r"a: shape \(3, 2\) does not fit"):
        check_weights(target, {"a": torch.ones(3, 2), "b": torch.ones(3)})


@pytest.mark.parametrize("head", [-1, 12, 2.0, True])
def test_check_head_refuses_a_head_the_layer_lacks(head):
    check_head(11, 12)
    with pytest.raises(ValueError, match="numbered 0 to 11"):
        check_head(head, 12)


def test_weights_of_the_other_layer_kind_name_the_converter():
    loop = {"heads.0.q.weight": torch.zeros(2), "output_linear.bias": 0}
    batched = {"qkv.weight": torch.zeros(2), "output_linear.bias": 0}
    with pytest.raises(ValueError, match="batched_from_loop"):
        check_weights(batched, loop)
    with pytest.raises(ValueError, match="loop_from_batched"):
        check_weights(loop, batched)


@pytest.mark.parametrize("lengths", [[5, 6], [-1, 3], [[5, 3]], [2.5, 3]])
def test_padding_lengths_must_fit_the_tokens(lengths):
    check_padding([5, 0], 5)
    with pytest.raises(ValueError, match="[5, 3]|0 to 5"):
        check_padding(lengths, 5)


@pytest.mark.parametrize(
    "q, k, v, fix",
    [
        ((5, 64), (5, 32), (5, 32), "the same last size"),
        ((5, 64), (5, 64), (4, 64), "the same number of tokens"),
        ((64,), (64,), (64,), "add a token axis"),
    ],
)
def test_queries_keys_and_values_that_do_not_fit_are_refused(q, k, v, fix):
    with pytest.raises(ValueError, match=fix):
        check_qkv(torch.randn(q), torch.randn(k), torch.randn(v))
    check_qkv(torch.randn(2, 5, 64), torch.randn(2, 7, 64), torch.randn(7, 3))
    q, k = torch.randn(2, 5, 64), torch.randn(2, 7, 64)  # scores (2, 5, 7)
    with pytest.raises(ValueError, match="\\(T_q, T_k\\) = \\(5, 7\\)"):
        check_qkv(q, k, k, mask=torch.ones(7, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="bool"):
        check_qkv(q, k, k, mask=torch.ones(5, 7))
    check_qkv(q, k, k, mask=torch.ones(5, 7, dtype=torch.bool))
    with pytest.raises(TypeError, match="give all three one dtype"):
        check_qkv(q.double(), k, k)
    with pytest.raises(TypeError, match="attention needs floats"):
        check_qkv(q.long(), k.long(), k.long())


@pytest.mark.parametrize("num_tokens", [-1, 2.0, True])
def test_a_mask_length_is_a_whole_number_0_or_more(num_tokens):
    with pytest.raises(ValueError, match="len\\(tokens\\)"):
        check_num_tokens(num_tokens)
    check_num_tokens(0)


def test_a_head_of_no_features_and_an_endless_strength_are_refused():
    with pytest.raises(ValueError, match="d_k of at least 1"):
        check_qkv(torch.randn(3, 0), torch.randn(3, 0), torch.randn(3, 0))
    with pytest.raises(ValueError, match="0 < strength < inf"):
        check_targets([1, 0, 2], float("inf"))


def test_an_additive_mask_is_told_how_to_become_a_bool_one():
    additive = torch.zeros(3, 3).masked_fill(
        torch.ones(3, 3, dtype=torch.bool).triu(1), float("-inf")
    )
    q = torch.randn(3, 4)
    with pytest.raises(ValueError, match="mask == 0"):
        check_qkv(q, q, q, mask=additive)


def test_qkv_with_unequal_head_counts_is_refused_with_the_fix():
    query, key = torch.randn(2, 8, 5, 4), torch.randn(2, 4, 5, 4)
    with pytest.raises(ValueError, match=r"repeat a shared one h // g times"):
        check_qkv(query, key, key)


def test_a_slip_inside_the_loop_layer_names_the_loop_s_shapes():
    from mhabook.checks import explains_slips

    @explains_slips
    class MultiHeadAttention(nn.Module):  # the loop layer's name
        def forward(self, hidden_state):
            return torch.ones(2, 3) @ torch.ones(4, 5)  # a shape slip

    with pytest.raises(ValueError, match=r"\(B, T, h \* d_k\) for their"):
        MultiHeadAttention()(torch.ones(1, 3, 4))


@takes_config
class SplitWithSlash(nn.Module):
    """A layer whose __init__ slips: / where // belongs, or (no_out) an
    nn.Linear without its out_features."""

    def __init__(self, config):
        super().__init__()
        head_dim = config.hidden_size / config.num_attention_heads  # 4.0
        if getattr(config, "no_out", False):
            nn.Linear(config.hidden_size)
        self.q = nn.Linear(config.hidden_size, head_dim)


def test_a_float_size_inside_init_names_floor_division():
    with pytest.raises(TypeError, match=r"SplitWithSlash.*use // .*d // h"):
        SplitWithSlash(config())
    with pytest.raises(TypeError, match="out_features"):  # passed on as is
        SplitWithSlash(SimpleNamespace(**vars(config()), no_out=True))


def test_a_batched_layer_unlike_the_loop_is_told_where_to_look():
    weights, out = torch.rand(1, 2, 3, 3), torch.rand(1, 3, 4)
    check_like_loop(weights, weights + 1e-8, out, out)  # rounding passes
    with pytest.raises(ValueError, match="split into heads"):
        check_like_loop(weights, weights.transpose(-2, -1) + 1, out, out)
    with pytest.raises(ValueError, match="split into heads"):
        check_like_loop(weights, weights[:, :1], out, out)  # a lost head
    with pytest.raises(ValueError, match="weights agree but the outputs"):
        check_like_loop(weights, weights, out, out + 0.1)


def test_padding_that_reaches_the_real_tokens_names_padding_mask():
    real = torch.rand(3, 4)
    assert check_padding_ignored(real, real + 1e-8) < 1e-6  # rounding
    assert check_padding_ignored(real[:0], real[:0]) == 0.0  # no tokens
    with pytest.raises(ValueError, match="differ by 1.0e-02.*padding_mask"):
        check_padding_ignored(real, real + 0.01)


def test_check_through_w_o_wants_the_heads_mixed_by_the_output_map():
    from mhabook.layers import MultiHeadAttention

    config = BertConfig(hidden_size=8, num_attention_heads=2)
    layer, x = MultiHeadAttention(config), torch.randn(1, 3, 8)
    output, _ = layer(x)
    heads = [head(x)[0] for head in layer.heads]  # (1, 3, 4) each
    blocks = layer.output_linear.weight.T.split(4)  # 2 x (4, 8)
    summed = sum(z @ w for z, w in zip(heads, blocks))
    summed = summed + layer.output_linear.bias
    check_through_w_o(summed, output)  # the layer as taught
    concat = torch.cat(heads, -1)  # W^O left out
    with pytest.raises(ValueError, match=r"up to .*return self\.output"):
        check_through_w_o(summed, concat)
    with pytest.raises(ValueError, match=r"\(1, 3, 4\), its heads'"):
        check_through_w_o(summed, heads[0])
