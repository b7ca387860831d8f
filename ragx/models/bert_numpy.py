"""A BERT encoder forward pass in numpy over memory-mapped safetensors: the cold-query path.

A one-shot `ragx query` embeds one short text. Through onnxruntime that costs its import plus a
session over the 90 MB graph (~0.25-0.5 s on these machines) before the ~4 ms of inference; here the
weights are memory-mapped (nothing is read but the pages touched: the query's rows of the embedding
table and the layer matrices, from the page cache) and the same arithmetic runs in numpy in a few
milliseconds. It computes exactly what the ONNX graph of :mod:`ragx.models.onnx_graph` computes
(tests hold the two to 1e-5), so a query embedded here ranks like one embedded by onnxruntime.
Batches (indexing) stay on onnxruntime, which is faster there.

Only the architecture :func:`ragx.models.onnx_graph.supports` accepts (plain BERT, absolute
positions, erf GELU) is served; the engine falls back to onnxruntime for anything else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}


def mapped_tensors(path: Path) -> dict[str, np.ndarray]:
    """Zero-copy views of every tensor of a safetensors file (an 8-byte header length, a JSON header,
    then raw little-endian data at the header's offsets)."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    n = int(raw[:8].view("<u8")[0])
    header = json.loads(bytes(raw[8 : 8 + n]))
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(meta["dtype"])
        if dtype is None:
            raise ValueError(f"unsupported tensor dtype {meta['dtype']} for {name}")
        start, end = meta["data_offsets"]
        tensor = raw[base + start : base + end].view(np.dtype(dtype).newbyteorder("<")).reshape(meta["shape"])
        # A header whose length is not a multiple of 4 leaves the data unaligned, and BLAS refuses
        # unaligned matrices (numpy then multiplies ~100x slower): copy those, except the embedding
        # table, of which a query gathers a few rows only.
        out[name] = tensor if tensor.flags.aligned or "word_embeddings" in name else np.array(tensor)
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7: below float32 resolution here)."""
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1.0 - poly * np.exp(-x * x))


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


class NumpyBert:
    """`hidden(ids)`: the last hidden state (seq, hidden) of one unpadded token sequence."""

    def __init__(self, model_dir: str | Path):
        model_dir = Path(model_dir)
        with open(model_dir / "config.json", encoding="utf-8") as fh:
            cfg: dict[str, Any] = json.load(fh)
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self._t = mapped_tensors(model_dir / "model.safetensors")
        self._prefix = "bert." if "bert.embeddings.word_embeddings.weight" in self._t else ""

    def _w(self, name: str) -> np.ndarray:
        return self._t[self._prefix + name]

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self._w(name + ".weight").T + self._w(name + ".bias")

    def hidden(self, ids: np.ndarray) -> np.ndarray:
        w = self._w
        n = len(ids)
        x = w("embeddings.word_embeddings.weight")[ids] + w("embeddings.position_embeddings.weight")[:n]
        x = x + w("embeddings.token_type_embeddings.weight")[0]
        x = _layer_norm(x, w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"), self.eps)
        for i in range(self.layers):
            x = self._block(x, f"encoder.layer.{i}.")
        return x.astype(np.float32, copy=False)

    def _block(self, x: np.ndarray, p: str) -> np.ndarray:
        n, width = x.shape
        d = width // self.heads

        def heads(part: str) -> np.ndarray:
            return self._linear(x, p + f"attention.self.{part}").reshape(n, self.heads, d).transpose(1, 0, 2)

        q, k, v = heads("query"), heads("key"), heads("value")
        scores = (q @ k.transpose(0, 2, 1)) * np.float32(1.0 / np.sqrt(d))
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(n, width)
        attn = self._linear(ctx, p + "attention.output.dense")
        x = _layer_norm(attn + x, self._w(p + "attention.output.LayerNorm.weight"),
                        self._w(p + "attention.output.LayerNorm.bias"), self.eps)
        h = self._linear(x, p + "intermediate.dense")
        h = (0.5 * h * (1.0 + _erf(h.astype(np.float64) / np.sqrt(2.0)))).astype(np.float32)  # exact GELU
        out = self._linear(h, p + "output.dense")
        return _layer_norm(out + x, self._w(p + "output.LayerNorm.weight"), self._w(p + "output.LayerNorm.bias"), self.eps)
