"""Named pipeline configurations for side-by-side evaluation, and `--config name=preset,key=value`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from ..errors import UsageError
from ..search.params import Params

# Each preset is the current defaults with some legs switched off, so it tracks `lab promote`.
PRESETS: dict[str, Callable[[Params], Params]] = {
    # single legs stay single: no link edges ([ranking] link_weight = 0)
    "dense": lambda p: p.replace(lexical_n=0, hops=0, alpha=0.0, beta=0.0, gamma=1.0, delta=0.0, link_weight=0.0),
    "bm25": lambda p: p.replace(dense_n=0, hops=0, alpha=0.0, beta=0.0, gamma=0.0, delta=1.0, link_weight=0.0),
    "hybrid": lambda p: p.switched(graph=False, rerank=False),
    "graph": lambda p: p.switched(rerank=False),
    "full": lambda p: p,
}
DEFAULT_CONFIGS = ("dense", "bm25", "hybrid", "graph")


@dataclass(frozen=True)
class EvalConfig:
    name: str
    preset: str
    params: Params
    expand: bool

    def describe(self) -> dict:
        return {"name": self.name, "preset": self.preset, "expand": self.expand, "params": dataclasses.asdict(self.params)}


def parse_config(spec: str, defaults: Params) -> EvalConfig:
    """`graph`, or `name=graph,hops=3,decay=0.7` (the preset first, then Params overrides)."""
    name, eq, rest = spec.partition("=")
    parts = [x.strip() for x in (rest if eq else name).split(",") if x.strip()]
    preset, overrides = parts[0] if parts else "", parts[1:]
    if preset not in PRESETS:
        raise UsageError(f"--config {spec!r}: unknown preset {preset!r} (presets: {', '.join(PRESETS)})")
    params = PRESETS[preset](defaults)
    fields = {f.name: f.type for f in dataclasses.fields(Params)}
    changes = {}
    for item in overrides:
        key, _, value = item.partition("=")
        if key not in fields:
            raise UsageError(f"--config {spec!r}: unknown parameter {key!r} (known: {', '.join(fields)})")
        try:
            changes[key] = int(value) if fields[key] in (int, "int") else float(value)
        except ValueError:
            raise UsageError(f"--config {spec!r}: {key} needs a number, got {value!r}") from None
    return EvalConfig(name if eq else preset, preset, params.replace(**changes), expand=(preset == "full"))
