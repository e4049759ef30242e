"""``rubric validate`` and its agreement statistics, checked against independent computations
written here (kappa from its textbook definition with Python loops, MAE, Spearman from
scipy), on tables of small cases and on RAGaliq's judged runs."""

from __future__ import annotations

import json
import random

import pytest

from ragmeter.rubric._metrics import agreement, quadratic_weighted_kappa
from tests.conftest import shared

LOG = ("eval_res_questions_{0}_Qwen2.5-7B-Instruct_multilingual-e5-large-instruct_"
       "bge-reranker-v2-m3_{0}.json")


def reference_qwk(a: list[int], b: list[int], k: int = 6) -> float:
    """Quadratic-weighted kappa from Cohen (1968), loops only: 1 - sum(w O) / sum(w E)."""
    n = len(a)
    observed = [[0.0] * k for _ in range(k)]
    for x, y in zip(a, b, strict=True):
        observed[x][y] += 1
    ra = [sum(observed[i]) for i in range(k)]
    cb = [sum(observed[i][j] for i in range(k)) for j in range(k)]
    num = den = 0.0
    for i in range(k):
        for j in range(k):
            w = (i - j) ** 2 / (k - 1) ** 2
            num += w * observed[i][j]
            den += w * ra[i] * cb[j] / n
    return 1 - num / den


@pytest.mark.parametrize(("judge", "ref", "expected"), [
    ([0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5], 1.0),  # identical
    ([5, 4, 3, 2, 1, 0], [0, 1, 2, 3, 4, 5], -1.0),  # reversed: perfect disagreement
    # 2x2 in grades {0, 5}: p_o = .5, marginals .5/.5 -> kappa 0 (unweighted = weighted here)
    ([0, 0, 5, 5], [0, 5, 0, 5], 0.0),
    ([3, 3, 3], [3, 3, 3], 1.0),  # both constant and equal: perfect agreement, not NaN
])
def test_qwk_table(judge, ref, expected):
    assert quadratic_weighted_kappa(judge, ref) == pytest.approx(expected)


def test_qwk_matches_independent_and_sklearn_definition():
    rng = random.Random(7)
    for _ in range(50):
        n = rng.randint(5, 60)
        a = [rng.randint(0, 5) for _ in range(n)]
        b = [min(5, max(0, x + rng.choice([-2, -1, 0, 0, 1]))) for x in a]
        if len(set(a)) == 1 and len(set(b)) == 1:
            continue
        assert quadratic_weighted_kappa(a, b) == pytest.approx(reference_qwk(a, b), abs=1e-12)
        # symmetric in its arguments
        assert quadratic_weighted_kappa(a, b) == pytest.approx(quadratic_weighted_kappa(b, a))


def test_agreement_point_values_and_cis():
    from scipy.stats import spearmanr

    rng = random.Random(3)
    ref = [rng.randint(0, 5) for _ in range(80)]
    judge = [min(5, max(0, g + rng.choice([-1, 0, 0, 0, 1, 3]))) for g in ref]
    a = agreement(judge, ref, n_resamples=500, seed=1)
    assert a.n == 80
    assert a.exact == pytest.approx(sum(x == y for x, y in zip(judge, ref, strict=True)) / 80)
    assert a.within_one == pytest.approx(sum(abs(x - y) <= 1 for x, y in zip(judge, ref, strict=True)) / 80)
    assert a.mae == pytest.approx(sum(abs(x - y) for x, y in zip(judge, ref, strict=True)) / 80)
    assert a.qwk == pytest.approx(reference_qwk(judge, ref))
    assert a.spearman == pytest.approx(spearmanr(judge, ref).statistic)
    for stat in ("exact", "within_one", "qwk", "mae", "spearman"):
        lo, hi = a.ci95[stat]
        assert lo <= getattr(a, stat) <= hi, stat
        assert lo < hi, stat
    assert sum(map(sum, a.confusion)) == 80
    # deterministic for a seed
    assert agreement(judge, ref, n_resamples=500, seed=1) == a


def test_agreement_constant_side_has_no_spearman_and_no_nan():
    a = agreement([5, 5, 5, 5], [5, 4, 3, 0])
    assert a.spearman is None
    assert a.qwk == pytest.approx(0.0)
    assert a.ci95["spearman"] is None
    empty = agreement([], [])
    assert empty.n == 0 and empty.qwk is None and empty.mae is None


def test_agreement_rejects_out_of_range():
    with pytest.raises(ValueError, match="0..5"):
        agreement([6], [5])


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_validate_cli_pairs_by_id_and_reports_coverage(tmp_path, run_cli):
    ref = [{"id": str(i), "score": g} for i, g in enumerate([5, 4, 3, 0, 1, 5, 2])]
    pred = [{"id": str(i), "score": g} for i, g in enumerate([5, 5, 3, 0, 2, 4])]
    pred.append({"id": "6", "reply": "no marker here"})  # unscored prediction
    pred.append({"id": "99", "score": 5})  # no reference
    _write(tmp_path / "ref.jsonl", ref)
    _write(tmp_path / "pred.jsonl", pred)
    out = tmp_path / "agree.json"
    code, stdout, stderr = run_cli("rubric", "validate", str(tmp_path / "pred.jsonl"),
                                   "--reference", str(tmp_path / "ref.jsonl"),
                                   "--json", str(out), "--no-record")
    assert code == 0, stderr
    summary = json.loads(out.read_text())
    j, r = [5, 5, 3, 0, 2, 4], [5, 4, 3, 0, 1, 5]
    assert summary["paired_on"] == "id"
    assert summary["overall"]["n"] == 6
    assert summary["overall"]["qwk"] == pytest.approx(reference_qwk(j, r))
    assert summary["overall"]["mae"] == pytest.approx(3 / 6)
    assert summary["coverage"] == {"total": 8, "rows": 8, "scored": 6, "unscored": 2,
                                   "reasons": {"no_reference": 1, "unscored_prediction": 1}}
    assert "6/8 items paired" in stdout


def test_validate_cli_duplicate_key_is_input_error(tmp_path, run_cli):
    _write(tmp_path / "ref.jsonl", [{"id": "a", "score": 5}, {"id": "a", "score": 4}])
    _write(tmp_path / "pred.jsonl", [{"id": "a", "score": 5}])
    code, _, stderr = run_cli("rubric", "validate", str(tmp_path / "pred.jsonl"),
                              "--reference", str(tmp_path / "ref.jsonl"), "--no-record")
    assert code == 2
    assert "line 2 repeats the id" in stderr and "Traceback" not in stderr


def test_validate_ragaliq_runs_against_themselves_and_shuffled(tmp_path, run_cli):
    """Pairing by question across two files; a perturbed copy gives the hand-computed kappa."""
    logs = [shared("ragaliq", "logs", "eval", LOG.format(lang)) for lang in ("en", "ru")]
    rows = []
    for log in logs:
        lang = "en" if "_en_" in log.name else "ru"
        for x in json.loads(log.read_text(encoding="utf-8")):
            rows.append({"question": x["question"], "lang": lang, "ref": x["score"]})
    # A judge that moves every third grade up by one (capped at 5).
    for i, row in enumerate(rows):
        row["score"] = min(5, row["ref"] + 1) if i % 3 == 0 else row["ref"]
    _write(tmp_path / "pred.jsonl", [{k: r[k] for k in ("question", "lang", "score")}
                                     for r in rows])
    out = tmp_path / "agree.json"
    code, _, stderr = run_cli("rubric", "validate", str(tmp_path / "pred.jsonl"),
                              "--reference", str(logs[0]), "--reference", str(logs[1]),
                              "--by", "lang", "--json", str(out), "--no-record")
    assert code == 0, stderr
    s = json.loads(out.read_text())
    assert s["paired_on"] == "question" and s["overall"]["n"] == 140
    j = [r["score"] for r in rows]
    ref = [r["ref"] for r in rows]
    assert s["overall"]["qwk"] == pytest.approx(reference_qwk(j, ref))
    assert s["overall"]["mae"] == pytest.approx(sum(abs(a - b) for a, b in zip(j, ref, strict=True)) / 140)
    assert {g["lang"]: g["n"] for g in s["groups"]} == {"en": 70, "ru": 70}
