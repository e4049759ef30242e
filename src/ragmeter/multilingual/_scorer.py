"""Scoring multilingual answers exactly as LBRAG's experiment script does.

Per row: EM, F1, RLC and RLC_OK are recomputed from ``gold_answer``/``pred_answer`` (never read
from the file); cost is ``translate_tokens`` when present, else the sum of
``evidence[].metadata.token_count``; CNBE pairs each row with the baseline system's row of the
same ``sample_id``.  Per system: mean and sample std (n-1; 0.0 when n < 2) of each, the keys of
LBRAG's ``metrics.json``.

The scorer streams its input in batches and keeps only compact per-row numbers, so a file of
millions of rows fits in little memory.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import eq, itemgetter
from typing import Any

from ragmeter import stats
from ragmeter.io import FieldMap
from ragmeter.io._spill import KeyedRecords, NumberColumn, SpillDir, TextColumn
from ragmeter.multilingual._metrics import (
    METRIC_KEYS,
    METRIC_VERSION,
    ROWS,
    RowMetric,
    rows_of,
    signature_fields,
)
from ragmeter.multilingual._rows import COMPONENT
from ragmeter.signature import Signature
from ragmeter.text._normalize import NORMALIZERS, normalize_many, normalize_text
from ragmeter.text._rlc import LidRlc

__all__ = ["MultilingualConfig", "MultilingualResult", "METRIC_KEYS"]

BATCH = 4096
SMALL_BATCH = 256
"""Batches smaller than this run the per-text reference functions (:func:`normalize_text`,
:func:`rlc`) instead of their numpy batch forms: the same values (property-tested), and a
10-row file never imports numpy."""


@dataclass(frozen=True)
class MultilingualConfig:
    """Options of one scoring run.  Defaults reproduce LBRAG; the rest are opt-in."""

    baseline: str | None = "direct"
    baseline_required: bool = False  # True when the user named --baseline explicitly
    ci: bool = False  # 95% bootstrap CIs for every metric
    paired: bool = False  # paired tests of each system against the baseline on F1 and EM
    rlc_lid: bool = False  # language-identification RLC (lingua)
    n_resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = stats.DEFAULT_SEED
    field_map: FieldMap = field(default_factory=FieldMap)
    keep_text: bool = False  # keep question/gold/prediction for --items and run records
    normalize: str = "lbrag"  # answer normalization: "lbrag" (default) or "squad" (v1.1)

    def signature(self) -> Signature:
        settings: dict[str, Any] = {"norm": self.normalize, **signature_fields(),
                                    "baseline": self.baseline or "none"}
        if self.ci or self.paired:
            settings["bootstrap"] = f"{self.n_resamples}@seed{self.seed}"
        if self.rlc_lid:
            settings["rlc_lid"] = "lingua"
        return Signature.make(COMPONENT, METRIC_VERSION, settings)


ABSENT = float("nan")  # internal marker for "no value" in the float columns; never output

STORED = tuple(m for m in ROWS if m.row in ("answer", "response", "given", "lid"))
"""The metrics whose per-row values are kept as columns (the others are computed from them)."""
ANSWER = rows_of("answer")
RESPONSE = rows_of("response")
GIVEN = rows_of("given")
LID = rows_of("lid")
TEXT_METRICS = ANSWER + RESPONSE
"""What :meth:`_Accumulator.score_texts` computes from the texts (a Ray worker's work)."""
ITEM_METRICS = tuple(m for m in ROWS if m.row != "lid")  # rlc_lid: only when computed
ITEM_KEYS = ("sample_id", "system", "sample_lang", "status", *(m.name for m in ITEM_METRICS))
"""The keys of a scored item, in order (then ``rlc_lid`` and the texts when present)."""
_ABSENT_MARKED = frozenset(m.name for m in STORED if m.row in ("given", "lid"))
KEY_FIELDS = 4  # system code, position, place, F1


class _Columns:
    """Per-row values of one system, in input order, in columns that move to a temporary file
    past :data:`~ragmeter.io._spill.SPILL_AT` values (memory does not grow with the rows).

    One float column per stored metric (``values``, by name); ``given`` and ``lid`` metrics
    (cost, semantic score, ``rlc_lid``) use NaN internally for "absent" (input NaN is rejected
    at parsing), turned into None before anything leaves this module.
    """

    def __init__(self, spill: SpillDir) -> None:
        self.sample_ids = TextColumn(spill)
        self.langs = TextColumn(spill)
        self.values: dict[str, NumberColumn] = {m.name: NumberColumn("d", spill)
                                                for m in STORED}
        self.places = NumberColumn("q", spill)  # line/row number
        self.texts: list[tuple[str | None, str, str]] = []  # keep_text only

    def __len__(self) -> int:
        return len(self.sample_ids)

    def has_lid(self) -> bool:
        return any(len(self.values[m.name]) for m in LID)


def _opt(x: float) -> float | None:
    return None if x != x else x


def _column(m: RowMetric, values: Sequence[Any], cnbe: Sequence[Any] | None, n: int
            ) -> Sequence[Any]:
    """One metric's per-row values of some rows, for items: ``values`` are the rows' stored
    column (of the metric, or of the one an ``of:`` metric is computed from), ``cnbe`` their
    CNBE values (None: no baseline)."""
    if m.of is not None:
        assert m.fn is not None
        return list(map(m.fn, values))
    if m.row == "baseline":
        return [None if v != v else v for v in cnbe] if cnbe else repeat(None, n)  # type: ignore[return-value]
    if m.name in _ABSENT_MARKED:
        return [None if v != v else v for v in values]
    return values


@dataclass
class MultilingualResult:
    """Per-system aggregates plus everything needed to write items and reports."""

    systems: list[str]
    metrics: dict[str, dict[str, float | int | None]]
    coverage: dict[str, Any]
    signature: str
    baseline: str | None
    baseline_f1: float | None
    ci: dict[str, dict[str, list[float] | None]] = field(default_factory=dict)
    paired_tests: dict[str, dict[str, dict[str, float | int | str]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    columns: dict[str, _Columns] = field(default_factory=dict, repr=False)
    cnbe_values: dict[str, NumberColumn] = field(default_factory=dict, repr=False)  # NaN: none
    unscored_items: list[dict[str, Any]] = field(default_factory=list, repr=False)
    unscored_places: list[int] = field(default_factory=list, repr=False)
    spill: SpillDir | None = field(default=None, repr=False)  # owns the columns' files

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": 1,
            "family": COMPONENT,
            "signature": self.signature,
            "baseline": self.baseline,
            "baseline_f1": self.baseline_f1,
            "metrics": self.metrics,
            "coverage": self.coverage,
        }
        if self.ci:
            out["ci95"] = self.ci
        if self.paired_tests:
            out["paired_tests"] = self.paired_tests
        if self.notes:
            out["notes"] = self.notes
        return out

    def rows_by_system(self) -> dict[str, int]:
        """Each system's rows, unscored ones included (the headline's coverage)."""
        out = {s: len(self.columns[s]) for s in self.systems}
        for item in self.unscored_items:
            out[item["system"]] = out.get(item["system"], 0) + 1
        return out

    def iter_items(self) -> Iterator[dict[str, Any]]:
        """Per-row results (scored rows by system in input order, then unscored rows)."""
        for system in self.systems:
            cols = self.columns[system]
            n = len(cols)
            rows_of = self._rows_of(system)
            lid = [(m.name, cols.values[m.name]) for m in LID if len(cols.values[m.name])]
            for start in range(0, n, BATCH):
                chunk = range(start, min(n, start + BATCH))
                lids = [(name, column.take(chunk)) for name, column in lid]
                for i, row in zip(chunk, rows_of(chunk), strict=True):
                    item = dict(zip(ITEM_KEYS, row, strict=True))
                    for name, values in lids:
                        value = values[i - start]
                        if value == value:
                            item[name] = value
                    if cols.texts:
                        question, gold, pred = cols.texts[i]
                        gold = list(gold) if isinstance(gold, tuple) else gold
                        if question and question.strip():
                            item["question"] = question
                        item["gold_answer"] = gold
                        item["pred_answer"] = pred
                    yield item
        yield from self.unscored_items

    def item_columns(self) -> Any:
        """:meth:`iter_items` as :class:`ragmeter.runs._columns.ItemColumns` (a run record then
        builds only the items it keeps), or None when items differ in their keys (texts kept,
        ``rlc_lid``)."""
        from ragmeter.runs._columns import ItemColumns, ItemPart

        if any(c.texts or c.has_lid() for c in self.columns.values()):
            return None
        parts = [ItemPart(ITEM_KEYS, len(self.columns[s]), self._rows_of(s))
                 for s in self.systems]
        return ItemColumns(parts, self.unscored_items)

    def _rows_of(self, system: str) -> Callable[[Sequence[int]], list[tuple[Any, ...]]]:
        cols = self.columns[system]
        cnbe = self.cnbe_values.get(system)

        def rows(positions: Sequence[int]) -> list[tuple[Any, ...]]:
            ids = cols.sample_ids.take(positions)
            n = len(ids)
            picked = cnbe.take(positions) if cnbe is not None else None
            columns = [_column(m, cols.values[m.of or m.name].take(positions)
                               if m.row != "baseline" else (), picked, n)
                       for m in ITEM_METRICS]
            return list(zip(ids, repeat(system, n), cols.langs.take(positions),
                            repeat("ok", n), *columns, strict=False))
        return rows

    def ordered_items(self) -> list[dict[str, Any]]:
        """The per-row results in input order (by line, row or index)."""
        places: list[int] = []
        for system in self.systems:
            places.extend(self.columns[system].places)
        places.extend(self.unscored_places)
        items = list(self.iter_items())
        order = sorted(range(len(items)), key=lambda i: places[i])
        return [items[i] for i in order]


# ------------------------------------------------------------------ scoring


def _absent_marked(seq: Sequence[float | None]) -> Sequence[float]:
    """``seq`` with None as the NaN marker (a column of None only: no pass per value; a numpy
    array already holds NaN)."""
    if hasattr(seq, "dtype") or None not in seq:
        return seq  # type: ignore[return-value]
    if seq.count(None) == len(seq):  # type: ignore[attr-defined]
        return [ABSENT] * len(seq)
    return [ABSENT if v is None else v for v in seq]


def _taker(idx: list[int] | None) -> Callable[[Sequence[Any]], Sequence[Any]]:
    """Picks the positions ``idx`` out of a sequence (all of it for None), in C."""
    if idx is None:
        return lambda seq: seq
    if len(idx) == 1:
        only = idx[0]
        return lambda seq: (seq[only],)
    return itemgetter(*idx)  # type: ignore[return-value]


def _group_positions(systems: list[str]) -> dict[str, list[int] | None]:
    """Positions of each system's rows (None: every row), systems in order of first
    appearance, positions ascending."""
    first = systems[0]
    n = len(systems)
    if systems.count(first) == n:  # one system in this batch: no regrouping
        return {first: None}
    if n < SMALL_BATCH:
        by_system: dict[str, list[int] | None] = {}
        for i, system in enumerate(systems):
            by_system.setdefault(system, []).append(i)  # type: ignore[union-attr]
        return by_system
    import numpy as np

    order = list(dict.fromkeys(systems))
    code_of = {system: k for k, system in enumerate(order)}
    codes = np.fromiter(map(code_of.__getitem__, systems), dtype=np.int64, count=n)
    positions = np.argsort(codes, kind="stable").tolist()
    ends = np.cumsum(np.bincount(codes, minlength=len(order))).tolist()
    return {system: positions[(ends[k - 1] if k else 0):ends[k]]
            for k, system in enumerate(order)}


@dataclass(frozen=True)
class Coded:
    """A column of a big batch as its distinct strings and each row's index among them
    (Arrow's dictionary encoding: ``values[codes[i]]`` is row ``i``'s), so the columnar path
    makes no Python string per row for the system and the gold answer.  The accumulator reads
    it where it groups rows by system and normalizes golds, and turns it into a list
    (:meth:`tolist`) everywhere else."""

    values: list[str]
    codes: Any  # a numpy array of integers

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, per_value: Sequence[Any]) -> list[Any]:
        """Each row's item of ``per_value`` (one item per distinct value)."""
        import numpy as np

        picked = np.empty(len(per_value), dtype=object)
        picked[:] = per_value
        return picked[self.codes].tolist()  # type: ignore[no-any-return]

    def tolist(self) -> list[str]:
        return self.take(self.values)


def _normalize_preds(preds: list[str], raw_golds: list[str], norm_golds: list[str]
                     ) -> list[str]:
    """``normalize_many(preds)`` given each row's gold answer and its normalized form: a
    prediction identical to its gold answer has the gold's normalized form (normalization is
    a function), so only the others are normalized."""
    import numpy as np

    n = len(preds)
    differ = np.flatnonzero(~np.fromiter(map(eq, preds, raw_golds), dtype=bool, count=n))
    if differ.size == n:
        return normalize_many(preds)
    held = np.empty(n, dtype=object)
    held[:] = norm_golds
    if differ.size:
        picked = np.empty(n, dtype=object)
        picked[:] = preds
        held[differ] = normalize_many(picked[differ].tolist())
    return held.tolist()  # type: ignore[no-any-return]


def _plain(seq: Any) -> Any:
    return seq.tolist() if isinstance(seq, Coded) else seq


def _code_groups(systems: Coded) -> dict[str, Any]:
    """:func:`_group_positions` of a coded column, positions as numpy arrays (None: every
    row): systems in order of first appearance, positions ascending."""
    import numpy as np

    codes = systems.codes
    present, first = np.unique(codes, return_index=True)
    if present.size == 1:
        return {systems.values[int(present[0])]: None}
    order = np.argsort(codes, kind="stable")
    ends = np.cumsum(np.bincount(codes, minlength=len(systems.values)))
    starts = ends - np.bincount(codes, minlength=len(systems.values))
    return {systems.values[c]: order[starts[c]:ends[c]]
            for c in present[np.argsort(first)].tolist()}


class _Accumulator:
    """Collects per-row values by system; shared by the row path and the columnar path."""

    def __init__(self, path: str, unit: str, lid: LidRlc | None = None,
                 keep_text: bool = False, normalize: str = "lbrag") -> None:
        self.path = path
        self.normalize = normalize
        self.keep_text = keep_text
        self.unit = unit
        self.lid = lid
        self.columns: dict[str, _Columns] = {}
        self.unscored: list[dict[str, Any]] = []
        self.unscored_numbers: list[int] = []
        self.n_rows = 0
        self.spill = SpillDir()
        self.keys = KeyedRecords(KEY_FIELDS, self.spill)
        """Every row by sample id: (system code, position (-1 - k: unscored row k), place,
        F1), for the duplicate check and the CNBE pairing (:mod:`._aggregate`)."""
        self.codes: dict[str, int] = {}

    def _cols(self, system: str) -> _Columns:
        cols = self.columns.get(system)
        if cols is None:
            cols = self.columns[system] = _Columns(self.spill)
            self.codes[system] = len(self.codes)
        return cols

    def add(self, systems: list[str], sample_ids: list[str], langs: list[str],
            golds: Sequence[str | tuple[str, ...]], preds: list[str | None],
            given: Mapping[str, list[float | None]], numbers: Sequence[int],
            questions: list[str | None] | None = None, golds_are_text: bool = False) -> None:
        """Score one batch of rows (all sequences of equal length).  ``given``: the values
        read from the rows (cost, semantic score), by metric name.  ``golds_are_text``: the
        caller knows every gold is one string (the columnar path)."""
        if questions is None:
            questions = [None] * len(systems)
        n = len(systems)
        if n < SMALL_BATCH or None in preds or self.keep_text or self.normalize != "lbrag":
            systems, golds = _plain(systems), _plain(golds)  # only big batches read codes
        self.n_rows += n
        if None in preds:
            self._add_unscored(systems, sample_ids, langs, preds, numbers)
            keep = [i for i, p in enumerate(preds) if p is not None]
            systems = [systems[i] for i in keep]
            sample_ids = [sample_ids[i] for i in keep]
            langs = [langs[i] for i in keep]
            golds = [golds[i] for i in keep]
            preds = [preds[i] for i in keep]
            given = {k: [v[i] for i in keep] for k, v in given.items()}
            numbers = [numbers[i] for i in keep]
            questions = [questions[i] for i in keep]
            n = len(keep)
            if not n:
                return
        if n < SMALL_BATCH:  # the columnar path's numbers come as arrays (NaN: absent)
            given = {k: v.tolist() if hasattr(v, "tolist") else v for k, v in given.items()}
        values: dict[str, Sequence[float | None]] = {
            **self.score_texts(preds, golds, langs, golds_are_text, arrays=True), **given}  # type: ignore[arg-type]
        if self.lid is not None:
            for m in LID:
                scores = [self.lid.score(p, lg) for p, lg in zip(preds, langs, strict=True)]  # type: ignore[arg-type]
                values[m.name] = scores
        self._store(systems, sample_ids, langs, values, numbers,
                    (questions, golds, preds) if self.keep_text else None)

    def score_texts(self, preds: list[str], golds: Sequence[str | tuple[str, ...]],
                    langs: list[str], golds_are_text: bool = False,
                    arrays: bool = False) -> dict[str, list[float]]:
        """The ``answer`` and ``response`` metrics of each row, by name: the per-row text work
        (what a Ray worker runs); ``arrays``: numpy forms may stay numpy arrays."""
        out = self._answers(preds, golds, langs, golds_are_text)
        if not arrays:  # a batch form may give a numpy array
            out = {k: v.tolist() if hasattr(v, "tolist") else v for k, v in out.items()}
        for m in RESPONSE:
            if len(preds) < SMALL_BATCH or m.batch is None:  # the reference function
                assert m.fn is not None
                out[m.name] = list(map(m.fn, preds, langs))
            else:
                values = m.batch(preds, langs)
                out[m.name] = values if arrays else values.tolist()
        return out

    def add_scored(self, systems: list[str], sample_ids: list[str], langs: list[str],
                   scores: Mapping[str, list[float]], given: Mapping[str, list[float | None]],
                   numbers: Sequence[int], missing: Sequence[bool],
                   texts: tuple[list[Any], list[Any], list[Any]] | None = None) -> None:
        """Rows whose ``answer``/``response`` metrics (``scores``, by name, and ``rlc_lid``
        when computed; NaN: none) were computed elsewhere (:meth:`score_texts` on a Ray
        worker), in input order; ``missing``: rows without a prediction (unscored, their
        scores ignored)."""
        self.n_rows += len(systems)
        values: dict[str, Sequence[float | None]] = {**scores, **given}
        if any(missing):
            self._add_unscored(systems, sample_ids, langs,
                               [None if m else "" for m in missing], numbers)
            keep = [i for i, m in enumerate(missing) if not m]
            systems, sample_ids, langs = ([seq[i] for i in keep]
                                          for seq in (systems, sample_ids, langs))
            values = {k: [v[i] for i in keep] for k, v in values.items()}
            numbers = [numbers[i] for i in keep]
            if texts is not None:
                texts = tuple([seq[i] for i in keep] for seq in texts)  # type: ignore[assignment]
            if not keep:
                return
        self._store(systems, sample_ids, langs, values, numbers, texts)

    def _store(self, systems: list[str], sample_ids: list[str], langs: list[str],
               values: Mapping[str, Sequence[float | None]], numbers: Sequence[int],
               texts: tuple[Sequence[Any], Sequence[Any], Sequence[Any]] | None) -> None:
        """Append scored rows to their systems' columns (duplicates are an error)."""
        columns = {name: _absent_marked(seq) if name in _ABSENT_MARKED else seq
                   for name, seq in values.items()}
        if len(systems) >= SMALL_BATCH:
            self._store_many(systems, sample_ids, langs, columns, numbers, texts)
            return
        for system, idx in _group_positions(systems).items():
            take = _taker(idx)
            cols = self._cols(system)
            start = len(cols)
            sids = take(sample_ids)
            k = len(sids)
            places = take(numbers)
            f1 = take(columns["f1"])
            cols.sample_ids.extend(sids)  # type: ignore[arg-type]
            cols.places.extend(places)
            cols.langs.extend(take(langs))  # type: ignore[arg-type]
            for name, seq in columns.items():
                cols.values[name].extend(take(seq))
            if texts is not None:
                cols.texts.extend(zip(*(take(t) for t in texts), strict=True))
            self.keys.add(sids, array("d", (self.codes[system],)) * k,
                          array("d", range(start, start + k)), places, f1)

    def _store_many(self, systems: list[str], sample_ids: list[str], langs: list[str],
                    columns: Mapping[str, Sequence[float | None]], numbers: Sequence[int],
                    texts: tuple[Sequence[Any], Sequence[Any], Sequence[Any]] | None) -> None:
        """:meth:`_store` of a big batch: each column once as a numpy array, each system's
        part of it taken by index and appended as raw float64 (int64 for places): the same
        values as the row by row appends, without a Python float per value and column."""
        import numpy as np

        arrays = {name: np.asarray(seq, dtype=np.float64) for name, seq in columns.items()}
        places = (np.arange(numbers.start, numbers.stop, numbers.step, dtype=np.int64)
                  if isinstance(numbers, range) else np.asarray(numbers, dtype=np.int64))
        groups = (_code_groups(systems) if isinstance(systems, Coded) else
                  {s: None if idx is None else np.asarray(idx, dtype=np.int64)
                   for s, idx in _group_positions(systems).items()})
        for system, at in groups.items():
            take = _taker(None if at is None else at.tolist())
            cols = self._cols(system)
            start = len(cols)
            sids = take(sample_ids)
            k = len(sids)
            at = slice(None) if at is None else at
            cols.sample_ids.extend(sids)  # type: ignore[arg-type]
            cols.langs.extend(take(langs))  # type: ignore[arg-type]
            picked = places[at]
            cols.places.extend(array("q", picked.tobytes()))
            for name, arr in arrays.items():
                cols.values[name].extend(array("d", arr[at].tobytes()))
            if texts is not None:
                cols.texts.extend(zip(*(take(t) for t in texts), strict=True))
            self.keys.add(sids, array("d", (self.codes[system],)) * k,
                          array("d", range(start, start + k)),
                          array("d", picked.astype(np.float64).tobytes()),
                          array("d", arrays["f1"][at].tobytes()))

    def _answers(self, preds: list[str], golds: Sequence[str | tuple[str, ...]],
                 langs: list[str], golds_are_text: bool = False) -> dict[str, list[float]]:
        """The ``answer`` metrics of each row; with several golds, the max over them (SQuAD's
        rule)."""
        if self.normalize == "lbrag" and (golds_are_text or
                                          all(isinstance(g, str) for g in golds)):
            if len(preds) < SMALL_BATCH:  # the reference function: no numpy import
                norm_p = [normalize_text(p) for p in preds]
                norm_g = [normalize_text(g) for g in golds]  # type: ignore[arg-type]
            else:
                # each system repeats the golds of the others: normalize each distinct once
                if isinstance(golds, Coded):
                    raw_g = golds.tolist()
                    norm_g = golds.take(normalize_many(golds.values))
                else:
                    raw_g = golds  # type: ignore[assignment]
                    distinct = list(dict.fromkeys(golds))
                    norm_of = dict(zip(distinct, normalize_many(distinct), strict=True))  # type: ignore[arg-type]
                    norm_g = list(map(norm_of.__getitem__, golds))
                norm_p = _normalize_preds(preds, raw_g, norm_g)
                same = list(map(eq, norm_p, norm_g))
                return {m.name: (m.batch(norm_p, norm_g, langs, same) if m.batch is not None
                                 else list(map(m.fn, norm_p, norm_g, langs)))  # type: ignore[arg-type]
                        for m in ANSWER}
            return {m.name: list(map(m.fn, norm_p, norm_g, langs))  # type: ignore[arg-type]
                    for m in ANSWER}
        golds = _plain(golds)
        norm = NORMALIZERS[self.normalize]
        norm_p = [norm(p) for p in preds]
        norm_gs = [[norm(g) for g in ((gold,) if isinstance(gold, str) else gold)]
                   for gold in golds]
        return {m.name: [max(m.fn(pn, gn, lang) for gn in gns)  # type: ignore[misc]
                         for pn, gns, lang in zip(norm_p, norm_gs, langs, strict=True)]
                for m in ANSWER}

    def _add_unscored(self, systems: list[str], sample_ids: list[str], langs: list[str],
                      preds: list[str | None], numbers: Sequence[int]) -> None:
        for i, pred in enumerate(preds):
            if pred is not None:
                continue
            self._cols(systems[i])
            sid = sample_ids[i]
            self.keys.add((sid,), (self.codes[systems[i]],), (-1 - len(self.unscored),),
                          (numbers[i],), (ABSENT,))
            self.unscored_numbers.append(numbers[i])
            self.unscored.append({
                "sample_id": sid, "system": systems[i], "sample_lang": langs[i],
                "status": "unscored", "reason": "missing_prediction",
                "detail": f"pred_answer is null at {self.unit} {numbers[i]}"})
