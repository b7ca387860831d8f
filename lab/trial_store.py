"""Writing finished trials into an Optuna storage, a batch at a time (the lab's one use of Optuna's RDB internals).

Optuna's public `Study.add_trials` commits each trial on its own, through its ORM, one SELECT and one
INSERT per parameter and attribute: for a re-scored trial that costs more than the re-scoring, and a
batch written that way can be cut in half by a kill. On an RDB storage a batch goes in one transaction
instead, as bulk inserts into Optuna's own tables (its models, its encodings of values, parameters and
attributes; the study row locked for update and the trials numbered after the study's existing ones,
as Optuna does for one): the commit makes all of them visible at once or none.
tests/test_lab_batches.py holds what Optuna reads back equal to what `add_trials` writes. Other
storages (journal file, in memory) take the trials one by one."""

from __future__ import annotations

import copy
from typing import Any

from .cluster import rdb_of


def add_complete(study, trials: list[Any]) -> list[Any]:
    """Store `trials` (finished FrozenTrials) in `study`; returns them as stored (numbered)."""
    if not trials:
        return []
    rdb = rdb_of(study)
    if rdb is None or not hasattr(rdb, "_get_prepared_new_trial"):
        storage = study._storage
        ids = [storage.create_new_trial(study._study_id, template_trial=t) for t in trials]
        return [storage.get_trial(i) for i in ids]
    from optuna.storages._rdb.storage import _create_scoped_session

    with _create_scoped_session(rdb.scoped_session) as session:
        ids = insert_trials(session, study._study_id, trials)
    out = []
    for t, (trial_id, number) in zip(trials, ids):
        stored = copy.copy(t)
        stored._trial_id, stored.number = trial_id, number
        out.append(stored)
    return out


def insert_trials(session, study_id: int, trials: list[Any]) -> list[tuple[int, int]]:
    """The trials' rows, written as bulk inserts inside the caller's transaction: the trials (numbered
    after the study's existing ones, the study row locked first as Optuna does for one trial), then
    their parameters, values and attributes in Optuna's own encodings. Returns (trial id, number) each."""
    import json

    from optuna.distributions import distribution_to_json
    from optuna.storages._rdb import models
    from sqlalchemy import func, insert

    models.StudyModel.find_or_raise_by_id(study_id, session, for_update=True)
    first = session.query(func.count(models.TrialModel.trial_id)).filter(models.TrialModel.study_id == study_id).scalar()
    rows = []
    for k, t in enumerate(trials):
        row = models.TrialModel(study_id=study_id, number=first + k, state=t.state)
        row.datetime_start, row.datetime_complete = t.datetime_start, t.datetime_complete  # stored as naive UTC
        rows.append(row)
    session.add_all(rows)
    session.flush()  # the trial ids
    pairs = list(zip([r.trial_id for r in rows], trials))
    params = [{"trial_id": i, "param_name": name, "param_value": t.distributions[name].to_internal_repr(value),
               "distribution_json": distribution_to_json(t.distributions[name])} for i, t in pairs for name, value in t.params.items()]
    values = [dict(zip(("trial_id", "objective", "value", "value_type"), (i, 0, *models.TrialValueModel.value_to_stored_repr(t.value))))
              for i, t in pairs if t.value is not None]
    for model, rows_of in ((models.TrialParamModel, params), (models.TrialValueModel, values),
                           (models.TrialUserAttributeModel, _attrs(pairs, "user_attrs", json.dumps)),
                           (models.TrialSystemAttributeModel, _attrs(pairs, "system_attrs", json.dumps))):
        if rows_of:
            session.execute(insert(model), rows_of)
    return [(r.trial_id, r.number) for r in rows]


def _attrs(pairs: list[tuple[int, Any]], field: str, encode) -> list[dict[str, Any]]:
    return [{"trial_id": i, "key": key, "value_json": encode(value)} for i, t in pairs for key, value in getattr(t, field).items()]
