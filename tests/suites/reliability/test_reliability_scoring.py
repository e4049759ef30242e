"""score_annotations on hand-made tables (expected values worked by hand in cases.py) and on the
built-in sample (cross-checked against an independent brute-force count)."""

from __future__ import annotations

import csv
import json
from collections import defaultdict

import pytest

from ragmeter.errors import ConfigError, InputError, UnknownNameError
from ragmeter.io import FieldMap
from ragmeter.io._samples import sample_path
from ragmeter.reliability._scorer import ReliabilityConfig, score_annotations, score_file
from tests.suites.reliability.cases import MULTI, SINGLE, row

SAMPLE = "reliability_annotations.csv"


@pytest.fixture(scope="module")
def single():
    return score_annotations(SINGLE, ReliabilityConfig(qc=("qc",))).to_json()


# evaluator -> expected numbers, from the hand-worked table in cases.py
SINGLE_EXPECTED = {
    "ann1": dict(total_items=7, applicable_items=4, matches=2, reliability=0.5,
                 flag_mismatch_items=2, flag_mismatch_pct=200 / 7, both_flagged_items=1,
                 cohen_kappa=3 / 11, skipped_items=2, not_in_qc_items=1,
                 qc_no_consensus_items=0, annotated_items=10, low_sample=True),
    "ann2": dict(total_items=3, applicable_items=1, matches=1, reliability=1.0,
                 flag_mismatch_items=0, flag_mismatch_pct=0.0, both_flagged_items=2,
                 cohen_kappa=1.0, skipped_items=0, not_in_qc_items=0, annotated_items=3),
    "ann3": dict(total_items=3, applicable_items=0, matches=0, reliability=None,
                 reliability_ci95=None, flag_mismatch_items=2, flag_mismatch_pct=200 / 3,
                 both_flagged_items=1, cohen_kappa=None),
    "ann4": dict(total_items=0, applicable_items=0, matches=0, reliability=None,
                 flag_mismatch_pct=None, cohen_kappa=None, not_in_qc_items=1),
}


@pytest.mark.parametrize("evaluator", sorted(SINGLE_EXPECTED))
def test_single_qc_per_evaluator(single, evaluator):
    got = single["evaluators"][evaluator]
    for key, expected in SINGLE_EXPECTED[evaluator].items():
        assert got[key] == pytest.approx(expected), key


def test_single_qc_overall(single):
    assert single["qc"] == ["qc"]
    assert single["overall_reliability"] == pytest.approx(0.6)
    assert single["mean_evaluator_reliability"] == pytest.approx(0.75)
    assert single["mean_evaluator_reliability_n"] == 2
    assert single["overall_flag_mismatch_pct"] == pytest.approx(400 / 13)
    assert (single["qc_items"], single["qc_flagged_items"], single["qc_skipped_items"]) == (9, 2, 1)
    assert single["qc_flagged_pct"] == pytest.approx(200 / 9)
    assert (single["items_not_in_qc"], single["pairs_not_in_qc"]) == (2, 2)
    assert single["coverage"] == {"rows": 27, "total": 17, "scored": 13, "unscored": 4,
                                  "reasons": {"not_in_qc": 2, "skipped": 2}}
    # sorted by reliability, best first; evaluators without a reliability last
    assert list(single["evaluators"]) == ["ann2", "ann1", "ann3", "ann4"]
    assert single["evaluators"]["ann1"]["reliability_ci95"] == pytest.approx(
        [0.15003898915214947, 0.8499610108478506])
    assert single["signature"].startswith("family:reliability|metrics:qc-1|")
    assert any("low sample" in n for n in single["notes"])
    assert any("no QC annotation" in n for n in single["notes"])
    json.dumps(single, allow_nan=False)  # no NaN anywhere


def test_multi_qc_majority():
    doc = score_annotations(MULTI, ReliabilityConfig(qc=("q1", "q2", "q3"))).to_json()
    assert list(doc["evaluators"]) == ["e"]  # QC annotators are not scored
    e = doc["evaluators"]["e"]
    assert (e["total_items"], e["applicable_items"], e["matches"]) == (4, 3, 2)
    assert e["reliability"] == pytest.approx(2 / 3)
    assert e["flag_mismatch_pct"] == pytest.approx(25.0)
    assert (e["qc_no_consensus_items"], e["skipped_items"], e["not_in_qc_items"]) == (2, 1, 1)
    assert (doc["qc_items"], doc["qc_flagged_items"]) == (4, 1)
    assert doc["qc_flagged_pct"] == pytest.approx(25.0)
    assert (doc["qc_no_consensus_items"], doc["qc_skipped_items"]) == (2, 1)
    assert doc["coverage"]["reasons"] == {"not_in_qc": 1, "qc_no_consensus": 2, "skipped": 1}
    assert "consensus:majority" in doc["signature"]


def test_multi_qc_items_record_reason():
    result = score_annotations(MULTI, ReliabilityConfig(qc=("q1", "q2", "q3")))
    items = {i["item_id"]: i for i in result.iter_items()}
    assert items["j2"]["reason"] == "qc_no_consensus"
    assert items["j2"]["detail"] == "no QC majority (1 of 3 agree)"
    assert items["j6"]["reason"] == "skipped" and items["j8"]["reason"] == "not_in_qc"
    assert items["j3"]["flag_mismatch"] is True and items["j3"]["match"] is None
    assert items["j1"]["match"] is True


def test_reliability_ties_sorted_by_applicable_then_name():
    rows = [row(f"k{i}", "qc", "A") for i in range(4)]
    rows += [row("k0", "zed", "A"), row("k1", "zed", "B")]  # 1/2
    rows += [row("k0", "amy", "A"), row("k1", "amy", "B")]  # 1/2
    rows += [row(f"k{i}", "bob", "A" if i < 2 else "Tie") for i in range(4)]  # 2/4
    doc = score_annotations(rows, ReliabilityConfig(qc=("qc",))).to_json()
    assert [doc["evaluators"][n]["reliability"] for n in doc["evaluators"]] == [0.5] * 3
    assert list(doc["evaluators"]) == ["bob", "amy", "zed"]


def test_custom_flag_values_and_field_map():
    rows = [{"pair": "p1", "rater": "lead", "nsfw": "unsafe", "pick": ""},
            {"pair": "p2", "rater": "lead", "nsfw": "safe", "pick": "B"},
            {"pair": "p1", "rater": "x", "nsfw": "UNSAFE", "pick": ""},
            {"pair": "p2", "rater": "x", "nsfw": "safe", "pick": "B"}]
    config = ReliabilityConfig(
        qc=("lead",), flag_yes=("unsafe",), flag_no=("safe",),
        field_map=FieldMap({"item_id": "pair", "evaluator": "rater", "item_flag": "nsfw",
                            "choice": "pick"}))
    doc = score_annotations(rows, config).to_json()
    x = doc["evaluators"]["x"]
    assert (x["total_items"], x["applicable_items"], x["matches"]) == (2, 1, 1)
    assert doc["qc_flagged_pct"] == pytest.approx(50.0)


@pytest.mark.parametrize(("flag", "skipped", "flagged"), [
    (True, False, True), (False, None, False), ("yes", "no", True), ("No", "", False),
    ("Y", "0", True), ("false", 0, False), (1, "False", True),
])
def test_accepted_flag_and_skip_spellings(flag, skipped, flagged):
    rows = [{"item_id": "a", "evaluator": "qc", "item_flag": "No", "choice": "A"},
            {"item_id": "a", "evaluator": "x", "item_flag": flag, "choice": "A",
             "skipped": skipped}]
    e = score_annotations(rows, ReliabilityConfig(qc=("qc",))).to_json()["evaluators"]["x"]
    assert e["flag_mismatch_items"] == (1 if flagged else 0)


BAD = [
    ([row("a", "qc", "A"), {"item_id": "a", "evaluator": "x", "item_flag": "maybe",
                            "choice": "A"}], 'row 2 of input rows: field "item_flag": is \'maybe\''),
    ([row("a", "qc", "A"), {"item_id": "a", "evaluator": "x", "item_flag": "No",
                            "choice": ""}], 'field "choice": is empty on a ratable item'),
    ([row("a", "qc", "A"), row("a", "x", "A"), row("a", "x", "B")],
     "row 3 of input rows: field \"item_id\": duplicate row for item_id 'a' and evaluator 'x' (first at row 2)"),
    ([row("a", "qc", "A"), {"item_id": "a", "evaluator": "x", "choice": "A"}],
     'field "item_flag": is missing (required)'),
    ([row("a", "qc", "A"), {"item_id": "a", "evaluator": "x", "item_flag": "No", "choice": "A",
                            "skipped": "perhaps"}], 'field "skipped": is \'perhaps\''),
    ([row("a", "qc", "A"), {"item_id": " ", "evaluator": "x", "item_flag": "No",
                            "choice": "A"}], 'field "item_id": is empty'),
]


@pytest.mark.parametrize(("rows", "message"), BAD)
def test_bad_rows(rows, message):
    with pytest.raises(InputError) as err:
        score_annotations(rows, ReliabilityConfig(qc=("qc",)))
    assert message in str(err.value)
    assert "Fix:" in str(err.value)


def test_unknown_qc_did_you_mean():
    with pytest.raises(UnknownNameError) as err:
        score_annotations(SINGLE, ReliabilityConfig(qc=("qcc",)))
    assert "unknown QC evaluator 'qcc'. Did you mean: qc?" in str(err.value)


@pytest.mark.parametrize("qc", [(), ("q1", "q2", "q3", "e")])
def test_nothing_to_score_is_a_config_error(qc):
    with pytest.raises(ConfigError):
        score_annotations(MULTI, ReliabilityConfig(qc=qc))


# ------------------------------------------------------------------ the built-in sample


def _brute_force(path, qc: str) -> dict[str, tuple[int, int, int, int]]:
    """An independent count straight from issue 7's wording: (total, applicable, matches,
    flag mismatches) per evaluator, single QC, skipped rows excluded."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    key = {r["item_id"]: r for r in rows if r["evaluator"] == qc}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in rows:
        k = key.get(r["item_id"])
        if r["evaluator"] == qc or k is None or "true" in (r["skipped"], k["skipped"]):
            continue
        c = counts[r["evaluator"]]
        c[0] += 1
        c[3] += r["item_flag"] != k["item_flag"]
        if r["item_flag"] == k["item_flag"] == "No":
            c[1] += 1
            c[2] += r["choice"] == k["choice"]
    return {e: tuple(v) for e, v in counts.items()}


def test_sample_matches_brute_force():
    path = sample_path(SAMPLE)
    doc = score_file(path, ReliabilityConfig(qc=("qc_maria",))).to_json()
    expected = _brute_force(path, "qc_maria")
    assert set(doc["evaluators"]) == set(expected)
    for name, (total, applicable, matches, mismatch) in expected.items():
        e = doc["evaluators"][name]
        assert (e["total_items"], e["applicable_items"], e["matches"],
                e["flag_mismatch_items"]) == (total, applicable, matches, mismatch), name
    pooled = sum(v[2] for v in expected.values()) / sum(v[1] for v in expected.values())
    assert doc["overall_reliability"] == pytest.approx(pooled)


def test_sample_has_what_the_demo_needs():
    """The sample exercises every case: several evaluators, flags, skips, ties, items without
    QC, a low-sample evaluator, and a second QC that disagrees sometimes."""
    path = sample_path(SAMPLE)
    single = score_file(path, ReliabilityConfig(qc=("qc_maria",))).to_json()
    assert len(single["evaluators"]) >= 5
    assert single["qc_skipped_items"] > 0 and single["items_not_in_qc"] > 0
    assert [n for n, e in single["evaluators"].items() if e["low_sample"]] == ["ann_dara"]
    assert 60 <= single["qc_items"] <= 120 and single["qc_flagged_items"] > 0
    with open(path, encoding="utf-8") as fh:
        assert ",Tie," in fh.read()
    multi = score_file(path, ReliabilityConfig(qc=("qc_maria", "qc_tomas"))).to_json()
    assert multi["qc_no_consensus_items"] > 0
