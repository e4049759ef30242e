"""Per-system aggregation of the multilingual scorer's per-row columns: CNBE against the
baseline, mean/std (and bootstrap CIs) of every metric, paired tests, coverage.  Pure over the
accumulated columns; :mod:`ragmeter.multilingual._scorer` reads and scores the rows.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Any

from ragmeter import stats
from ragmeter.errors import InputError, UnknownNameError
from ragmeter.io._spill import NumberColumn, RawKeys, Scatter, SpillDir
from ragmeter.multilingual._cost import cnbe, cnbe_many
from ragmeter.multilingual._metrics import PAIRED_METRICS, ROWS
from ragmeter.multilingual._rows import FastPathUnsupported
from ragmeter.multilingual._scorer import (
    COMPONENT,
    SMALL_BATCH,
    MultilingualConfig,
    MultilingualResult,
    _Accumulator,
    _Columns,
)
from ragmeter.text._rlc import LidRlc

__all__ = ["aggregate", "group_summary"]

GROUP_KEYS = ("metrics", "coverage", "ci95", "notes")


def group_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """What ``summary["groups"]["values"][KEY]`` keeps of one group's summary (``--by``)."""
    return {k: summary[k] for k in GROUP_KEYS if k in summary}


NAN = float("nan")
CHUNK = 1 << 16  # rows per chunk of the passes over the columns


@dataclass
class _Pairing:
    """What the pass over the rows by sample id found: each non-baseline system's aligned
    baseline position (-1: none) and baseline F1 (NaN: none), its rows without a baseline row
    (count, first position) and its rows whose baseline row is unscored (count, first id)."""

    base: dict[str, list[NumberColumn]] = field(default_factory=dict)
    missing: dict[str, list[int]] = field(default_factory=dict)
    orphans: dict[str, tuple[int, int, str]] = field(default_factory=dict)


def _first_duplicate(keys: list[str], codes: list[float], places: list[float]
                     ) -> tuple[int, int, str, int]:
    """``(place, system code, sample id, first place)`` of the duplicate row that comes first
    in the input (among rows of one group)."""
    seen: dict[tuple[float, str], float] = {}
    for i in sorted(range(len(keys)), key=places.__getitem__):
        key = (codes[i], keys[i])
        if key in seen:
            return int(places[i]), int(codes[i]), keys[i], int(seen[key])
        seen[key] = places[i]
    raise AssertionError("no duplicate found")  # pragma: no cover - caller checked


def _pair(acc: _Accumulator, baseline: str | None, exact_places: bool) -> _Pairing:
    """One pass over every row grouped by sample id (:class:`KeyedRecords`, on disk for a big
    input): a duplicate (system, sample id) is an InputError naming the first one in the input
    and its first place; with a baseline, each other row gets its baseline row's position and
    F1, written back in row order (:class:`Scatter`)."""
    names = {code: system for system, code in acc.codes.items()}
    b = acc.codes[baseline] if baseline is not None else -1
    out = _Pairing()
    scatters = {s: Scatter(len(acc.columns[s]), 2, acc.spill)
                for s in acc.columns if s != baseline} if baseline is not None else {}
    dup: tuple[int, int, str, int] | None = None
    for raw, fields in acc.keys.raw_groups():
        if isinstance(raw, RawKeys):
            coded = _key_codes(raw) if baseline is not None and dup is None else None
            if coded is not None:  # a group read from disk: its keys as integers
                if not _pair_many(raw, fields, b, names, out, scatters, coded):
                    dup = _first_duplicate(raw.decode(), fields[0].tolist(),
                                           fields[2].tolist())
                continue
        keys = raw.decode() if isinstance(raw, RawKeys) else raw
        big = len(keys) >= SMALL_BATCH
        if big and baseline is not None and dup is None:
            if not _pair_many(keys, fields, b, names, out, scatters):  # a duplicate: where?
                dup = _first_duplicate(keys, fields[0].tolist(), fields[2].tolist())
            continue
        if not (_unique_many(keys, fields[0]) if big
                else len(set(zip(fields[0], keys, strict=True))) == len(keys)):
            found = _first_duplicate(keys, fields[0].tolist(), fields[2].tolist())
            dup = found if dup is None or found < dup else dup
        if dup is not None or baseline is None:
            continue
        if big:
            _pair_many(keys, fields, b, names, out, scatters)
            continue
        codes, pos, _, f1 = (f.tolist() for f in fields)
        base = {k: i for i, k in enumerate(keys) if codes[i] == b}
        rows: dict[float, tuple[list[float], list[float], list[float]]] = {}
        get = base.get
        for k, c, p, j in zip(keys, codes, pos, map(get, keys, repeat(-1)), strict=True):
            if c == b or p < 0:
                continue
            bp = pos[j] if j >= 0 else -1.0
            system = names[int(c)]
            if bp < 0:
                if j < 0:
                    seen = out.missing.get(system)
                    if seen is None:
                        out.missing[system] = [1, int(p)]
                    else:
                        seen[0] += 1
                        seen[1] = min(seen[1], int(p))
                else:
                    count, first, sid = out.orphans.get(system, (0, int(p), k))
                    out.orphans[system] = ((count + 1, first, sid) if first <= p
                                           else (count + 1, int(p), k))
            cols = rows.get(c)
            if cols is None:
                cols = rows[c] = ([], [], [])
            cols[0].append(p)
            cols[1].append(bp if bp >= 0 else -1.0)
            cols[2].append(f1[j] if bp >= 0 else NAN)
        for c, (ps, bps, bfs) in rows.items():
            scatters[names[int(c)]].put(ps, bps, bfs)
    if dup is not None:
        place, code, sid, first = dup
        if not exact_places:
            raise FastPathUnsupported("duplicate row")
        raise InputError(
            f"duplicate row for system {names[code]!r} and sample_id {sid!r} "
            f"(first at {acc.unit} {first}).", component=COMPONENT, path=acc.path,
            field="sample_id", fix="keep one answer per system and sample.",
            **{acc.unit: place})
    out.base = {s: scatter.columns() for s, scatter in scatters.items()}
    return out


def _key_codes(keys: RawKeys) -> Any:
    """Each key of a group read from disk as an integer (equal keys, equal integers; numpy
    int64), by Arrow's dictionary encoding of its bytes: no string made (issue 26.3).  None
    without pyarrow or when a piece is escaped (a key holds ``\n`` or ``\\``)."""
    try:
        import pyarrow as pa
        from pyarrow._compute import call_function
    except ImportError:  # pragma: no cover - the spilled columnar path has pyarrow
        return None
    import numpy as np

    if any(escaped for _, escaped in keys.pieces):
        return None
    data = b"".join(piece + b"\n" for piece, _ in keys.pieces)  # each key then ends in \n
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    if ends.size != keys.n or len(data) >= 1 << 31:  # pragma: no cover - as written
        return None
    offsets = np.zeros(keys.n + 1, dtype=np.int32)
    offsets[1:] = ends + 1
    binary = pa.BinaryArray.from_buffers(pa.binary(), keys.n, [
        None, pa.py_buffer(offsets), pa.py_buffer(data)])
    indices = call_function("dictionary_encode", [binary]).indices
    return np.frombuffer(indices.buffers()[1], dtype=np.int32)[
        indices.offset:indices.offset + keys.n].astype(np.int64)


def _pair_many(keys: list[str] | RawKeys, fields: list[array], b: int, names: dict[int, str],
               out: _Pairing, scatters: dict[str, Scatter], coded: Any = None) -> bool:
    """The pairing of :func:`_pair` for one big group, in numpy (the same results), and
    whether no (system, sample id) comes twice in it (:func:`_unique_many`'s answer, read
    from the pairing: the baseline's ids are the keys of one dict, and the other rows of a
    system that find the same baseline row have the same id).  ``coded``: each key as an
    integer (:func:`_key_codes`): the lookups and the check are then on integers."""
    import numpy as np

    codes, pos, _, f1 = (np.frombuffer(f, dtype=np.float64) for f in fields)
    rest = np.flatnonzero(codes != b)
    if coded is not None:
        base = np.flatnonzero(codes == b)
        width = int(coded.max()) + 1
        lookup = np.full(width, -1, dtype=np.int64)
        lookup[coded[base]] = base
        j_rest = lookup[coded[rest]]
        pairs = np.sort(codes.astype(np.int64) * width + coded)
        unique = not bool((pairs[1:] == pairs[:-1]).any())
    else:
        assert isinstance(keys, list)
        base_rows = np.flatnonzero(codes == b).tolist()
        index = dict(zip(_pick(keys, base_rows), base_rows, strict=True))
        j_rest = np.fromiter(map(index.get, _pick(keys, rest.tolist()), repeat(-1)),
                             dtype=np.int64, count=rest.size)
        unique = (len(index) == len(base_rows)
                  and _unique_pairs(keys, codes[rest], rest, j_rest))
    scored = pos[rest] >= 0
    other, j = rest[scored], j_rest[scored]
    found = j >= 0
    bp = np.where(found, pos[j], -1.0)
    valid = bp >= 0
    base_pos = np.where(valid, bp, -1.0)
    base_f1 = np.where(valid, f1[j], np.nan)
    other_codes, other_pos = codes[other], pos[other]
    # the codes present (np.unique without counts imports numpy.ma: some 15 ms)
    for c in np.flatnonzero(np.bincount(other_codes.astype(np.int64))).tolist():
        sel = other_codes == c
        system = names[int(c)]
        scatters[system].put(other_pos[sel], base_pos[sel], base_f1[sel])
        for mask, orphan in ((sel & ~found, False), (sel & found & ~valid, True)):
            if not mask.any():
                continue
            at = np.flatnonzero(mask)
            first = int(at[np.argmin(other_pos[at])])
            p, count = int(other_pos[first]), int(at.size)
            if orphan:
                prev = out.orphans.get(system)
                key = keys[int(other[first])]
                out.orphans[system] = ((count, p, key) if prev is None else
                                       (prev[0] + count, *min(prev[1:], (p, key))))
            else:
                seen = out.missing.get(system)
                out.missing[system] = ([count, p] if seen is None
                                       else [seen[0] + count, min(seen[1], p)])
    return unique


def _unique_pairs(keys: list[str], codes: Any, rows: Any, base: Any) -> bool:
    """Whether no (system code, key) comes twice among ``rows`` (numpy positions in
    ``keys``, their systems' ``codes``), given each row's baseline row ``base`` (-1: none):
    rows with one compare (code, baseline row) as integers, the others their keys."""
    import numpy as np

    has = base >= 0
    pairs = np.sort(codes[has].astype(np.int64) * len(keys) + base[has])
    if (pairs[1:] == pairs[:-1]).any():
        return False
    if has.all():
        return True
    return _unique_many(keys, array("d", codes[~has].tobytes()), rows[~has].tolist())


def _unique_many(keys: list[str], codes: array, rows: list[int] | None = None) -> bool:
    """Whether no (system code, key) comes twice among a big group's rows (numpy); ``rows``:
    only these positions of ``keys`` (``codes`` then theirs)."""
    import numpy as np

    code = np.frombuffer(codes, dtype=np.float64)
    systems = np.flatnonzero(np.bincount(code.astype(np.int64)))  # the codes present
    if rows is not None:
        keys = list(_pick(keys, rows))
    if systems.size == 1:
        return len(set(keys)) == len(keys)
    return all(len(set(picked)) == len(picked)
               for picked in (_pick(keys, np.flatnonzero(code == c).tolist()) for c in systems))


def _pick(seq: list[str], idx: list[int]) -> tuple[str, ...]:
    if len(idx) == 1:
        return (seq[idx[0]],)
    return itemgetter(*idx)(seq) if idx else ()  # type: ignore[no-any-return]


def _cnbe_column(cols: _Columns, base_f1: NumberColumn | None, spill: SpillDir
                 ) -> NumberColumn:
    """CNBE per row against the aligned baseline F1 (None: this is the baseline, 0.0 each);
    NaN (none) where there is no baseline row or no cost: :func:`cnbe` per row for small
    chunks, :func:`cnbe_many` for big ones (the same values)."""
    out = NumberColumn("d", spill)
    n = len(cols)
    for start in range(0, n, CHUNK):
        stop = min(n, start + CHUNK)
        if base_f1 is None:
            out.extend(repeat(0.0, stop - start))
            continue
        f1 = cols.values["f1"].read(start, stop)
        cost = cols.values["cost"].read(start, stop)
        base = base_f1.read(start, stop)
        if stop - start < SMALL_BATCH:
            out.extend([NAN if bf != bf or c != c else cnbe(f, bf, c)
                        for f, bf, c in zip(f1, base, cost, strict=True)])
            continue
        import numpy as np

        bf_np = np.frombuffer(base, dtype=np.float64)
        cost_np = np.frombuffer(cost, dtype=np.float64)
        value = cnbe_many(np.frombuffer(f1, dtype=np.float64), np.nan_to_num(bf_np), cost_np)
        value[np.isnan(bf_np) | np.isnan(cost_np)] = np.nan
        out.extend(array("d", value.tobytes()))
    return out


def _present_chunks(column: NumberColumn, fn: Any = None, absent: bool = False,
                    batch: Any = None) -> Callable[[], Iterator[Any]]:
    """The column's values chunk by chunk (through ``fn`` when given, or its numpy form
    ``batch`` for a big chunk; without NaN when ``absent`` values may be there)."""
    def chunks() -> Iterator[Any]:
        for chunk in column.chunks():
            if batch is not None and len(chunk) >= SMALL_BATCH:
                import numpy as np

                yield batch(np.frombuffer(chunk, dtype=np.float64))
            elif fn is not None:
                yield list(map(fn, chunk))
            elif absent and len(chunk) >= SMALL_BATCH:
                import numpy as np

                arr = np.frombuffer(chunk, dtype=np.float64)
                yield arr[~np.isnan(arr)]
            elif absent:
                yield [v for v in chunk if v == v]
            else:
                yield chunk
    return chunks


def _per_metric(cols: _Columns, cnbe: NumberColumn | None, lid: bool
                ) -> dict[str, Callable[[], Iterator[Any]]]:
    """Every metric's present per-row values of one system, in chunks, in the table's order
    (``lid``: ``rlc_lid`` was computed)."""
    per: dict[str, Callable[[], Iterator[Any]]] = {}
    for m in ROWS:
        if m.row in ("answer", "response"):
            per[m.name] = _present_chunks(cols.values[m.name])
        elif m.of is not None:
            per[m.name] = _present_chunks(cols.values[m.of], m.fn, batch=m.batch)
        elif m.row == "baseline":
            per[m.name] = (_present_chunks(cnbe, absent=True) if cnbe is not None
                           else lambda: iter(()))
        elif m.row == "given" or (m.row == "lid" and lid):
            per[m.name] = _present_chunks(cols.values[m.name], absent=True)
    return per


def aggregate(acc: _Accumulator, config: MultilingualConfig, lid: LidRlc | None,
              exact_places: bool) -> MultilingualResult:
    columns = acc.columns
    systems = list(columns)
    notes: list[str] = []
    baseline = config.baseline
    unknown = baseline is not None and baseline not in columns
    if unknown:
        baseline = None
    elif baseline is not None and not len(columns[baseline]):
        notes.append(f"the baseline {baseline!r} has no scored row: CNBE is not computed.")
        baseline = None
    pairing = _pair(acc, baseline, exact_places)  # a duplicate row is the first error
    if unknown:
        if config.baseline_required:
            raise UnknownNameError("baseline system", config.baseline or "", systems,
                                   component=COMPONENT)
        notes.insert(0, f"no system named {config.baseline!r} in the input: CNBE is not "
                        f"computed (choose one with --baseline).")
    for system in systems:
        if system not in pairing.missing:
            continue
        if not exact_places:
            raise FastPathUnsupported("missing baseline rows")
        count, first = pairing.missing[system]
        raise InputError(
            f"system {system!r} has {count} sample_id(s) with no row of the "
            f"baseline system {baseline!r}, first {columns[system].sample_ids[first]!r} at "
            f"{acc.unit} {columns[system].places[first]}.", component=COMPONENT, path=acc.path,
            field="sample_id",
            fix="give the baseline an answer for every sample, or choose another "
                "--baseline.")
    orphans = [pairing.orphans[s] for s in systems if s in pairing.orphans]
    if orphans:
        notes.append(f"{sum(o[0] for o in orphans)} row(s) have no CNBE: the baseline "
                     f"{baseline!r} row of their sample is unscored (first {orphans[0][2]!r}); "
                     f"their other metrics count.")
    cnbe = ({s: _cnbe_column(columns[s], pairing.base[s][1] if s != baseline else None,
                             acc.spill) for s in systems} if baseline else {})
    metrics: dict[str, dict[str, float | int | None]] = {}
    ci: dict[str, dict[str, list[float] | None]] = {}
    rows_without_cost = 0
    for system in systems:
        cols = columns[system]
        n = len(cols)
        per = _per_metric(cols, cnbe.get(system), lid is not None)
        m: dict[str, float | int | None] = {}
        sys_ci: dict[str, list[float] | None] = {}
        for key, chunks in per.items():
            m[key], m[f"{key}_std"], count = stats.mean_std_chunks(chunks)
            if count != n:
                m[f"{key}_n"] = count
            if key == "cost":
                rows_without_cost += n - count
            if config.ci:
                present = [v for chunk in chunks() for v in
                           (chunk.tolist() if hasattr(chunk, "tolist") else chunk)]
                interval = stats.bootstrap_ci(present, n_resamples=config.n_resamples,
                                              seed=config.seed)
                sys_ci[key] = list(interval) if interval else None
        m["n"] = n
        metrics[system] = m
        if config.ci:
            ci[system] = sys_ci
    if rows_without_cost:
        notes.append(f"{rows_without_cost} row(s) have neither translate_tokens nor evidence: "
                     "their cost and CNBE are not computed and not counted.")
    if lid is not None and lid.unsupported:
        notes.append("rlc_lid: lingua does not know " + ", ".join(lid.unsupported) +
                     "; those rows have no rlc_lid.")
    paired: dict[str, dict[str, dict[str, float | int | str]]] = {}
    if config.paired:
        if baseline is None:
            notes.append("paired tests need a baseline system; none was available.")
        else:
            paired = _paired_tests(columns, systems, baseline, pairing, config)
    reasons: dict[str, int] = {}
    for u in acc.unscored:
        reasons[u["reason"]] = reasons.get(u["reason"], 0) + 1
    scored = sum(len(columns[s]) for s in systems)
    coverage = {"rows": acc.n_rows, "scored": scored, "unscored": acc.n_rows - scored,
                "reasons": reasons}
    base_f1 = metrics[baseline]["f1"] if baseline else None
    return MultilingualResult(
        systems=systems, metrics=metrics, coverage=coverage,
        signature=config.signature().render(), baseline=baseline,
        baseline_f1=base_f1 if isinstance(base_f1, float) else None, ci=ci,
        paired_tests=paired, notes=notes, columns=columns, cnbe_values=cnbe,
        unscored_items=acc.unscored, unscored_places=list(acc.unscored_numbers),
        spill=acc.spill,
    )


def _paired_tests(columns: dict[str, _Columns], systems: list[str], baseline: str,
                  pairing: _Pairing, config: MultilingualConfig
                  ) -> dict[str, dict[str, dict[str, float | int | str]]]:
    base = columns[baseline]
    base_values = {key: base.values[key].tolist() for key in PAIRED_METRICS}
    out: dict[str, dict[str, dict[str, float | int | str]]] = {}
    for system in systems:
        if system == baseline:
            continue
        cols = columns[system]
        pairs = [(i, int(j)) for i, j in enumerate(pairing.base[system][0]) if j >= 0]
        if not pairs:
            continue
        res: dict[str, dict[str, float | int | str]] = {}
        for key in PAIRED_METRICS:
            import numpy as np

            values = cols.values[key].tolist()
            a = np.array([values[i] for i, _ in pairs])
            b = np.array([base_values[key][j] for _, j in pairs])
            boot = stats.paired_bootstrap(a, b, n_resamples=config.n_resamples, seed=config.seed)
            perm = stats.paired_permutation(a, b, seed=config.seed)
            res[key] = {"n": boot.n, "mean_diff": boot.mean_diff, "ci_low": boot.ci_low,
                        "ci_high": boot.ci_high, "p_bootstrap": boot.p_value,
                        "p_permutation": perm.p_value,
                        "significant": "yes" if perm.p_value < 0.05 else "no"}
        out[system] = res
    return out
