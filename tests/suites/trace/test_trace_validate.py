"""``trace validate`` against an independent calculation (AUROC by its pairwise definition,
RMSE by definition), on the released RAGBench baseline columns and on a labels file."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
import pytest

from ragmeter.trace._validate import ValidateConfig, validate_file
from tests.conftest import shared

SPLITS = ("covidqa", "hotpotqa")
# column -> (judge name in the report, truth column, statistic)
BASELINES = {
    "gpt3_adherence": ("gpt-3.5 (released)", "adherence_score", "hallucination_auroc"),
    "gpt3_context_relevance": ("gpt-3.5 (released)", "relevance_score", "relevance_rmse"),
    "gpt35_utilization": ("gpt-3.5 (released)", "utilization_score", "utilization_rmse"),
    "ragas_faithfulness": ("ragas (released)", "adherence_score", "hallucination_auroc"),
    "ragas_context_relevance": ("ragas (released)", "relevance_score", "relevance_rmse"),
    "trulens_groundedness": ("trulens (released)", "adherence_score", "hallucination_auroc"),
    "trulens_context_relevance": ("trulens (released)", "relevance_score", "relevance_rmse"),
}


def auroc_by_pairs(pos: list[float], neg: list[float]) -> float:
    """P(score of a positive > score of a negative) + 1/2 P(tie), over all pairs."""
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def usable(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


@pytest.fixture(scope="module", params=SPLITS)
def split(request):
    path = shared("ragbench", request.param, "test-00000-of-00001.parquet")
    table = pq.read_table(path, columns=[*BASELINES, "adherence_score", "relevance_score",
                                         "utilization_score"]).to_pylist()
    result = validate_file(path, ValidateConfig(n_resamples=200))
    return table, result


@pytest.mark.parametrize("column", list(BASELINES))
def test_baseline_matches_independent_calculation(split, column):
    table, result = split
    judge, truth_col, stat = BASELINES[column]
    rows = [r for r in table if usable(r[column])]
    est = result.judges[judge][stat]
    assert est.n == len(rows)
    if stat == "hallucination_auroc":
        # positive = not adherent, scored by 1 - predicted adherence (RAGBench evaluation.py)
        pos = [1 - r[column] for r in rows if not r[truth_col]]
        neg = [1 - r[column] for r in rows if r[truth_col]]
        expected = auroc_by_pairs(pos, neg)
    else:
        expected = math.sqrt(sum((r[column] - r[truth_col]) ** 2 for r in rows) / len(rows))
    assert est.value == pytest.approx(expected, abs=1e-12)
    assert est.ci_low <= est.value <= est.ci_high


def test_hotpotqa_close_to_paper_table3():
    """Paper Table 3, HotpotQA (GPT-3.5 0.59 / 0.11 / 0.08; TruLens AUROC 0.64, relevance 0.73).
    The HF release has 390 of the paper's 776 test rows, so agreement is approximate."""
    path = shared("ragbench", "hotpotqa", "test-00000-of-00001.parquet")
    res = validate_file(path, ValidateConfig(n_resamples=200)).judges
    gpt = res["gpt-3.5 (released)"]
    assert gpt["hallucination_auroc"].value == pytest.approx(0.59, abs=0.02)
    assert gpt["relevance_rmse"].value == pytest.approx(0.11, abs=0.01)
    assert gpt["utilization_rmse"].value == pytest.approx(0.08, abs=0.01)
    assert res["trulens (released)"]["relevance_rmse"].value == pytest.approx(0.73, abs=0.01)


def test_pred_file_of_the_truth_itself_is_perfect(tmp_path, run_cli):
    """Predictions equal to the annotations give AUROC 1 and RMSE 0 (joined on "row")."""
    path = shared("ragbench", "emanual", "test-00000-of-00001.parquet")
    cols = ["id", "documents_sentences", "all_relevant_sentence_keys",
            "all_utilized_sentence_keys", "unsupported_response_sentence_keys"]
    rows = pq.read_table(path, columns=cols).to_pylist()
    pred = tmp_path / "labels.jsonl"
    with pred.open("w") as fh:
        for i, r in enumerate(rows, 1):
            if i == 3:  # one unscored judge row is left out and counted
                r = {"id": r["id"], "row": i, "status": "unscored", "reason": "parse_error"}
            fh.write(json.dumps({**r, "row": i}) + "\n")
    out = tmp_path / "v.json"
    code, stdout, stderr = run_cli("trace", "validate", path, "--pred", pred, "--json", out,
                                   "--resamples", "200")
    assert code == 0, stderr
    data = json.loads(out.read_text())
    ours = data["judges"]["judge"]
    assert ours["hallucination_auroc"]["value"] == 1.0
    for stat in ("relevance_rmse", "utilization_rmse", "completeness_rmse"):
        assert ours[stat]["value"] == 0.0
        assert ours[stat]["n"] == 131
    assert data["judge_coverage"]["judge"]["unscored_predictions"] == 1
    assert "gpt-3.5 (released)" in data["judges"]
    assert "judge" in stdout


def test_nothing_to_validate_is_an_input_error(tmp_path, run_cli):
    f = tmp_path / "labels.jsonl"
    f.write_text(json.dumps({"documents_sentences": [[["0a", "x"]]],
                             "all_relevant_sentence_keys": [],
                             "all_utilized_sentence_keys": [],
                             "unsupported_response_sentence_keys": []}) + "\n")
    code, _, err = run_cli("trace", "validate", f, "--no-baselines")
    assert code == 2 and "nothing to validate" in err and "Fix:" in err


def test_builtin_sample_scores(run_cli, tmp_path):
    """The built-in sample (written for ragmeter): hand-computed values."""
    from ragmeter.io._samples import sample_path

    code, _, err = run_cli("trace", "score", sample_path("trace_labelled.jsonl"), "--items",
                           tmp_path / "i.jsonl")
    assert code == 0, err
    items = [json.loads(x) for x in (tmp_path / "i.jsonl").read_text().splitlines()]
    got = [(i["relevance"], i["utilization"], i["completeness"], i["adherence"]) for i in items]
    assert got == [(1 / 3, 1 / 3, 1.0, True), (1 / 3, 1 / 3, 1.0, False),
                   (2 / 3, 1 / 3, 0.5, True)]


@pytest.mark.parametrize("row, field", [
    ({"id": "x", "all_relevant_sentence_keys": []}, "documents_sentences"),
    ({"documents_sentences": [[["0a", "t"]]]}, "all_relevant_sentence_keys"),
    ({"documents_sentences": [[["0a", "t"]]], "all_relevant_sentence_keys": "0a",
      "all_utilized_sentence_keys": [], "unsupported_response_sentence_keys": []},
     "all_relevant_sentence_keys"),
    ({"documents_sentences": [["0a"]], "all_relevant_sentence_keys": [],
      "all_utilized_sentence_keys": [], "unsupported_response_sentence_keys": []},
     "documents_sentences"),
])
def test_bad_input_is_one_line_exit_2(run_cli, tmp_path, row, field):
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps(row) + "\n")
    code, _, err = run_cli("trace", "score", f)
    assert code == 2
    assert f'line 1 of {f}: field "{field}"' in err and "Fix:" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_pred_rows_only_counts_rows_with_a_scored_prediction(tmp_path, run_cli):
    """Issue 15: with --pred-rows-only the note's row count is the n every judge uses; rows
    whose prediction is unscored are left out for the baselines too."""
    path = shared("ragbench", "emanual", "test-00000-of-00001.parquet")
    cols = ["id", "documents_sentences", "all_relevant_sentence_keys",
            "all_utilized_sentence_keys", "unsupported_response_sentence_keys"]
    rows = pq.read_table(path, columns=cols).to_pylist()[:20]
    pred = tmp_path / "labels.jsonl"
    with pred.open("w") as fh:
        for i, r in enumerate(rows, 1):
            if i % 5 == 0:  # 4 of 20 unscored
                r = {"id": r["id"], "status": "unscored", "reason": "no_json"}
            fh.write(json.dumps({**r, "row": i}) + "\n")
    out = tmp_path / "v.json"
    code, stdout, stderr = run_cli("trace", "validate", path, "--pred", pred, "--json", out,
                                   "--pred-rows-only", "--resamples", "200", "--no-record")
    assert code == 0, stderr
    data = json.loads(out.read_text())
    assert data["judges"]["judge"]["relevance_rmse"]["n"] == 16
    assert data["judges"]["gpt-3.5 (released)"]["relevance_rmse"]["n"] == 16
    assert data["judge_coverage"]["judge"]["unscored_predictions"] == 4
    note = next(n for n in data["notes"] if "every judge" in n)
    assert "on the 16 rows" in note and "4 row(s)" in note
