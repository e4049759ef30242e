"""Per-system aggregation of the multilingual scorer's per-row columns: CNBE against the
baseline, mean/std (and bootstrap CIs) of every metric, paired tests, coverage.  Pure over the
accumulated columns; :mod:`ragmeter.multilingual._scorer` reads and scores the rows.
"""

from __future__ import annotations

from array import array
from typing import Any

from ragmeter import stats
from ragmeter.errors import InputError, UnknownNameError
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


def _cnbe_values(f1: array, base_f1: array, positions: list[int], cost: array) -> list[float]:
    """CNBE per row against the baseline row at ``positions`` (-1: none, given 0 here and
    removed by the caller): :func:`cnbe_many` over the columns, or :func:`cnbe` per row for
    a small system (the same values; no numpy import)."""
    if len(f1) < SMALL_BATCH:
        return [cnbe(f, base_f1[p] if p >= 0 else base_f1[0], c)
                for f, p, c in zip(f1, positions, cost, strict=True)]
    import numpy as np

    pos = np.fromiter(positions, dtype=np.int64, count=len(positions))
    base_aligned = np.frombuffer(base_f1, dtype=np.float64)[np.where(pos < 0, 0, pos)]
    value = cnbe_many(np.frombuffer(f1, dtype=np.float64), base_aligned,
                      np.frombuffer(cost, dtype=np.float64))
    return value.tolist()  # type: ignore[no-any-return]


def _cnbe_for(columns: dict[str, _Columns], systems: list[str], baseline: str, path: str,
              unit: str, exact_places: bool, base_unscored: frozenset[str] = frozenset()
              ) -> dict[str, list[float | None]]:
    """CNBE per row of each system against the baseline's row of the same sample: None for a
    row without cost, or whose baseline row is unscored (``base_unscored``: a null baseline
    prediction, issue 29.10); a sample with no baseline row at all is an InputError."""
    base = columns[baseline]
    base_f1 = base.values["f1"]
    base_index = base.index
    out: dict[str, list[float | None]] = {}
    for system in systems:
        cols = columns[system]
        f1, cost = cols.values["f1"], cols.values["cost"]
        if system == baseline:
            out[system] = [0.0] * len(f1)
            continue
        get = base_index.get
        positions = [get(sid, -1) for sid in cols.sample_ids]
        vals: list[float | None] = _cnbe_values(f1, base_f1, positions, cost)  # type: ignore[assignment]
        if len(positions) < SMALL_BATCH:
            missing = [i for i, p in enumerate(positions) if p < 0]
            no_value = [i for i, c in enumerate(cost) if c != c] + missing
        else:
            import numpy as np

            pos = np.asarray(positions)
            missing = np.flatnonzero(pos < 0).tolist()
            no_value = np.flatnonzero(
                (pos < 0) | np.isnan(np.frombuffer(cost, dtype=np.float64))).tolist()
        for i in no_value:
            vals[i] = None  # no cost, or no baseline row
        if missing and base_unscored:  # the baseline has the row, unscored: no CNBE here
            missing = [i for i in missing if cols.sample_ids[i] not in base_unscored]
        if missing:
            if not exact_places:
                raise FastPathUnsupported("missing baseline rows")
            first = missing[0]
            raise InputError(
                f"system {system!r} has {len(missing)} sample_id(s) with no row of the "
                f"baseline system {baseline!r}, first {cols.sample_ids[first]!r} at "
                f"{unit} {cols.places[first]}.", component=COMPONENT, path=path,
                field="sample_id",
                fix="give the baseline an answer for every sample, or choose another "
                    "--baseline.")
        out[system] = vals
    return out


def _present(values: array | list[float | None]) -> list[float]:
    """The values that are there (not None, not the internal NaN marker)."""
    if isinstance(values, array) and len(values) >= SMALL_BATCH:
        import numpy as np

        arr = np.frombuffer(values, dtype=np.float64)
        return arr[~np.isnan(arr)].tolist()  # type: ignore[no-any-return]
    return [v for v in values if v is not None and v == v]


def _per_metric(cols: _Columns, cnbe: list[float | None], lid: bool) -> dict[str, list[float]]:
    """Every metric's present per-row values of one system, in the table's order (``lid``:
    ``rlc_lid`` was computed)."""
    per: dict[str, list[float]] = {}
    for m in ROWS:
        if m.row in ("answer", "response"):
            per[m.name] = cols.values[m.name].tolist()
        elif m.of is not None:
            assert m.fn is not None
            per[m.name] = list(map(m.fn, per.get(m.of) or cols.values[m.of].tolist()))
        elif m.row == "baseline":
            per[m.name] = _present(cnbe)
        elif m.row == "given" or (m.row == "lid" and lid):
            per[m.name] = _present(cols.values[m.name])
    return per


def aggregate(acc: _Accumulator, config: MultilingualConfig, lid: LidRlc | None,
               exact_places: bool) -> MultilingualResult:
    unscored_ids: dict[str, set[str]] = {}
    for u in acc.unscored:
        unscored_ids.setdefault(u["system"], set()).add(u["sample_id"])
    acc.fix_places()
    columns = acc.columns
    systems = list(columns)
    notes: list[str] = []
    baseline = config.baseline
    if baseline is not None and baseline not in columns:
        if config.baseline_required:
            raise UnknownNameError("baseline system", baseline, systems, component=COMPONENT)
        notes.append(f"no system named {baseline!r} in the input: CNBE is not computed "
                     f"(choose one with --baseline).")
        baseline = None
    if baseline is not None and not columns[baseline].sample_ids:
        notes.append(f"the baseline {baseline!r} has no scored row: CNBE is not computed.")
        baseline = None
    base_unscored = frozenset(unscored_ids.get(baseline, ())) if baseline else frozenset()
    cnbe = (_cnbe_for(columns, systems, baseline, acc.path, acc.unit, exact_places,
                      base_unscored) if baseline else {})
    if baseline and base_unscored:
        orphans = [sid for s in systems if s != baseline for sid in columns[s].sample_ids
                   if sid in base_unscored]
        if orphans:
            notes.append(f"{len(orphans)} row(s) have no CNBE: the baseline {baseline!r} row "
                         f"of their sample is unscored (first {orphans[0]!r}); their other "
                         f"metrics count.")
    metrics: dict[str, dict[str, float | int | None]] = {}
    ci: dict[str, dict[str, list[float] | None]] = {}
    rows_without_cost = 0
    for system in systems:
        cols = columns[system]
        n = len(cols.sample_ids)
        per = _per_metric(cols, cnbe.get(system, []), lid is not None)
        rows_without_cost += n - len(per["cost"])
        m: dict[str, float | int | None] = {}
        sys_ci: dict[str, list[float] | None] = {}
        for key, present in per.items():
            m[key], m[f"{key}_std"] = stats.mean_std(present)
            if len(present) != n:
                m[f"{key}_n"] = len(present)
            if config.ci:
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
            paired = _paired_tests(columns, systems, baseline, config)
    reasons: dict[str, int] = {}
    for u in acc.unscored:
        reasons[u["reason"]] = reasons.get(u["reason"], 0) + 1
    scored = sum(len(columns[s].sample_ids) for s in systems)
    coverage = {"rows": acc.n_rows, "scored": scored, "unscored": acc.n_rows - scored,
                "reasons": reasons}
    base_f1 = metrics[baseline]["f1"] if baseline else None
    return MultilingualResult(
        systems=systems, metrics=metrics, coverage=coverage,
        signature=config.signature().render(), baseline=baseline,
        baseline_f1=base_f1 if isinstance(base_f1, float) else None, ci=ci,
        paired_tests=paired, notes=notes, columns=columns, cnbe_values=cnbe,
        unscored_items=acc.unscored, unscored_places=list(acc.unscored_numbers),
    )


def _paired_tests(columns: dict[str, _Columns], systems: list[str], baseline: str,
                  config: MultilingualConfig) -> dict[str, dict[str, dict[str, float | int | str]]]:
    base = columns[baseline]
    out: dict[str, dict[str, dict[str, float | int | str]]] = {}
    for system in systems:
        if system == baseline:
            continue
        cols = columns[system]
        pairs = [(i, base.index[sid]) for i, sid in enumerate(cols.sample_ids)
                 if sid in base.index]
        if not pairs:
            continue
        res: dict[str, dict[str, float | int | str]] = {}
        for key in PAIRED_METRICS:
            import numpy as np

            a = np.array([cols.values[key][i] for i, _ in pairs])
            b = np.array([base.values[key][j] for _, j in pairs])
            boot = stats.paired_bootstrap(a, b, n_resamples=config.n_resamples, seed=config.seed)
            perm = stats.paired_permutation(a, b, seed=config.seed)
            res[key] = {"n": boot.n, "mean_diff": boot.mean_diff, "ci_low": boot.ci_low,
                        "ci_high": boot.ci_high, "p_bootstrap": boot.p_value,
                        "p_permutation": perm.p_value,
                        "significant": "yes" if perm.p_value < 0.05 else "no"}
        out[system] = res
    return out
