"""Golden test: ``rubric score`` reproduces RAGaliq's results.md rows from its own logs.

Source: chameleon-lizard/Ragaliq @ 1c0006d7 results.md, rows Qwen2.5-7B-Instruct /
multilingual-e5-large-instruct / bge-reranker-v2-m3 for en and ru (copied byte for byte into
../shared/data/ragaliq, see its PROVENANCE.md), and logs/res/*.txt of the same runs.
"""

from __future__ import annotations

import json

import pytest

from ragmeter.rubric._scorer import RubricConfig, ragaliq_file_meta, score_files
from tests.conftest import shared

LOG = "eval_res_questions_{0}_Qwen2.5-7B-Instruct_multilingual-e5-large-instruct_bge-reranker-v2-m3_{0}.json"

# results.md (6 significant digits as printed there)
EXPECTED = {
    "en": {"weighted_score": 0.560359, "mean_grade": 4.13333, "median_grade": 5,
           "percentage": 82.6667, "percentage_with_zero": 70.8571,
           "counts": {"5": 35, "4": 7, "3": 12, "2": 3, "1": 3, "0": 10}},
    "ru": {"weighted_score": 0.551837, "mean_grade": 4.04918, "median_grade": 5,
           "percentage": 80.9836, "percentage_with_zero": 70.5714,
           "counts": {"5": 31, "4": 10, "3": 15, "2": 2, "1": 3, "0": 9}},
}


@pytest.fixture(scope="module")
def logs():
    return [shared("ragaliq", "logs", "eval", LOG.format(lang)) for lang in ("en", "ru")]


def test_results_md_rows(logs):
    result = score_files(logs, RubricConfig(by=("lang",)))
    rows = {r["lang"]: r for r in result.groups}
    assert set(rows) == {"en", "ru"}
    for lang, exp in EXPECTED.items():
        got = rows[lang]
        for key in ("weighted_score", "mean_grade", "median_grade", "percentage",
                    "percentage_with_zero"):
            assert got[key] == pytest.approx(exp[key], abs=5e-6 * max(1, exp[key])), (lang, key)
        assert got["counts"] == exp["counts"]
        assert got["n"] == 70 and got["coverage"]["unscored"] == 0


def test_res_txt_full_precision(logs):
    # logs/res/results_questions_en_...txt prints pandas' full floats.
    result = score_files(logs[:1], RubricConfig(ci=False))
    row = result.groups[0]
    assert row["mean_grade"] == 4.133333333333334
    assert row["percentage"] == 82.66666666666667
    assert row["percentage_with_zero"] == 70.85714285714285


def test_ci_brackets_point_estimate(logs):
    row = score_files(logs[:1], RubricConfig())
    g = row.groups[0]
    lo, hi = g["ci95"]["weighted_score"]
    assert lo < g["weighted_score"] < hi


def test_file_name_metadata():
    meta = ragaliq_file_meta(LOG.format("en"))
    assert meta == {"lang": "en", "model_name": "Qwen2.5-7B-Instruct",
                    "embedder_name": "multilingual-e5-large-instruct",
                    "reranker_name": "bge-reranker-v2-m3"}


def test_cli_score_json(logs, run_cli, tmp_path):
    out = tmp_path / "r.json"
    code, stdout, _ = run_cli("rubric", "score", *logs, "--by", "lang", "--json", out)
    assert code == 0
    assert "0.560359" in stdout and "0.551837" in stdout
    data = json.loads(out.read_text())
    assert [g["lang"] for g in data["groups"]] == ["en", "ru"]
    assert data["coverage"] == {"total": 140, "rows": 140, "scored": 140, "unscored": 0,
                                "reasons": {}}
