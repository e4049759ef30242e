"""``rgb judge`` (judge predictions you already have) and its shared code path with ``rgb run``;
``--dry-run`` counts the judge calls; tables carry n and Wilson 95% intervals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.io._samples import sample_path
from ragmeter.rgb._data import load_dataset
from ragmeter.rgb._judged import judge_predictions
from ragmeter.rgb._prompts import load_judge_prompts, load_prompts
from ragmeter.rgb._run import RgbRunConfig, run_rgb
from ragmeter.rgb._scoring import Prediction
from ragmeter.runner._run import RunnerConfig
from ragmeter.runner._store import Store
from tests.suites.rgb.test_rgb_run import FakeBackend

REMOTE = ("--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1")


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def test_cli_judge_detector_without_model(run_cli, tmp_path: Path) -> None:
    """Rej* by the refusal detector: no backend is called (the endpoint is unreachable)."""
    preds = _write(tmp_path / "p.jsonl", [
        {"id": 0, "prediction": "I can not answer the question because of the insufficient "
                                "information in documents."},
        {"id": 1, "prediction": "The documents do not mention it."},
        {"id": 2, "prediction": "Paris."},
        {"id": 3, "prediction": "Jupiter is the largest planet."},
        {"id": 4, "prediction": None}])
    out_json = tmp_path / "r.json"
    code, out, err = run_cli("rgb", "judge", preds, "--data", sample_path("rgb_en.jsonl"),
                             "--judge-method", "detector", *REMOTE, "--store",
                             tmp_path / "s.sqlite", "--json", out_json, "--no-record")
    assert code == 0, err
    doc = json.loads(out_json.read_text(encoding="utf-8"))
    assert doc["metrics"]["reject_rate_judged"] == 0.5 and doc["metrics"]["n"] == 4
    assert doc["coverage"] == {"total": 5, "scored": 4, "unscored": 1,
                               "reasons": {"no_prediction": 1}}
    lo, hi = doc["ci95"]["reject_rate_judged"]
    assert lo < 0.5 < hi and "Rej*" in out and "detector" in doc["signature"]


def test_cli_judge_dry_run_counts_calls(run_cli, tmp_path: Path) -> None:
    preds = _write(tmp_path / "p.jsonl", [{"id": i, "prediction": "x"} for i in range(3)])
    code, out, err = run_cli("rgb", "judge", preds, "--data", sample_path("rgb_en_fact.jsonl"),
                             "--dry-run", *REMOTE, "--store", tmp_path / "s.sqlite")
    assert code == 0, err
    assert "3 requests" in out and "Nothing was called" in out


def test_cli_judge_rejects_int_data(run_cli, tmp_path: Path) -> None:
    preds = _write(tmp_path / "p.jsonl", [{"id": 0, "prediction": "x"}])
    code, _, err = run_cli("rgb", "judge", preds, "--data", sample_path("rgb_en_int.jsonl"),
                           "--judge-method", "detector", "--no-record")
    assert code == 2 and "integration" in err and "Traceback" not in err


def test_run_dry_run_counts_judge_calls(run_cli, tmp_path: Path) -> None:
    """Issue 15 item 9: the judge calls are estimated too (one per rejection and Acc_doc item
    with --judge-method text on a remote backend)."""
    code, out, err = run_cli("rgb", "run", "--dry-run", "--limit", "1", "--judge", *REMOTE,
                             "--store", tmp_path / "s.sqlite")
    assert code == 0, err
    # --limit 1: rgb_en and rgb_zh at noise 1.0, rgb_en_fact with documents: 3 judge calls
    assert "judge: dry run: 3 requests" in out
    assert "not generated yet" in out


def test_judge_and_run_share_one_path(tmp_path: Path) -> None:
    """The Rej*/ED* that rgb run reports equal rgb judge's on the same answers."""
    backend = FakeBackend()
    store = Store(tmp_path / "s.sqlite")
    datasets = [load_dataset(sample_path(n)) for n in ("rgb_en.jsonl", "rgb_en_fact.jsonl")]
    config = RgbRunConfig(noise_rates=(0.0,), temperature=0.0, judge=True,
                          judge_method="choice")
    jp = load_judge_prompts()
    runner = RunnerConfig(progress=False, max_retries=0)
    result = run_rgb(datasets, load_prompts(), backend, store, runner, config, judge_prompts=jp)
    for s, sc in result.scores:
        if s.role not in ("rejection", "fact_doc"):
            continue
        preds = {str(it["id"]): Prediction(it["prediction"]) for it in sc.items}
        alone = judge_predictions(s.dataset, preds, jp, backend, store, runner,
                                  method="choice", noise_rate=s.build.noise_rate)
        in_run = result.judged[s.name]
        for key in ("reject_rate_judged", "ed_judged", "cr_judged", "n", "ci95"):
            assert alone.rates.get(key) == in_run.get(key), (s.name, key)
    # the table cells carry n and a Wilson interval
    cell = result.tables["cells"]["rejection"]["rgb_en"]["rej_judged"]
    assert cell["n"] == 5 and 0.0 <= cell["ci95"][0] <= cell["ci95"][1] <= 1.0
    acc = result.tables["cells"]["noise_robustness"]["rgb_en"]["0.0"]
    assert acc["n"] == 5
    store.close()


def test_degenerate_judge_alarm() -> None:
    """Issue 12 item 7: a judge that says "No" to everything trips the shared alarm."""
    pytest.importorskip("ragmeter.judges._card")
    from ragmeter.backends._types import Request, Response

    class AlwaysNo(FakeBackend):
        async def complete(self, request: Request) -> Response:
            return Response(text="No", choice_probs={"Yes": 0.3, "No": 0.7})

    ds = load_dataset(sample_path("rgb_en.jsonl"))
    preds = {str(i.id): Prediction(f"answer {i.id}") for i in ds.instances}
    res = judge_predictions(ds, preds, load_judge_prompts(), AlwaysNo(), None,
                            RunnerConfig(progress=False), method="choice")
    assert res.rates["reject_rate_judged"] == 1.0 and res.alarms
    mixed = {k: Prediction("insufficient information" if int(k) % 2 else f"answer {k}")
             for k in preds}
    varied = judge_predictions(ds, mixed, load_judge_prompts(), FakeBackend(), None,
                               RunnerConfig(progress=False), method="detector")
    assert not varied.alarms


def test_refactor_run_tables_console_and_html(tmp_path: Path) -> None:
    """--mode refactor in rgb run: a refactor table with flips per setting; console and HTML
    cells show n and the Wilson interval."""
    from rich.console import Console

    from ragmeter.reports.html import render_report
    from ragmeter.rgb._report import print_run
    from tests.reports import cases

    datasets = [load_dataset(sample_path(n)) for n in ("rgb_en.jsonl", "rgb_en_fact.jsonl")]
    config = RgbRunConfig(noise_rates=(0.0,), temperature=0.0, judge=True, mode="refactor")
    result = run_rgb(datasets, load_prompts(), FakeBackend(), None,
                     RunnerConfig(progress=False), config)
    rows = result.tables["refactor"]
    assert {r["refactor"] for row in rows.values() for r in row["rates"]} == {
        "accuracy", "rejection_rate", "error_detection_rate", "error_correction_rate"}
    assert "refactor(not-paper)" in result.signature
    con = Console(record=True, width=160)
    print_run(result, con)
    text = con.export_text()
    assert "Refactor labels" in text and "n=5" in text
    doc = result.to_json()
    page = render_report([cases.family_record(tmp_path, "rgb", doc, list(result.iter_items()))])
    assert "Refactor labels" in page and "n=5" in page and "Wilson 95% interval" in page
