"""Late chunking (issue 13): a chunk's vector pooled from its own tokens after the model has read them
in the context of their file, instead of alone.

Today each 200-token chunk is embedded on its own: a note's third section does not know what the note
is about, an abstract's second half does not know its first. The whole-file window (chunk-size and
file-window studies) gave the context but lost the chunk's detail in one vector. Late chunking keeps
one vector per chunk and gives it the context: the file's chunks are read together, in windows of up
to 512 tokens (the bundled weights' position table; [CLS] + the file's header + as many whole chunks,
in order, as fit + [SEP]), and each chunk's vector is the normalised mean of the last hidden states at
its own tokens. No new model, the same ONNX graph; the index would hold the same number of vectors.

A candidate's dense signal becomes (1 - a) * its chunk cosine + a * its late-chunk cosine; a = 1 is
the late vectors alone. The candidates are the shipped defaults' pass (dense 100 + BM25 100 seeds,
graph off), scored with the shipped defaults: equal candidates by construction.

    RAGX_CACHE_DIR=... python research/2026-12-01-late-chunking.py study dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-01-late-chunking.py study dendron-vault-test scifact-test cranfield-test musique-small-test  # once, after choosing on train
    RAGX_CACHE_DIR=... python research/2026-12-01-late-chunking.py compare a0.5 <splits>
    RAGX_CACHE_DIR=... python research/2026-12-01-late-chunking.py pooled a0.5 <four test splits>

Late vectors are cached per collection index in $RAGX_CACHE_DIR/research-prf/late-<collection>.npz;
per-query results go to $RAGX_CACHE_DIR/research-prf/late-chunking-results.json.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from lab.passes import index_fingerprint
from lab.studies import harness
from lab.studies.harness import dense_mixes, run_command, studied
from ragx.models.onnx_graph import OUTPUT_NAME

GRID = (0.25, 0.5, 0.75, 1.0)  # fixed before the first run, as the sentence study's
WINDOW = 512  # the bundled weights' position embeddings
BATCH = 8
RESULTS = harness.OUT / "late-chunking-results.json"


def file_windows(order: np.ndarray, file_ids: np.ndarray, tokens: list[list[int]], header_of: dict[int, list[int]],
                 cls: int, sep: int) -> list[tuple[list[int], list[tuple[int, int, int]]]]:
    """Windows of whole chunks of one file, in order: (token ids, [(chunk row, start, end)]). A window is
    [CLS] header chunk chunk ... [SEP]; a chunk that does not fit beside the header alone is cut."""
    windows: list[tuple[list[int], list[tuple[int, int, int]]]] = []
    current: list[int] = []
    spans: list[tuple[int, int, int]] = []
    for row in order:
        header = header_of.get(int(file_ids[row]), [])[: WINDOW // 4]
        own = tokens[row][: WINDOW - 2 - len(header)]
        if not current or len(current) + len(own) + 1 > WINDOW:
            if current:
                windows.append((current + [sep], spans))
            current, spans = [cls, *header], []
        spans.append((int(row), len(current), len(current) + len(own)))
        current = current + own
    if current:
        windows.append((current + [sep], spans))
    return windows


def late_vectors(coll: str, corpus) -> tuple[np.ndarray, np.ndarray]:
    """Every chunk's id (sorted) and its late-chunked vector, cached per index fingerprint."""
    cache = harness.OUT / f"late-{coll}.npz"
    fingerprint = json.dumps(index_fingerprint(corpus), sort_keys=True, default=str)
    if cache.exists():
        z = np.load(cache)
        if str(z["index"]) == fingerprint:
            return z["ids"], z["V"]
    store = corpus.searcher.store
    ids, file_ids, ordinals, texts = store.every_chunk()
    header_text = dict(store.db.execute(
        "SELECT c.file_id, h.header FROM chunk_headers h JOIN chunks c ON c.id = h.chunk_id GROUP BY c.file_id").fetchall())
    embedder = corpus.embedder
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(embedder.model_dir / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    tokens = [e.ids for e in tok.encode_batch(list(texts), add_special_tokens=False)]
    header_of = {f: e.ids for f, e in zip(header_text, tok.encode_batch(list(header_text.values()), add_special_tokens=False))}
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    by_file = np.lexsort((ordinals, file_ids))
    bounds = np.flatnonzero(np.r_[True, file_ids[by_file][1:] != file_ids[by_file][:-1], True])
    windows = [w for s, e in zip(bounds[:-1], bounds[1:]) for w in file_windows(by_file[s:e], file_ids, tokens, header_of, cls, sep)]
    windows.sort(key=lambda w: -len(w[0]))
    session = embedder._get_session()
    vectors = np.zeros((len(ids), embedder.dim), dtype=np.float32)
    # Check of the windows' arithmetic: a window holding one whole chunk, pooled over all its tokens, is
    # exactly what indexing embedded for that chunk (header, blank line, text), so it must reproduce the
    # stored vector.
    alone = np.zeros_like(vectors)
    started = time.perf_counter()
    for start in range(0, len(windows), BATCH):
        batch = windows[start : start + BATCH]
        width = len(batch[0][0])
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for j, (w, _spans) in enumerate(batch):
            input_ids[j, : len(w)] = w
            mask[j, : len(w)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in embedder._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = session.run([OUTPUT_NAME], feeds)[0]
        for j, (w, spans) in enumerate(batch):
            for row, s, e in spans:
                vectors[row] = hidden[j, s:max(e, s + 1)].mean(axis=0)
            if len(spans) == 1 and len(w) <= embedder.max_tokens:
                alone[spans[0][0]] = hidden[j, : len(w)].mean(axis=0)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    checked = np.flatnonzero(np.abs(alone).sum(axis=1) > 0)
    corpus.searcher.refresh()
    snap = corpus.searcher.snapshot
    stored = np.asarray(snap.vectors[np.arange(len(snap.ids))])[np.argsort(snap.ids)][np.searchsorted(np.sort(snap.ids), ids[checked])]
    alone = alone[checked] / np.linalg.norm(alone[checked], axis=1, keepdims=True)
    print(f"{coll}: {len(checked)} one-chunk windows reproduce the stored vectors to {np.abs(alone - stored).max():.2e}", flush=True)
    print(f"{coll}: {len(ids)} chunks in {len(windows)} windows, late-embedded in {time.perf_counter() - started:.0f} s", flush=True)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, ids=ids, V=vectors, index=np.array(fingerprint))
    return ids, vectors


def study(specs: list[str]) -> None:
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        coll, corpus, passes, meta, qv, p = loaded
        ids, vectors = late_vectors(coll, corpus)
        late = [(vectors[np.searchsorted(ids, c.nodes)] @ qv[c.qid]).astype(np.float32) for c in passes]
        dense_mixes(spec, loaded, base, per_variant, late, GRID)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
