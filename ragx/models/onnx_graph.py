"""Build the ONNX graph of a BERT encoder straight from its safetensors weights (no torch).

The graph is the same contract as the PyTorch export in :mod:`ragx.models.onnx_export`: inputs
``input_ids``, ``attention_mask``, ``token_type_ids`` (int64 ``[batch, sequence]``), output
``last_hidden_state`` (float32 ``[batch, sequence, hidden]``). Pooling and normalisation stay in the
engine (numpy), exactly as with the exported graph, so either file serves the engine unchanged.

Why build rather than export: the export needs torch + transformers (a ~1.5 GB install and 12-15 s on
first use) only to trace a graph whose every operation is known in advance. Writing that graph with
the ``onnx`` helper API takes about a second and needs only numpy and onnx, which is what
makes the torch-free ("light") install possible. The dev tests hold it to the torch export and to
sentence-transformers (cosine >= 0.9999 on varied texts).

Supported: ``model_type == "bert"`` with absolute positions and (erf) GELU — every MiniLM / BERT
sentence-transformers checkpoint of that family. Anything else raises :class:`UnsupportedModel` and the
caller falls back to the torch export.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["UnsupportedModel", "build_bert_onnx", "supports"]

# Opset 17: LayerNormalization is a single op; GELU is written out with Erf (onnxruntime fuses both).
OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "last_hidden_state"
# The additive mask value HF's eager attention uses for padded keys (torch.finfo(float32).min).
MASK_VALUE = float(np.finfo(np.float32).min)


class UnsupportedModel(ValueError):
    """The model directory is not a BERT encoder this builder can write."""


def _config(model_dir: Path) -> dict[str, Any]:
    with open(model_dir / "config.json", encoding="utf-8") as fh:
        return json.load(fh)


def supports(model_dir: str | Path) -> bool:
    """Whether :func:`build_bert_onnx` can build this model (checks config.json only)."""
    try:
        _check(_config(Path(model_dir)))
    except (UnsupportedModel, OSError, ValueError):
        return False
    return True


def _check(cfg: dict[str, Any]) -> None:
    problems = []
    if cfg.get("model_type") != "bert":
        problems.append(f"model_type {cfg.get('model_type')!r}")
    if cfg.get("hidden_act", "gelu") != "gelu":
        problems.append(f"hidden_act {cfg.get('hidden_act')!r}")
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        problems.append(f"position_embedding_type {cfg.get('position_embedding_type')!r}")
    if problems:
        raise UnsupportedModel("not a plain BERT encoder: " + ", ".join(problems))


class _Weights:
    """Tensors by their BertModel name, with or without a leading ``bert.`` (BertFor* checkpoints)."""

    def __init__(self, path: Path):
        from .bert_numpy import mapped_tensors

        self._t = mapped_tensors(path)
        self._prefix = "bert." if "bert.embeddings.word_embeddings.weight" in self._t else ""

    def __call__(self, name: str) -> np.ndarray:
        try:
            return np.asarray(self._t[self._prefix + name], dtype=np.float32)
        except KeyError:
            raise UnsupportedModel(f"weights lack {self._prefix + name}") from None


class _GraphWriter:
    """Accumulates nodes and initializers; names are unique by construction."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, kind: str, inputs: list[str], **attrs: Any) -> str:
        self._n += 1
        out = f"{kind.lower()}_{self._n}"
        self.nodes.append(self.helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out

    def linear(self, x: str, w: np.ndarray, b: np.ndarray, name: str) -> str:
        """x @ w.T + b, with w stored pre-transposed (torch Linear keeps [out, in])."""
        y = self.op("MatMul", [x, self.const(f"{name}.wT", w.T)])
        return self.op("Add", [y, self.const(f"{name}.b", b)])

    def layer_norm(self, x: str, gamma: np.ndarray, beta: np.ndarray, eps: float, name: str) -> str:
        g, b = self.const(f"{name}.g", gamma), self.const(f"{name}.beta", beta)
        return self.op("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)


def _embeddings(g: _GraphWriter, w: _Weights, eps: float) -> str:
    word = g.op("Gather", [g.const("word_emb", w("embeddings.word_embeddings.weight")), "input_ids"])
    kind = g.op("Gather", [g.const("type_emb", w("embeddings.token_type_embeddings.weight")), "token_type_ids"])
    # Positions 0..S-1 of the batch's sequence length, broadcast over the batch.
    # The first S rows of the position table (1-D slice bounds throughout: onnxruntime's optimiser
    # mishandles a scalar sequence length fed to Range).
    zero, one = g.const("zero_1d", np.array([0], np.int64)), g.const("one_1d", np.array([1], np.int64))
    seq = g.op("Slice", [g.op("Shape", ["input_ids"]), one, g.const("two_1d", np.array([2], np.int64))])
    pos = g.op("Slice", [g.const("pos_emb", w("embeddings.position_embeddings.weight")), zero, seq, zero])
    total = g.op("Add", [g.op("Add", [word, kind]), pos])
    return g.layer_norm(total, w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"), eps, "emb_ln")


def _mask_bias(g: _GraphWriter) -> str:
    """[batch, 1, 1, seq] additive bias: 0 for real tokens, MASK_VALUE for padding."""
    m = g.op("Cast", ["attention_mask"], to=1)  # float32
    inv = g.op("Sub", [g.const("one_f", np.array(1.0, np.float32)), m])
    bias = g.op("Mul", [inv, g.const("mask_value", np.array(MASK_VALUE, np.float32))])
    return g.op("Unsqueeze", [bias, g.const("axes_1_2", np.array([1, 2], np.int64))])


def _attention(g: _GraphWriter, w: _Weights, x: str, bias: str, i: int, heads: int, head_dim: int) -> str:
    p = f"encoder.layer.{i}.attention."
    split = g.const(f"l{i}.split", np.array([0, 0, heads, head_dim], np.int64))

    def project(part: str, perm: list[int]) -> str:
        y = g.linear(x, w(p + f"self.{part}.weight"), w(p + f"self.{part}.bias"), f"l{i}.{part}")
        return g.op("Transpose", [g.op("Reshape", [y, split])], perm=perm)

    q = project("query", [0, 2, 1, 3])  # [B, h, S, d]
    k = project("key", [0, 2, 3, 1])    # [B, h, d, S]
    v = project("value", [0, 2, 1, 3])
    scale = g.const(f"l{i}.scale", np.array(1.0 / np.sqrt(head_dim), np.float32))
    scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
    ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    merged = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]),
                              g.const(f"l{i}.merge", np.array([0, 0, heads * head_dim], np.int64))])
    return g.linear(merged, w(p + "output.dense.weight"), w(p + "output.dense.bias"), f"l{i}.attn_out")


def _layer(g: _GraphWriter, w: _Weights, x: str, bias: str, i: int, cfg: dict[str, Any]) -> str:
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    heads = int(cfg["num_attention_heads"])
    p = f"encoder.layer.{i}."
    attn = _attention(g, w, x, bias, i, heads, int(cfg["hidden_size"]) // heads)
    x = g.layer_norm(g.op("Add", [attn, x]), w(p + "attention.output.LayerNorm.weight"),
                     w(p + "attention.output.LayerNorm.bias"), eps, f"l{i}.ln1")
    h = g.linear(x, w(p + "intermediate.dense.weight"), w(p + "intermediate.dense.bias"), f"l{i}.inter")
    # Exact GELU: 0.5 * h * (1 + erf(h / sqrt(2))).
    erf = g.op("Erf", [g.op("Div", [h, g.const(f"l{i}.sqrt2", np.array(np.sqrt(2.0), np.float32))])])
    gelu = g.op("Mul", [g.op("Mul", [h, g.const(f"l{i}.half", np.array(0.5, np.float32))]),
                        g.op("Add", [erf, "one_f"])])
    out = g.linear(gelu, w(p + "output.dense.weight"), w(p + "output.dense.bias"), f"l{i}.out")
    return g.layer_norm(g.op("Add", [out, x]), w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias"),
                        eps, f"l{i}.ln2")


def build_bert_onnx(model_dir: str | Path, out_path: str | Path) -> dict[str, Any]:
    """Write the encoder of ``model_dir`` as an ONNX graph at ``out_path``; returns provenance."""
    import onnx
    from onnx import TensorProto, helper

    model_dir = Path(model_dir)
    cfg = _config(model_dir)
    _check(cfg)
    w = _Weights(model_dir / "model.safetensors")
    g = _GraphWriter()
    x = _embeddings(g, w, float(cfg.get("layer_norm_eps", 1e-12)))
    bias = _mask_bias(g)
    for i in range(int(cfg["num_hidden_layers"])):
        x = _layer(g, w, x, bias, i, cfg)
    g.nodes.append(helper.make_node("Identity", [x], [OUTPUT_NAME], name="output"))
    dims = ["batch", "sequence"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in INPUT_NAMES]
    output = helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [*dims, int(cfg["hidden_size"])])
    graph = helper.make_graph(g.nodes, "bert_encoder", inputs, [output], initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="ragx")
    # No onnx.checker here: it serialises the 90 MB model once more; the tests check the graph, and
    # onnxruntime validates it on load (a file it rejects is rebuilt once, see EmbeddedEmbedder).
    onnx.save(model, str(out_path))
    return {"builder": "onnx-helper", "onnx": onnx.__version__}
