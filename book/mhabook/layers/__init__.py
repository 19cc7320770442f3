"""The layers the chapter teaches, one module per page that teaches them.

Every module here is generated from its notebook's `# @save` cells by
`make lib` (tests/tools/make_lib.py): edit the notebook, not these files.
"""

from .all_heads import (
    AttentionConfig,
    AttentionLayer,
    BatchedMultiHeadAttention,
    batched_from_bert,
    batched_from_loop,
    causal_mask,
    check_mask,
    copy_checked,
    loop_from_batched,
    padding_mask,
)
from .heads_needed import heads_removed, zero_heads_hook
from .many_heads import MultiHeadAttention, head_dim_for, pointer_head
from .one_head import AttentionHead, scaled_dot_product_attention
from .sharing_kv import GroupedAttentionConfig, GroupedQueryAttention, KVCache

__all__ = [
    "AttentionConfig",
    "AttentionHead",
    "AttentionLayer",
    "BatchedMultiHeadAttention",
    "batched_from_bert",
    "batched_from_loop",
    "check_mask",
    "copy_checked",
    "loop_from_batched",
    "GroupedAttentionConfig",
    "GroupedQueryAttention",
    "KVCache",
    "MultiHeadAttention",
    "causal_mask",
    "head_dim_for",
    "heads_removed",
    "padding_mask",
    "pointer_head",
    "scaled_dot_product_attention",
    "zero_heads_hook",
]
