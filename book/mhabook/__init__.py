"""Helpers for the Multi-Head Attention chapter (re-exports only).

layers/       the layers the chapter teaches, generated from the notebooks
experiments/  what the pages measure on checkpoints and small models
views/        figures, the head explorer, BertViz, the live lab
"""

from .experiments.checkpoint import Checkpoint, load_checkpoint, load_tokenizer
from .layers import (
    AttentionHead,
    MultiHeadAttention,
    head_dim_for,
    heads_removed,
    pointer_head,
    scaled_dot_product_attention,
    zero_heads_hook,
)
from .views.explorer import head_explorer
from .views.glued import verdict
from .views.handmade import pronoun_heads
from .views.plotting import (
    PALETTE,
    attention_heatmap,
    attention_heatmaps,
    grid_heatmap,
    shape_flow,
    use_chapter_style,
)

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
    "verdict",
    "zero_heads_hook",
]
