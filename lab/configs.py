"""The lab's Hydra configuration (configs/lab.yaml): composing it, and the dataset configs it names.

One place composes, so the resolver the configs use (`${join:${train_sets}}` in the study name) is
registered before any config is read, by every command and by promotion alike.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator, NoReturn

REPO = Path(__file__).resolve().parent.parent
RUN_OPTIONS = ("worker=", "report=", "trials=", "study_trials=")  # `python -m lab` options, not Hydra overrides


def usage_error(message: str) -> NoReturn:
    """Bad input: one line on stderr, exit 2."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


def _register_resolvers() -> None:
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("join"):
        OmegaConf.register_new_resolver("join", lambda names: "+".join(label(str(n)) for n in names))


def compose(overrides: list[str]):
    """configs/lab.yaml with Hydra `overrides` (the lab's own run options are left out)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    _register_resolvers()
    extra = [o for o in overrides if not o.startswith(RUN_OPTIONS)]
    with initialize_config_dir(config_dir=str(REPO / "configs"), version_base="1.3"):
        return hydra_compose(config_name="lab", overrides=extra)


def label(name: str) -> str:
    """What a dataset is called in study names, trial attributes and reports: a config's name, or a
    BEIR folder's own name with a digest of its full path (two folders both called `notes` are two
    datasets, never one study)."""
    if "/" not in name:
        return name
    folder = Path(name).expanduser().resolve()
    return f"{folder.name}-{hashlib.sha1(str(folder).encode()).hexdigest()[:8]}"


def dataset_config(cfg, name: str) -> Any:
    """The dataset `name` names: the run's own `dataset` when it is that one (so overrides of dataset.*
    hold), a BEIR folder when it is a path (it holds a `/`: `train_sets=[scifact,/data/my-notes]`),
    else configs/dataset/<name>.yaml."""
    if name == cfg.dataset.name:
        return cfg.dataset
    if "/" in name:
        folder = Path(name).expanduser().resolve()
        # a cluster worker (passes_from=shared) reads only the shared passes: it may not hold the folder
        if cfg.get("passes_from", "index") != "shared" and not (folder / "corpus.jsonl").is_file():
            usage_error(f"lab: {name!r} is not a BEIR folder (no corpus.jsonl in it)")
        from omegaconf import OmegaConf

        return OmegaConf.create({"name": label(name), "data_dir": str(folder), "cache": None})
    if not (REPO / "configs" / "dataset" / f"{name}.yaml").is_file():
        known = sorted(p.stem for p in (REPO / "configs" / "dataset").glob("*.yaml"))
        usage_error(f"lab: no dataset config {name!r} (configs/dataset/: {', '.join(known)})")
    return compose([f"dataset={name}"]).dataset


def train_sets(cfg) -> dict[str, str]:
    """The training sets a sweep optimises over at once (`train_sets`, or the run's one dataset):
    label -> how `train_sets` names it (a dataset config's name or a BEIR folder)."""
    names = [str(n) for n in (cfg.get("train_sets") or [cfg.dataset.name])]
    labels = [label(n) for n in names]
    if len(set(labels)) != len(labels):
        usage_error(f"lab: train_sets names a dataset twice: {labels}")
    return dict(zip(labels, names))


@contextlib.contextmanager
def package_search_defaults() -> Iterator[None]:
    """For the duration: the rc file (~/.ragxrc or $RAGX_RC) read without its [search] table.

    The lab tunes against, and promotion writes, the *shipped* search defaults (ragx/defaults.toml);
    a developer's rc [search] must neither become "the current defaults" of a sweep nor be copied into
    defaults.toml by a promotion. ragx.config merges the rc in every `load_settings` (and `Corpus.open`,
    which the held-out `ragx eval` runs use), so rather than re-implement its layering (ragx/ is not the
    lab's to edit) RAGX_RC points, for the duration, at a copy of the rc without [search]: its other
    tables (e.g. the [rerank] model a rerank study and its promotion need) still hold, every reader in
    this process sees the same settings, and the rc itself is left untouched."""
    import tomllib

    import tomlkit

    from ragx.config import rc_path

    rc = rc_path()
    try:
        raw = rc.read_text(encoding="utf-8")
        has_search = "search" in tomllib.loads(raw)
    except (OSError, tomllib.TOMLDecodeError):  # no rc (nothing to hide), or a broken one (load_settings says so)
        has_search = False
    if not has_search:
        yield
        return
    doc = tomlkit.parse(raw)
    del doc["search"]
    previous = os.environ.get("RAGX_RC")
    with tempfile.TemporaryDirectory(prefix="lab-rc-") as folder:
        copy = Path(folder) / "ragxrc"
        copy.write_text(tomlkit.dumps(doc), encoding="utf-8")
        os.environ["RAGX_RC"] = str(copy)
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("RAGX_RC", None)
            else:
                os.environ["RAGX_RC"] = previous


def package_defaults():
    """The shipped search defaults (ragx/defaults.toml), whatever the rc's [search] says."""
    from ragx.config import load_settings

    with package_search_defaults():
        return load_settings(None, warn=False).search


def check_not_heldout(cfg, command: str) -> None:
    """Tuning data never overlaps held-out data: no training set (`train_sets`, or `dataset`) may be read
    at a split named `test`, nor at a split `promote.heldout` lists for it. A usage error (exit 2).
    (Collections without a train split are tuned under k-fold CV by `python -m lab.multitune`, which
    reads its own folds and never comes here.)"""
    from ragx.errors import UsageError

    split = str(cfg.split)
    heldout = {(label(str(item.get("dataset"))), str(item.get("split"))) for item in (cfg.promote.get("heldout") or [])}
    for set_label, name in train_sets(cfg).items():
        if split == "test" or (set_label, split) in heldout:
            why = "a test split" if split == "test" else "held out (promote.heldout)"
            rule = ("a study tuned on it is never promoted" if command == "promote"
                    else "the lab tunes on training splits only (split=train; held-out splits are promotion's check)")
            raise UsageError(f"{command}: {name} {split} is {why}: {rule}")
