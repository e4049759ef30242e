"""Comparing several run records of one family: per-item paired tests and aggregates side by
side.

The per-item values come from the records' stored items (``PAIRED_UNITS`` in
reports/html_families.py says which values per family).  Each later run is compared with the
first on the items present in both with the same key (a paired design); the test is the
sign-flip permutation test of :func:`ragmeter.stats.paired_permutation` (seeded, so a
report is reproducible).  Nothing here recomputes a metric: it resamples stored values, as
sacrebleu's paired tests resample per-sentence statistics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.runs._records import RunRecord

__all__ = ["PairedResult", "ComparisonRow", "Comparison", "compare_runs", "flat_numbers"]


@dataclass(frozen=True)
class PairedResult:
    n: int
    mean_diff: float
    p_value: float
    significant: bool


@dataclass(frozen=True)
class ComparisonRow:
    group: str
    metric: str
    means: list[float | None]  # per run, over the items paired with the first run
    tests: list[PairedResult | None]  # run k (k >= 1) against run 0


@dataclass
class Comparison:
    rows: list[ComparisonRow] = field(default_factory=list)
    headline: list[list[Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    no_common_items: bool = False  # no item (same key) is in two of the runs: nothing paired


def _no_pairs(records: Sequence[RunRecord], units: Sequence[Any]) -> str:
    """Why no item could be paired: the runs share none, or store none."""
    counts = [len({k for u in unit.values() for k in u}) for unit in units]
    if not any(counts):
        return ("These runs store no scored items to pair (see each run's coverage): no "
                "paired comparison; each run's numbers are over its own items.")
    sizes = ", ".join(f"{n}" for n in counts)
    return (f"These runs have no item in common (items scored per run: {sizes}; none has the "
            "same key in the first run and another): they were run on different data, so no "
            "paired comparison is possible; each run's numbers are over its own items.")


def flat_numbers(doc: Any, prefix: str = "", depth: int = 0) -> dict[str, float | int]:
    """Numeric leaves of a result document as ``a.b.c -> value`` (for side-by-side display)."""
    out: dict[str, float | int] = {}
    if depth > 4:
        return out
    if isinstance(doc, Mapping):
        for k, v in doc.items():
            if k in ("schema_version",):
                continue
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                out[key] = v
            elif isinstance(v, Mapping):
                out.update(flat_numbers(v, key, depth + 1))
    return out


def compare_runs(records: Sequence[RunRecord], *, n_resamples: int = 2000,
                 alpha: float = 0.05, seed: int = 12345, max_headline: int = 80
                 ) -> Comparison:
    """Paired per-item comparison of runs 2..k against run 1, plus headline aggregates."""
    from ragmeter import stats
    from ragmeter.reports.html_families import paired_units_of

    comp = Comparison()
    extract = paired_units_of(records[0].family) if records else None
    if extract is not None:
        units = [extract(r.items) for r in records]
        keys = list(dict.fromkeys(k for u in units for k in u))
        for group, metric in keys:
            base = units[0].get((group, metric), {})
            means: list[float | None] = []
            tests: list[PairedResult | None] = []
            common = set(base)
            for u in units[1:]:
                common &= set(u.get((group, metric), {}))
            order = sorted(common)
            for u in units:
                vals = [u[(group, metric)][k] for k in order]
                means.append(stats.mean(vals) if vals else None)
            for u in units[1:]:
                pairs = sorted(set(base) & set(u.get((group, metric), {})))
                if not pairs:
                    tests.append(None)
                    continue
                a = [u[(group, metric)][k] for k in pairs]
                b = [base[k] for k in pairs]
                t = stats.paired_permutation(a, b, n_resamples=n_resamples, seed=seed)
                tests.append(PairedResult(n=len(pairs), mean_diff=t.mean_diff,
                                          p_value=t.p_value, significant=t.p_value < alpha))
            if any(t is not None for t in tests):  # a row without a pair says nothing
                comp.rows.append(ComparisonRow(group, metric, means, tests))
        if any(r.items_truncated for r in records):
            comp.notes.append("Some records keep only a sample of their scored items: the "
                              "paired tests use the items they kept.")
        if not comp.rows:
            comp.no_common_items = True
            comp.notes.append(_no_pairs(records, units))
    else:
        comp.notes.append(f"No per-item pairing is defined for family "
                          f"{records[0].family if records else '?'}; aggregates are shown "
                          "side by side without a test.")
    flats = [flat_numbers(r.result) for r in records]
    names = list(dict.fromkeys(k for f in flats for k in f))
    differing = [n for n in names if len({f.get(n) for f in flats}) > 1]
    if names and not differing:
        comp.notes.append("Every aggregate number is the same in these runs.")
    for name in differing[:max_headline]:
        comp.headline.append([name, *[f.get(name) for f in flats]])
    if len(differing) > max_headline:
        comp.notes.append(f"{len(differing) - max_headline} more differing numbers are not "
                          "shown; see each run below.")
    return comp
