"""ragmeter in tests and CI: ``assert_metric``, the gate logic and the pytest plugin."""

from __future__ import annotations

from ragmeter.testing._gate import (
    MetricCheck,
    Requirement,
    assert_metric,
    check_metric,
    check_requirement,
    parse_requirement,
)

__all__ = [
    "MetricCheck",
    "Requirement",
    "assert_metric",
    "check_metric",
    "check_requirement",
    "parse_requirement",
]
