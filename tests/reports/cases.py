"""Run records for report tests: the built-in samples scored for real, hostile items, and
hand-written result documents in the shapes of the RGB, TRACe and rubric families (copied from
their ``to_json()`` code at the time of writing: suites/rgb/run.py, suites/trace/scorer.py and
validate.py, suites/rubric/scorer.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmeter.io._samples import sample_path
from ragmeter.runs._records import InputFile, RunRecord, record_run

# Would change the title / set a window flag if it ever ran.
XSS_IMG = "<img src=x onerror=\"document.title='pwned';window.__xss=1\">"
XSS_SCRIPT = "<script>window.__xss=2;document.title='pwned'</script>"
HOSTILE = f"Answer: {XSS_IMG} and {XSS_SCRIPT} & \"quotes\" 'single'"


def multilingual_record(runs_dir: Path, **config: Any) -> RunRecord:
    from ragmeter.multilingual._score import score_file
    from ragmeter.multilingual._scorer import MultilingualConfig

    path = sample_path("multilingual_answers.jsonl")
    res = score_file(path, MultilingualConfig(**config))
    return record_run("multilingual", res.to_json(), res.iter_items(),
                      inputs=[InputFile.of(path, rows=res.coverage["rows"])],
                      command=["ragmeter", "multilingual", "score", str(path)],
                      runs_dir_override=runs_dir)


def reliability_record(runs_dir: Path) -> RunRecord:
    from ragmeter.reliability._scorer import ReliabilityConfig, score_file

    path = sample_path("reliability_annotations.csv")
    res = score_file(path, ReliabilityConfig(qc=("qc_maria",)))
    return record_run("reliability", res.to_json(), res.iter_items(), inputs=[path],
                      command=["ragmeter", "reliability", "score", str(path), "--qc",
                               "qc_maria"], runs_dir_override=runs_dir)


def hostile_record(runs_dir: Path) -> RunRecord:
    """A run whose data, model reply and metadata all carry markup that must stay text."""
    items = [
        {"id": "evil-1", "status": "unscored", "reason": "parse_error", "detail": HOSTILE,
         "question": f"What is {XSS_SCRIPT}?", "response": HOSTILE},
        {"id": "evil-2", "status": "ok", "score": 1.0, "response": HOSTILE,
         "documents": [XSS_IMG, "plain document"], "judge": {"reply": XSS_SCRIPT}},
    ]
    result = {"schema_version": 1, "family": "newfamily", "signature": f"sig|{XSS_IMG}",
              "model": XSS_SCRIPT, "metrics": {XSS_IMG: {"mean": 0.5, "n": 2}},
              "coverage": {"total": 2, "scored": 1, "unscored": 1,
                           "reasons": {"parse_error": 1}},
              "notes": [HOSTILE]}
    return record_run("newfamily", result, items, inputs=[InputFile(path=XSS_IMG)],
                      command=["ragmeter", XSS_SCRIPT], models=[XSS_IMG],
                      backends=[{"backend": "openai", "model": XSS_SCRIPT}],
                      prompt_versions={"judge": XSS_IMG}, runs_dir_override=runs_dir)


RGB_RUN = {
    "schema_version": 1, "family": "rgb", "kind": "run", "signature": "family:rgb|metrics:1",
    "model": "model-a", "prompts": "rgb-prompts-1", "judge": None,
    "config": {"noise_rates": [0, 0.4, 0.8], "passage_num": 5},
    "tables": {
        "noise_robustness": {"en": {"0.0": 0.9, "0.4": 0.8, "0.8": 0.55}},
        "rejection": {"en": {"rej": 0.3, "rej_judged": None}},
        "integration": {"en_int": {"0.0": 0.5, "0.4": 0.3}},
        "counterfactual": {"en_fact": {"acc": 0.6, "acc_doc": 0.1, "ed": 0.2, "ed_judged": None,
                                       "cr": 0.5, "cr_judged": None}},
    },
    "coverage": {"total": 4, "scored": 3, "unscored": 1, "reasons": {"http_500": 1}},
    "settings": [{"setting": "en@0.0", "role": "noise", "accuracy": 0.9, "n": 2,
                  "coverage": {"scored": 2, "total": 2}}],
    "notes": [],
}

RGB_ITEMS = [
    {"dataset": "en", "setting": "en@0.0", "role": "noise", "noise_rate": 0.0, "id": 1,
     "status": "ok", "labels": [1], "factlabel": 0, "correct": 1, "prediction": "Canberra"},
    {"dataset": "en", "setting": "en@0.0", "role": "noise", "noise_rate": 0.0, "id": 2,
     "status": "unscored", "reason": "http_500", "detail": "scripted failure"},
]

TRACE_SCORE = {
    "schema_version": 1, "family": "trace", "signature": "family:trace|metrics:1",
    "source": "labels.jsonl",
    "metrics": {m: {"mean": v, "std": 0.1, "n": 10, "not_labelled": 0, "ci95": [v - .1, v + .1]}
                for m, v in (("relevance", 0.4), ("utilization", 0.3), ("completeness", 0.7),
                             ("adherence", 0.9))},
    "coverage": {"rows": 11, "scored": 10, "unscored": 1, "reasons": {"no_sentence_keys": 1}},
}

TRACE_VALIDATE = {
    "schema_version": 1, "family": "trace", "signature": "family:trace|validate",
    "source": "test.parquet", "rows": 20, "reference_rows_scored": 20,
    "judges": {"judge": {"hallucination_auroc": {"value": 0.7, "ci95": [0.6, 0.8], "n": 20},
                         "relevance_rmse": {"value": 0.2, "ci95": [0.1, 0.3], "n": 20}},
               "gpt35": {"hallucination_auroc": {"value": 0.6, "ci95": None, "n": 18},
                         "relevance_rmse": {"value": 0.3, "ci95": None, "n": 18}}},
    "coverage": {"judge": {"rows": 20, "scored": 20}}, "notes": ["a validation note"],
}

RUBRIC = {
    "schema_version": 1, "family": "rubric", "signature": "family:rubric|metrics:1",
    "by": ["language"],
    "groups": [
        {"language": lang, "n": 6, "weighted_score": ws, "mean_grade": 3.5, "median_grade": 4.0,
         "percentage": 70.0, "percentage_with_zero": 58.3,
         "counts": {"5": 2, "4": 1, "3": 1, "2": 0, "1": 0, "0": 2},
         "coverage": {"total": 7, "scored": 6, "unscored": 1, "reasons": {"missing_score": 1}},
         "ci95": {"weighted_score": [0.3, 0.7]}}
        for lang, ws in (("en", 0.5), ("ko", 0.4))],
    "coverage": {"total": 14, "scored": 12, "unscored": 2, "reasons": {"missing_score": 2}},
}


def family_record(runs_dir: Path, family: str, result: dict[str, Any],
                  items: list[dict[str, Any]] | None = None, **meta: Any) -> RunRecord:
    return record_run(family, result, items or [], runs_dir_override=runs_dir,
                      command=["ragmeter", family], **meta)
