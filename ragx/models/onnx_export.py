"""One-time export of a Hugging Face encoder to ONNX, and the on-disk cache that holds it.

Layout under the cache directory (``$RAGX_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragx``, else
``~/.cache/ragx``)::

    fingerprints/<16 hex of the model directory path>.json   memo: (size, mtime_ns) of the weight
                                                             files -> their sha256
    onnx/<model-name>-<16 hex of the weights sha256>.onnx     the exported graph
    onnx/<model-name>-<16 hex>.onnx.json                      sidecar: export format, size and
                                                             digest of the .onnx
    onnx/<model-name>-<16 hex>.lock                           serialises exporters (POSIX flock)

Why this design
---------------
*The weights fingerprint* (sha256 over ``config.json`` and ``model.safetensors``) names the ONNX
file and goes into the embedder's identity, so a changed model can never be served by a stale
export. Hashing 90 MB costs ~50-100 ms, too much to pay on every one-shot CLI query, so the digest
is memoised against the files' ``(size, mtime_ns)``: a query start then costs two ``stat`` calls
and one small JSON read. The memo is keyed by the model directory's resolved path (one small file
per model directory, so concurrent writers for different models never contend). Hashing only once
at export and keeping the result beside the ONNX file would not suffice: the file *name* must be
derived from the weights before we know which file to open, so a ``stat -> hash`` memo is needed
anyway. sha256 (not xxhash) because the value is a portable identity stored in index manifests;
it is computed once per model version.

*The sidecar* records the export format, the exact byte size and a fast digest (xxh3-128 when the
``xxhash`` module is installed, else sha256) of the ONNX file. Loading checks size and digest,
over an ``mmap`` of the file (~10 ms with xxh3 for 90 MB once the file is in the page cache, which
onnxruntime then reuses), so truncation *and* in-place corruption are caught before onnxruntime
ever sees the file; any mismatch triggers a fresh export. A bumped :data:`EXPORT_FORMAT` (changed
wrapper, opset, ...) invalidates old exports the same way.

*Writes are atomic*: the export goes to a unique temporary file in the same directory, is
checked (the torch export against PyTorch), fsync'ed and ``os.replace``'d into place; the sidecar is
written the same way afterwards and is deleted before a re-export replaces the ONNX file. A crash
at any point therefore leaves either no entry, an ONNX file without a (valid) sidecar -- which is
treated as missing -- or a complete verified pair. Exporters of the same model are serialised by
an exclusive ``flock``; a process that waits for the lock re-checks the cache and reuses the
winner's file instead of exporting again. Readers take no lock.

A BERT encoder (the bundled model) is not exported but built from its weights by
:mod:`ragx.models.onnx_graph` (numpy + onnx, no torch); :func:`export_onnx` (torch + transformers,
imported only inside it) serves other architectures and is the reference the dev tests compare the
built graph with. Everything else here needs only the standard library.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import re
import sys
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..atomic import replacing

__all__ = [
    "EXPORT_FORMAT",
    "OPSET",
    "ExportError",
    "cached_onnx_is_valid",
    "default_cache_dir",
    "ensure_onnx",
    "export_onnx",
    "model_fingerprint",
    "onnx_cache_path",
]

#: Bump when the exported graph changes for the same weights (wrapper, opset, attention path...).
#: 2: BERT encoders are built from their weights by :mod:`ragx.models.onnx_graph` (no torch).
EXPORT_FORMAT = 2
#: ONNX opset of the export.
OPSET = 17

#: Files whose bytes define the exported graph, in hashing order.
WEIGHT_FILES = ("config.json", "model.safetensors")

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "last_hidden_state"

# Largest |onnx - torch| accepted on the export self-check (float32 noise is ~1e-6).
_MAX_EXPORT_DIFF = 1e-3


class ExportError(RuntimeError):
    """The ONNX export (or the cache it is written to) failed."""


# --------------------------------------------------------------------------------------------
# Cache location and small atomic-file helpers
# --------------------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """``$RAGX_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragx``, else ``~/.cache/ragx``.

    Read from the environment on every call (not at import), so tests and callers can change it.
    """
    explicit = os.environ.get("RAGX_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "ragx"
    return Path.home() / ".cache" / "ragx"


def _safe_stem(name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return stem or "model"


def _write_atomic(path: Path, data: bytes) -> None:
    import tempfile  # writes are rare (a new model, a new fingerprint memo): not on a query's path

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with replacing(path, Path(tmp)), os.fdopen(fd, "wb") as fh:
        os.chmod(tmp, 0o644)  # mkstemp's 0600 is needlessly private for a cache
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as fh:
            obj = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock on ``path`` (POSIX ``flock``; a no-op where unavailable)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: atomic replace still keeps files whole
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------------
# Digests
# --------------------------------------------------------------------------------------------


def _file_digest(path: Path, algo: str) -> str:
    """Digest of a whole file through ``mmap`` (no copy into Python memory)."""
    if algo == "xxh3_128":
        import xxhash

        h: Any = xxhash.xxh3_128()
    elif algo == "sha256":
        h = hashlib.sha256()
    else:
        raise ValueError(f"unknown digest algorithm {algo!r}")
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size:
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                h.update(mm)
    return h.hexdigest()


def _fast_digest_algo() -> str:
    try:
        import xxhash  # noqa: F401
    except ImportError:
        return "sha256"
    return "xxh3_128"


def _weights_stat(model_dir: Path, files: tuple[str, ...] = WEIGHT_FILES) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for name in files:
        st = os.stat(model_dir / name)
        out[name] = [st.st_size, st.st_mtime_ns]
    return out


def _hash_weights(model_dir: Path, files: tuple[str, ...] = WEIGHT_FILES) -> str:
    h = hashlib.sha256()
    for name in files:
        path = model_dir / name
        size = os.path.getsize(path)
        # Frame each file (name, length) so that moving bytes between files changes the digest.
        h.update(name.encode() + b"\0" + size.to_bytes(8, "little"))
        with open(path, "rb") as fh:
            if size:
                with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    h.update(mm)
    return h.hexdigest()


def model_fingerprint(
    model_dir: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None, files: tuple[str, ...] = WEIGHT_FILES
) -> str:
    """sha256 (hex) over ``files`` of ``model_dir`` (default ``config.json`` and ``model.safetensors``), memoised.

    The memo lives in ``<cache>/fingerprints/`` and is trusted while every file keeps its size
    and mtime. If the cache directory is not writable the digest is simply recomputed each time.
    Another file list (the reranker's identity) gets its own memo file.
    """
    model_dir = Path(model_dir).resolve()
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    try:
        stat = _weights_stat(model_dir, files)
    except FileNotFoundError as exc:
        raise ExportError(f"model directory {model_dir} lacks {Path(exc.filename).name}") from exc
    memo_name = str(model_dir) if files == WEIGHT_FILES else "\0".join((str(model_dir), *files))
    key = hashlib.sha256(memo_name.encode()).hexdigest()[:16]
    memo_path = cache / "fingerprints" / f"{key}.json"
    memo = _read_json(memo_path)
    if (
        memo is not None
        and memo.get("dir") == str(model_dir)
        and memo.get("files") == stat
        and isinstance(memo.get("sha256"), str)
        and len(memo["sha256"]) == 64
    ):
        return memo["sha256"]
    digest = _hash_weights(model_dir, files)
    # Only record the digest if the files did not change while we were hashing them.
    if _weights_stat(model_dir, files) == stat:
        record = {"dir": str(model_dir), "files": stat, "sha256": digest}
        with contextlib.suppress(OSError):
            _write_atomic(memo_path, json.dumps(record, indent=1).encode())
    return digest


# --------------------------------------------------------------------------------------------
# The cache entry
# --------------------------------------------------------------------------------------------


def onnx_cache_path(model_name: str, fingerprint: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<cache>/onnx/<model-name>-<16 hex of fingerprint>.onnx``."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return cache / "onnx" / f"{_safe_stem(model_name)}-{fingerprint[:16]}.onnx"


def _sidecar_path(onnx_path: Path) -> Path:
    return onnx_path.with_name(onnx_path.name + ".json")


def cached_onnx_is_valid(onnx_path: str | os.PathLike[str], fingerprint: str) -> bool:
    """True if ``onnx_path`` and its sidecar form a complete export of these weights in the
    current :data:`EXPORT_FORMAT`, with the recorded size and digest."""
    onnx_path = Path(onnx_path)
    meta = _read_json(_sidecar_path(onnx_path))
    if meta is None:
        return False
    if meta.get("format") != EXPORT_FORMAT or meta.get("weights_sha256") != fingerprint:
        return False
    try:
        if os.path.getsize(onnx_path) != meta.get("size"):
            return False
        return _file_digest(onnx_path, str(meta.get("digest_algo"))) == meta.get("digest")
    except (OSError, ValueError, ImportError):
        return False


def ensure_onnx(
    model_dir: str | os.PathLike[str],
    model_name: str,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    fingerprint: str | None = None,
    force: bool = False,
) -> Path:
    """Path of a verified ONNX export of ``model_dir``, exporting it first if needed.

    The fast path (valid cache entry) imports nothing heavy. ``force=True`` re-exports even if
    the entry looks valid (used when onnxruntime rejects a file that passed the checks).
    """
    model_dir = Path(model_dir).resolve()
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    fp = fingerprint or model_fingerprint(model_dir, cache)
    path = onnx_cache_path(model_name, fp, cache)
    if not force and cached_onnx_is_valid(path, fp):
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(
            f"cannot create the model cache directory {path.parent} ({exc}); "
            "set RAGX_CACHE_DIR to a writable directory"
        ) from exc
    with _exclusive_lock(path.with_suffix(".lock")):
        # Someone else may have finished the export while we waited for the lock.
        if not force and cached_onnx_is_valid(path, fp):
            return path
        _remove_stale_temporaries(path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_sidecar_path(path))
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        with replacing(path, tmp):
            info = _convert(model_dir, model_name, tmp)
            algo = _fast_digest_algo()
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            meta = {
                "format": EXPORT_FORMAT,
                "opset": OPSET,
                "model": model_name,
                "model_dir": str(model_dir),
                "weights_sha256": fp,
                "size": os.path.getsize(tmp),
                "digest_algo": algo,
                "digest": _file_digest(tmp, algo),
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **info,
            }
        _write_atomic(_sidecar_path(path), json.dumps(meta, indent=1).encode())
    return path


def _say(message: str) -> None:
    """One line on stderr (stdout carries results, or the MCP protocol)."""
    print(f"ragx: {message}", file=sys.stderr, flush=True)


def _convert(model_dir: Path, model_name: str, out_path: Path) -> dict[str, Any]:
    """Write the ONNX graph of ``model_dir`` once, saying what is happening and for how long.

    A BERT encoder (the bundled model) is built from its weights with numpy + onnx (~1-3 s, no
    torch); any other architecture is exported through PyTorch (~10-20 s, needs torch).
    """
    from . import onnx_graph

    if onnx_graph.supports(model_dir):
        how, eta, convert = "building its ONNX graph from the weights", "a few seconds", onnx_graph.build_bert_onnx
    else:
        how, eta, convert = "exporting it to ONNX with PyTorch", "10-20 seconds", export_onnx
    _say(f"first use of the embedding model {model_name}: {how} (one time, takes {eta}; "
         f"cached in {out_path.parent})")
    start = time.monotonic()
    info = convert(model_dir, out_path)
    _say(f"model ready in {time.monotonic() - start:.1f} s")
    return info


def _remove_stale_temporaries(path: Path) -> None:
    """Delete temporaries a crashed exporter of this entry left behind (we hold the lock, so no
    live exporter of this entry owns any)."""
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(OSError):
            tmp.unlink()


# --------------------------------------------------------------------------------------------
# The export itself (the only place that touches torch / transformers)
# --------------------------------------------------------------------------------------------


def export_onnx(model_dir: str | os.PathLike[str], out_path: str | os.PathLike[str]) -> dict[str, Any]:
    """Export the encoder in ``model_dir`` to ``out_path`` and check it against PyTorch.

    Graph: inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, ``[batch,
    sequence]``), output ``last_hidden_state`` (float32, ``[batch, sequence, hidden]``); legacy
    TorchScript exporter, opset :data:`OPSET`, constant folding on.

    Choices:

    * Eager attention (``attn_implementation="eager"``): the traced graph is the classic
      MatMul/Softmax attention that onnxruntime's graph optimiser handles well; it measured
      ~10 % faster under onnxruntime on CPU than the traced SDPA path (and no slower than an
      offline ``onnxruntime.transformers`` fusion, which we therefore skip).
    * Pooling and L2 normalisation stay *outside* the graph (done in numpy by the engine): the
      artifact remains a plain encoder whose output is checked 1:1 against PyTorch here, the
      pooling mode is read from the model's ``1_Pooling/config.json`` at run time rather than
      baked in, and the numpy cost (one batched matmul) is well under 1 % of inference time.
    * The dummy batch contains padding, so no "mask is all ones" shortcut can be traced in.

    Loads strictly offline (``local_files_only``, ``HF_HUB_OFFLINE=1`` for the duration).
    Returns a small dict of provenance recorded in the sidecar.
    """
    model_dir, out_path = Path(model_dir), Path(out_path)
    with _offline():
        try:
            import torch
            import transformers
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ExportError(f"exporting the embedded model to ONNX needs torch and transformers (one-time step; {exc})") from exc
        wrapper = _eager_encoder(model_dir)
        dummy = _dummy_batches(wrapper.encoder.config)
        _trace(wrapper, dummy(2, 16), out_path)
        ort_version, diff = _check_against_torch(wrapper, dummy(3, 37), out_path)
        if not diff <= _MAX_EXPORT_DIFF:
            raise ExportError(f"ONNX export of {model_dir} disagrees with PyTorch (max |diff| {diff:.3g})")
        return {"torch": torch.__version__, "transformers": transformers.__version__, "onnxruntime": ort_version,
                "export_max_abs_diff": diff}


@contextlib.contextmanager
def _offline() -> Iterator[None]:
    """Hugging Face libraries must not reach for the hub while exporting (these machines cannot)."""
    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _eager_encoder(model_dir: Path) -> Any:
    """The model with eager attention, wrapped so ONNX's positional inputs reach it by keyword."""
    import torch
    import transformers
    from transformers import AutoModel

    previous = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    try:
        model = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager")
    finally:
        transformers.logging.set_verbosity(previous)
        transformers.logging.enable_progress_bar()

    class _EncoderWrapper(torch.nn.Module):
        def __init__(self, encoder: torch.nn.Module) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    return _EncoderWrapper(model.eval()).eval()


def _dummy_batches(cfg: Any):
    """batch(rows, length) -> (ids, mask, types): random tokens, later rows padded more and more."""
    import torch

    gen = torch.Generator().manual_seed(1234)
    lo = min(1000, cfg.vocab_size - 1)

    def batch(rows: int, length: int) -> tuple[Any, Any, Any]:
        ids = torch.randint(lo, cfg.vocab_size, (rows, length), generator=gen, dtype=torch.long)
        mask = torch.ones((rows, length), dtype=torch.long)
        for row in range(1, rows):
            mask[row, max(2, length - row * (length // rows)):] = 0
        ids = ids * mask + int(cfg.pad_token_id or 0) * (1 - mask)
        return ids, mask, torch.zeros_like(ids)

    return batch


def _trace(wrapper: Any, inputs: tuple[Any, Any, Any], out_path: Path) -> None:
    import torch

    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper, inputs, str(out_path),
            input_names=list(INPUT_NAMES), output_names=[OUTPUT_NAME],
            dynamic_axes={name: axes for name in (*INPUT_NAMES, OUTPUT_NAME)},
            opset_version=OPSET, do_constant_folding=True, dynamo=False,
        )


def _check_against_torch(wrapper: Any, inputs: tuple[Any, Any, Any], out_path: Path) -> tuple[str, float]:
    """(onnxruntime version, largest |onnx - torch| over real tokens) on shapes the trace never saw."""
    import numpy as np
    import onnxruntime as ort
    import torch

    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(out_path), so, providers=["CPUExecutionProvider"])
    ids, mask, types = inputs
    with torch.no_grad():
        ref = wrapper(ids, mask, types).numpy()
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "token_type_ids": types.numpy()}
    declared = {i.name for i in sess.get_inputs()}  # a model that ignores token types (MPNet) loses that input in the trace
    got = sess.run([OUTPUT_NAME], {k: v for k, v in feeds.items() if k in declared})[0]
    return ort.__version__, float(np.abs(ref - got)[mask.numpy().astype(bool)].max())
