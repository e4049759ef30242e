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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Any

from ragmeter import stats
from ragmeter.errors import InputError
from ragmeter.io import FieldMap
from ragmeter.multilingual._rows import COMPONENT
from ragmeter.signature import Signature
from ragmeter.text._languages import CHAR_TOKEN_LANGUAGES
from ragmeter.text._normalize import NORMALIZERS, normalize_many, normalize_text
from ragmeter.text._overlap import f1_from_normalized, f1_from_tokens
from ragmeter.text._rlc import RLC_OK_THRESHOLD, LidRlc, rlc, rlc_batch

__all__ = ["MultilingualConfig", "MultilingualResult", "METRIC_KEYS"]

METRIC_VERSION = "lbrag-1"
METRIC_KEYS = ("em", "f1", "rlc", "rlc_ok", "cost", "cnbe", "semantic_score")
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
        settings: dict[str, Any] = {"norm": self.normalize, "f1": "char:ja,zh,zh_cn,zh_tw",
                                    "rlc": f"script>={RLC_OK_THRESHOLD}",
                                    "baseline": self.baseline or "none"}
        if self.ci or self.paired:
            settings["bootstrap"] = f"{self.n_resamples}@seed{self.seed}"
        if self.rlc_lid:
            settings["rlc_lid"] = "lingua"
        return Signature.make(COMPONENT, METRIC_VERSION, settings)


ABSENT = float("nan")  # internal marker for "no value" in the float columns; never output


@dataclass
class _Columns:
    """Compact per-row values of one system, in input order.

    Floats live in ``array('d')`` (8 bytes a value) so that millions of rows fit in little
    memory; ``cost``, ``semantic`` and ``rlc_lid`` use NaN internally for "absent" (input NaN is
    rejected at parsing), turned into None before anything leaves this module.
    """

    sample_ids: list[str] = field(default_factory=list)
    langs: list[str] = field(default_factory=list)
    em: array = field(default_factory=lambda: array("d"))
    f1: array = field(default_factory=lambda: array("d"))
    rlc: array = field(default_factory=lambda: array("d"))
    cost: array = field(default_factory=lambda: array("d"))
    semantic: array = field(default_factory=lambda: array("d"))
    rlc_lid: array = field(default_factory=lambda: array("d"))
    places: array = field(default_factory=lambda: array("q"))  # line/row number
    index: dict[str, int] = field(default_factory=dict)  # sample_id -> position
    texts: list[tuple[str | None, str, str]] = field(default_factory=list)  # keep_text only


def _opt(x: float) -> float | None:
    return None if x != x else x


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
    cnbe_values: dict[str, list[float | None]] = field(default_factory=dict, repr=False)
    unscored_items: list[dict[str, Any]] = field(default_factory=list, repr=False)
    unscored_places: list[int] = field(default_factory=list, repr=False)

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

    def iter_items(self) -> Iterator[dict[str, Any]]:
        """Per-row results (scored rows by system in input order, then unscored rows)."""
        for system in self.systems:
            cols = self.columns[system]
            cnbe = self.cnbe_values.get(system, [])
            for i, sid in enumerate(cols.sample_ids):
                item: dict[str, Any] = {
                    "sample_id": sid, "system": system, "sample_lang": cols.langs[i],
                    "status": "ok", "em": cols.em[i], "f1": cols.f1[i], "rlc": cols.rlc[i],
                    "rlc_ok": 1.0 if cols.rlc[i] >= RLC_OK_THRESHOLD else 0.0,
                    "cost": _opt(cols.cost[i]), "cnbe": cnbe[i] if i < len(cnbe) else None,
                    "semantic_score": _opt(cols.semantic[i]),
                }
                if cols.rlc_lid and cols.rlc_lid[i] == cols.rlc_lid[i]:
                    item["rlc_lid"] = cols.rlc_lid[i]
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

        if any(c.texts or c.rlc_lid for c in self.columns.values()):
            return None
        keys = ("sample_id", "system", "sample_lang", "status", "em", "f1", "rlc", "rlc_ok",
                "cost", "cnbe", "semantic_score")
        parts = [ItemPart(keys, len(self.columns[s].sample_ids), self._rows_of(s))
                 for s in self.systems]
        return ItemColumns(parts, self.unscored_items)

    def _rows_of(self, system: str) -> Callable[[Sequence[int]], list[tuple[Any, ...]]]:
        cols = self.columns[system]
        cnbe = self.cnbe_values.get(system)

        def rows(positions: Sequence[int]) -> list[tuple[Any, ...]]:
            whole = positions == range(len(cols.sample_ids))
            take = _taker(None if whole else list(positions))
            rlc = take(cols.rlc)
            n = len(rlc)
            return list(zip(
                take(cols.sample_ids), repeat(system, n), take(cols.langs), repeat("ok", n),
                take(cols.em), take(cols.f1), rlc,
                [1.0 if v >= RLC_OK_THRESHOLD else 0.0 for v in rlc],
                [None if v != v else v for v in take(cols.cost)],
                take(cnbe) if cnbe else repeat(None, n),
                [None if v != v else v for v in take(cols.semantic)], strict=False))
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


# ------------------------------------------------------------------ row validation


# ------------------------------------------------------------------ scoring


def _f1_fast(pn: str, gn: str, lang: str) -> float:
    """:func:`f1_from_normalized` with two exact shortcuts (identical, disjoint)."""
    if pn == gn:
        return 1.0  # identical non-empty token lists give p = r = 1; both empty give 1.0
    if not pn or not gn:
        return 0.0
    return _f1_differing(pn, gn, lang)


def _f1_differing(pn: str, gn: str, lang: str) -> float:
    """:func:`f1_from_normalized` of two different, non-empty normalized answers; whitespace
    tokens with no token in common score 0.0 without counting (exact)."""
    if lang in CHAR_TOKEN_LANGUAGES:
        return f1_from_normalized(pn, gn, lang)
    pt, gt = pn.split(), gn.split()
    if set(pt).isdisjoint(gt):
        return 0.0
    return f1_from_tokens(pt, gt)


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

    def _cols(self, system: str) -> _Columns:
        cols = self.columns.get(system)
        if cols is None:
            cols = self.columns[system] = _Columns()
        return cols

    def add(self, systems: list[str], sample_ids: list[str], langs: list[str],
            golds: Sequence[str | tuple[str, ...]], preds: list[str | None],
            costs: list[float | None],
            semantics: list[float | None], numbers: Sequence[int],
            questions: list[str | None] | None = None, golds_are_text: bool = False) -> None:
        """Score one batch of rows (all sequences of equal length).  ``golds_are_text``:
        the caller knows every gold is one string (the columnar path)."""
        if questions is None:
            questions = [None] * len(systems)
        n = len(systems)
        self.n_rows += n
        if None in preds:
            self._add_unscored(systems, sample_ids, langs, preds, numbers)
            keep = [i for i, p in enumerate(preds) if p is not None]
            systems = [systems[i] for i in keep]
            sample_ids = [sample_ids[i] for i in keep]
            langs = [langs[i] for i in keep]
            golds = [golds[i] for i in keep]
            preds = [preds[i] for i in keep]
            costs = [costs[i] for i in keep]
            semantics = [semantics[i] for i in keep]
            numbers = [numbers[i] for i in keep]
            questions = [questions[i] for i in keep]
            n = len(keep)
            if not n:
                return
        em, f1, rlc_values = self.score_texts(preds, golds, langs, golds_are_text)  # type: ignore[arg-type]
        lid = None
        if self.lid is not None:
            scores = [self.lid.score(p, lg) for p, lg in zip(preds, langs, strict=True)]  # type: ignore[arg-type]
            lid = [ABSENT if v is None else v for v in scores]
        self._store(systems, sample_ids, langs, em, f1, rlc_values, costs, semantics, numbers,
                    lid, (questions, golds, preds) if self.keep_text else None)

    def score_texts(self, preds: list[str], golds: Sequence[str | tuple[str, ...]],
                    langs: list[str], golds_are_text: bool = False
                    ) -> tuple[list[float], list[float], list[float]]:
        """EM, F1 and RLC of each row: the per-row text work (what a Ray worker runs)."""
        em, f1 = self._match(preds, golds, langs, golds_are_text)
        if len(preds) < SMALL_BATCH:  # the reference function: no numpy import for a small file
            rlc_values = [rlc(p, lg) for p, lg in zip(preds, langs, strict=True)]
        else:
            rlc_values = rlc_batch(preds, langs).tolist()
        return em, f1, rlc_values

    def add_scored(self, systems: list[str], sample_ids: list[str], langs: list[str],
                   em: list[float], f1: list[float], rlc_values: list[float],
                   costs: list[float | None], semantics: list[float | None],
                   numbers: Sequence[int], missing: Sequence[bool],
                   texts: tuple[list[Any], list[Any], list[Any]] | None = None,
                   lid: list[float] | None = None) -> None:
        """Rows whose EM, F1 and RLC were computed elsewhere (:meth:`score_texts` on a Ray
        worker), in input order; ``missing``: rows without a prediction (unscored, their
        scores ignored); ``lid``: their ``--rlc-lid`` values (NaN: none)."""
        self.n_rows += len(systems)
        if any(missing):
            self._add_unscored(systems, sample_ids, langs,
                               [None if m else "" for m in missing], numbers)
            keep = [i for i, m in enumerate(missing) if not m]
            systems, sample_ids, langs = ([seq[i] for i in keep]
                                          for seq in (systems, sample_ids, langs))
            em, f1, rlc_values = ([seq[i] for i in keep] for seq in (em, f1, rlc_values))
            costs, semantics = ([seq[i] for i in keep] for seq in (costs, semantics))
            numbers = [numbers[i] for i in keep]
            if lid is not None:
                lid = [lid[i] for i in keep]
            if texts is not None:
                texts = tuple([seq[i] for i in keep] for seq in texts)  # type: ignore[assignment]
            if not keep:
                return
        self._store(systems, sample_ids, langs, em, f1, rlc_values, costs, semantics, numbers,
                    lid, texts)

    def _store(self, systems: list[str], sample_ids: list[str], langs: list[str],
               em: list[float], f1: list[float], rlc_values: list[float],
               costs: list[float | None], semantics: list[float | None],
               numbers: Sequence[int], lid: list[float] | None,
               texts: tuple[Sequence[Any], Sequence[Any], Sequence[Any]] | None) -> None:
        """Append scored rows to their systems' columns (duplicates are an error)."""
        cost = [ABSENT if c is None else c for c in costs] if None in costs else costs
        sem = [ABSENT if x is None else x for x in semantics] if None in semantics else semantics
        for system, idx in _group_positions(systems).items():
            take = _taker(idx)
            cols = self._cols(system)
            start = len(cols.sample_ids)
            sids = take(sample_ids)
            sid_set = set(sids)
            if len(sid_set) != len(sids) or not cols.index.keys().isdisjoint(sid_set):
                self._raise_duplicate(cols, system, list(sids), list(take(numbers)))
            cols.index.update(zip(sids, range(start, start + len(sids)), strict=True))
            cols.sample_ids.extend(sids)
            cols.places.extend(take(numbers))
            cols.langs.extend(take(langs))
            cols.em.extend(take(em))
            cols.f1.extend(take(f1))
            cols.rlc.extend(take(rlc_values))
            cols.cost.extend(take(cost))
            cols.semantic.extend(take(sem))
            if lid is not None:
                cols.rlc_lid.extend(take(lid))
            if texts is not None:
                cols.texts.extend(zip(*(take(t) for t in texts), strict=True))

    def _match(self, preds: list[str], golds: Sequence[str | tuple[str, ...]],
               langs: list[str], golds_are_text: bool = False) -> tuple[list[float], list[float]]:
        """EM and F1 per row; with several golds, the max over them (SQuAD's rule)."""
        if self.normalize == "lbrag" and (golds_are_text or
                                          all(isinstance(g, str) for g in golds)):
            if len(preds) < SMALL_BATCH:  # the reference function: no numpy import
                norm_p = [normalize_text(p) for p in preds]
                norm_g = [normalize_text(g) for g in golds]  # type: ignore[arg-type]
            else:
                norm_p = normalize_many(preds)
                # each system repeats the golds of the others: normalize each distinct once
                distinct = list(dict.fromkeys(golds))
                norm_of = dict(zip(distinct, normalize_many(distinct), strict=True))  # type: ignore[arg-type]
                norm_g = list(map(norm_of.__getitem__, golds))
            em = [1.0 if pn == gn else 0.0 for pn, gn in zip(norm_p, norm_g, strict=True)]
            # _f1_fast inlined: no call for the identical and the empty answers
            f1 = [1.0 if pn == gn else 0.0 if not pn or not gn else _f1_differing(pn, gn, lang)
                  for pn, gn, lang in zip(norm_p, norm_g, langs, strict=True)]
            return em, f1
        norm = NORMALIZERS[self.normalize]
        em, f1 = [], []
        for pred, gold, lang in zip(preds, golds, langs, strict=True):
            pn = norm(pred)
            gns = [norm(g) for g in ((gold,) if isinstance(gold, str) else gold)]
            em.append(max(1.0 if pn == gn else 0.0 for gn in gns))
            f1.append(max(_f1_fast(pn, gn, lang) for gn in gns))
        return em, f1

    def _add_unscored(self, systems: list[str], sample_ids: list[str], langs: list[str],
                      preds: list[str | None], numbers: Sequence[int]) -> None:
        for i, pred in enumerate(preds):
            if pred is not None:
                continue
            cols = self._cols(systems[i])
            sid = sample_ids[i]
            if sid in cols.index:
                self._raise_duplicate(cols, systems[i], [sid], [numbers[i]])
            cols.index[sid] = -1 - len(self.unscored)  # negative: an unscored row
            self.unscored_numbers.append(numbers[i])
            self.unscored.append({
                "sample_id": sid, "system": systems[i], "sample_lang": langs[i],
                "status": "unscored", "reason": "missing_prediction",
                "detail": f"pred_answer is null at {self.unit} {numbers[i]}"})

    def _raise_duplicate(self, cols: _Columns, system: str, sids: list[str],
                         numbers: list[int]) -> None:
        """Raise an error naming the first duplicate of this batch and its first place."""
        seen: dict[str, int] = {}
        for sid, number in zip(sids, numbers, strict=True):
            pos = cols.index.get(sid)
            if sid in seen or pos is not None:
                if pos is None:
                    first = seen[sid]
                elif pos >= 0:
                    first = cols.places[pos]
                else:
                    first = self.unscored_numbers[-1 - pos]
                raise InputError(
                    f"duplicate row for system {system!r} and sample_id {sid!r} "
                    f"(first at {self.unit} {first}).", component=COMPONENT, path=self.path,
                    field="sample_id", fix="keep one answer per system and sample.",
                    **{self.unit: number})
            seen[sid] = number
        raise AssertionError("no duplicate found")  # pragma: no cover - caller checked

    def fix_places(self) -> None:
        """Drop the index entries of unscored rows (negative positions)."""
        if not self.unscored:
            return
        for cols in self.columns.values():
            cols.index = {k: v for k, v in cols.index.items() if v >= 0}
