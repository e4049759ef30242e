"""Scoring a multilingual answers file or stream: the row path (exact places for every problem)
and the columnar path for big clean files (:mod:`ragmeter.multilingual._fast`), both ending in
:func:`ragmeter.multilingual._aggregate.aggregate`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ragmeter.io import Row, iter_rows
from ragmeter.multilingual._aggregate import aggregate
from ragmeter.multilingual._rows import COMPONENT, FastPathUnsupported, _parse_row, _Parsed
from ragmeter.multilingual._scorer import (
    BATCH,
    MultilingualConfig,
    MultilingualResult,
    _Accumulator,
)
from ragmeter.text._languages import canonical_language
from ragmeter.text._rlc import LidRlc

__all__ = ["score_file", "score_rows"]


def _score_row_path(rows: Iterable[Row], config: MultilingualConfig, path: str,
                    lid: LidRlc | None) -> _Accumulator:
    acc: _Accumulator | None = None
    lang_ok: dict[str, bool] = {}
    batch: list[_Parsed] = []

    def flush() -> None:
        assert acc is not None
        acc.add([p.system for p in batch], [p.sample_id for p in batch],
                [p.lang for p in batch], [p.gold for p in batch], [p.pred for p in batch],
                {"cost": [p.cost for p in batch], "semantic_score": [p.semantic for p in batch]},
                [p.number for p in batch], [p.question for p in batch])
        batch.clear()

    for row in rows:
        if acc is None:
            acc = _Accumulator(path, row.unit, lid, config.keep_text, config.normalize)
        batch.append(_parse_row(row, config.field_map, lang_ok))
        if len(batch) >= BATCH:
            flush()
    if acc is None:
        acc = _Accumulator(path, "row", lid, config.keep_text, config.normalize)
    if batch:
        flush()
    return acc


def score_rows(rows: Iterable[Row], config: MultilingualConfig,
               source: str = "input") -> MultilingualResult:
    """Score a stream of rows (see module docstring)."""
    rows = list(rows) if config.rlc_lid else rows
    lid = None
    if config.rlc_lid:
        langs = {canonical_language(str(r.data.get(config.field_map.source("sample_lang"), "")))
                 for r in rows}  # type: ignore[union-attr]
        lid = LidRlc(sorted(lg for lg in langs if lg))
    acc = _score_row_path(rows, config, source, lid)
    return aggregate(acc, config, lid, exact_places=True)


FAST_PATH_MIN_BYTES = 1 << 20
"""Below this size the row path is quicker than importing Arrow (same numbers either way)."""


def _big_enough(path: str | Path) -> bool:
    try:
        return Path(path).stat().st_size >= FAST_PATH_MIN_BYTES
    except OSError:
        return False


def score_file(path: str | Path, config: MultilingualConfig) -> MultilingualResult:
    """Score an answers file (JSONL, JSON, CSV or Parquet).

    Clean JSONL and Parquet files take a columnar path (Arrow parsing, batched text passes);
    anything unusual re-runs on the row path, which reports problems with their exact place.
    Both paths give identical numbers (tested).
    """
    if not config.rlc_lid and config.normalize == "lbrag" and _big_enough(path):
        from ragmeter.multilingual._fast import accumulate_columnar

        try:
            acc = accumulate_columnar(Path(path), config, _Accumulator)
            if acc is not None:
                return aggregate(acc, config, None, exact_places=False)
        except FastPathUnsupported:
            pass
    rows = iter_rows(path, component=COMPONENT, field_map=config.field_map)
    return score_rows(rows, config, source=str(path))
