"""``rubric score`` on small files: unparseable grades are unscored with reasons (RAGaliq
drops them), bad input is an InputError, repeats give stability figures."""

from __future__ import annotations

import json

import pytest

from ragmeter.errors import InputError
from ragmeter.rubric._scorer import RubricConfig, score_files


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_unparseable_items_are_unscored_and_dropped_from_aggregate(tmp_path):
    f = _jsonl(tmp_path / "j.jsonl", [
        {"id": "a", "score": 5}, {"id": "b", "score": "4"}, {"id": "c", "score": 4.0},
        {"id": "d", "reply": "Feedback: x [RESULT] 4/5"},
        {"id": "e", "reply": "Feedback: x [RESULT] 3"},
        {"id": "f", "score": None}, {"id": "g", "score": 9}, {"id": "h", "score": 2.5},
    ])
    r = score_files([f], RubricConfig(ci=False))
    g = r.groups[0]
    # RAGaliq would compute on a, b, c, e only: weights 1, .8, .8, .6 -> mean .8 -> .64
    assert g["n"] == 4 and g["weighted_score"] == pytest.approx(0.64)
    assert r.coverage == {"total": 8, "scored": 4, "unscored": 4,
                          "reasons": {"missing_score": 1, "not_an_integer": 2,
                                      "out_of_range": 1}}
    items = {i["id"]: i for i in r.iter_items()}
    assert items["d"]["status"] == "unscored" and items["d"]["reason"] == "not_an_integer"
    assert r.notes


def test_csv_with_group_column(tmp_path):
    f = tmp_path / "j.csv"
    f.write_text("id,lang,grade\n1,en,5\n2,en,0\n3,de,3\n", encoding="utf-8")
    from ragmeter.io import parse_field_options

    r = score_files([f], RubricConfig(by=("lang",), ci=False,
                                      field_map=parse_field_options(["score=grade"])))
    rows = {g["lang"]: g for g in r.groups}
    assert rows["en"]["weighted_score"] == pytest.approx(0.49)  # (1 + .4)/2 squared
    assert rows["de"]["counts"]["3"] == 1


def test_missing_score_column_is_input_error(tmp_path):
    f = _jsonl(tmp_path / "j.jsonl", [{"id": "a", "grade": 5}])
    with pytest.raises(InputError) as err:
        score_files([f], RubricConfig())
    msg = str(err.value)
    assert "line 1" in msg and '"score"' in msg and "--field score=COLUMN" in msg


def test_missing_group_is_input_error(tmp_path):
    f = _jsonl(tmp_path / "j.jsonl", [{"id": "a", "score": 5}])
    with pytest.raises(InputError, match='field "lang"'):
        score_files([f], RubricConfig(by=("lang",)))


def test_cli_bad_input_exit_2(tmp_path, run_cli):
    f = _jsonl(tmp_path / "j.jsonl", [{"id": "a"}])
    code, _, err = run_cli("rubric", "score", f)
    assert code == 2 and "rubric:" in err and "Traceback" not in err


def test_repeats_stability(tmp_path):
    rows = []
    for item, grades in {"a": [5, 5, 5], "b": [3, 4, 3], "c": [0, 0, 1]}.items():
        for r, g in enumerate(grades):
            rows.append({"id": item, "repeat": r, "score": g})
    r = score_files([_jsonl(tmp_path / "j.jsonl", rows)], RubricConfig())
    g = r.groups[0]
    assert g["n"] == 3  # the table aggregates repeat 0
    s = g["stability"]
    assert s["repeats"] == 3 and s["items"] == 3
    assert s["changed_share"] == pytest.approx(2 / 3)
    assert s["weighted_score_by_repeat"]["0"] == pytest.approx(((1 + .6 + .4) / 3) ** 2)
    lo, hi = s["weighted_score_all_repeats_ci95"]
    assert lo <= s["weighted_score_all_repeats"] <= hi
    # Fleiss (1971) by hand, repeats as raters: P_i = 1, 1/3, 1/3 -> P_bar = 5/9; category
    # shares 0:2/9 1:1/9 3:2/9 4:1/9 5:3/9 -> P_e = 19/81; kappa = (5/9 - 19/81)/(1 - 19/81)
    assert s["fleiss_kappa"] == pytest.approx(26 / 62)
    assert s["flip_rate"] == pytest.approx(2 / 3)
    assert s["mean_agreement"] == pytest.approx(7 / 9)


def test_expected_grade_from_probs(tmp_path):
    f = _jsonl(tmp_path / "j.jsonl", [
        {"id": "a", "score": 5, "grade_probs": {"5": 0.5, "4": 0.5}},
        {"id": "b", "score": 3, "grade_probs": {"3": 1.0}},
    ])
    g = score_files([f], RubricConfig(ci=False)).groups[0]
    assert g["expected_grade_mean"] == pytest.approx((4.5 + 3) / 2)
    assert g["expected_weighted_score"] == pytest.approx(((0.9 + 0.6) / 2) ** 2)
