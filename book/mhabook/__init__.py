"""Helpers for the Multi-Head Attention chapter (re-exports only)."""

from .checkpoint import Checkpoint, load_checkpoint, load_tokenizer
from .explorer import head_explorer
from .heads import pointer_head, pronoun_heads
from .layers import (
    AttentionHead,
    MultiHeadAttention,
    head_dim_for,
    scaled_dot_product_attention,
)
from .plotting import (
    PALETTE,
    attention_heatmap,
    attention_heatmaps,
    grid_heatmap,
    shape_flow,
    use_chapter_style,
)
from .pruning import heads_removed, zero_heads_hook

__all__ = [
    "PALETTE",
    "AttentionHead",
    "Checkpoint",
    "MultiHeadAttention",
    "attention_heatmap",
    "attention_heatmaps",
    "grid_heatmap",
    "head_explorer",
    "heads_removed",
    "head_dim_for",
    "load_checkpoint",
    "load_tokenizer",
    "pointer_head",
    "pronoun_heads",
    "scaled_dot_product_attention",
    "shape_flow",
    "use_chapter_style",
    "zero_heads_hook",
]
