"""``ragmeter reliability score``: end to end on files, bad input (exit 2, one line), the plot."""

from __future__ import annotations

import csv
import json
import sys

import pytest

from ragmeter.errors import MissingDependencyError
from ragmeter.io._samples import sample_path
from tests.suites.reliability.cases import MULTI, SINGLE

SAMPLE = "reliability_annotations.csv"


def _write(path, rows, fmt):
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif fmt == "json":
        path.write_text(json.dumps(rows), encoding="utf-8")
    else:
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            for r in rows:
                writer.writerow({k: (str(v).lower() if isinstance(v, bool) else v)
                                 for k, v in r.items()})
    return path


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "json"])
def test_score_every_format(run_cli, tmp_path, fmt):
    data = _write(tmp_path / f"ann.{fmt}", SINGLE, fmt)
    out = tmp_path / "rel.json"
    code, stdout, stderr = run_cli("reliability", "score", data, "--qc", "qc", "--json", out)
    assert code == 0, stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["overall_reliability"] == pytest.approx(0.6)  # hand-worked in cases.py
    assert doc["evaluators"]["ann1"]["reliability"] == 0.5
    assert "ann2" in stdout and "total" in stdout and "0.600" in stdout
    # sorted by reliability: ann2 (1.0) before ann1 (0.5)
    assert stdout.index("ann2") < stdout.index("ann1")


def test_multi_qc_on_the_command_line(run_cli, tmp_path):
    data = _write(tmp_path / "ann.jsonl", MULTI, "jsonl")
    out = tmp_path / "rel.json"
    code, stdout, _ = run_cli("reliability", "score", data, "--qc", "q1", "--qc", "q2",
                              "--qc", "q3", "--json", out)
    assert code == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["evaluators"]["e"]["reliability"] == pytest.approx(2 / 3)
    assert "no QC majority" in stdout


def test_sample_with_plot_items_and_json(run_cli, tmp_path):
    png, out, items = tmp_path / "m.png", tmp_path / "r.json", tmp_path / "i.jsonl"
    code, stdout, stderr = run_cli("reliability", "score", sample_path(SAMPLE), "--qc",
                                   "qc_maria", "--json", out, "--plot", png, "--items", items)
    assert code == 0, stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "▲" in stdout and "low sample" in stdout
    doc = json.loads(out.read_text(encoding="utf-8"))
    n_items = sum(1 for _ in items.open(encoding="utf-8"))
    assert n_items == doc["coverage"]["total"]


def test_min_applicable_option(run_cli, tmp_path):
    out = tmp_path / "r.json"
    code, _, _ = run_cli("reliability", "score", sample_path(SAMPLE), "--qc", "qc_maria",
                         "--min-applicable", "5", "--json", out)
    assert code == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert not any(e["low_sample"] for e in doc["evaluators"].values())
    assert "min_applicable:5" in doc["signature"]


def test_flag_values_and_fields_options(run_cli, tmp_path):
    data = tmp_path / "ann.csv"
    data.write_text("pair,rater,nsfw,pick\np1,lead,unsafe,\np2,lead,ok,B\n"
                    "p1,x,ok,A\np2,x,ok,B\n", encoding="utf-8")
    out = tmp_path / "r.json"
    code, _, stderr = run_cli("reliability", "score", data, "--qc", "lead", "--flag-yes",
                              "unsafe", "--flag-no", "ok", "--field", "item_id=pair",
                              "--field", "evaluator=rater", "--field", "item_flag=nsfw",
                              "--field", "choice=pick", "--json", out)
    assert code == 0, stderr
    x = json.loads(out.read_text(encoding="utf-8"))["evaluators"]["x"]
    assert (x["total_items"], x["flag_mismatch_items"], x["matches"]) == (2, 1, 1)


BAD = [
    ("item_id,evaluator,item_flag,choice\na,qc,No,A\na,x,No,A\n", ("--qc", "qcc"),
     "reliability: unknown QC evaluator 'qcc'. Did you mean: qc? Known: qc, x."),
    ("item_id,evaluator,item_flag,choice\na,qc,No,A\na,x,No,A\na,x,No,B\n", ("--qc", "qc"),
     "reliability: line 4 of {path}: field \"item_id\": duplicate row for item_id 'a' and "
     "evaluator 'x' (first at line 3)."),
    ("item_id,evaluator,item_flag,choice\na,qc,No,A\na,x,NSFW,\n", ("--qc", "qc"),
     "reliability: line 3 of {path}: field \"item_flag\": is 'NSFW', expected one of"),
    ("item_id,evaluator,item_flag,choice\na,qc,No,A\na,x,No,A\n", ("--qc", "qc", "--qc", "x"),
     "every evaluator in the input is named by --qc"),
    ("item_id,evaluator,choice\na,qc,A\n", ("--qc", "qc"),
     'line 2 of {path}: field "item_flag": is missing (required). Found fields: choice, '
     "evaluator, item_id."),
]


@pytest.mark.parametrize(("content", "args", "message"), BAD)
def test_bad_input_exits_2_with_one_line(run_cli, tmp_path, content, args, message):
    data = tmp_path / "ann.csv"
    data.write_text(content, encoding="utf-8")
    code, stdout, stderr = run_cli("reliability", "score", data, *args)
    assert code == 2
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert message.format(path=data) in stderr


def test_missing_file_exits_2(run_cli, tmp_path):
    code, _, stderr = run_cli("reliability", "score", tmp_path / "nope.csv", "--qc", "qc")
    assert code == 2 and "does not exist" in stderr


def test_qc_is_required(run_cli, tmp_path):
    code, _, stderr = run_cli("reliability", "score", sample_path(SAMPLE))
    assert code == 2 and "--qc" in stderr


def test_plot_without_matplotlib(run_cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, stderr = run_cli("reliability", "score", sample_path(SAMPLE), "--qc", "qc_maria",
                              "--plot", tmp_path / "m.png")
    assert code == 2
    assert "pip install 'ragmeter[plots]'" in stderr
    assert not (tmp_path / "m.png").exists()


def test_plot_function_accepts_result_or_json():
    from ragmeter.reliability._scorer import ReliabilityConfig, score_annotations
    from ragmeter.reports.plots import reliability_matrix_png

    result = score_annotations(SINGLE, ReliabilityConfig(qc=("qc",)))
    for source in (result, result.to_json()):
        assert reliability_matrix_png(source, dpi=50)[:4] == b"\x89PNG"


def test_plot_raises_missing_dependency(monkeypatch):
    from ragmeter.reports.plots import reliability_matrix_png

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingDependencyError):
        reliability_matrix_png({"evaluators": {}})
