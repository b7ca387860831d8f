"""The chunk x term count matrix behind community labels, cached across index runs.

Counting words and word pairs over every chunk costs seconds on a corpus of ten thousand chunks, far
more than an incremental run otherwise takes. So the matrix is kept in `.ragx/label-terms.npz`, one
row per chunk, keyed by chunk id AND a hash of the chunk's text (a row is reused only for the very
same text, so a rolled-back run that hands an id out again cannot poison it; a missing, unreadable or
damaged file only costs a recount, and `ragx index --full` starts without it). New chunks are counted
against the cached vocabulary; the vocabulary is fitted again (terms.py) when fewer than REFIT_SHARE
of the live chunks were counted under it. (Labels computed from a partly transformed matrix can
differ from a fresh fit's in terms that only new chunks use; those enter at the next refit.)
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from ..lookup import find_sorted
from ..text_keys import text_keys

REFIT_SHARE = 0.8


# Part of every row's key: a change of what counts as a chunk's words (terms.py) changes it, so rows
# counted under the old rule are never reused. 2: markup left out (ragx/ingest/readable.py).
COUNTING_RULE = 2


def term_counts(texts: list[str], ids: np.ndarray, cache: Path | None, min_df: int):
    """(chunks x terms CSR matrix in the order of `ids`, terms) or None when no term survives."""
    from scipy import sparse

    from .terms import Vocabulary, fit_sample

    keys = text_keys(texts, seed=COUNTING_RULE)
    cached = _load(cache) if cache is not None else None
    if cached is not None and cache is not None:
        c_ids, c_keys, c_fitted, c_counts, terms = cached
        pos, hit = find_sorted(c_ids, ids)
        if len(c_ids):
            hit &= c_keys[pos] == keys
        fitted = np.where(hit, c_fitted[pos], False)
        if fitted.sum() >= REFIT_SHARE * len(ids):
            miss = np.flatnonzero(~hit)
            fresh = Vocabulary.from_terms(terms).transform([texts[i] for i in miss]) if len(miss) else None
            rows = c_counts[pos[hit]]
            stacked = sparse.vstack([rows, fresh]).tocsr() if fresh is not None else rows.tocsr()
            order = np.concatenate([np.flatnonzero(hit), miss])
            counts = stacked[np.argsort(order, kind="stable")]
            _save(cache, ids, keys, fitted, counts, terms)
            return counts, terms
    sample = fit_sample(len(texts))
    vocabulary = Vocabulary.fit([texts[i] for i in sample], min(min_df, len(sample)))
    if vocabulary is None:  # no term survives (stop words only, or a tiny corpus)
        return None
    counts, terms = vocabulary.transform(texts), vocabulary.terms
    if cache is not None:
        _save(cache, ids, keys, np.ones(len(ids), bool), counts, terms)
    return counts, terms


def _load(path: Path):
    """The cached rows, or None (a miss: the counts are made again and the file rewritten) when the
    file is missing, unreadable or not what _save wrote. The zip's CRC-32 of each array is checked as
    numpy reads it, so a flipped bit fails the read; a truncation fails it too."""
    from scipy import sparse

    try:
        with np.load(path, allow_pickle=False) as z:
            ids, keys, fitted, terms = z["ids"], z["keys"], z["fitted"], z["terms"]
            counts = sparse.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(int(n) for n in z["shape"]))
            counts.check_format(full_check=True)
    except (OSError, EOFError, KeyError, ValueError, TypeError, IndexError, zipfile.BadZipFile):
        return None
    return (ids, keys, fitted, counts, terms) if _consistent(ids, keys, fitted, counts, terms) else None


def _consistent(ids, keys, fitted, counts, terms) -> bool:
    """One row per chunk id (sorted, as lookups need), a key and a flag per row, a term per column."""
    n = len(ids)
    return (ids.ndim == keys.ndim == fitted.ndim == terms.ndim == 1 and ids.dtype == np.int64
            and keys.dtype == np.uint64 and fitted.dtype == np.bool_ and len(keys) == len(fitted) == n
            and counts.shape == (n, len(terms)) and bool(np.all(ids[1:] > ids[:-1])))


def _save(path: Path, ids, keys, fitted, counts, terms) -> None:
    """Write next to the target and rename: a crash leaves the old cache or the new one, never half."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}.npz")
    try:
        np.savez(tmp, ids=ids, keys=keys, fitted=fitted, data=counts.data, indices=counts.indices,
                 indptr=counts.indptr, shape=np.array(counts.shape), terms=terms)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # the cache is an optimisation: failing to write it is not an error
