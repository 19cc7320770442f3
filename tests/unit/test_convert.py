"""mhabook.convert: every weight conversion keeps every number exactly.

Section 3 shows `batched_from_loop` and imports the rest from
book/mhabook/convert.py. Each round trip here must give back the very
tensors it started from (torch.equal, not allclose), and each conversion
must put head i's rows where the target layout expects them.
"""

import pytest
import torch
from torch import nn

from mhabook import MultiHeadAttention
from mhabook.convert import (
    batched_from_bert,
    copy_checked,
    loop_from_batched,
    torch_from_batched,
)
from mhabook.layers.all_heads import (
    AttentionConfig,
    BatchedMultiHeadAttention,
    batched_from_loop,
)
from tiny import tiny_bert

CONFIGS = [(12, 3), (8, 2), (6, 1)]


def state(module):
    return {k: v.clone() for k, v in module.state_dict().items()}


def assert_same(first, second):
    assert first.keys() == second.keys()
    for key in first:
        assert torch.equal(first[key], second[key]), key


def batched_sizes(batched):
    return batched.qkv.in_features, batched.num_heads


@pytest.fixture(params=CONFIGS, ids=lambda c: f"{c[0]}/{c[1]}")
def batched(request):
    torch.manual_seed(0)
    return BatchedMultiHeadAttention(AttentionConfig(*request.param))


def test_batched_to_loop_and_back_is_exact(batched):
    before = state(batched)
    assert_same(state(batched_from_loop(loop_from_batched(batched))), before)


def test_loop_to_batched_and_back_is_exact():
    torch.manual_seed(1)
    loop = MultiHeadAttention(AttentionConfig(12, 3))
    before = state(loop)
    assert_same(state(loop_from_batched(batched_from_loop(loop))), before)


def test_loop_from_batched_puts_head_i_rows_in_head_i(batched):
    h, d_k, d = batched.num_heads, batched.head_dim, batched.qkv.in_features
    loop = loop_from_batched(batched)
    blocks = batched.qkv.weight.view(3, h, d_k, d)  # (q/k/v, head, d_k, d)
    for i, head in enumerate(loop.heads):
        for n, part in enumerate((head.q, head.k, head.v)):
            assert torch.equal(part.weight, blocks[n, i])


def test_torch_from_batched_copies_every_number_and_back(batched):
    reference = torch_from_batched(batched)
    assert torch.equal(reference.in_proj_weight, batched.qkv.weight)
    assert torch.equal(reference.in_proj_bias, batched.qkv.bias)
    assert torch.equal(reference.out_proj.weight, batched.output_linear.weight)
    back = BatchedMultiHeadAttention(AttentionConfig(*batched_sizes(batched)))
    copy_checked(
        back,
        {
            "qkv.weight": reference.in_proj_weight,
            "qkv.bias": reference.in_proj_bias,
            "output_linear.weight": reference.out_proj.weight,
            "output_linear.bias": reference.out_proj.bias,
        },
    )
    assert_same(state(back), state(batched))


def test_batched_from_bert_stacks_query_key_value_rows():
    model = tiny_bert(hidden_size=12, num_attention_heads=3)
    attention = model.encoder.layer[0].attention
    ours = batched_from_bert(attention)
    q, k, v = ours.qkv.weight.split(12)
    assert torch.equal(q, attention.self.query.weight)
    assert torch.equal(k, attention.self.key.weight)
    assert torch.equal(v, attention.self.value.weight)
    assert torch.equal(ours.qkv.bias[24:], attention.self.value.bias)
    dense = attention.output.dense
    assert torch.equal(ours.output_linear.weight, dense.weight)
    assert torch.equal(ours.output_linear.bias, dense.bias)


def test_copy_checked_copies_nothing_when_a_shape_is_wrong():
    layer = nn.Linear(4, 2)
    before = state(layer)
    with pytest.raises(ValueError, match=r"weight: shape \(2, 5\)"):
        copy_checked(layer, {"weight": torch.zeros(2, 5), "bias": layer.bias})
    assert_same(state(layer), before)


def test_a_whole_bert_layer_is_refused_with_its_attention_named():
    layer = tiny_bert().encoder.layer[0]
    with pytest.raises(TypeError, match=r"pass a layer's \.attention"):
        batched_from_bert(layer)
