"""Bad input for ``ragmeter multilingual score``: exit code 2, one clear message that names the
file, the line or row, the field, and how to fix it; never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

GOOD = {"sample_id": "s1", "sample_lang": "en", "system": "direct", "gold_answer": "Ottawa",
        "pred_answer": "Ottawa", "translate_tokens": 0}


def jsonl(path: Path, rows: list[dict | str]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def row(**changes: object) -> dict:
    r = dict(GOOD)
    for k, v in changes.items():
        if v is KeyError:
            r.pop(k)
        else:
            r[k] = v
    return r


def make_missing_field(tmp: Path) -> Path:
    return jsonl(tmp / "a.jsonl", [row(), row(sample_id="s2", pred_answer=KeyError)])


def make_wrong_type(tmp: Path) -> Path:
    return jsonl(tmp / "a.jsonl", [row(pred_answer=["Ottawa"])])


def make_invalid_json(tmp: Path) -> Path:
    return jsonl(tmp / "a.jsonl", [row(), row(sample_id="s2"), '{"sample_id": "s3",'])


def make_empty(tmp: Path) -> Path:
    p = tmp / "a.jsonl"
    p.write_bytes(b"")
    return p


def make_blank_lines(tmp: Path) -> Path:
    p = tmp / "a.jsonl"
    p.write_text("\n\n  \n", encoding="utf-8")
    return p


def make_unknown_lang(tmp: Path) -> Path:
    return jsonl(tmp / "a.jsonl", [row(), row(sample_id="s2", sample_lang="xx")])


def make_missing_baseline_rows(tmp: Path) -> Path:
    return jsonl(tmp / "a.jsonl", [row(), row(system="lbrag"), row(system="lbrag", sample_id="s9")])


def make_invalid_utf8(tmp: Path) -> Path:
    p = tmp / "a.jsonl"
    p.write_bytes(json.dumps(row()).encode() + b"\n" + b'{"sample_id": "s\xff2"}\n')
    return p


def make_duplicate(tmp: Path) -> Path:
    return jsonl(tmp / "a.jsonl", [row(), row(pred_answer="Toronto")])


def make_negative_cost(tmp: Path) -> Path:
    return jsonl(tmp / "a.jsonl", [row(translate_tokens=-5)])


def make_bad_semantic(tmp: Path) -> Path:
    return jsonl(tmp / "a.jsonl", [row(semantic_score="high")])


def make_csv_extra_cells(tmp: Path) -> Path:
    p = tmp / "a.csv"
    p.write_text("sample_id,sample_lang,system,gold_answer,pred_answer\n"
                 "s1,en,direct,Ottawa,Ottawa\n"
                 "s2,en,direct,Ottawa,Ottawa, Canada\n", encoding="utf-8")
    return p


def make_json_non_object(tmp: Path) -> Path:
    p = tmp / "a.json"
    p.write_text(json.dumps([row(), "oops"]), encoding="utf-8")
    return p


def make_jsonl_array_line(tmp: Path) -> Path:
    return jsonl(tmp / "a.jsonl", [row(), "[1, 2]"])


def make_bad_parquet(tmp: Path) -> Path:
    p = tmp / "a.parquet"
    p.write_bytes(b"PAR1 this is not parquet")
    return p


def make_bad_evidence(tmp: Path) -> Path:
    r = row()
    r.pop("translate_tokens")
    r["evidence"] = ["not an object"]
    return jsonl(tmp / "a.jsonl", [r])


def make_null_gold(tmp: Path) -> Path:
    return jsonl(tmp / "a.jsonl", [row(gold_answer=None)])


def make_unknown_ext(tmp: Path) -> Path:
    p = tmp / "answers.txt"
    p.write_text("hello", encoding="utf-8")
    return p


CASES = [
    # (maker, extra CLI args, substrings the message must contain)
    (make_missing_field, [], ["line 2", "pred_answer", "missing", "--field"]),
    (make_wrong_type, [], ["line 1", "pred_answer", "expected text"]),
    (make_invalid_json, [], ["line 3", "not valid JSON"]),
    (make_empty, [], ["a.jsonl", "is empty"]),
    (make_blank_lines, [], ["a.jsonl", "has no rows"]),
    (make_unknown_lang, [], ["line 2", "sample_lang", "'xx'", "ISO 639-1"]),
    (lambda t: jsonl(t / "a.jsonl", [row()]), ["--baseline", "direkt"],
     ["baseline system 'direkt'", "Did you mean: direct"]),
    (make_missing_baseline_rows, [], ["'lbrag'", "'direct'", "s9", "line 3"]),
    (make_invalid_utf8, [], ["line 2", "UTF-8"]),
    (lambda t: t / "nope.jsonl", [], ["nope.jsonl", "does not exist"]),
    (make_unknown_ext, [], ["answers.txt", ".jsonl"]),
    (make_duplicate, [], ["line 2", "duplicate", "first at line 1"]),
    (make_negative_cost, [], ["line 1", "translate_tokens", "-5"]),
    (make_bad_semantic, [], ["line 1", "semantic_score", "'high'"]),
    (make_csv_extra_cells, [], ["line 3", "a.csv", "cells"]),
    (make_json_non_object, [], ["row 2", "a.json", "expected an object"]),
    (make_jsonl_array_line, [], ["line 2", "expected an object"]),
    (make_bad_parquet, [], ["a.parquet", "Parquet"]),
    (make_bad_evidence, [], ["line 1", "evidence[0]"]),
    (make_null_gold, [], ["line 1", "gold_answer", "null"]),
    (lambda t: jsonl(t / "a.jsonl", [row()]), ["--field", "pred_answer"],
     ["--field", "CANONICAL=COLUMN"]),
    (lambda t: jsonl(t / "a.jsonl", [row()]), ["--field", "pred_answer=answer_text"],
     ["pred_answer", "'answer_text'", "--field"]),
]


@pytest.mark.parametrize(("maker", "args", "needles"), CASES,
                         ids=[f"case{i:02d}" for i in range(len(CASES))])
def test_bad_input_exit_2_with_place(tmp_path: Path, run_cli, maker, args, needles) -> None:
    path = maker(tmp_path)
    code, out, err = run_cli("multilingual", "score", path, *args)
    assert code == 2, (out, err)
    assert "Traceback" not in err
    assert err.startswith("error: multilingual") or err.startswith("error: ragmeter"), err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, (needle, err)


def test_subprocess_no_traceback(tmp_path: Path) -> None:
    """The installed console script behaves the same as the in-process call."""
    import subprocess
    import sys

    path = make_missing_field(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "ragmeter", "multilingual", "score", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "line 2" in proc.stderr and "pred_answer" in proc.stderr


@pytest.mark.parametrize("gap", [0, 3, 5000])
def test_duplicate_far_apart_and_after_null(tmp_path: Path, run_cli, gap: int) -> None:
    """Duplicates are found across batches and after an unscored (null) first occurrence."""
    rows = [row(sample_id="dup", pred_answer=None)]
    rows += [row(sample_id=f"s{i}") for i in range(gap)]
    rows.append(row(sample_id="dup"))
    path = jsonl(tmp_path / "a.jsonl", rows)
    code, _, err = run_cli("multilingual", "score", path)
    assert code == 2
    assert f"line {gap + 2}" in err and "first at line 1" in err, err
