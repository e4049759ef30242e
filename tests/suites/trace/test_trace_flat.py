"""Issue 26.3: ``trace score`` in flat memory.  Scored rows live in spilled columns
(:class:`ScoredRows`), the aggregates read them chunk by chunk, and above ``CI_ROWS`` values the
bootstrap draws value counts instead of rows."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ragmeter import stats
from ragmeter.io import _spill
from ragmeter.stats import _core
from ragmeter.trace import _scorer
from ragmeter.trace._scorer import ScoreConfig, score_file


def _write(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            docs = [[[f"{d}{chr(97 + k)}", "text"] for k in range(rng.randint(1, 5))]
                    for d in range(rng.randint(1, 3))]
            keys = [k for doc in docs for k, _ in doc]
            row = {"id": f"t{i}", "documents_sentences": docs,
                   "all_relevant_sentence_keys": rng.sample(keys, rng.randint(0, len(keys))),
                   "all_utilized_sentence_keys": rng.sample(keys, rng.randint(0, len(keys))),
                   "unsupported_response_sentence_keys": ["r1"] * rng.choice((0, 0, 1))}
            if i % 11 == 3:
                row["documents_sentences"] = None  # unscored
            if i % 13 == 5:
                row["all_utilized_sentence_keys"] = None  # not labelled
            fh.write(json.dumps(row) + "\n")


def test_spilled_rows_give_the_same_result(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "labels.jsonl"
    _write(path, 700)
    config = ScoreConfig(n_resamples=200)
    held = score_file(path, config)
    monkeypatch.setattr(_spill, "SPILL_AT", 32)
    spilled = score_file(path, config)
    assert spilled.to_json() == held.to_json()
    assert list(spilled.iter_items()) == list(held.iter_items())
    assert held.coverage["unscored"] == 64 and held.summary["utilization"]["not_labelled"] > 0
    # the list form (``--by`` groups) aggregates to the very same numbers
    assert _scorer.aggregate(list(held.rows), config) == held.summary


def test_counts_bootstrap_above_ci_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "labels.jsonl"
    _write(path, 3000, seed=1)
    config = ScoreConfig(n_resamples=400)
    rows_way = score_file(path, config)
    assert _scorer.CI_NOTE not in rows_way.notes
    monkeypatch.setattr(_scorer, "CI_ROWS", 100)
    counts_way = score_file(path, config)
    assert _scorer.CI_NOTE in counts_way.notes
    for metric, entry in rows_way.summary.items():
        got = counts_way.summary[metric]
        assert {k: v for k, v in got.items() if k != "ci95"} == \
            {k: v for k, v in entry.items() if k != "ci95"}
        (lo, hi), (elo, ehi) = got["ci95"], entry["ci95"]
        assert lo <= got["mean"] <= hi
        width = ehi - elo
        assert abs(lo - elo) < 0.25 * width and abs(hi - ehi) < 0.25 * width, metric


def test_bootstrap_ci_counts_matches_the_row_bootstrap_in_distribution() -> None:
    rng = random.Random(3)
    values = [rng.choice([0.0, 0.25, 0.5, 1.0, 1 / 3]) for _ in range(5000)]
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    lo, hi = stats.bootstrap_ci_counts(counts, n_resamples=2000, seed=7)  # type: ignore[misc]
    elo, ehi = stats.bootstrap_ci(values, n_resamples=2000, seed=7)  # type: ignore[misc]
    assert abs(lo - elo) < 0.1 * (ehi - elo) and abs(hi - ehi) < 0.1 * (ehi - elo)
    assert stats.bootstrap_ci_counts(counts, n_resamples=50, seed=1) == \
        stats.bootstrap_ci_counts(counts, n_resamples=50, seed=1)
    assert stats.bootstrap_ci_counts({0.5: 9}) == (0.5, 0.5)
    assert stats.bootstrap_ci_counts({}) is None


@pytest.mark.parametrize("spill_at", [256, None])
def test_counts_bootstrap_counts_as_a_counter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              spill_at: int | None) -> None:
    """The value counts (numpy, chunk by chunk; or those the mean took, stats.distinct_counts,
    when the first chunk holds 2,048 values or more) are a Counter's of the present values:
    the same intervals, and over 65,536 distinct values the row bootstrap as before."""
    from collections import Counter

    path = tmp_path / "labels.jsonl"
    _write(path, 3000, seed=2)
    monkeypatch.setattr(_scorer, "CI_ROWS", 100)
    if spill_at:
        monkeypatch.setattr(_spill, "SPILL_AT", spill_at)  # several chunks of 256 values
    result = score_file(path, ScoreConfig(n_resamples=300))
    rows = [r for r in result.rows if r.ok]
    for metric, entry in result.summary.items():
        values = [getattr(r, metric) for r in rows if getattr(r, metric) is not None]
        counts = dict(Counter(float(v) for v in values))
        assert entry["ci95"] == list(stats.bootstrap_ci_counts(  # type: ignore[arg-type]
            counts, n_resamples=300, seed=ScoreConfig().seed)), metric
    scored = _scorer.ScoredRows()
    many = [i / 7 for i in range(70_000)]
    scored.extend_scored([f"r{i}" for i in range(len(many))], range(len(many)), {
        name: [*many] if name in ("relevance",) else [float("nan")] * len(many)
        for name in ("relevance", "utilization", "completeness", "adherence",
                     "adherence_probability", "average")})
    config = ScoreConfig(n_resamples=50)
    assert _scorer._interval(scored.metric_chunks("relevance"), len(many), config) == \
        stats.bootstrap_ci(many, n_resamples=50, seed=config.seed)


@pytest.mark.parametrize("spill_at", [7, 64, 1 << 14])
def test_text_column_takes_encoded_lines_among_strings(monkeypatch, spill_at):
    """:class:`_spill.EncodedLines` (the C scanner's ids, written to disk undecoded) mixed
    with strings, across block boundaries: every read gives the strings in order."""
    monkeypatch.setattr(_spill, "SPILL_AT", spill_at)
    rng = random.Random(spill_at)
    column = _spill.TextColumn(_spill.SpillDir())
    expected: list[str] = []
    for step in range(60):
        n = rng.choice((0, 1, 3, 20, 90))
        values = [f"id{step}-{i}" + ("é" if i % 5 == 1 else "") for i in range(n)]
        if step % 3 == 2:
            values = [v + "\\n" if i == 0 else v for i, v in enumerate(values)]  # escaped
            column.extend(values)
        else:
            column.extend(_spill.EncodedLines("".join(v + "\n" for v in values)
                                              .encode("utf-8"), n))
        expected.extend(values)
        assert len(column) == len(expected)
        if step % 17 == 5:  # reads between writes settle what is still encoded
            if expected:
                assert column[len(expected) - 1] == expected[-1]
    assert column.tolist() == expected
    assert [s for chunk in column.chunks() for s in chunk] == expected
    picks = sorted(rng.sample(range(len(expected)), 40))
    assert column.take(picks) == [expected[p] for p in picks]
    assert [column[p] for p in picks[::7]] == [expected[p] for p in picks[::7]]


@pytest.mark.parametrize("spill_at", [7, 100, 1 << 14])
def test_number_column_gathers_what_take_gives(monkeypatch, spill_at):
    """:meth:`_spill.NumberColumn.gather` (the run record's sample of items, in numpy) reads
    the positions that :meth:`take` reads, on disk, in memory and across both."""
    import numpy as np

    monkeypatch.setattr(_spill, "SPILL_AT", spill_at)
    rng = random.Random(spill_at)
    floats, ints = _spill.NumberColumn("d", _spill.SpillDir()), \
        _spill.NumberColumn("q", _spill.SpillDir())
    values = [rng.random() for _ in range(30_000)]
    for k in range(0, len(values), 777):
        floats.extend(values[k:k + 777])
        ints.extend(range(k, min(k + 777, len(values))))
    for size in (0, 1, 5, 700, 9000):
        picks = sorted(rng.sample(range(len(values)), size))
        assert floats.gather(np.asarray(picks, dtype=np.int64)).tolist() == \
            floats.take(picks) == [values[p] for p in picks]
        assert ints.gather(np.asarray(picks, dtype=np.int64)).tolist() == picks
    tail = list(range(len(values) - 30, len(values)))  # the part still in memory
    assert floats.gather(np.asarray(tail)).tolist() == values[-30:]


def test_scanned_ids_stay_encoded_until_read():
    """The C scanner's ids go to the spilled id column without being decoded: an empty
    extend between blocks (the pending rows' flush) does not decode them."""
    scored = _scorer.ScoredRows()
    decoded = []
    original = _spill.EncodedLines.decode

    def spy(self):
        decoded.append(self.n)
        return original(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_spill.EncodedLines, "decode", spy)
        scored.extend_scored(_spill.EncodedLines(b"a\nb\n", 2), range(2), {
            name: [0.5, 0.5] for name in _scorer._VALUES})
        scored.extend_scored([], range(2, 2), {name: [] for name in _scorer._VALUES})
        scored.extend_scored(_spill.EncodedLines(b"c\n", 1), range(2, 3), {
            name: [0.5] for name in _scorer._VALUES})
        assert decoded == []
        assert scored.ids.tolist() == ["a", "b", "c"]  # read: decoded once
        assert decoded == [3]


def _unique_counts_by_sort(chunks):
    """distinct_counts as it was: np.unique (a sort) of every chunk."""
    import numpy as np

    counts: dict[float, int] = {}
    for i, chunk in enumerate(chunks()):
        if i == 0 and len(chunk) < _core.SMALL:
            return None
        values, times = np.unique(np.asarray(chunk, dtype=np.float64), return_counts=True)
        if values.size > _core.DISTINCT or not np.isfinite(values).all():
            return None
        for v, k in zip(values.tolist(), times.tolist(), strict=True):
            counts[v] = counts.get(v, 0) + k
        if len(counts) > _core.DISTINCT:
            return None
    return counts or None


@pytest.mark.parametrize("kind", ["binary", "ratios", "many", "signed zeros", "nan", "inf",
                                  "too many"])
def test_distinct_counts_by_hash_are_those_of_the_sort(kind, monkeypatch):
    """Chunks after the first are counted by a 16-bit hash of the values' bits when there are
    more than 4 distinct values so far (stats._core._hashed_unique), falling back to the sort
    on a collision or on 0.0 beside -0.0: the same counts, keys (signs of zero included) and
    key order as sorting every chunk, or None alike."""
    import math

    import numpy as np

    rng = np.random.default_rng(len(kind))
    chunks = []
    for c in range(8):
        n = 16_384 if c < 6 else (0 if c == 6 else 999)  # an empty chunk too
        if kind == "binary":
            a = rng.integers(0, 2, n).astype(float)
        elif kind == "ratios":  # a few hundred distinct, as trace's metrics
            a = rng.integers(0, 20, n) / rng.integers(1, 20, n)
        elif kind == "many":  # thousands of distinct: collisions, the sort takes over
            a = rng.integers(0, 4000, n) / 7.0
        elif kind == "signed zeros":
            a = rng.integers(0, 9, n) / 4.0 * np.where(rng.random(n) < 0.5, -1.0, 1.0)
        else:
            a = rng.integers(0, 30, n) / rng.integers(1, 9, n)
            if c == 3 and kind != "too many":
                a[7] = np.nan if kind == "nan" else np.inf
            if kind == "too many":
                a = a + c * 1000.0 + rng.integers(0, 300, n)
        chunks.append(a if c % 2 else array_like(a))
    hashed = []
    real = _core._hashed_unique
    monkeypatch.setattr(_core, "_hashed_unique",
                        lambda values, table: hashed.append(real(values, table)) or hashed[-1])
    expected = _unique_counts_by_sort(lambda: iter(chunks))
    got = stats.distinct_counts(lambda: iter(chunks))
    if kind == "ratios":  # the hash answered (the test is not of the sort alone)
        assert any(h is not None for h in hashed)
    assert (got is None) == (expected is None)
    if kind in ("nan", "inf", "too many"):
        assert got is None
    else:
        assert list(got.items()) == list(expected.items())
        assert [math.copysign(1, k) for k in got] == [math.copysign(1, k) for k in expected]


def array_like(values):
    from array import array

    return array("d", values.tobytes())
