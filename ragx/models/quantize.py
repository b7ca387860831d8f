"""The int8 variant of an exported embedding graph (``embeddings.precision = "int8"``).

onnxruntime's dynamic quantisation (``onnxruntime.quantization.quantize_dynamic``): the weights of
the MatMul/Gemm nodes are stored as int8 and activations are quantised per batch at run time, so the
file is about a quarter of the fp32 one and CPU inference is faster, at a small cost in vector
fidelity. Weights are quantised per output channel: per-tensor scales cost MiniLM far more (mean
cosine to the fp32 vectors 0.934 against 0.994 on 64 SciFact abstracts). It is built once from the verified fp32 export and cached beside it, named after that
file: another model or another export (another fingerprint) gets its own int8 file. The build runs
under the export's lock and publishes by rename, so a reader never loads half a file.

Activations are scaled per batch, so in a batch a text's int8 vector would depend slightly on the other
texts and the padding (cosine 0.989 at worst between alone and in a batch of 16): the embedded engine
therefore runs int8 documents one text at a time, which measured as fast as batches of 16.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from .onnx_export import ExportError, _exclusive_lock

__all__ = ["ensure_int8", "int8_path"]


def int8_path(fp32_path: str | os.PathLike[str]) -> Path:
    path = Path(fp32_path)
    return path.with_name(path.stem + ".int8.onnx")


def ensure_int8(fp32_path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Path of the int8 graph quantised from ``fp32_path``, quantising it first if needed."""
    out = int8_path(fp32_path)
    if not force and out.is_file() and out.stat().st_size > 0:
        return out
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # onnxruntime.quantization imports the onnx package
        raise ExportError('embeddings.precision = "int8" needs the onnx package: pip install onnx') from exc
    with _exclusive_lock(out.with_suffix(".lock")):
        if not force and out.is_file() and out.stat().st_size > 0:
            return out  # quantised by another process while we waited
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        try:
            with _quiet_root_logger():  # onnxruntime advises pre-processing on the root logger, once per call
                quantize_dynamic(os.fspath(fp32_path), os.fspath(tmp), weight_type=QuantType.QInt8, per_channel=True)
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)
    return out


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    import logging  # only while quantising

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)
