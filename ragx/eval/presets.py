"""Named configurations for side-by-side evaluation, and `--config name=preset,key=value`.

A configuration is a preset (the current defaults with some legs switched off), Params overrides,
and a candidate budget: how many chunks it may score per query.

    budget=graph   per query, as many candidates as the `graph` preset admits for that query
                   (the default for dense, bm25 and hybrid: they are compared at equal cost)
    budget=N       at most N candidates per query
    budget=own     whatever the Params' own caps give (dense_n, lexical_n, hops, max_frontier)

`bm25-ref` is not a ragx pipeline: the field's reference BM25 (bm25s, Lucene variant) ranking the
same files directly, so ragx's own lexical leg is checked against it (overrides: k1, b).

Every Params override is checked as `ragx config set` checks the setting (ragx/config.py: its type and
LIMITS range), so `-c x=hybrid,file_chunks=0` is refused before anything runs.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass
from typing import Callable

from ..config import LIMITS, Limit, coerce, field_type
from ..errors import ConfigError, UsageError
from ..scoring.params import Params

# Each preset is the current defaults with some legs switched off, so it tracks `lab promote`.
PRESETS: dict[str, Callable[[Params], Params]] = {
    # single legs stay single: no link edges ([ranking] link_weight = 0), no anchor evidence; the hybrid
    # is the plain two-leg fusion every other configuration is measured against
    "dense": lambda p: p.replace(lexical_n=0, hops=0, rerank_weight=0.0, heat_weight=0.0, dense_weight=1.0, lexical_weight=0.0, link_weight=0.0,
                                 anchor_dense=0.0, anchor_lexical=0.0),
    "bm25": lambda p: p.replace(dense_n=0, hops=0, rerank_weight=0.0, heat_weight=0.0, dense_weight=0.0, lexical_weight=1.0, link_weight=0.0,
                                anchor_dense=0.0, anchor_lexical=0.0),
    "hybrid": lambda p: p.switched(graph=False, rerank=False).replace(anchor_dense=0.0, anchor_lexical=0.0),
    "graph": lambda p: p.switched(graph=True, rerank=False),   # the graph stage on (off by default)
    "default": lambda p: p.switched(rerank=False),             # the shipped pipeline, without a reranker
    "full": lambda p: p,
}
REFERENCE_BM25 = "bm25-ref"
BUDGET_SOURCE = "graph"          # the preset whose admitted candidates set `budget=graph`
DEFAULT_BUDGET = {"dense": BUDGET_SOURCE, "bm25": BUDGET_SOURCE, "hybrid": BUDGET_SOURCE}
DEFAULT_CONFIGS = (
    "dense",
    "bm25",
    REFERENCE_BM25,
    "hybrid",
    "hybrid-wide=hybrid,dense_n=100,lexical_n=100,budget=own",  # a plain wide hybrid, always shown
    "default",                                                  # what `ragx query` runs (own caps)
    "graph",
)
DEFAULT_REFERENCE = "hybrid"     # significance is measured against the plain hybrid at equal budget


@dataclass(frozen=True)
class ReferenceBM25:
    k1: float = 0.9
    b: float = 0.4


# bm25-ref's overrides: k1 > 0 (up to [search] bm25_k1's bound), b in [0, 1] as [search] bm25_b.
REFERENCE_LIMITS: dict[str, Limit] = {
    "k1": Limit(0, LIMITS["search.bm25_k1"].high, low_open=True),
    "b": LIMITS["search.bm25_b"],
}


@dataclass(frozen=True)
class EvalConfig:
    name: str
    preset: str
    params: Params
    expand: bool
    budget: int | str | None = None         # None = own caps; an int; or BUDGET_SOURCE
    bm25: ReferenceBM25 | None = None        # set for the reference BM25 only
    source: Params | None = None             # with budget=graph: the `graph` preset's Params

    @property
    def is_reference_bm25(self) -> bool:
        return self.bm25 is not None

    def budget_signature(self) -> dict:
        """What decides how many candidates this configuration may score per query: its budget rule and
        the caps of its pass (and, for budget=graph, of the `graph` preset whose admissions it matches).
        A baseline records it, so the gate can say when a configuration's budget changed since."""
        if self.bm25 is not None:
            return {"rule": "all files"}
        out: dict = {"rule": "own" if self.budget is None else self.budget, **_caps(self.params), "expand": self.expand}
        if self.source is not None:
            out["source"] = _caps(self.source)
        return out

    def describe(self) -> dict:
        if self.bm25 is not None:
            return {"name": self.name, "preset": self.preset, "budget": "all files",
                    "bm25": {"library": "bm25s", "method": "lucene", **dataclasses.asdict(self.bm25),
                             "stemmer": "english (PyStemmer)", "stopwords": "en"}}
        return {"name": self.name, "preset": self.preset, "expand": self.expand,
                "budget": "own" if self.budget is None else self.budget, "params": dataclasses.asdict(self.params)}


def _caps(p: Params) -> dict:
    return {"dense_n": p.dense_n, "lexical_n": p.lexical_n, "hops": p.hops, "max_frontier": p.max_frontier,
            "query_floor": p.query_floor}


def parse_config(spec: str, defaults: Params) -> EvalConfig:
    """`graph`, `graph,hops=3`, or `name=graph,hops=3,decay=0.7` (the preset first, then overrides).

    Every override is checked as `ragx config set` checks the setting (its type and its range in
    ragx/config.py LIMITS); a bad one is a UsageError naming the spec."""
    head, _, tail = spec.partition(",")
    name, eq, preset = (x.strip() for x in head.partition("="))
    if not eq:  # no name: the preset names the configuration
        preset = name
    overrides = [x.strip() for x in tail.split(",") if x.strip()]
    if not name:
        raise UsageError(f"--config {spec!r}: a configuration needs a name (name=preset,key=value,...)")
    if preset == REFERENCE_BM25:
        values = {key: _reference_number(spec, key, value) for key, value in _pairs(spec, overrides, REFERENCE_LIMITS)}
        return EvalConfig(name, preset, defaults, expand=False, bm25=ReferenceBM25(**values))
    if preset not in PRESETS:
        raise UsageError(f"--config {spec!r}: unknown preset {preset!r} (presets: {', '.join([*PRESETS, REFERENCE_BM25])})")
    budget: int | str | None = DEFAULT_BUDGET.get(preset)
    changes: dict[str, int | float | str] = {}
    fields = [f.name for f in dataclasses.fields(Params)]
    for key, value in _pairs(spec, overrides, [*fields, "budget"]):
        if key == "budget":
            budget = _budget(spec, value)
        else:
            changes[key] = _setting(spec, key, value)
    params = PRESETS[preset](defaults).replace(**changes)
    from ..scoring.candidates import shared_bm25  # numpy: not for `ragx eval --help`

    # The budget source scores BM25 as the configuration itself does: one pass serves both.
    source = (PRESETS[BUDGET_SOURCE](defaults).replace(**shared_bm25([params]))
              if budget == BUDGET_SOURCE else None)
    return EvalConfig(name, preset, params, expand=(preset == "full"), budget=budget, source=source)


def _budget(spec: str, value: str) -> int | str | None:
    if value == "own":
        return None
    if value == BUDGET_SOURCE:
        return BUDGET_SOURCE
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise UsageError(f"--config {spec!r}: budget is a positive number, {BUDGET_SOURCE!r} or 'own', got {value!r}")


def _pairs(spec: str, items: list[str], known) -> list[tuple[str, str]]:
    """`key=value` items as (key, value), every key one of `known`."""
    out = []
    for item in items:
        key, _, value = (x.strip() for x in item.partition("="))
        if key not in known:
            raise UsageError(f"--config {spec!r}: unknown parameter {key!r} (known: {', '.join(known)})")
        out.append((key, value))
    return out


def _toml_number(spec: str, key: str, text: str) -> object:
    """`text` read as `ragx config set` reads a value (TOML), one value and nothing else."""
    try:
        doc = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        doc = {}
    if set(doc) != {"v"}:
        raise UsageError(f"--config {spec!r}: {key} needs a number, got {text!r}")
    return doc["v"]


def _setting(spec: str, key: str, text: str) -> int | float | str:
    """A Params override, checked exactly as `ragx config set search.KEY` checks it (type, then range or
    choices); a text setting (bm25_variant) is the bare text."""
    try:
        textual = field_type("search", key) is str
        value = coerce("search", key, text if textual else _toml_number(spec, key, text), f"--config {spec!r}")
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if textual:
        return value
    if not math.isfinite(value):  # every [search] number has finite limits; this holds should one lose them
        raise UsageError(f"--config {spec!r}: {key} must be a finite number, got {text!r}")
    return value


def _reference_number(spec: str, key: str, text: str) -> float:
    value = _toml_number(spec, key, text)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"--config {spec!r}: {key} needs a number, got {text!r}")
    limit = REFERENCE_LIMITS[key]
    if not math.isfinite(value) or not limit.allows(value):
        raise UsageError(f"--config {spec!r}: {key} = {text} is out of range: it must be {limit.describe()}")
    return float(value)
