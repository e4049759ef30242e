"""The shared pieces of the one-spine layout (issue 24): the METRICS table and its headline
rows, the family table, and the typed option groups."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

import ragmeter
from ragmeter._families import FAMILIES, family_part
from ragmeter._verb._options import EngineOptions, OutputOptions, RunOptions, gather
from ragmeter.result import Result, find_metric, headline_of
from ragmeter.stats import ALL_GROUP, Headline, Metric, MetricTable


def _table(**constants: object) -> MetricTable:
    return MetricTable("fam", "fam-1", [
        Metric("f1", "F1", "token F1", "SQuAD", constants=dict(constants)),
        Metric("cost", "cost", "tokens", "LBRAG", higher_is_better=False, ci="none"),
    ])


def test_a_metric_is_named_once() -> None:
    with pytest.raises(ValueError, match="'f1' is defined twice"):
        MetricTable("fam", "1", [Metric("f1", "F1", "a", "b"), Metric("f1", "F1", "c", "d")])


def test_unknown_metric_lists_the_valid_ones_with_a_did_you_mean() -> None:
    with pytest.raises(KeyError, match="Did you mean: cost\\? Its metrics: f1, cost"):
        _table().get("cots")


def test_a_changed_constant_changes_the_signature_settings() -> None:
    assert _table(threshold=0.6).signature_settings() == "f1.threshold=0.6"
    assert _table(threshold=0.6).signature_settings() != _table(threshold=0.5)\
        .signature_settings()
    assert _table(weights={"b": 2, "a": 1}).signature_settings() == "f1.weights=a:1,b:2"


def test_headline_rows_follow_groups_then_the_table_and_drop_what_is_absent() -> None:
    rows = _table().headline(
        {"sys1": {"cost": 3.0, "f1": 0.5}, "sys2": {"f1": float("nan")}},
        ci={"sys1": {"f1": [0.4, 0.6], "cost": ["x", 1]}}, n={"sys1": 10, "sys2": {"f1": 4}},
        coverage={"sys1": 1.0}, flags={"cost": "degenerate"})
    assert [(h.group, h.metric) for h in rows] == [("sys1", "f1"), ("sys1", "cost"),
                                                    ("sys2", "f1")]
    assert rows[0] == Headline("f1", "sys1", 0.5, (0.4, 0.6), 10, 1.0, True, None)
    assert rows[1].ci is None and rows[1].higher_is_better is False
    assert rows[1].flag == "degenerate"
    assert rows[2].value is None and rows[2].n == 4  # NaN never leaves as a number


def test_headline_round_trips_through_the_summary_and_gates_read_it() -> None:
    rows = [Headline("f1", "a", 0.5, (0.4, 0.6), 10, 1.0), Headline("f1", "b", 0.7),
            Headline("kappa", ALL_GROUP, 0.3)]
    result = Result("fam", "score", {"signature": "s"}, items=[], headline=rows)
    assert result.headline == rows
    assert headline_of(result.summary) == rows
    assert find_metric(result.summary, "f1", "a") == (0.5, [0.4, 0.6], 10)
    assert find_metric(result.summary, "kappa") == (0.3, None, None)
    with pytest.raises(KeyError, match="several groups \\(a, b\\)"):
        find_metric(result.summary, "f1")
    with pytest.raises(KeyError, match="its metrics: f1, kappa"):
        find_metric(result.summary, "em")
    with pytest.raises(KeyError, match="its groups: a, b"):
        find_metric(result.summary, "f1", "c")


def test_every_family_of_the_table_is_a_package_with_metrics() -> None:
    for name in FAMILIES:
        importlib.import_module(f"ragmeter.{name}")
    assert family_part("nonexistent", "_metrics", "METRICS") is None
    assert family_part("reliability", "_no_such_module", "X") is None
    table = family_part("reliability", "_metrics", "METRICS")
    assert isinstance(table, MetricTable) and "reliability" in table


def test_gather_routes_plain_keywords_into_their_groups() -> None:
    given = RunOptions(store="s.sqlite")
    out = gather("x.score", {"dry_run": True, "ci": True, "ray_workers": 4},
                 run=(RunOptions, given), output=(OutputOptions, None),
                 engine=(EngineOptions, None))
    assert out["run"] == RunOptions(store="s.sqlite", dry_run=True)
    assert out["output"] == OutputOptions(ci=True)
    assert out["engine"] == EngineOptions(ray_workers=4)
    assert given.dry_run is False  # groups are frozen values: the caller's is unchanged
    with pytest.raises(TypeError, match="unexpected keyword argument 'dry_rn'. Did you mean "
                                        "'dry_run'"):
        gather("x.score", {"dry_rn": True}, run=(RunOptions, None))
    with pytest.raises(TypeError, match="run= takes a RunOptions, got dict"):
        gather("x.score", {}, run=(RunOptions, {"dry_run": True}))


def test_option_groups_are_public_and_frozen() -> None:
    assert ragmeter.RunOptions is RunOptions and ragmeter.OutputOptions is OutputOptions
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunOptions().replay = True  # type: ignore[misc]


def test_reliability_headline_carries_each_evaluator_and_the_pooled_number() -> None:
    from ragmeter.io._samples import sample_path

    result = ragmeter.reliability.score(sample_path("reliability_annotations.csv"),
                                        qc=["qc_maria"])
    doc = result.summary
    rows = {(h.group, h.metric): h for h in result.headline}
    for name, e in doc["evaluators"].items():
        h = rows[(name, "reliability")]
        assert (h.value, h.n) == (e["reliability"], e["applicable_items"])
        assert list(h.ci or ()) == e["reliability_ci95"]
        assert rows[(name, "flag_mismatch_pct")].higher_is_better is False
    pooled = rows[(ALL_GROUP, "reliability")]
    assert pooled.value == doc["overall_reliability"]
    assert pooled.ci is not None and pooled.ci[0] < pooled.value < pooled.ci[1]
    # the gate reaches one annotator's reliability by name (issue 25)
    from ragmeter.testing import check_metric

    (check,) = check_metric(result, "reliability", group="ann_ayo", min=0.5)
    assert check.ok and check.value == doc["evaluators"]["ann_ayo"]["reliability"]
