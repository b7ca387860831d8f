"""Typed settings, loaded and merged: built-in defaults.toml < <root>/ragx.toml < ~/.ragxrc.

The dataclasses below are the schema (names and types), LIMITS beside them the allowed range of every
number, CHOICES the allowed values of the strings that take one of a set, and ORDERED the keys that must
keep an order; defaults.toml holds every value. A key that is not in the schema, a value of the wrong
type, out of range or not one of its choices, or a file that is not UTF-8 TOML, is a ConfigError naming
the file and the key: one line, exit 2. `ragx config set` checks the settings as they would load after
its write (check_write) before writing anything.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from . import log
from .errors import ConfigError, NoCorpusError, NoIndexError

# A leaf module (one dataclass, no imports of ragx): the [search] schema is the scoring Params itself.
from .scoring.params import Params

PROJECT_FILE = "ragx.toml"
INDEX_DIR = ".ragx"
DEFAULTS_PATH = Path(__file__).with_name("defaults.toml")


@dataclass(frozen=True)
class IndexSettings:
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    max_file_bytes: int
    follow_symlinks: bool


@dataclass(frozen=True)
class ChunkingSettings:
    target_tokens: int
    min_tokens: int


@dataclass(frozen=True)
class EmbeddingSettings:
    engine: str              # "embedded" | "openai" | "sentence-transformers"
    model: str
    batch_size: int
    # Provider settings (ragx/models/openai_engine.py, st_engine.py); each is documented in defaults.toml.
    base_url: str
    api_key_env: str
    doc_prefix: str
    query_prefix: str
    timeout: float
    max_retries: int
    max_tokens: int
    tokenizer: str
    device: str
    precision: str           # "embedded": "fp32", or "int8" (the same graph dynamically quantised)
    doc_input_type: str      # "openai": the request's input_type for chunks (e.g. "passage"); "" = not sent
    query_input_type: str    # "openai": the request's input_type for queries (e.g. "query"); "" = not sent
    in_flight: int           # "openai": requests in flight per endpoint (ragx/models/pool.py)


@dataclass(frozen=True)
class RerankSettings:
    model: str               # "" = no reranker; a hub name or a local CrossEncoder directory
    batch_size: int
    max_length: int
    device: str


@dataclass(frozen=True)
class ExpandSettings:
    enabled: bool
    model: str
    base_url: str
    api_key_env: str
    timeout: float
    max_retries: int
    variants: int
    hyde: bool
    cache: bool              # keep answers and their vectors in <cache dir>/expand/ (ragx/models/expand_cache.py)


@dataclass(frozen=True)
class GraphSettings:
    k: int
    min_sim: float
    leiden_resolution: float
    leiden_seed: int


@dataclass(frozen=True)
class Settings:
    index: IndexSettings
    chunking: ChunkingSettings
    embeddings: EmbeddingSettings
    graph: GraphSettings
    search: Params
    rerank: RerankSettings
    expand: ExpandSettings
    # Where each dotted key's effective value came from ("defaults", a ragx.toml path, an rc path).
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Limit:
    """The allowed values of a number setting: low <= x <= high (either end may be open: > or <)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False   # low itself is not allowed (x > low)

    def allows(self, x: float) -> bool:
        if math.isnan(x):
            return False
        if self.low is not None and (x <= self.low if self.low_open else x < self.low):
            return False
        return self.high is None or x <= self.high

    def describe(self) -> str:
        show = lambda v: str(int(v)) if float(v).is_integer() else str(v)  # noqa: E731
        low = None if self.low is None else f"{'>' if self.low_open else '>='} {show(self.low)}"
        high = None if self.high is None else f"<= {show(self.high)}"
        return " and ".join(part for part in (low, high) if part)


# Every int and float setting has its range here (a test holds that none is missing). The upper bounds
# are far above any useful value; they stop a typo (k = 1e6, batch_size = 100000) from running for hours.
LIMITS: dict[str, Limit] = {
    "index.max_file_bytes": Limit(1, 2**40),
    "chunking.target_tokens": Limit(1, 100_000),
    "chunking.min_tokens": Limit(1, 100_000),
    "embeddings.batch_size": Limit(1, 4096),
    "embeddings.timeout": Limit(0, 86_400, low_open=True),
    "embeddings.max_retries": Limit(0, 100),
    "embeddings.max_tokens": Limit(8, 1_000_000),
    "embeddings.in_flight": Limit(1, 64),
    "rerank.batch_size": Limit(1, 4096),
    "rerank.max_length": Limit(8, 100_000),
    "expand.timeout": Limit(0, 86_400, low_open=True),
    "expand.max_retries": Limit(0, 100),
    "expand.variants": Limit(1, 16),
    "graph.k": Limit(1, 1000),
    "graph.min_sim": Limit(-1, 1),
    "graph.leiden_resolution": Limit(0, 1000, low_open=True),
    "graph.leiden_seed": Limit(0, 2**31 - 1),
    "search.top": Limit(1, 100_000),
    "search.dense_n": Limit(1, 100_000),
    "search.lexical_n": Limit(0, 100_000),
    "search.rrf_k": Limit(0, 1_000_000, low_open=True),
    "search.hops": Limit(0, 10),
    "search.decay": Limit(0, 1),
    "search.query_floor": Limit(-1, 1),
    "search.max_frontier": Limit(1, 1_000_000),
    "search.rerank_weight": Limit(0, 1000),
    "search.heat_weight": Limit(0, 1000),
    "search.dense_weight": Limit(0, 1000),
    "search.lexical_weight": Limit(0, 1000),
    "search.shortlist": Limit(1, 100_000),
    "search.file_chunks": Limit(1, 1000),
    "search.link_weight": Limit(0, 1000),
    "search.anchor_dense": Limit(0, 1),
    "search.anchor_lexical": Limit(0, 1),
    "search.prior_test": Limit(0, 1),
    "search.prior_example": Limit(0, 1),
    "search.prior_doc": Limit(0, 1),
    "search.min_dense_evidence": Limit(0, 1),
    "search.min_lexical_evidence": Limit(0, 1_000_000),
    "search.min_lexical_share": Limit(0, 1),
    "search.bm25_k1": Limit(0, 100),
    "search.bm25_b": Limit(0, 1),
}

def check_bound(key: str, value: float) -> None:
    """ValueError unless `value` is in LIMITS[key]: for code handed a setting's value by something other
    than load_settings (a test, the lab, a caller building an engine by hand), so the bound is this table's."""
    limit = LIMITS[key]
    if not limit.allows(value):
        raise ValueError(f"{key} = {value} is out of range: it must be {limit.describe()}")


# (smaller, larger): the first key's value may not exceed the second's.
ORDERED: tuple[tuple[str, str], ...] = (("chunking.min_tokens", "chunking.target_tokens"),)


#: The embedding engines: the built-in ones (models/registry.py's factories; a test holds the two equal)
#: and any a plugin or a test registers at run time (registry.register_engine adds its name here).
_ENGINE_NAMES: set[str] = {"embedded", "openai", "sentence-transformers"}

#: The precisions the embedded engine runs; the first is the default (models/embedded.py checks it).
PRECISIONS = ("fp32", "int8")


def add_engine(name: str) -> None:
    """Allow `name` as embeddings.engine in this process (an engine registered at run time)."""
    _ENGINE_NAMES.add(name)


def _engines() -> tuple[str, ...]:
    return tuple(sorted(_ENGINE_NAMES))


def _bm25_variants() -> tuple[str, ...]:
    from .scoring.bm25 import VARIANTS  # a leaf module (numpy only)

    return VARIANTS


# The BM25 formula the shipped lexical thresholds were calibrated under. Another formula scores on
# another scale (BM25+ adds delta * idf for every word a chunk holds), so the same thresholds let
# through what they were set to stop (research/2026-12-04-bm25-variants.md).
CALIBRATED_FOR = "fts5"


def calibration_note(variant: str) -> str | None:
    """What to tell someone choosing `variant` for BM25 about the lexical thresholds, or None."""
    if variant == CALIBRATED_FOR:
        return None
    return (f"the \"nothing relevant\" thresholds (search.min_lexical_evidence, search.min_lexical_share) were calibrated "
            f"with bm25_variant = {CALIBRATED_FOR!r}; under {variant!r} they may let off-topic queries through: recalibrate them "
            f"(the repository's scripts/bench/bench_no_match.py --split train --calibrate --bm25-variant {variant})")


def _query_features() -> tuple[str, ...]:
    from .scoring.candidates import QUERY_FEATURES  # beside the pass's other BM25 settings

    return QUERY_FEATURES


def _precisions() -> tuple[str, ...]:
    return PRECISIONS


#: torch's device types a user may name (sentence-transformers and the reranker pass the setting to torch).
TORCH_DEVICES = ("cpu", "cuda", "mps", "xpu", "npu", "hpu", "xla", "mtia", "ipu")


@dataclass(frozen=True)
class Choices:
    """The allowed values of a string setting that takes one of a set.

    `values` returns them, called only when a value is checked (never for the built-in defaults, which a
    test holds to their choices); the values live in this module or below it (BM25's in scoring/bm25.py)."""

    values: Callable[[], tuple[str, ...]]
    empty: bool = False      # "" is allowed too (the library's own choice)
    indexed: bool = False    # so is "<value>:<n>" (a torch device and its number: "cuda:1")
    at_load: bool = True     # also checked when the settings are read, not only by `ragx config set`
    # What `ragx config set` tells someone choosing a value, or None: a hint, not a rule (imported lazily).
    note: Callable[[str], str | None] | None = None

    def allows(self, value: str) -> bool:
        if value == "" and self.empty:
            return True
        name = re.sub(r":\d+$", "", value) if self.indexed else value
        return name in self.values()

    def describe(self) -> str:
        text = "one of " + ", ".join(repr(v) for v in self.values())
        if self.indexed:
            text += ", optionally with a device number (cuda:1)"
        return f"'' (the library's own choice) or {text}" if self.empty else text


_DEVICE = Choices(lambda: TORCH_DEVICES, empty=True, indexed=True)

# Every string setting that takes one of a set of values: checked by `ragx config set` and at load.
# embeddings.engine only by `ragx config set`: an engine registered at run time by a plugin or a test
# (registry.register_engine) is not known to a process that did not register it, and such a process
# (`ragx status`, `ragx config get`) must still read the corpus's ragx.toml; a command that embeds
# refuses an unknown engine when it builds the embedder (registry.make_embedder, one line, exit 2).
# String settings that must not be empty, with what to say (rerank.model and expand.model may be:
# "" turns them off).
NON_EMPTY: dict[str, str] = {"embeddings.model": "it must name the embedding model (the default is 'all-MiniLM-L6-v2')"}

CHOICES: dict[str, Choices] = {
    "embeddings.engine": Choices(_engines, at_load=False),
    "embeddings.precision": Choices(_precisions),
    "embeddings.device": _DEVICE,
    "rerank.device": _DEVICE,
    "search.bm25_variant": Choices(_bm25_variants, note=calibration_note),
    "search.query_features": Choices(_query_features),
}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A schema class's field types, resolved once: get_type_hints evaluates every (postponed) annotation
    again on each call, and loading the settings asks for one per key (~60: milliseconds of every command)."""
    return get_type_hints(cls)


SECTIONS: dict[str, type] = {f.name: _hints(Settings)[f.name] for f in dataclasses.fields(Settings) if f.name != "sources"}


def rc_path() -> Path:
    """The machine-level rc file; RAGX_RC overrides (tests, shared machines)."""
    return Path(os.environ.get("RAGX_RC") or Path.home() / ".ragxrc")


def field_type(section: str, key: str, origin: str | None = None) -> type:
    """The Python type of a dotted key, or ConfigError (naming `origin`, the file) if it is unknown."""
    where = f"{origin}: " if origin else ""
    cls = SECTIONS.get(section)
    if cls is None:
        raise ConfigError(f"{where}unknown config section [{section}] (known: {', '.join(SECTIONS)})")
    hints = _hints(cls)
    if key not in hints:
        raise ConfigError(f"{where}unknown config key {section}.{key} (known: {', '.join(hints)})")
    return hints[key]


def split_key(dotted: str) -> tuple[str, str]:
    section, _, key = dotted.partition(".")
    if not section or not key:
        raise ConfigError(f"config keys look like section.key, got {dotted!r}")
    field_type(section, key)
    return section, key


def _typed(want: type, value: Any) -> tuple[bool, Any]:
    """(does `value` have the schema type `want`, the value as that type); ints are accepted as floats."""
    if want is bool:
        return isinstance(value, bool), value
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if want is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return ok, float(value) if ok else value
    if want is str:
        return isinstance(value, str), value
    if getattr(want, "__origin__", None) is tuple:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        return ok, tuple(value) if ok else value
    raise TypeError(f"unsupported settings type {want}")  # pragma: no cover - a schema the loader does not know


def coerce(section: str, key: str, value: Any, origin: str, *, choices: bool = True, loading: bool = False) -> Any:
    """Check a value against the schema (type, then range, then its CHOICES); ConfigError names `origin`
    and the key. `loading`: a file being read, not a value being set (only the CHOICES checked at load);
    `choices=False`: no CHOICES at all (the built-in defaults)."""
    want = field_type(section, key, origin)
    dotted = f"{section}.{key}"
    where = f"{origin}: {dotted}"
    ok, typed = _typed(want, value)
    if not ok:
        if getattr(want, "__origin__", None) is tuple:
            raise ConfigError(f"{where} must be a list of strings, got {value!r}")
        raise ConfigError(f"{where} must be {want.__name__}, got {type(value).__name__} {value!r}")
    limit = LIMITS.get(dotted)
    if limit is not None and not limit.allows(typed):
        raise ConfigError(f"{where} = {value!r} is out of range: it must be {limit.describe()}")
    if dotted in NON_EMPTY and not str(typed).strip():
        raise ConfigError(f"{where} = {value!r} is empty: {NON_EMPTY[dotted]}")
    one_of = CHOICES.get(dotted) if choices else None
    if one_of is not None and (one_of.at_load or not loading) and not one_of.allows(typed):
        raise ConfigError(_not_allowed(where, value, one_of))
    return typed


def _not_allowed(where: str, value: Any, one_of: Choices) -> str:
    return f"{where} = {value!r} is not allowed: it must be {one_of.describe()}"


def check_choice(settings: Settings, dotted: str) -> None:
    """A CHOICES entry not checked at load (embeddings.engine), checked where it is used: ConfigError
    naming the file the value came from and its key, as a load names them."""
    section, key = split_key(dotted)
    value = getattr(getattr(settings, section), key)
    if not CHOICES[dotted].allows(value):
        raise ConfigError(_not_allowed(f"{settings.sources.get(dotted, 'settings')}: {dotted}", value, CHOICES[dotted]))


def parse_value(dotted: str, text: str) -> Any:
    """Parse a command-line value (`ragx config set KEY VALUE`) according to the key's type."""
    section, key = split_key(dotted)
    want = field_type(section, key)
    if want is str:  # bare text is the string itself; a quoted TOML string (as `config get` lists it) is unquoted
        return coerce(section, key, _toml_string(text), "command line")  # its CHOICES, if it has some
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        if getattr(want, "__origin__", None) is tuple:  # a bare comma list: "*.md,*.txt"
            value = [part.strip() for part in text.split(",") if part.strip()]
        else:
            raise ConfigError(f"{dotted}: cannot read {text!r} as {want.__name__}") from None
    return coerce(section, key, value, "command line")


def _toml_string(text: str) -> str:
    """`"query: "` or `'query: '` (a whole TOML string, quotes and escapes as TOML reads them) -> its
    content; any other text as it is."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            return text
        if isinstance(value, str):
            return value
    return text


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 (byte {exc.start}); save it as UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: malformed TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def layer(doc: dict[str, Any], origin: str, problems: list[str] | None = None) -> dict[tuple[str, str], Any]:
    """Flatten one config document into checked {(section, key): value}.

    With `problems`, a bad entry is left out and its message collected instead of raised.
    """
    user_file = origin != DEFAULTS_PATH.name  # the built-in defaults keep to CHOICES (a test holds it)
    flat: dict[tuple[str, str], Any] = {}
    for section, table in doc.items():
        try:
            if not isinstance(table, dict):
                raise ConfigError(f"{origin}: {section!r} must be a [section] table")
        except ConfigError as exc:
            _keep_or_raise(exc, problems)
            continue
        for key, value in table.items():
            try:
                flat[(section, key)] = coerce(section, key, value, origin, choices=user_file, loading=True)
            except ConfigError as exc:
                _keep_or_raise(exc, problems)
    return flat


# [search] weights renamed to say what they weigh; a ragx.toml or ~/.ragxrc with the old name still works.
RENAMED_SEARCH_KEYS = {"alpha": "rerank_weight", "beta": "heat_weight", "gamma": "dense_weight", "delta": "lexical_weight"}


def renamed_keys(doc: dict[str, Any], origin: str, warn: bool = True) -> dict[str, Any]:
    """`doc` with old [search] key names read as the new ones (one deprecation warning per key on stderr).

    Where a file holds both names, the new one wins."""
    search = doc.get("search")
    if not isinstance(search, dict) or not any(old in search for old in RENAMED_SEARCH_KEYS):
        return doc
    table = dict(search)
    for old, new in RENAMED_SEARCH_KEYS.items():
        if old in table:
            value = table.pop(old)
            table.setdefault(new, value)
            if warn:
                log.warn(f"{origin}: search.{old} is deprecated, read as search.{new} (rename it)")
    return {**doc, "search": table}


def _keep_or_raise(exc: ConfigError, problems: list[str] | None) -> None:
    if problems is None:
        raise exc
    problems.append(str(exc))


def _dotted_key(dotted: str) -> tuple[str, str]:
    """``"section.key"`` -> ``("section", "key")``."""
    section, key = dotted.split(".")
    return section, key


def _check_order(merged: dict[tuple[str, str], Any], sources: dict[str, str], problems: list[str] | None) -> None:
    for smaller, larger in ORDERED:
        a, b = merged[_dotted_key(smaller)], merged[_dotted_key(larger)]
        if a > b:
            message = f"{sources[smaller]}: {smaller} = {a!r} must not exceed {larger} = {b!r} (from {sources[larger]})"
            _keep_or_raise(ConfigError(message), problems)


def _same_file(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _layers(root: Path | None, problems: list[str] | None, warn: bool = True,
            edited: tuple[Path, dict[str, Any]] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(origin, document) of each layer, lowest first. `edited`: (a file, the document to read in its place)."""
    paths = [DEFAULTS_PATH, *([root / PROJECT_FILE] if root is not None else []), rc_path()]
    out = []
    for path in paths:
        origin = DEFAULTS_PATH.name if path == DEFAULTS_PATH else str(path)
        try:
            doc = edited[1] if edited is not None and _same_file(path, edited[0]) else read_toml(path)
            # old [search] weight names read as the new ones, with a warning
            out.append((origin, doc if path == DEFAULTS_PATH else renamed_keys(doc, origin, warn)))
        except ConfigError as exc:
            _keep_or_raise(exc, problems)
    return out


def load_settings(root: Path | None, *, warn: bool = True, problems: list[str] | None = None) -> Settings:
    """Effective settings for a corpus root (None: defaults and rc only).

    Any bad file or entry raises ConfigError, unless `problems` is given (`ragx config get`, which must
    help fix them): then bad files and entries are skipped and their messages appended to it.
    """
    return _load(root, warn=warn, problems=problems)


def check_write(root: Path | None, path: Path, values: dict[str, Any]) -> Settings:
    """The settings every command would load for `root` once `values` ({dotted key: value}) are written
    into `path` (its ragx.toml, or the rc file), checked as a load checks them: each value's type, range
    and choices, then the order of ORDERED across the merged layers. ConfigError, naming the file and
    the conflict, when they fail; nothing is written either way."""
    doc = {section: dict(table) if isinstance(table, dict) else table for section, table in read_toml(path).items()}
    for dotted, value in values.items():
        section, key = split_key(dotted)
        value = list(value) if isinstance(value, tuple) else value
        coerce(section, key, value, str(path))  # every CHOICES entry, the ones not checked at load too
        table = doc.setdefault(section, {})
        if isinstance(table, dict):  # else the load below names the file's `section = ...` that is no table
            table[key] = value
    return _load(root, warn=False, edited=(path, doc))


def _load(root: Path | None, *, warn: bool = True, problems: list[str] | None = None,
          edited: tuple[Path, dict[str, Any]] | None = None) -> Settings:
    rc = str(rc_path())
    merged: dict[tuple[str, str], Any] = {}
    sources: dict[str, str] = {}
    for origin, doc in _layers(root, problems, warn, edited):
        for (section, key), value in layer(doc, origin, problems).items():
            dotted = f"{section}.{key}"
            previous = sources.get(dotted)
            if warn and origin == rc and previous not in (None, DEFAULTS_PATH.name):
                if merged[(section, key)] != value:
                    log.warn(f"{rc} overrides {dotted} from {previous}")
            merged[(section, key)] = value
            sources[dotted] = origin

    built = {}
    for section, cls in SECTIONS.items():
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names if (section, n) not in merged]
        if missing:  # pragma: no cover - defaults.toml must cover the schema (a test holds it)
            raise ConfigError(f"defaults.toml lacks {section}.{missing[0]}")
        built[section] = cls(**{n: merged[(section, n)] for n in names})
    _check_order(merged, sources, problems)
    return Settings(**built, sources=sources)


def get_value(settings: Settings, dotted: str) -> Any:
    section, key = split_key(dotted)
    return getattr(getattr(settings, section), key)


def set_value(path: Path, dotted: str, value: Any) -> None:
    """Write one key into a TOML file, keeping its comments and layout (tomlkit); see set_values."""
    set_values(path, {dotted: value})


def set_values(path: Path, values: dict[str, Any]) -> None:
    """Write keys ({dotted key: value}) into a TOML file in one step, keeping its comments and layout.

    Atomic: the new text goes to a temporary file beside it, flushed to disk, then renamed over it, so a
    reader sees the old file or the new one, never half of one. A symlink (a dotfiles ~/.ragxrc) is
    followed: its target is rewritten, the link kept; the file keeps its permissions. The values are
    not checked here: `check_write` does that first."""
    import tomlkit

    path = Path(os.path.realpath(path))
    read_toml(path)  # fail loud on a malformed file before touching it
    doc = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
    for dotted, value in values.items():
        section, key = split_key(dotted)
        if section not in doc:
            doc[section] = tomlkit.table()
        doc[section][key] = list(value) if isinstance(value, tuple) else value
    from .atomic import replacing

    # A dot-file (never indexed), named for this process and call; created with the usual permissions.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    with replacing(path, tmp), open(tmp, "x", encoding="utf-8") as fh:
        fh.write(tomlkit.dumps(doc))
        fh.flush()
        os.fsync(fh.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)


def as_dict(settings: Settings) -> dict[str, dict[str, Any]]:
    out = {}
    for section in SECTIONS:
        values = dataclasses.asdict(getattr(settings, section))
        out[section] = {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}
    return out


def find_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above `start` holding ragx.toml or an index."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_FILE).is_file() or (folder / INDEX_DIR).is_dir():
            return folder
    return None


def broad_folder(path: Path) -> str | None:
    """"the filesystem root" or "your home folder" when `path` is one: never a corpus by accident."""
    path = path.resolve()
    if path == Path(path.anchor):
        return "the filesystem root"
    if path == Path.home().resolve():
        return "your home folder"
    return None


def resolve_root(root: str | Path | None, *, must_exist_index: bool = False, allow_broad: bool = False) -> Path:
    """--root if given (it must be a folder), else the nearest marked folder, else the working directory.

    The working directory is refused when it is / or the home folder (scanning it could take hours),
    unless `allow_broad` (the MCP server, which refuses each call itself): pass --root to mean it.
    """
    if root is not None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise NoCorpusError(f"corpus root {root} is not a folder")
        return path.resolve()
    found = find_root()
    if found is not None:
        return found
    if must_exist_index:
        raise NoIndexError(
            f"no ragx index at or above {Path.cwd()}: run `ragx index` there or pass --root"
        )
    cwd = Path.cwd().resolve()
    what = broad_folder(cwd)
    if what is not None and not allow_broad:
        raise NoCorpusError(
            f"{cwd} is {what} and holds no ragx.toml or .ragx/: refusing to scan all of it; "
            f"cd into the folder to search, or pass --root {cwd} if you mean it"
        )
    return cwd
