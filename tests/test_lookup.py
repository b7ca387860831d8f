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


def test_the_set_helpers_equal_numpys():
    from ragx.lookup import ids_minus, isin_ids, union_ids

    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 300):
        a, b, c = (rng.integers(-5, 10**6 if n > 7 else 20, n) for _ in range(3))
        assert np.array_equal(union_ids(a, b, c), np.union1d(np.union1d(a, b), c))
        assert np.array_equal(ids_minus(a, b), np.setdiff1d(a, b))
        assert np.array_equal(isin_ids(a, b), np.isin(a, b))
        assert union_ids(a, b).dtype == np.union1d(a, b).dtype


def test_the_edit_path_helpers_do_not_import_numpy_ma():
    import subprocess
    import sys

    code = ("import sys, numpy as np; from ragx.lookup import ids_minus, isin_ids, union_ids, unique_ids; "
            "a = np.arange(10**5) * 7; b = np.arange(3) * 10**6; "
            "union_ids(a, b); ids_minus(a, b); isin_ids(a, b); unique_ids(a); print('numpy.ma' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
