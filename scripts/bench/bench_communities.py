"""How much the communities move when one file is edited: Leiden refining the stored partition (what an
incremental `ragx index` does) against Leiden from singletons (what it did before), on copies of one
index given the same edits.

    python scripts/bench/bench_communities.py --root <indexed corpus> [--edits 5]

The index is copied twice into a temporary folder. Each edit appends one sentence to one text file
(spread over the corpus, the same file and sentence in both copies), then both copies run an
incremental index in this process; the "singletons" copy runs with the previous partition withheld
from Leiden. Per edit and copy: the adjusted Rand index of the partition against the one before (over
the chunks in both), and how many community labels of the run were already there before. At the end,
each copy's modularity on its final graph. Needs scikit-learn (the `lab` extra).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from contextlib import closing
from pathlib import Path

import numpy as np

SENTENCES = (
    "Anchors carry what linking notes say about a target.",
    "Settings come from the configuration file and the defaults.",
    "Caches keep each query's candidates for offline re-scoring.",
    "Each error is printed as one line on standard error.",
    "A choice is made on training data and tested once.",
)


def _store(root: Path):
    from ragx.index.store import Store

    return Store(root / ".ragx" / "index.sqlite", readonly=True)


def _partition(root: Path) -> dict[int, int]:
    with closing(_store(root)) as store:
        ids = store.chunk_ids()
        community = store.community_array(ids)
    kept = community >= 0
    return dict(zip(ids[kept].tolist(), community[kept].tolist()))


def _labels(root: Path) -> list[str]:
    with closing(_store(root)) as store:
        return [label.label for label in store.labels().values()]


def _agreement(before: dict[int, int], after: dict[int, int]) -> float:
    from sklearn.metrics import adjusted_rand_score

    common = sorted(set(before) & set(after))
    return float(adjusted_rand_score([before[i] for i in common], [after[i] for i in common]))


def _modularity(root: Path) -> float:
    import graspologic_native as gn

    from ragx.api import Corpus

    searcher = Corpus(root).searcher
    searcher.refresh()
    a, b, w = searcher.snapshot.graph.all_edges()
    partition = _partition(root)
    communities = {str(n): partition[n] for n in np.union1d(a, b).tolist()}
    edges = list(zip(a.astype(str).tolist(), b.astype(str).tolist(), w.tolist()))
    return float(gn.modularity(edges=edges, communities=communities, resolution=1.0))


def _edit_targets(root: Path, n: int) -> list[str]:
    """n indexed text files spread evenly over the sorted paths (markdown and Python preferred)."""
    with closing(_store(root)) as store:
        paths = sorted(path for path in store.files() if path.endswith((".md", ".py", ".txt")))
    step = max(1, len(paths) // n)
    return paths[::step][:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--edits", type=int, default=5)
    args = ap.parse_args()

    import ragx.index.arrays as arrays
    from ragx.api import Corpus
    from ragx.index.build import run_index

    refined_leiden = arrays.leiden

    def from_singletons(ids, a, b, w, resolution, seed, start=None):
        return refined_leiden(ids, a, b, w, resolution, seed)

    with tempfile.TemporaryDirectory() as tmp:
        copies = {"refined": Path(tmp) / "refined", "singletons": Path(tmp) / "singletons"}
        for copy in copies.values():
            shutil.copytree(args.root, copy, symlinks=True)
        rows = []
        for i, path in enumerate(_edit_targets(args.root, args.edits)):
            for name, copy in copies.items():
                before, labels_before = _partition(copy), set(_labels(copy))
                with open(copy / path, "a", encoding="utf-8") as fh:
                    fh.write(f"\n\n{SENTENCES[i % len(SENTENCES)]}\n")
                corpus = Corpus(copy)
                arrays.leiden = refined_leiden if name == "refined" else from_singletons
                try:
                    run_index(copy, corpus.settings, corpus.embedder)
                finally:
                    arrays.leiden = refined_leiden
                labels = _labels(copy)
                rows.append({"edit": i, "file": path, "leiden": name, "ari": round(_agreement(before, _partition(copy)), 3),
                             "labels_kept": sum(label in labels_before for label in labels), "labels": len(labels)})
                print(json.dumps(rows[-1]), flush=True)
        for name, copy in copies.items():
            print(f"{name}: final modularity {_modularity(copy):.4f}, {len(set(_partition(copy).values()))} communities")


if __name__ == "__main__":
    main()
