"""Every command that reads user data, fed hostile files (issue 16): exit 2 with one line that
names the file and the place, never a traceback, never exit 0 with rows silently lost.  And the
output-path guard: an output that is an input (same path, symlink, hard link, a run record) is
refused before any work, and the input is left byte for byte as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

HOSTILE = {
    # name: (file name, bytes)
    "stray quote": ("a.csv", b"id,question,response\n1,q,a\n2,\"q,a\n3,q,a\n"),
    "quote then text": ("a.csv", b'id,question,response\n1,"q"x,a\n'),
    "deep nesting": ("a.jsonl", b"[" * 50_000 + b"\n"),
    "deep nesting .json": ("a.json", b"[" * 50_000),
    "not utf-8": ("a.jsonl", b'{"id": "\xff\xfe"}\n'),
    "truncated array": ("a.json", b'[{"id": 1}, {"id": '),
    "line over limit": ("a.jsonl", b'{"id": "' + b"x" * 40_000 + b'"}\n'),
    "not json": ("a.jsonl", b"{'id': 1}\n"),
    "array of numbers": ("a.json", b"[1, 2, 3]"),
}

# Each command reading a data file, with what it needs besides the file (FILE stands for it).
COMMANDS = {
    "multilingual score": ["multilingual", "score", "FILE", "--no-record"],
    "rubric score": ["rubric", "score", "FILE", "--no-record"],
    "reliability score": ["reliability", "score", "FILE", "--qc", "qc", "--no-record"],
    "trace score": ["trace", "score", "FILE", "--no-record"],
    "trace validate": ["trace", "validate", "FILE", "--no-record"],
    "rgb score": ["rgb", "score", "FILE", "--data", "FILE", "--noise-rate", "0",
                  "--no-record"],
    "rgb build": ["rgb", "build", "--data", "FILE", "--noise-rate", "0", "--out", "OUT"],
    "generate": ["generate", "FILE", "--out", "OUT", "--backend", "openai", "--model", "m",
                 "--base-url", "http://127.0.0.1:9/v1"],
    "rubric judge": ["rubric", "judge", "FILE", "--out", "OUT", "--backend", "openai",
                     "--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
    "multilingual judge": ["multilingual", "judge", "FILE", "--out", "OUT", "--backend",
                           "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
    "trace label": ["trace", "label", "FILE", "--out", "OUT", "--backend", "openai",
                    "--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
}


def _argv(template: list[str], file: Path, out: Path) -> list[str]:
    return [str(file) if a == "FILE" else str(out) if a == "OUT" else a for a in template]


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_file_is_one_line_exit_2(tmp_path, run_cli, monkeypatch, command, case):
    monkeypatch.setenv("RAGMETER_MAX_LINE_MB", "0.02")  # 20 KiB, so "line over limit" is cheap
    name, content = HOSTILE[case]
    if command.startswith("rgb") and name.endswith(".csv"):
        name = "a.jsonl"  # RGB reads JSON Lines only; the CSV cases do not apply
        content = HOSTILE["not json"][1]
    path = tmp_path / name
    path.write_bytes(content)
    out = tmp_path / "out.jsonl"
    code, stdout, err = run_cli(*_argv(COMMANDS[command], path, out))
    assert code == 2, (stdout, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert "Traceback" not in err and str(path.name) in lines[0]
    assert not out.exists()


# ------------------------------------------------------------------ the output-path guard

GOOD_ANSWERS = [{"sample_id": f"s{i}", "sample_lang": "en", "system": "direct",
                 "gold_answer": "Ottawa", "pred_answer": "Ottawa", "translate_tokens": 0}
                for i in range(3)]
RGB_DATA = [{"id": i, "query": "q?", "answer": ["a"], "positive": ["a is it"],
             "negative": ["b"]} for i in range(2)]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _alias(kind: str, target: Path) -> Path:
    if kind == "same":
        return target
    alias = target.with_name("alias_" + kind + target.suffix)
    if kind == "symlink":
        alias.symlink_to(target)
    else:
        os.link(target, alias)
    return alias


GUARDED = {
    "multilingual score --items": lambda f, o: ["multilingual", "score", f, "--items", o,
                                                 "--no-record"],
    "multilingual score --json": lambda f, o: ["multilingual", "score", f, "--json", o,
                                               "--no-record"],
    "rgb score --items": lambda f, o: ["rgb", "score", f, "--data", f, "--noise-rate", "0",
                                       "--items", o, "--no-record"],
    "rgb build --out = --data": lambda f, o: ["rgb", "build", "--data", f, "--noise-rate", "0",
                                              "--out", o],
    "generate --out": lambda f, o: ["generate", f, "--out", o, "--backend", "openai",
                                    "--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
    "rubric judge --out": lambda f, o: ["rubric", "judge", f, "--out", o, "--backend",
                                        "openai", "--model", "m",
                                        "--base-url", "http://127.0.0.1:9/v1"],
    "trace label --out": lambda f, o: ["trace", "label", f, "--out", o, "--backend", "openai",
                                       "--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
}


@pytest.mark.parametrize("kind", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize("command", list(GUARDED))
def test_output_that_is_an_input_is_refused(tmp_path, run_cli, command, kind):
    rows = RGB_DATA if command.startswith("rgb") else GOOD_ANSWERS
    src = _jsonl(tmp_path / "in.jsonl", rows)
    before = src.read_bytes()
    out = _alias(kind, src)
    code, _, err = run_cli(*GUARDED[command](src, out))
    assert code == 2, err
    assert "same file as the input" in err and "Nothing was done" in err
    assert src.read_bytes() == before


def test_report_out_that_is_a_run_record_is_refused(tmp_path, run_cli):
    runs = tmp_path / "runs"
    src = _jsonl(tmp_path / "in.jsonl", GOOD_ANSWERS)
    code, _, err = run_cli("multilingual", "score", src, "--runs-dir", runs)
    assert code == 0, err
    record = next(runs.glob("*.json"))
    before = record.read_bytes()
    code, _, err = run_cli("report", "--runs-dir", runs, "--out", record)
    assert code == 2 and "same file as the input" in err
    assert record.read_bytes() == before
    code, _, err = run_cli("report", "--runs-dir", runs, "--out", tmp_path / "r.html")
    assert code == 0, err


def test_report_skips_a_bad_record_with_a_warning(tmp_path, run_cli):
    runs = tmp_path / "runs"
    src = _jsonl(tmp_path / "in.jsonl", GOOD_ANSWERS)
    assert run_cli("multilingual", "score", src, "--runs-dir", runs)[0] == 0
    (runs / "empty.json").write_text("")
    (runs / "typed.json").write_text(json.dumps({"run_id": 3, "family": ["x"]}))
    code, stdout, err = run_cli("report", "--runs-dir", runs, "--list")
    assert code == 0, err
    assert "skipped" in err and "empty.json" in err and "typed.json" in err
    assert "multilingual" in stdout
    code, _, err = run_cli("report", "--runs-dir", runs, "--out", tmp_path / "r.html")
    assert code == 0, err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_output_folder_is_one_line(tmp_path, run_cli):
    src = _jsonl(tmp_path / "in.jsonl", GOOD_ANSWERS)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        for flag in ("--json", "--items"):
            code, _, err = run_cli("multilingual", "score", src, flag, ro / "x.json",
                                   "--no-record")
            assert code == 2 and "permission denied" in err and "Traceback" not in err
    finally:
        ro.chmod(0o700)


def test_unwritable_output_is_one_line(tmp_path, run_cli):
    """A path under a regular file cannot be created, as root too."""
    src = _jsonl(tmp_path / "in.jsonl", GOOD_ANSWERS)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run_cli("multilingual", "score", src, "--json", blocker / "x.json",
                           "--no-record")
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------ accepted with exit 0 before


def test_rubric_prompt_without_response_is_refused(tmp_path, run_cli):
    tpl = tmp_path / "p.txt"
    tpl.write_text("Grade this answer to {question}. [RESULT]", encoding="utf-8")
    src = _jsonl(tmp_path / "a.jsonl", [{"id": "1", "question": "q", "reference": "r",
                                         "response": "x"}])
    code, _, err = run_cli("rubric", "judge", src, "--out", tmp_path / "o.jsonl",
                           "--prompt-file", tpl, "--backend", "openai", "--model", "m",
                           "--base-url", "http://127.0.0.1:9/v1")
    assert code == 2 and "{response}" in err and "p.txt" in err


def test_trace_prompt_without_documents_is_refused(tmp_path, run_cli):
    tpl = tmp_path / "p.txt"
    tpl.write_text("{question} {answer}", encoding="utf-8")
    src = _jsonl(tmp_path / "a.jsonl", [{"id": "1", "question": "q", "documents": ["d."],
                                         "response": "x"}])
    code, _, err = run_cli("trace", "label", src, "--out", tmp_path / "o.jsonl",
                           "--prompt-file", tpl, "--strategy", "json", "--backend", "openai",
                           "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert code == 2 and "{documents}" in err


@pytest.mark.parametrize("value", [7, -0.5, 1.01])
def test_semantic_score_out_of_range_is_refused(tmp_path, run_cli, value):
    rows = [dict(GOOD_ANSWERS[0], semantic_score=0.5), dict(GOOD_ANSWERS[1],
                                                             semantic_score=value)]
    src = _jsonl(tmp_path / "a.jsonl", rows)
    code, _, err = run_cli("multilingual", "score", src, "--no-record")
    assert code == 2 and "line 2" in err and "semantic_score" in err and "[0.0, 1.0]" in err


def test_trace_validate_unknown_pred_column_is_refused(tmp_path, run_cli):
    from ragmeter.io._samples import sample_path

    code, _, err = run_cli("trace", "validate", sample_path("trace_labelled.jsonl"),
                           "--pred-column", "adherence=nosuch", "--no-record")
    assert code == 2 and "nosuch" in err, err


@pytest.mark.skipif(os.name != "posix", reason="POSIX file names are bytes")
def test_non_utf8_file_name_is_one_line(tmp_path, run_cli):
    name = os.fsdecode(b"bad\xff.jsonl")  # a surrogate escape in the str
    path = tmp_path / name
    path.write_text('{"a": 1}\n', encoding="utf-8")
    code, _, err = run_cli("multilingual", "score", path, "--no-record")
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err
    assert "bad\\udcff.jsonl" in err  # shown escaped, never an encoding crash
