"""Quality gates for pytest and CI: :func:`assert_metric` and :func:`check_requirement`.

::

    import ragmeter
    from ragmeter.testing import assert_metric

    def test_rag_quality():
        result = ragmeter.multilingual.score("answers.jsonl", ci=True)
        assert_metric(result, "f1", group="lbrag", min=0.5, ci=True)

A gate reads a result's headline rows (``ragmeter.result.lookup_headline``), so every number
of every family's ``METRICS`` is reached by its name.  With ``ci=True`` the bound of the 95%
confidence interval is compared (the lower bound against ``min``, the upper bound against
``max``), so a gate does not flap on noise: it fails only when the data show the threshold is
missed.  A number that is absent (unscored) or flagged (a degenerate judge: not a
measurement) never passes.

What a gate reads is checked whole first (:func:`validate_summary`): finite numbers, ordered
intervals, known types; anything else is an error (exit 2 at the command line), never a pass.

The pytest plugin (``ragmeter.testing._plugin``, registered automatically) adds
``--ragmeter-report FILE.html``: the checks of every test first, then one report of every
result created during the session; and the checked values as JUnit properties.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["assert_metric", "check_metric", "check_requirement", "parse_requirement", "Requirement",
           "MetricCheck", "validate_summary"]

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
    flag: str | None = None

    @property
    def bound(self) -> str:
        """What is compared: ``value``, ``CI lower bound`` or ``CI upper bound``."""
        if not self.used_ci:
            return "value"
        return "CI lower bound" if self.op == ">=" else "CI upper bound"

    @property
    def requirement(self) -> str:
        """``f1 [lbrag] >= 0.5 (CI lower bound)``."""
        where = f" [{self.group}]" if self.group else ""
        return f"{self.metric}{where} {self.op} {self.threshold:g} ({self.bound})"

    def message(self) -> str:
        from ragmeter.result import coverage_text

        where = f" [{self.group}]" if self.group else ""
        ci = (f" 95% CI [{self.ci[0]:.4f}, {self.ci[1]:.4f}]"
              if isinstance(self.ci, (list, tuple)) and len(self.ci) == 2 else " (no CI)")
        value = f"{self.value:.4f}" if _is_number(self.value) else "none (unscored)"
        verdict = "holds" if self.ok else "FAILS"
        compared = f"{self.compared:.4f}" if _is_number(self.compared) else "none"
        why = f" (flagged: {self.flag}; a flagged number is not a measurement)" \
            if self.flag else ""
        return (f"{self.metric}{where} {verdict}: {self.bound} {compared} {self.op} "
                f"{self.threshold:g} required{why}; value {value}{ci}, n={self.n}, coverage "
                f"{coverage_text(self.coverage)}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _summary_of(result: Any) -> Mapping[str, Any]:
    found = result if isinstance(result, Mapping) else getattr(result, "summary", None)
    if not isinstance(found, Mapping):
        raise TypeError(f"expected a ragmeter Result or its summary dict, got "
                        f"{type(result).__name__}")
    if "run_id" in found and isinstance(found.get("result"), Mapping):
        found = found["result"]  # a run record: its result is the --json document
    return found


# ------------------------------------------------------------------ the shape of a summary


def _problem(where: str, what: str) -> str:
    return f"{where} {what}"


def _check_row(row: Any, i: int) -> str | None:
    """Why headline row ``i`` is malformed, or None."""
    at = f"headline row {i + 1}"
    if not isinstance(row, Mapping):
        return _problem(at, f"is a {type(row).__name__}, expected an object")
    if not isinstance(row.get("metric"), str) or not row["metric"]:
        return _problem(at, "has no metric name (a non-empty string)")
    at = f"headline row {i + 1} ({row['metric']})"
    if row.get("group") is not None and not isinstance(row["group"], str):
        return _problem(at, f"has a group of type {type(row['group']).__name__}, expected a "
                            "string")
    value = row.get("value")
    if value is not None and not _is_number(value):
        return _problem(at, f"has a value {value!r} that is not a finite number")
    ci = row.get("ci")
    if ci is not None:
        if not (isinstance(ci, list) and len(ci) == 2 and all(_is_number(v) for v in ci)):
            return _problem(at, f"has a CI {ci!r} that is not [lower, upper] of finite "
                                "numbers")
        if ci[0] > ci[1]:
            return _problem(at, f"has an inverted CI [{ci[0]}, {ci[1]}] (lower above upper)")
    n = row.get("n")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 0):
        return _problem(at, f"has an n {n!r} that is not a count")
    cov = row.get("coverage")
    if cov is not None and not (_is_number(cov) and 0 <= cov <= 1):
        return _problem(at, f"has a coverage {cov!r} that is not a share in [0, 1]")
    if not isinstance(row.get("higher_is_better", True), bool):
        return _problem(at, "has a higher_is_better that is not true or false")
    if row.get("flag") is not None and not isinstance(row["flag"], str):
        return _problem(at, "has a flag that is not a string")
    return None


def _check_legacy(value: Any, path: str, depth: int = 0) -> str | None:
    """Numbers in a summary without headline rows (``metrics``, ``ci95``): finite, no
    booleans, intervals ordered."""
    if depth > 8:
        return None
    if isinstance(value, bool):
        return f"{path} is {value!r}, not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path} is {value!r}, not a finite number"
    if isinstance(value, Mapping):
        for k, v in value.items():
            found = _check_legacy(v, f"{path}.{k}", depth + 1)
            if found:
                return found
    elif isinstance(value, list):
        if path.startswith(("ci95", "ci")) and len(value) == 2 and all(
                _is_number(v) for v in value) and value[0] > value[1]:
            return f"{path} is an inverted interval {value!r} (lower above upper)"
        for j, v in enumerate(value[:10_000]):
            found = _check_legacy(v, f"{path}[{j}]", depth + 1)
            if found:
                return found
    return None


def validate_summary(summary: Any) -> str | None:
    """Why ``summary`` is not a result a gate can read, or None when it is: a JSON object
    whose headline rows (or, in a record older than them, whose ``metrics`` and ``ci95``) hold
    finite numbers, ordered intervals, counts and known types, and whose coverage counts are
    counts.  Pure; each door turns the reason into its own error."""
    if not isinstance(summary, Mapping):
        return f"holds a {type(summary).__name__}, expected a JSON object"
    rows = summary.get("headline")
    if rows is not None:
        if not isinstance(rows, list):
            return f"has a headline of type {type(rows).__name__}, expected a list of rows"
        for i, row in enumerate(rows):
            found = _check_row(row, i)
            if found:
                return found
    else:
        for key in ("metrics", "ci95", "ci"):
            found = _check_legacy(summary.get(key), key)
            if found:
                return found
        for key, value in summary.items():
            if isinstance(value, float) and not math.isfinite(value):
                return f"{key} is {value!r}, not a finite number"
    cov = summary.get("coverage")
    if cov is not None and not isinstance(cov, Mapping):
        return f"has a coverage of type {type(cov).__name__}, expected an object"
    for key in ("rows", "total", "scored", "unscored"):
        v = (cov or {}).get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            return f"has coverage.{key} {v!r}, not a count"
    return None


# ------------------------------------------------------------------ checking


def finite_threshold(value: Any, name: str) -> float:
    """``value`` as a float; ConfigError naming ``name`` unless it is a finite number."""
    from ragmeter.errors import ConfigError

    if not _is_number(value):
        raise ConfigError(f"testing: {name}={value!r} is not a finite number. Fix: give a "
                          "number such as 0.5.")
    return float(value)


def evaluate(summary: Mapping[str, Any], metric: str, group: str | None,
             bounds: list[tuple[str, float]], ci: bool, door: str) -> list[MetricCheck]:
    """The checks of ``metric`` (in ``group``) against ``bounds`` (``[(">=", 0.5)]``) in a
    validated summary.  Errors (ConfigError) are phrased for ``door``: ``"python"`` names
    arguments (``group=``, ``ci=True``), ``"cli"`` names flags (``--group``, ``--ci``)."""
    from ragmeter.errors import ConfigError
    from ragmeter.result import MetricLookupError, coverage_counts, lookup_headline

    cli = door == "cli"
    component = "gate" if cli else "testing"
    try:
        row = lookup_headline(summary, metric, group)
    except MetricLookupError as err:
        raise ConfigError(f"{component}: {err.message(door)}.") from None
    if ci and row.ci is None:
        raise ConfigError(f"{component}: {metric}{f' [{row.group}]' if group else ''} has no "
                          f"confidence interval in this result. Fix: "
                          f"{_no_interval_fix(summary, metric, cli)}")
    coverage = coverage_counts(summary)
    checks = []
    for op, threshold in bounds:
        compared = (row.ci[0] if op == ">=" else row.ci[1]) if ci and row.ci else row.value
        ok = compared is not None and not row.flag and (
            compared >= threshold if op == ">=" else compared <= threshold)
        check = MetricCheck(metric, group if group is not None else
                            (row.group if row.group != "all" else None),
                            row.value, list(row.ci) if row.ci else None, row.n, coverage,
                            compared, op, threshold, bool(ok), ci, row.flag)
        for listener in list(_LISTENERS):
            listener(check)
        checks.append(check)
    return checks


def _no_interval_fix(summary: Mapping[str, Any], metric: str, cli: bool) -> str:
    """Why there is no interval: the metric has none by definition (its METRICS row), or the
    result was computed without one."""
    from ragmeter._families import family_part

    family = summary.get("family")
    table = family_part(family, "_metrics", "METRICS") if isinstance(family, str) else None
    try:
        defined = table.get(metric) if table is not None else None
    except KeyError:
        defined = None
    drop = "drop --ci" if cli else "drop ci=True"
    if defined is not None and defined.ci == "none":
        return f"{metric} has no interval by definition ({family}'s METRICS); {drop}."
    again = "score again with --ci" if cli else "score again with ci=True"
    return f"{again} where the command has it, or {drop}."


def check_metric(result: Any, metric: str, *, group: str | None = None,
                 min: float | None = None, max: float | None = None,  # noqa: A002
                 ci: bool = False) -> list[MetricCheck]:
    """The checks of ``metric`` against ``min``/``max`` (one per bound given)."""
    from ragmeter.errors import ConfigError

    if min is None and max is None:
        raise ConfigError("testing: give min=, max= or both.")
    bounds = [(op, finite_threshold(v, name)) for op, v, name in
              ((">=", min, "min"), ("<=", max, "max")) if v is not None]
    summary = _summary_of(result)
    problem = validate_summary(summary)
    if problem:
        raise ConfigError(f"testing: the result {problem}. Fix: pass a Result or the --json "
                          "document a ragmeter command wrote.")
    return evaluate(summary, metric, group, bounds, ci, "python")


def assert_metric(result: Any, metric: str, *, group: str | None = None,
                  min: float | None = None, max: float | None = None,  # noqa: A002
                  ci: bool = False) -> None:
    """Fail (AssertionError) unless ``metric`` is within ``[min, max]``.

    ``group`` picks a system, language, evaluator or setting (the headline's groups); without
    it, a metric with one group (or an ``all`` group) is taken.  With ``ci=True`` the 95% CI's
    lower bound is compared against ``min`` and its upper bound against ``max``.  A number
    that is absent or flagged fails.  The message shows metric, group, value, CI, n, coverage
    and the threshold.
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


_REQ = re.compile(r"^\s*([A-Za-z_][\w.\-@]*)\s*(>=|<=)\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)"
                  r"\s*$")


def parse_requirement(text: str) -> Requirement:
    """``'f1>=0.5'`` → :class:`Requirement`; ConfigError with the expected form otherwise,
    or when the threshold is not a finite number (``-1e999``)."""
    from ragmeter.errors import ConfigError

    m = _REQ.match(text)
    if not m:
        raise ConfigError(f"gate: --require {text!r} is not of the form METRIC>=NUMBER or "
                          "METRIC<=NUMBER. Fix: write e.g. --require 'f1>=0.5'.")
    threshold = float(m.group(3))
    if not math.isfinite(threshold):
        raise ConfigError(f"gate: --require {text!r}: the threshold {m.group(3)} is not a "
                          "finite number. Fix: write e.g. --require 'f1>=0.5'.")
    return Requirement(m.group(1), m.group(2), threshold)


def check_requirement(result: Any, requirement: Requirement | str, *,
                      group: str | None = None, ci: bool = False) -> MetricCheck:
    """One requirement against a result or summary, phrased for Python (``ragmeter gate``
    uses :func:`evaluate` with the command line's words)."""
    req = parse_requirement(requirement) if isinstance(requirement, str) else requirement
    bound = {"min": req.threshold} if req.op == ">=" else {"max": req.threshold}
    return check_metric(result, req.metric, group=group, ci=ci, **bound)[0]
