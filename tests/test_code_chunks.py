"""Syntax-aware code chunks (ragx/ingest/code.py): per language, a definition's chunk spans exactly its
bytes (with the comments right above it) and its header names it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from ragx.ingest.chunk import ChunkSettings, chunk_text
from ragx.ingest.code import language_of
from ragx.ingest.code_languages import EXTENSIONS, GRAMMARS

try:
    from tests.wordpiece import wordpiece_counter
except ImportError:  # tests/ itself on sys.path
    from wordpiece import wordpiece_counter

# max 40 tokens (35 for text, 5 for the header): every container below is too big for one chunk, so it
# is cut into its members; min 0: nothing merges
CFG = ChunkSettings(max_tokens=40, target_tokens=35, min_tokens=0)

# (path, source, the definition's exact source, its qualified name)
CASES = [
    ("pkg/calc.py",
     "import os\n\n\nclass Calc:\n    \"\"\"A calculator with a memory of the last result it gave.\"\"\"\n\n"
     "    # Adds two numbers.\n    @staticmethod\n    def add(a, b):\n        return a + b\n\n"
     "    def sub(self, a, b):\n        self.last = a - b\n        return self.last\n",
     "# Adds two numbers.\n    @staticmethod\n    def add(a, b):\n        return a + b", "Calc.add"),
    ("web/calc.js",
     "import x from 'y';\n\n// Adds two numbers.\nexport function add(a, b) {\n  return a + b;\n}\n\n"
     "const sub = (a, b) => a - b;\n",
     "// Adds two numbers.\nexport function add(a, b) {\n  return a + b;\n}", "add"),
    ("web/box.ts",
     "interface Point { x: number; y: number }\n\nexport class Box {\n  private v = 0;\n"
     "  // Puts a value in the box.\n  put(x: number): void {\n    this.v = x;\n  }\n"
     "  get(): number {\n    return this.v + 1 - 1;\n  }\n}\n",
     "// Puts a value in the box.\n  put(x: number): void {\n    this.v = x;\n  }", "Box.put"),
    ("web/view.tsx",
     "import React from 'react';\n\n/** Hi. */\nexport function Hello(p: { n: string }) {\n"
     "  return <b>{p.n}</b>;\n}\n",
     "/** Hi. */\nexport function Hello(p: { n: string }) {\n  return <b>{p.n}</b>;\n}",
     "Hello"),
    ("calc/box.go",
     "package calc\n\ntype Box struct{ v int }\n\n// Get returns the value.\nfunc (b *Box) Get() int {\n"
     "\treturn b.v\n}\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
     "// Get returns the value.\nfunc (b *Box) Get() int {\n\treturn b.v\n}", "Box.Get"),
    ("src/lib.rs",
     "use std::io;\n\nstruct S { v: i32 }\n\nimpl S {\n    /// Reads the value back.\n"
     "    pub fn get(&self) -> i32 {\n        self.v\n    }\n\n    pub fn set(&mut self, v: i32) {\n"
     "        self.v = v;\n    }\n}\n",
     "/// Reads the value back.\n    pub fn get(&self) -> i32 {\n        self.v\n    }", "S.get"),
    ("src/Calc.java",
     "package p;\n\nclass Calc {\n    private int last;\n\n    // Adds two numbers.\n"
     "    int add(int a, int b) {\n        return a + b;\n    }\n\n    int sub(int a, int b) {\n"
     "        last = a - b;\n        return last;\n    }\n}\n",
     "// Adds two numbers.\n    int add(int a, int b) {\n        return a + b;\n    }", "Calc.add"),
    ("src/calc.c",
     "#include <stdio.h>\n\n/* Adds two numbers. */\nstatic int add(int a, int b)\n{\n    return a + b;\n}\n\n"
     "int main(void) { return add(1, 2); }\n",
     "/* Adds two numbers. */\nstatic int add(int a, int b)\n{\n    return a + b;\n}", "add"),
    ("src/box.cpp",
     "#include <vector>\n\nnamespace calc {\nclass Box {\n public:\n  int get() const { return v; }\n"
     "  int v = 0;\n};\n\n// Puts a value in the box.\nint Box::put(int x) {\n  v = x;\n  return v;\n}\n}\n",
     "// Puts a value in the box.\nint Box::put(int x) {\n  v = x;\n  return v;\n}", "calc.Box.put"),
]


@pytest.fixture(scope="module")
def wp():
    return wordpiece_counter()


def _module(path: str) -> str:
    return path.rsplit(".", 1)[0].replace("/", ".")


@pytest.mark.parametrize("path, source, definition, name", CASES, ids=[c[0] for c in CASES])
def test_a_definition_is_one_chunk_of_exactly_its_bytes_named_in_its_header(wp, path, source, definition, name):
    data = source.encode()
    chunks = chunk_text(path, data, source, wp, CFG)
    start = data.index(definition.encode())
    found = [c for c in chunks if c.byte_start == start]
    assert found, [c.text for c in chunks]
    chunk = found[0]
    assert chunk.byte_end == start + len(definition.encode())
    assert chunk.text == definition == data[chunk.byte_start : chunk.byte_end].decode()
    assert chunk.header.split("\n")[0] == f"{_module(path)}.{name}"
    assert chunk.embed_text == f"{chunk.header}\n\n{chunk.text}"  # embedded and indexed: the header, then the bytes


def test_every_grammar_shipped_has_a_case():
    # a grammar added to GRAMMARS without a case above fails here, so every shipped language keeps its test
    assert {language_of(c[0]) for c in CASES} == set(GRAMMARS)
    assert set(EXTENSIONS.values()) == set(GRAMMARS)
    assert language_of("build.zig") is None and language_of("Makefile") is None


def test_a_long_function_is_split_and_each_later_piece_carries_its_signature(wp):
    body = "\n".join(f"    value_{j} = compute_{j}(argument_{j}, other_{j})" for j in range(40))
    source = f"def long_one(first, second):\n{body}\n    return value_0\n"
    chunks = chunk_text("pkg/long.py", source.encode(), source, wp, ChunkSettings())
    assert len(chunks) > 1
    assert all(c.header.startswith("pkg.long.long_one") for c in chunks)
    assert "\n" not in chunks[0].header  # the first piece starts with the signature itself
    assert all(c.header.endswith("\ndef long_one(first, second)") for c in chunks[1:])


def test_tiny_neighbours_merge_and_name_every_definition(wp):
    source = "def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n"
    chunks = chunk_text("m.py", source.encode(), source, wp, ChunkSettings())
    assert len(chunks) == 1
    assert chunks[0].header == "m: a, b, c"


def test_a_class_that_fits_is_one_chunk(wp):
    source = "class Point:\n    def norm(self):\n        return (self.x ** 2 + self.y ** 2) ** 0.5\n"
    chunks = chunk_text("geo/point.py", source.encode(), source, wp, ChunkSettings(min_tokens=0))
    assert [c.text for c in chunks] == [source.strip()]
    assert chunks[0].header == "geo.point.Point"


def test_non_ascii_source_keeps_byte_offsets(wp):
    source = "# é ü\n\n\ndef café(x):\n    return 'naïve ✓' + x\n\n\ndef other():\n    return 1\n"
    data = source.encode()
    chunks = chunk_text("m.py", data, source, wp, ChunkSettings(min_tokens=0))
    hit = [c for c in chunks if c.text.startswith("def café")]
    assert hit and data[hit[0].byte_start : hit[0].byte_end].decode() == hit[0].text
    assert hit[0].header == "m.café"


_OFFLINE = textwrap.dedent(
    """
    import socket
    def refuse(*args, **kwargs):
        raise AssertionError("network used")
    socket.socket.connect = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    from ragx.ingest import code
    from ragx.ingest.code_languages import EXTENSIONS
    for ext in sorted(set(EXTENSIONS)):
        found = code.definitions("a." + ext, b"x", "x")
        assert found is not None, ext
    print("parsed", len(EXTENSIONS))
    """
)


def test_grammars_load_with_the_network_blocked():
    """Every grammar comes from its installed wheel: a process with sockets refused parses each language."""
    done = subprocess.run([sys.executable, "-c", _OFFLINE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("parsed")


def test_an_index_of_the_old_chunker_upgrades_in_one_run(tmp_path):
    """An index made under chunker 6 (code cut at column-0 blocks, no headers) is re-chunked in full by the
    next plain run: its code chunks then carry their names, and a further run changes nothing."""
    import sqlite3

    from fakes import HashEmbedder

    from ragx.config import load_settings
    from ragx.index.build import run_index
    from ragx.index.plan import CHUNKER_VERSION

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "calc.py").write_text(CASES[0][1])
    (tmp_path / "notes.md").write_text("# Notes\n\nNothing in code here.\n")
    embedder = HashEmbedder()
    run_index(tmp_path, load_settings(tmp_path), embedder)
    db = sqlite3.connect(tmp_path / ".ragx" / "index.sqlite")
    db.execute("DELETE FROM chunk_headers")  # as the old chunker left it
    db.execute("UPDATE manifest SET value = '6' WHERE key = 'chunker'")
    db.commit()
    report = run_index(tmp_path, load_settings(tmp_path), embedder)
    assert report.new == 2  # every file chunked again
    headers = [h for (h,) in db.execute("SELECT header FROM chunk_headers")]
    assert headers and all(h.startswith("pkg.calc") for h in headers)
    assert db.execute("SELECT value FROM manifest WHERE key = 'chunker'").fetchone()[0] == str(CHUNKER_VERSION)
    again = run_index(tmp_path, load_settings(tmp_path), embedder)
    assert not again.full and again.embedded_chunks == 0


def test_embedding_batches_are_ordered_by_the_tokens_embedded_header_included(tmp_path):
    """Chunks of equal text but headers of different lengths: the texts go to the model longest first
    by what is embedded (header + text), so a batch pads to lengths like its own."""
    from fakes import HashEmbedder

    from ragx.config import load_settings
    from ragx.index.build import run_index

    body = "def run(value):\n    return value + 1\n"
    for depth in range(12):
        folder = tmp_path.joinpath(*[f"level{d}" for d in range(depth)])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{depth}.py").write_text(body)
    embedder = HashEmbedder()
    run_index(tmp_path, load_settings(tmp_path), embedder)
    counts = [int(n) for n in embedder.token_counter().count(embedder.embedded)]
    assert len(counts) == 12 and len(set(counts)) > 6  # the headers do differ in length
    assert counts == sorted(counts, reverse=True)


def test_a_chunk_counts_the_tokens_it_embeds(wp):
    source = "class Calc:\n" + "\n".join(f"    def f{j}(self, a):\n        return a * {j} + self.base_{j}\n" for j in range(30))
    chunks = chunk_text("pkg/deep/calc.py", source.encode(), source, wp, ChunkSettings())
    assert len(chunks) > 1 and all(c.header for c in chunks)
    assert [c.embed_tokens for c in chunks] == [int(n) for n in wp.count([c.embed_text for c in chunks])]
