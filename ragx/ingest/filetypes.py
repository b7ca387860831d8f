"""Default file types: which files ragx indexes when no include globs are given, and how each
kind of file is chunked ("markdown", "code" or "text")."""

from __future__ import annotations

import functools
import importlib.util
import posixpath

MARKDOWN = "markdown"
CODE = "code"
TEXT = "text"

_MARKDOWN_EXTS = ("md", "markdown", "mdx", "mkd", "mdown")

_PROSE_EXTS = ("txt", "text", "rst", "org", "adoc", "asciidoc", "tex", "bib")

_CODE_EXTS = (
    # general purpose
    "py", "pyi", "pyx", "js", "mjs", "cjs", "ts", "mts", "cts", "tsx", "jsx", "go", "rs",
    "c", "h", "cpp", "hpp", "cc", "hh", "cxx", "hxx", "m", "mm", "java", "kt", "kts",
    "scala", "sc", "groovy", "gradle", "rb", "php", "cs", "fs", "fsx", "vb", "swift", "lua",
    "pl", "pm", "r", "jl", "hs", "lhs", "ml", "mli", "ex", "exs", "erl", "hrl", "clj",
    "cljs", "cljc", "edn", "lisp", "el", "scm", "rkt", "dart", "zig", "nim", "v", "sv",
    "vhd", "vhdl", "d", "f90", "f", "for", "pas", "ada", "adb", "ads", "cob", "elm",
    "purs", "sol", "proto", "graphql", "gql", "thrift", "cmake", "nix", "tf", "hcl",
    "bzl", "star", "asm", "s",
    # shells and scripting
    "sh", "bash", "zsh", "fish", "ps1", "psm1", "bat", "cmd", "awk", "sed",
    # query languages
    "sql", "cypher", "sparql",
    # web
    "vue", "svelte", "astro", "html", "htm", "xhtml", "css", "scss", "sass", "less",
    "styl", "jinja", "j2", "hbs", "mustache", "ejs", "erb", "liquid",
    # configuration (top-level keys at column 0 chunk well with the code rules)
    "toml", "yaml", "yml", "ini", "cfg", "conf", "properties",
)

_DATA_EXTS = ("json", "jsonl", "ndjson", "json5", "jsonc", "xml", "csv", "tsv")

# PDFs are read page by page through pypdf (ragx/ingest/pdf.py); each page's text chunks as prose.
_DOCUMENT_EXTS = ("pdf",)

#: what a notes folder keeps when its code and data are left out (`ragx init`'s proposal): prose files
DOCUMENT_EXTENSIONS = frozenset(_MARKDOWN_EXTS + _PROSE_EXTS + _DOCUMENT_EXTS)

#: extension (lower case, no dot) -> chunking kind
EXTENSION_KINDS: dict[str, str] = {}
for _ext in _MARKDOWN_EXTS:
    EXTENSION_KINDS[_ext] = MARKDOWN
for _ext in _PROSE_EXTS + _DATA_EXTS + _DOCUMENT_EXTS:
    EXTENSION_KINDS[_ext] = TEXT
for _ext in _CODE_EXTS:
    EXTENSION_KINDS[_ext] = CODE
del _ext

#: well-known file names without a (useful) extension, matched case-insensitively -> kind
NAME_KINDS: dict[str, str] = {
    "readme": TEXT,
    "license": TEXT,
    "licence": TEXT,
    "copying": TEXT,
    "notice": TEXT,
    "authors": TEXT,
    "contributors": TEXT,
    "changelog": TEXT,
    "changes": TEXT,
    "history": TEXT,
    "news": TEXT,
    "todo": TEXT,
    "install": TEXT,
    "makefile": CODE,
    "gnumakefile": CODE,
    "dockerfile": CODE,
    "containerfile": CODE,
    "jenkinsfile": CODE,
    "vagrantfile": CODE,
    "rakefile": CODE,
    "gemfile": CODE,
    "procfile": CODE,
    "justfile": CODE,
    "cmakelists.txt": CODE,
}

# Names like "Dockerfile.dev" or "Makefile.am" keep the kind of their stem.
_NAME_PREFIXES = ("dockerfile", "makefile", "containerfile", "readme", "license", "licence")


def default_kind(path: str) -> str | None:
    """The kind of a file that ragx indexes by default, or None if it is not a default type."""
    return _name_kind(posixpath.basename(path))


def _name_kind(name: str) -> str | None:
    """default_kind of a bare file name (no directory part)."""
    name = name.lower()
    dot = name.rfind(".")
    ext = name[dot + 1 :] if dot > 0 else ""
    kind = NAME_KINDS.get(name)
    if kind is not None:
        return kind
    if ext:
        kind = EXTENSION_KINDS.get(ext)
        if kind is not None:
            return kind
    for prefix in _NAME_PREFIXES:
        if name.startswith(prefix) and (len(name) == len(prefix) or name[len(prefix)] in ".-_"):
            return NAME_KINDS[prefix]
    return None


def is_default_type(path: str) -> bool:
    """True if a file with this name is indexed when no include globs are configured."""
    return default_kind(path) is not None


def is_default_name(name: str) -> bool:
    """is_default_type for a bare file name, as the corpus walk has it (no basename to take)."""
    return _name_kind(name) is not None


def kind_for_path(path: str) -> str:
    """How a file is chunked: "markdown", "code" or "text" (the fallback for anything unknown)."""
    return default_kind(path) or TEXT


def is_pdf(path: str) -> bool:
    """A PDF by its name: its text comes from ragx/ingest/pdf.py, page by page."""
    return path.lower().endswith(".pdf")


# Why an install without pypdf (a tool install without the extra) skips a PDF. Said as a skipped file
# (`ragx status`'s not_indexed, the index run's summary), never as drift that indexing would not clear.
PDF_UNAVAILABLE = 'PDF text needs pypdf, which this install lacks (the "pdf" extra; docs/install.md shows how to add it)'


@functools.cache
def pdf_readable() -> bool:
    """Can this install read PDFs? Looked up once per process, without importing pypdf (~60 ms)."""
    return importlib.util.find_spec("pypdf") is not None
