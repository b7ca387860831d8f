"""find_sorted and unique_ids: the binary search and sorted set every id match goes through."""

from __future__ import annotations

import numpy as np
import pytest

from ragx.lookup import find_sorted, unique_ids


@pytest.mark.parametrize("case", ["equal", "subset", "disjoint", "mixed", "empty table", "one"])
def test_find_sorted_says_where_each_value_is_and_whether_it_is_there(case):
    rng = np.random.default_rng(3)
    table = np.unique(rng.integers(0, 5_000, 2_000))
    values = {
        "equal": table.copy(),
        "subset": table[::3],
        "disjoint": table + 100_000,
        "mixed": np.sort(rng.integers(0, 6_000, len(table))),  # same length as the table, not equal
        "empty table": table,
        "one": table[:1],
    }[case]
    if case == "empty table":
        table = table[:0]
    pos, found = find_sorted(table, values)
    assert found.tolist() == np.isin(values, table).tolist()
    assert (table[pos[found]] == values[found]).all()
    assert len(table) == 0 or ((0 <= pos) & (pos < len(table))).all()


def test_unique_ids_is_numpys_unique():
    ids = np.random.default_rng(4).integers(0, 50, 200)
    assert unique_ids(ids).tolist() == np.unique(ids).tolist()
