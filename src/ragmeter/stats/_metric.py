"""A metric defined once: the :class:`Metric` row of a family's ``METRICS`` table, and the
:class:`Headline` row every door reads.

Each family's ``_metrics.py`` ends with a ``METRICS`` :class:`MetricTable`: one :class:`Metric`
per number the family reports (name, pure function, direction, aggregation, interval, version,
the constants that change its value, a one-line definition and its source).  The scorer, the
aggregation, the Arrow and Ray paths, the console, the HTML report, the notebook table, the gates
and the web app's run list all iterate over that table, so adding a metric is: a pure function,
a table row and a golden test (docs/contributing.md).

A :class:`Headline` is one number of a result as every door shows it: metric, group, value,
95% interval, n, coverage and direction (issue 25).  A result's headline is the list of these
rows; :meth:`MetricTable.headline` builds them from per-group values.

Pure: no I/O, no model, no globals beyond the tables themselves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["Metric", "MetricTable", "Headline", "ALL_GROUP"]

ALL_GROUP = "all"  # the group of an ungrouped number


@dataclass(frozen=True)
class Metric:
    """One metric of a family.

    ``name`` is the stable key every door uses (``f1``, ``rlc_ok``, ``hallucination_auroc``);
    ``label`` the short heading of tables (``F1``, ``RLC_OK``).  ``fn`` is the pure per-item
    function (None for a number that only exists at corpus level, such as an AUROC or CNBE,
    whose ``aggregation`` says how it is computed).  ``aggregation``: ``mean``, ``rate``,
    ``auroc``, ``rmse``, ``weighted`` ... ; ``ci``: ``bootstrap``, ``wilson``, ``none``.
    ``constants`` are the weights and thresholds that change a value: they enter the signature
    (:meth:`MetricTable.signature_settings`), so changing one changes the signature.
    ``judged``: the number comes from a judge and travels with its judge card.
    """

    name: str
    label: str
    description: str
    source: str
    higher_is_better: bool = True
    aggregation: str = "mean"
    ci: str = "bootstrap"
    version: str = "1"
    fn: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    constants: Mapping[str, Any] = field(default_factory=dict)
    digits: int = 4
    judged: bool = False

    @property
    def cutoff(self) -> bool:
        """True for a metric measured at a rank cutoff, named ``<stem>@k`` (``ndcg@k``): its
        values are named per cutoff (``ndcg@10``), and :meth:`MetricTable.get` finds this row
        from such a name."""
        return self.name.endswith("@k")

    def at(self, k: int) -> Metric:
        """This cutoff metric at ``k``: name and label with ``@k`` replaced by ``@{k}``."""
        stem = self.label[:-2] if self.label.endswith("@k") else self.label
        return replace(self, name=f"{self.name[:-2]}@{k}", label=f"{stem}@{k}")

    def glossary_line(self) -> str:
        """``F1: token-level F1 ... (source: ...)`` for tooltips and legends."""
        return f"{self.label}: {self.description} (source: {self.source})"


@dataclass(frozen=True)
class Headline:
    """One headline number: what every door (console, ``--json``, notebook, gates, report, web
    app) reads.  ``group`` is ``"all"`` for an ungrouped number, else the system, language,
    evaluator, setting ... it belongs to.  ``coverage`` is the share of the group's items that
    were scored (None when not applicable).  ``flag``, when set, says why the number is not a
    measurement (a degenerate judge, a judge validated at or below chance): doors show it marked,
    never as a plain number."""

    metric: str
    group: str
    value: float | None
    ci: tuple[float, float] | None = None
    n: int | None = None
    coverage: float | None = None
    higher_is_better: bool = True
    flag: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "group": self.group, "value": self.value,
                "ci": list(self.ci) if self.ci is not None else None, "n": self.n,
                "coverage": self.coverage, "higher_is_better": self.higher_is_better,
                "flag": self.flag}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Headline:
        return cls(metric=str(d["metric"]), group=str(d.get("group") or ALL_GROUP),
                   value=_number(d.get("value")), ci=_interval(d.get("ci")),
                   n=d.get("n") if isinstance(d.get("n"), int) else None,
                   coverage=_number(d.get("coverage")),
                   higher_is_better=bool(d.get("higher_is_better", True)),
                   flag=d.get("flag") if isinstance(d.get("flag"), str) else None)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _is_cutoff(text: str) -> bool:
    """``10`` yes; ``0``, ``k``, ``²``, ``+3`` no."""
    return text.isascii() and text.isdigit() and int(text) > 0


def _is_interval(value: Any) -> bool:
    return (isinstance(value, (list, tuple)) and len(value) == 2
            and all(_number(v) is not None for v in value))


def _interval(value: Any) -> tuple[float, float] | None:
    """``[lo, hi]`` as a tuple of finite floats, else None."""
    if not _is_interval(value):
        return None
    return float(value[0]), float(value[1])


class MetricTable(Sequence[Metric]):
    """A family's ``METRICS``: its metrics in display order, looked up by name."""

    def __init__(self, family: str, version: str, metrics: Iterable[Metric]) -> None:
        self.family = family
        self.version = version
        self._metrics = tuple(metrics)
        self._by_name = {m.name: m for m in self._metrics}
        if len(self._by_name) != len(self._metrics):
            names = [m.name for m in self._metrics]
            dup = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"{family}: metric {dup!r} is defined twice in METRICS")

    def __getitem__(self, index: Any) -> Any:
        return self._metrics[index]

    def __len__(self) -> int:
        return len(self._metrics)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._metrics)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._resolve(name) is not None

    def _resolve(self, name: str) -> Metric | None:
        """The row called ``name``, or a cutoff row at the cutoff ``name`` gives
        (``ndcg@10`` -> ``ndcg@k`` at 10)."""
        found = self._by_name.get(name)
        if found is not None:
            return found
        stem, at, k = name.rpartition("@")
        row = self._by_name.get(f"{stem}@k") if at and _is_cutoff(k) else None
        return row.at(int(k)) if row is not None else None

    def _cutoffs(self, m: Metric, values: Mapping[str, Any]) -> list[str]:
        """The names in ``values`` that are ``m`` (``m`` itself, or ``m`` at each cutoff,
        in increasing cutoff order)."""
        names = [m.name] if m.name in values else []
        if m.cutoff:
            stem = m.name[:-1]
            names += sorted((v for v in values
                             if v.startswith(stem) and _is_cutoff(v[len(stem):])),
                            key=lambda v: int(v[len(stem):]))
        return names

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def get(self, name: str) -> Metric:
        """The metric called ``name``; KeyError naming the valid ones (and a did-you-mean)."""
        found = self._resolve(name)
        if found is None:
            import difflib  # a did-you-mean, on the error path only

            close = difflib.get_close_matches(name, self.names, n=1)
            hint = f" Did you mean: {close[0]}?" if close else ""
            raise KeyError(f"{self.family} has no metric {name!r}.{hint} Its metrics: "
                           f"{', '.join(self.names)}")
        return found

    def signature_settings(self) -> str:
        """Every constant of every metric, canonically: ``rlc_ok.threshold=0.6;...`` (part of the
        signature, so a changed weight or threshold is a changed signature)."""
        parts = []
        for m in self._metrics:
            for key in sorted(m.constants):
                value = m.constants[key]
                if isinstance(value, Mapping):
                    value = ",".join(f"{k}:{value[k]}" for k in sorted(value))
                elif isinstance(value, (list, tuple)):
                    value = ",".join(str(v) for v in value)
                parts.append(f"{m.name}.{key}={value}")
        return ";".join(parts)

    def headline(self, values: Mapping[str, Mapping[str, Any]], *,
                 ci: Mapping[str, Mapping[str, Any]] | None = None,
                 n: Mapping[str, Any] | None = None,
                 coverage: Mapping[str, Any] | None = None,
                 flags: Mapping[str, str] | None = None,
                 only: Sequence[str] | None = None) -> list[Headline]:
        """Headline rows from per-group values: ``values[group][metric]`` (and the same layout
        for ``ci``), ``n[group]`` (an int, or a dict per metric), ``coverage[group]`` (a share
        in [0, 1]), ``flags[metric]``.  Rows follow the groups' order, then this table's order;
        metrics a group does not have are left out; ``only`` keeps those metrics.  A cutoff
        metric (``ndcg@k``) gives one row per cutoff found in the values (``ndcg@5``,
        ``ndcg@10``), in increasing order."""
        rows = []
        keep = set(only) if only is not None else None
        for group, vals in values.items():
            group_ci = (ci or {}).get(group) or {}
            group_n = (n or {}).get(group)
            for m in self._metrics:
                for name in self._cutoffs(m, vals):
                    if keep is not None and name not in keep and m.name not in keep:
                        continue
                    interval = group_ci.get(name)
                    count = group_n.get(name) if isinstance(group_n, Mapping) else group_n
                    rows.append(Headline(
                        metric=name, group=str(group), value=_number(vals[name]),
                        ci=_interval(interval),
                        n=count if isinstance(count, int) and not isinstance(count, bool)
                        else None,
                        coverage=_number((coverage or {}).get(group)),
                        higher_is_better=m.higher_is_better,
                        flag=(flags or {}).get(name, (flags or {}).get(m.name))))
        return rows
