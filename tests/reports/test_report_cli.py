"""``ragmeter report`` and the run records written by score commands."""

from __future__ import annotations

from pathlib import Path

from ragmeter.io._samples import sample_path
from ragmeter.runs._records import list_runs


def test_score_commands_record_runs_and_report_renders(run_cli, tmp_path: Path) -> None:
    ml = sample_path("multilingual_answers.jsonl")
    code, _, err = run_cli("multilingual", "score", ml, "--ci")
    assert code == 0 and "recorded" in err
    code, _, err = run_cli("reliability", "score", sample_path("reliability_annotations.csv"),
                           "--qc", "qc_maria")
    assert code == 0 and "recorded" in err
    code, _, _ = run_cli("multilingual", "score", ml, "--no-record")
    assert code == 0
    runs = list_runs()
    assert [r.family for r in runs] == ["multilingual", "reliability"]
    assert runs[0].command[:3] == ["ragmeter", "multilingual", "score"]
    assert "--ci" in runs[0].command
    assert runs[0].inputs[0].rows == 36 and runs[0].inputs[0].sha256

    code, out, _ = run_cli("report", "--list")
    assert code == 0 and runs[0].run_id in out and "reliability" in out

    out_file = tmp_path / "r.html"
    code, _, err = run_cli("report", "--out", out_file)
    assert code == 0 and "2 run(s)" in err
    page = out_file.read_text(encoding="utf-8")
    assert "Systems (LBRAG metrics" in page and "Annotators against QC" in page

    code, _, err = run_cli("report", runs[0].run_id, "latest", "--out", out_file)
    assert code == 0 and "2 run(s)" in err


def test_report_last_n_of_a_family_compares(run_cli, tmp_path: Path) -> None:
    ml = sample_path("multilingual_answers.jsonl")
    for _ in range(2):
        assert run_cli("multilingual", "score", ml)[0] == 0
    out_file = tmp_path / "c.html"
    code, _, _ = run_cli("report", "--family", "multilingual", "--last", "2", "--out", out_file)
    assert code == 0 and "Comparison of 2 runs" in out_file.read_text(encoding="utf-8")


def test_report_errors_are_one_line(run_cli, tmp_path: Path) -> None:
    code, _, err = run_cli("report", "--out", tmp_path / "x.html")
    assert code == 2 and "no run records" in err and "Traceback" not in err
    code, _, err = run_cli("report", "nosuchrun", "--out", tmp_path / "x.html")
    assert code == 2 and "unknown run 'nosuchrun'" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    code, _, err = run_cli("report", bad, "--out", tmp_path / "x.html")
    assert code == 2 and "bad.json" in err and "not JSON" in err
