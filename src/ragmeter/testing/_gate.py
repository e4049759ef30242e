"""Quality gates for pytest and CI: :func:`assert_metric` and :func:`check_requirement`.

::

    import ragmeter
    from ragmeter.testing import assert_metric

    def test_rag_quality():
        result = ragmeter.multilingual.score("answers.jsonl", ci=True)
        assert_metric(result, "f1", group="lbrag", min=0.5, ci=True)

With ``ci=True`` the bound of the 95% confidence interval is compared (the lower bound against
``min``, the upper bound against ``max``), so a gate does not flap on noise: it fails only when
the data show the threshold is missed.  The pytest plugin (``ragmeter.testing._plugin``,
registered automatically) adds ``--ragmeter-report FILE.html``: one HTML report of every result
created during the session, and the metric values checked as JUnit properties.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["assert_metric", "check_metric", "check_requirement", "parse_requirement", "Requirement",
           "MetricCheck"]

# The pytest plugin listens here: every checked metric is reported to these callbacks.
_LISTENERS: list[Callable[[MetricCheck], None]] = []


@dataclass(frozen=True)
class MetricCheck:
    """The outcome of one threshold check, with everything a failure message needs."""

    metric: str
    group: str | None
    value: Any
    ci: Any
    n: int | None
    coverage: Mapping[str, Any]
    compared: Any  # the number compared: the value, or the CI bound with ci=True
    op: str
    threshold: float
    ok: bool
    used_ci: bool

    def message(self) -> str:
        where = f" [{self.group}]" if self.group else ""
        ci = (f" 95% CI [{self.ci[0]:.4f}, {self.ci[1]:.4f}]"
              if isinstance(self.ci, (list, tuple)) and len(self.ci) == 2 else " (no CI)")
        value = f"{self.value:.4f}" if isinstance(self.value, (int, float)) else str(self.value)
        cov = self.coverage
        bound = ("CI lower bound" if self.op == ">=" else "CI upper bound") if self.used_ci \
            else "value"
        verdict = "holds" if self.ok else "FAILS"
        compared = (f"{self.compared:.4f}" if isinstance(self.compared, (int, float))
                    else str(self.compared))
        return (f"{self.metric}{where} {verdict}: {bound} {compared} {self.op} "
                f"{self.threshold:g} required; value {value}{ci}, n={self.n}, coverage "
                f"{cov.get('scored', '?')}/{cov.get('rows', '?')} scored")


def _summary_of(result: Any) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    found = result if isinstance(result, Mapping) else getattr(result, "summary", None)
    if not isinstance(found, Mapping):
        raise TypeError(f"expected a ragmeter Result or its summary dict, got "
                        f"{type(result).__name__}")
    summary: Mapping[str, Any] = found
    cov = summary.get("coverage")
    return summary, cov if isinstance(cov, Mapping) else {}


def check_metric(result: Any, metric: str, *, group: str | None = None,
                 min: float | None = None, max: float | None = None,  # noqa: A002
                 ci: bool = False) -> list[MetricCheck]:
    """The checks of ``metric`` against ``min``/``max`` (one per bound given)."""
    from ragmeter.errors import ConfigError
    from ragmeter.result import find_metric

    if min is None and max is None:
        raise ConfigError("testing: give min=, max= or both.")
    summary, coverage = _summary_of(result)
    try:
        value, interval, n = find_metric(summary, metric, group)
    except KeyError as err:
        raise ConfigError(f"testing: {err.args[0]}.") from None
    has_ci = isinstance(interval, (list, tuple)) and len(interval) == 2
    if ci and not has_ci:
        raise ConfigError(f"testing: {metric} has no confidence interval in this result. Fix: "
                          "compute one (e.g. ci=True when scoring), or drop ci=True.")
    checks = []
    for op, threshold in ((">=", min), ("<=", max)):
        if threshold is None:
            continue
        compared = (interval[0] if op == ">=" else interval[1]) if ci else value
        ok = isinstance(compared, (int, float)) and (
            compared >= threshold if op == ">=" else compared <= threshold)
        check = MetricCheck(metric, group, value, interval if has_ci else None, n, coverage,
                            compared, op, float(threshold), bool(ok), ci)
        for listener in list(_LISTENERS):
            listener(check)
        checks.append(check)
    return checks


def assert_metric(result: Any, metric: str, *, group: str | None = None,
                  min: float | None = None, max: float | None = None,  # noqa: A002
                  ci: bool = False) -> None:
    """Fail (AssertionError) unless ``metric`` is within ``[min, max]``.

    ``group`` picks a system, language or evaluator of a grouped summary.  With ``ci=True``
    the 95% CI's lower bound is compared against ``min`` and its upper bound against ``max``.
    The message shows metric, group, value, CI, n, coverage and the threshold.
    """
    failed = [c for c in check_metric(result, metric, group=group, min=min, max=max, ci=ci)
              if not c.ok]
    if failed:
        raise AssertionError("; ".join(c.message() for c in failed))


@dataclass(frozen=True)
class Requirement:
    """``metric op threshold`` as written on the command line: ``f1>=0.5``."""

    metric: str
    op: str
    threshold: float

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.threshold:g}"


_REQ = re.compile(r"^\s*([A-Za-z_][\w.\-@]*)\s*(>=|<=)\s*(-?[0-9]*\.?[0-9]+(?:[eE]-?\d+)?)\s*$")


def parse_requirement(text: str) -> Requirement:
    """``'f1>=0.5'`` → :class:`Requirement`; ConfigError with the expected form otherwise."""
    from ragmeter.errors import ConfigError

    m = _REQ.match(text)
    if not m:
        raise ConfigError(f"gate: --require {text!r} is not of the form METRIC>=NUMBER or "
                          "METRIC<=NUMBER. Fix: write e.g. --require 'f1>=0.5'.")
    return Requirement(m.group(1), m.group(2), float(m.group(3)))


def check_requirement(result: Any, requirement: Requirement | str, *,
                      group: str | None = None, ci: bool = False) -> MetricCheck:
    """One requirement against a result or summary (``ragmeter gate`` uses this)."""
    req = parse_requirement(requirement) if isinstance(requirement, str) else requirement
    bound = {"min": req.threshold} if req.op == ">=" else {"max": req.threshold}
    return check_metric(result, req.metric, group=group, ci=ci, **bound)[0]
