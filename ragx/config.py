"""Typed settings, loaded and merged: built-in defaults.toml < <root>/ragx.toml < ~/.ragxrc.

The dataclasses below are the schema (names and types); defaults.toml holds every value. A key that
is not in the schema, or a value of the wrong type, is a ConfigError naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from .errors import ConfigError, NoCorpusError, NoIndexError
# A leaf module (one dataclass, no imports of ragx): the [search] schema is the scoring Params itself.
from .search.params import Params

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


SECTIONS: dict[str, type] = {
    f.name: get_type_hints(Settings)[f.name] for f in dataclasses.fields(Settings) if f.name != "sources"
}


def rc_path() -> Path:
    """The machine-level rc file; RAGX_RC overrides (tests, shared machines)."""
    return Path(os.environ.get("RAGX_RC") or Path.home() / ".ragxrc")


def field_type(section: str, key: str) -> type:
    """The Python type of a dotted key, or ConfigError if the key is unknown."""
    cls = SECTIONS.get(section)
    if cls is None:
        raise ConfigError(f"unknown config section [{section}] (known: {', '.join(SECTIONS)})")
    hints = get_type_hints(cls)
    if key not in hints:
        raise ConfigError(f"unknown config key {section}.{key} (known: {', '.join(hints)})")
    return hints[key]


def split_key(dotted: str) -> tuple[str, str]:
    section, _, key = dotted.partition(".")
    if not section or not key:
        raise ConfigError(f"config keys look like section.key, got {dotted!r}")
    field_type(section, key)
    return section, key


def coerce(section: str, key: str, value: Any, origin: str) -> Any:
    """Check a TOML value against the schema; ints are accepted where floats are expected."""
    want = field_type(section, key)
    where = f"{origin}: {section}.{key}"
    if want is bool:
        if isinstance(value, bool):
            return value
    elif want is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif want is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif want is str:
        if isinstance(value, str):
            return value
    elif getattr(want, "__origin__", None) is tuple:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ConfigError(f"{where} must be a list of strings, got {value!r}")
    else:  # pragma: no cover - a schema type this loader does not know is a programming error
        raise TypeError(f"unsupported settings type {want} for {section}.{key}")
    raise ConfigError(f"{where} must be {want.__name__}, got {type(value).__name__} {value!r}")


def parse_value(dotted: str, text: str) -> Any:
    """Parse a command-line value (`ragx config set KEY VALUE`) according to the key's type."""
    section, key = split_key(dotted)
    want = field_type(section, key)
    if want is str:
        return text
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        if getattr(want, "__origin__", None) is tuple:  # a bare comma list: "*.md,*.txt"
            value = [part.strip() for part in text.split(",") if part.strip()]
        else:
            raise ConfigError(f"{dotted}: cannot read {text!r} as {want.__name__}") from None
    return coerce(section, key, value, "command line")


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: malformed TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def layer(doc: dict[str, Any], origin: str) -> dict[tuple[str, str], Any]:
    """Flatten one config document into checked {(section, key): value}."""
    flat: dict[tuple[str, str], Any] = {}
    for section, table in doc.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{origin}: {section!r} must be a [section] table")
        for key, value in table.items():
            flat[(section, key)] = coerce(section, key, value, origin)
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
                print(f"ragx: warning: {origin}: search.{old} is deprecated, read as search.{new} (rename it)", file=sys.stderr)
    return {**doc, "search": table}


def load_settings(root: Path | None, *, warn: bool = True) -> Settings:
    """Effective settings for a corpus root (None: defaults and rc only)."""
    layers = [(str(DEFAULTS_PATH.name), read_toml(DEFAULTS_PATH))]
    if root is not None:
        project = root / PROJECT_FILE
        layers.append((str(project), renamed_keys(read_toml(project), str(project), warn)))
    rc = rc_path()
    layers.append((str(rc), renamed_keys(read_toml(rc), str(rc), warn)))

    merged: dict[tuple[str, str], Any] = {}
    sources: dict[str, str] = {}
    for origin, doc in layers:
        for (section, key), value in layer(doc, origin).items():
            dotted = f"{section}.{key}"
            previous = sources.get(dotted)
            if warn and origin == str(rc) and previous not in (None, DEFAULTS_PATH.name):
                if merged[(section, key)] != value:
                    print(f"ragx: warning: {rc} overrides {dotted} from {previous}", file=sys.stderr)
            merged[(section, key)] = value
            sources[dotted] = origin

    built = {}
    for section, cls in SECTIONS.items():
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names if (section, n) not in merged]
        if missing:  # pragma: no cover - defaults.toml must cover the schema (a test holds it)
            raise ConfigError(f"defaults.toml lacks {section}.{missing[0]}")
        built[section] = cls(**{n: merged[(section, n)] for n in names})
    return Settings(**built, sources=sources)


def get_value(settings: Settings, dotted: str) -> Any:
    section, key = split_key(dotted)
    return getattr(getattr(settings, section), key)


def set_value(path: Path, dotted: str, value: Any) -> None:
    """Write one key into a TOML file, keeping its comments and layout (tomlkit)."""
    import tomlkit

    section, key = split_key(dotted)
    read_toml(path)  # fail loud on a malformed file before touching it
    doc = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
    if section not in doc:
        doc[section] = tomlkit.table()
    doc[section][key] = list(value) if isinstance(value, tuple) else value
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(tomlkit.dumps(doc), encoding="utf-8")
    os.replace(tmp, path)


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


def resolve_root(root: str | Path | None, *, must_exist_index: bool = False) -> Path:
    """--root if given (it must be a folder), else the nearest marked folder, else the working directory."""
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
    return Path.cwd().resolve()
