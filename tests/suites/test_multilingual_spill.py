"""Issue 26.3: ``multilingual score`` in flat memory.  The per-row columns move to temporary
files past ``SPILL_AT`` values, the duplicate check and the CNBE pairing go through hash
partitions of the sample ids on disk, and the means/stds read the columns chunk by chunk.

Every test here shrinks ``SPILL_AT`` (and the ranges of :class:`Scatter`) so that a few hundred
rows take the disk paths, and compares with the same score held in memory: the numbers, the
items, the notes and the errors (with their places) must be identical.
"""

from __future__ import annotations

import json
import math
import random
from array import array
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import stats
from ragmeter.errors import InputError
from ragmeter.io import Row, _spill
from ragmeter.io._spill import KeyedRecords, NumberColumn, Scatter, SpillDir, TextColumn
from ragmeter.multilingual._score import score_file, score_rows
from ragmeter.multilingual._scorer import MultilingualConfig


@pytest.fixture
def tiny_spill(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_spill, "SPILL_AT", 16)
    monkeypatch.setattr(Scatter, "_RANGE", 24)


STRINGS = ["q1", "", "a\nb", "back\\slash", "\\n", "é\ud800", "東京", "x" * 40, "\n", "\\"]


def test_text_column_round_trip(tiny_spill: None) -> None:
    values = [STRINGS[i % len(STRINGS)] + str(i // 3) for i in range(150)]
    col = TextColumn(SpillDir())
    for start in range(0, 150, 7):
        col.extend(values[start:start + 7])
    assert len(col) == 150
    assert col.tolist() == values and list(col) == values
    assert [col[i] for i in (0, 15, 16, 149)] == [values[i] for i in (0, 15, 16, 149)]
    for pos in ([3, 40, 41, 140], list(range(0, 150, 2)), [149], range(20, 60)):
        assert col.take(pos) == [values[i] for i in pos]


@pytest.mark.parametrize("plain", [True, False])
def test_text_column_sparse_take(tiny_spill: None, plain: bool) -> None:
    """A few strings of many blocks (each decoded alone from its block's bytes when the block
    has no escapes) and dense takes give the strings at those positions."""
    pool = ["q1", "", "é\ud800", "東京", "x" * 40] + ([] if plain else ["a\nb", "\\"])
    values = [pool[i % len(pool)] + str(i // 5) for i in range(200)]
    col = TextColumn(SpillDir())
    for start in range(0, 200, 9):
        col.extend(values[start:start + 9])
    for pos in ([0], [15], [16, 17], [1, 33, 70, 150, 199], range(0, 200, 20), range(3, 190, 7),
                list(range(40, 64)), [191, 199]):
        assert col.take(pos) == [values[i] for i in pos]


def test_number_column_round_trip(tiny_spill: None) -> None:
    rng = random.Random(1)
    values = [rng.random() for _ in range(200)] + [math.nan, 0.0, -1e300]
    col = NumberColumn("d", SpillDir())
    for start in range(0, len(values), 11):
        col.extend(values[start:start + 11])
    got = col.tolist()
    assert len(col) == len(values) and got[:-3] == values[:-3] and math.isnan(got[-3])
    assert [c for chunk in col.chunks(17) for c in chunk][:200] == values[:200]
    for pos in ([0, 5, 99, 199], list(range(0, 200, 3)), range(10, 30), [200 + 2]):
        assert col.take(pos)[:len(pos)] == [values[i] for i in pos]


def test_keyed_records_keep_each_key_in_one_group(tiny_spill: None) -> None:
    keys = [f"s{i % 37}" for i in range(300)]
    rec = KeyedRecords(2, SpillDir())
    for start in range(0, 300, 13):
        rec.add(keys[start:start + 13], range(start, min(300, start + 13)),
                [float(i * 2) for i in range(start, min(300, start + 13))])
    seen: dict[str, int] = {}
    rows = []
    groups = list(rec.groups())
    assert len(groups) > 1  # partitioned on disk
    for g, (gkeys, (first, second)) in enumerate(groups):
        for k, a, b in zip(gkeys, first, second, strict=True):
            assert seen.setdefault(k, g) == g
            rows.append((k, a, b))
    assert sorted(rows, key=lambda r: r[1]) == [(k, float(i), float(2 * i))
                                                 for i, k in enumerate(keys)]


def test_scatter_places_by_position(tiny_spill: None) -> None:
    order = list(range(100))
    random.Random(2).shuffle(order)
    sc = Scatter(100, 2, SpillDir())
    for start in range(0, 90, 9):  # positions 90..99 are never put: NaN
        part = [p for p in order if p < 90][start:start + 9]
        sc.put(part, [p * 1.5 for p in part], [-p for p in part])
    a, b = (c.tolist() for c in sc.columns())
    assert a[:90] == [p * 1.5 for p in range(90)] and b[:90] == [-p for p in range(90)]
    assert all(math.isnan(x) for x in a[90:] + b[90:])


@pytest.mark.parametrize("sizes", [[5], [3000], [1, 2500, 7, 4000], [0, 2047, 2049]])
def test_mean_std_chunks_is_mean_std(sizes: list[int]) -> None:
    rng = random.Random(sum(sizes))
    parts = [[rng.choice([0.0, 1.0, rng.random(), 1e-9 * rng.random()]) for _ in range(k)]
             for k in sizes]
    whole = [x for p in parts for x in p]

    def chunks() -> Any:
        import numpy as np

        return (np.asarray(p) if i % 2 else array("d", p) for i, p in enumerate(parts))

    mean, std, n = stats.mean_std_chunks(chunks)
    assert (mean, std) == stats.mean_std(whole) and n == len(whole)


def _rows(n_samples: int, seed: int = 3) -> list[dict[str, Any]]:
    """Rows in shuffled order: unscored predictions, an unscored baseline row, costs and
    semantic scores partly absent."""
    rng = random.Random(seed)
    out = []
    for i in range(n_samples):
        lang = rng.choice(["en", "de", "ja", "zh_cn", "ru"])
        gold = rng.choice(["the river", "Berlin", "東京", "北京", "Москва", "a king"])
        for system in ("direct", "multi", "cross", "lbrag"):
            pred = gold if rng.random() < 0.4 else rng.choice(
                ["the river bank", "Berlin!", "東京です", "北京", "war", "a queen", ""])
            row: dict[str, Any] = {"sample_id": f"q{i}\n" if i % 17 == 0 else f"q{i}",
                                   "sample_lang": lang, "system": system, "gold_answer": gold,
                                   "pred_answer": None if rng.random() < 0.03 else pred}
            if system not in ("direct", "multi") or rng.random() < 0.9:
                row["translate_tokens"] = rng.randint(0, 300)
            if rng.random() < 0.5:
                row["semantic_score"] = rng.random()
            out.append(row)
    rng.shuffle(out)
    return out


def _score(rows: list[dict[str, Any]], config: MultilingualConfig) -> Any:
    return score_rows([Row(r, i + 1, "line", "x.jsonl") for i, r in enumerate(rows)], config)


def _same(a: Any, b: Any) -> None:
    assert json.dumps(a.to_json(), sort_keys=True) == json.dumps(b.to_json(), sort_keys=True)
    assert list(a.iter_items()) == list(b.iter_items())
    assert a.ordered_items() == b.ordered_items()
    ka, kb = a.item_columns(), b.item_columns()
    assert list(ka) == list(kb)


@pytest.mark.parametrize("config", [MultilingualConfig(),
                                    MultilingualConfig(ci=True, paired=True, n_resamples=50),
                                    MultilingualConfig(baseline="cross")])
def test_spilled_score_is_the_in_memory_score(config: MultilingualConfig,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(150)
    held = _score(rows, config)
    assert held.notes and any("unscored" in n for n in held.notes)
    monkeypatch.setattr(_spill, "SPILL_AT", 16)
    monkeypatch.setattr(Scatter, "_RANGE", 24)
    _same(_score(rows, config), held)


def test_spilled_fast_path_is_the_row_path(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(300, seed=4)
    for r in rows:  # a clean file: the columnar path takes it
        r["sample_id"] = r["sample_id"].strip()
        r["pred_answer"] = r["pred_answer"] if r["pred_answer"] is not None else "x"
        r.setdefault("translate_tokens", 0)
    path = tmp_path / "x.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    config = MultilingualConfig()
    held = _score(rows, config)
    monkeypatch.setattr(_spill, "SPILL_AT", 64)
    monkeypatch.setattr(Scatter, "_RANGE", 100)
    monkeypatch.setattr("ragmeter.multilingual._score.FAST_PATH_MIN_BYTES", 0)
    monkeypatch.setattr("ragmeter.multilingual._fast._BLOCK", 1 << 12)

    from ragmeter.multilingual import _aggregate

    exact: list[bool] = []
    real = _aggregate.aggregate
    monkeypatch.setattr("ragmeter.multilingual._score.aggregate",
                        lambda acc, cfg, lid, exact_places: exact.append(exact_places)
                        or real(acc, cfg, lid, exact_places))
    fast = score_file(path, config)
    assert exact == [False]  # the columnar path ran to the end, never given up
    assert json.dumps(fast.to_json(), sort_keys=True) == json.dumps(held.to_json(),
                                                                     sort_keys=True)
    assert list(fast.iter_items()) == list(held.iter_items())


def _error(rows: list[dict[str, Any]]) -> str:
    with pytest.raises(InputError) as err:
        _score(rows, MultilingualConfig())
    return str(err.value)


@pytest.mark.parametrize("kind", ["duplicate", "unscored duplicate", "missing baseline",
                                  "baseline duplicate", "other system's duplicate",
                                  "duplicate without a baseline row"])
def test_spilled_errors_name_the_same_place(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(120, seed=5)
    first = {s: next(i for i, r in enumerate(rows) if r["system"] == s)
             for s in ("direct", "multi")}
    if kind == "duplicate":
        rows.insert(300, dict(rows[40]))
        rows.insert(350, dict(rows[10]))  # later in the input: not the one named
    elif kind == "unscored duplicate":
        rows.insert(200, {**rows[30], "pred_answer": None})
    elif kind == "baseline duplicate":
        rows.insert(250, dict(rows[first["direct"]]))
    elif kind == "other system's duplicate":
        rows.insert(250, dict(rows[first["multi"]]))
    elif kind == "duplicate without a baseline row":  # the duplicate is the first error
        row = rows[first["multi"]]
        rows = [r for r in rows if not (r["system"] == "direct" and
                                        r["sample_id"] == row["sample_id"])]
        rows.insert(280, dict(row))
    else:
        rows = [r for r in rows if not (r["system"] == "direct" and r["sample_id"] in
                                        ("q7", "q9"))]
    held = _error(rows)
    assert ("duplicate" in held) == (kind != "missing baseline")
    monkeypatch.setattr(_spill, "SPILL_AT", 16)
    monkeypatch.setattr(Scatter, "_RANGE", 24)
    assert _error(rows) == held


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e150,
                          max_value=1e150), min_size=1, max_size=12),
       st.lists(st.integers(min_value=1, max_value=900), min_size=1, max_size=12),
       st.integers(min_value=2048, max_value=4000))
def test_mean_std_chunks_by_distinct_values_is_mean_std(values: list[float], times: list[int],
                                                       first: int) -> None:
    """A few distinct values, in a big first chunk and more (summed by value and count,
    exactly, rounded once): the very floats of ``math.fsum`` value by value, magnitudes that
    cancel and subnormals included."""
    whole = [v for v, k in zip(values, times * len(values), strict=False) for _ in range(k)]
    random.Random(len(whole)).shuffle(whole)
    whole = [values[0]] * first + whole
    parts = [whole[:first], whole[first:first + 700], whole[first + 700:]]

    def chunks() -> Any:
        import numpy as np

        return (np.asarray(p) if i % 2 else array("d", p) for i, p in enumerate(parts))

    mean, std, n = stats.mean_std_chunks(chunks)
    want_mean = math.fsum(whole) / len(whole)
    want_std = math.sqrt(math.fsum([(x - want_mean) * (x - want_mean) for x in whole])
                         / (len(whole) - 1))
    assert (mean, std, n) == (want_mean, want_std, len(whole))
