"""One surrogate-safe text path (issue 29.6).  A lone UTF-16 surrogate (``"\\ud800"``, the
first half of a pair, alone) is valid JSON escape syntax and a valid Python string, but no
UTF-8 file or SQLite store can hold it: it used to be accepted on read and crash the output
writer after ``--json`` was written.  The rule (``ragmeter.text._unicode``): user data is
refused where it is read, with the line or row, the field and the position; a model's reply is
repaired (U+FFFD); and every writer escapes one instead of failing half-way."""

from __future__ import annotations

import gzip
import json

import pytest

import ragmeter
from ragmeter.errors import InputError
from tests.hardening.test_cli_bad_input import COMMANDS, _argv

LONE = "\ud800"


@pytest.mark.parametrize("escape", ["\\ud800", "\\uDBFF", "\\udc00", "\\uDFFF"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_lone_surrogate_in_a_file_is_one_line_exit_2(tmp_path, run_cli, command, escape):
    path = tmp_path / "a.jsonl"
    path.write_text('{"id": "q1", "question": "x' + escape + 'y"}\n', encoding="ascii")
    out, items = tmp_path / "out.jsonl", tmp_path / "summary.json"
    argv = _argv(COMMANDS[command], path, out)
    if "--no-record" in argv:
        argv += ["--json", str(items)]
    code, stdout, err = run_cli(*argv)
    assert code == 2, (stdout, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f'line 1 of {path}: field "question": holds a lone UTF-16 surrogate' in lines[0]
    assert f"{escape.lower()} at character 2" in lines[0]
    assert not out.exists() and not items.exists()


def test_a_json_array_names_the_row(tmp_path):
    from ragmeter.io import read_rows

    rows = [{"id": i, "text": "ok " * 100} for i in range(5000)]
    text = json.dumps(rows).replace('"id": 4321, "text": "ok', '"id": 4321, "text": "\\ud9ffok')
    path = tmp_path / "a.json"
    path.write_text(text, encoding="ascii")
    with pytest.raises(InputError, match=r'row 4322 of .*: field "text": holds a lone UTF-16 '
                                         r'surrogate \(\\ud9ff at character 1\)'):
        read_rows(path)


def test_a_surrogate_in_a_key_or_a_nested_list_is_found(tmp_path):
    from ragmeter.io import read_rows

    path = tmp_path / "a.jsonl"
    path.write_text('{"id": 1, "documents": ["fine", ["deep \\udc80"]]}\n'
                    '{"id": 2, "\\ud800key": 1}\n', encoding="ascii")
    with pytest.raises(InputError, match=r'line 1 .*field "documents": .*\\udc80'):
        read_rows(path)
    path.write_text('{"id": 2, "\\ud800key": 1}\n', encoding="ascii")
    with pytest.raises(InputError) as err:
        read_rows(path)
    assert 'field "\\ud800key"' in str(err.value)
    str(err.value).encode("utf-8")  # the message itself can be printed


def test_valid_pairs_and_text_are_read_and_written_exactly(tmp_path, run_cli):
    """An escaped pair (an emoji) is one character, accepted and written back as it was."""
    path = tmp_path / "a.jsonl"
    row = {"sample_id": "s1", "sample_lang": "en", "system": "direct", "gold_answer": "Ottawa",
           "pred_answer": "Ottawa \ud83d\ude00 \u00e9"}
    path.write_text(json.dumps(row, ensure_ascii=True) + "\n", encoding="ascii")
    items = tmp_path / "items.jsonl"
    code, _, err = run_cli("multilingual", "score", path, "--items", items, "--no-record")
    assert code == 0, err
    assert json.loads(items.read_text(encoding="utf-8"))["pred_answer"] == "Ottawa 😀 é"


@pytest.mark.parametrize("shape", ["list", "generator", "DataFrame"])
def test_in_memory_data_is_checked_too(shape):
    """(An Arrow table, and a DataFrame of Arrow strings, cannot hold the text at all.)"""
    rows = [{"sample_id": "s1", "sample_lang": "en", "system": "direct", "gold_answer": "O",
             "pred_answer": "O"},
            {"sample_id": "s2", "sample_lang": "en", "system": "direct", "gold_answer": "O",
             "pred_answer": "O" + LONE}]
    data: object = rows
    if shape == "generator":
        data = (r for r in rows)
    elif shape == "DataFrame":
        data = pytest.importorskip("pandas").DataFrame(rows, dtype=object)
    with pytest.raises(InputError, match=r'index 1 of .*: field "pred_answer": holds a lone '
                                         r'UTF-16 surrogate \(\\ud800 at character 2\)'):
        ragmeter.multilingual.score(data)


# ------------------------------------------------------------------ writers never fail half-way

def test_writers_escape_a_lone_surrogate_and_round_trip(tmp_path):
    from ragmeter.io import write_json, write_jsonl, write_text

    value = {"a": "x" + LONE + "\\" + "\udfff" + " é 😀"}
    write_json(tmp_path / "a.json", value)
    assert json.loads((tmp_path / "a.json").read_text(encoding="utf-8")) == value

    def rows():
        yield {"n": 1}
        yield value  # after a first row: the file must still come out whole
        yield {"n": 3}

    assert write_jsonl(tmp_path / "a.jsonl", rows()) == 3
    lines = (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [{"n": 1}, value, {"n": 3}]
    write_text(tmp_path / "a.txt", "x" + LONE)
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "x\\ud800"
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_run_record_with_a_lone_surrogate_is_written_whole(tmp_path):
    from ragmeter.runs import load_run, record_run

    record = record_run("x", {"note": "n" + LONE}, [{"id": "1", "status": "ok",
                                                    "text": "t" + LONE}],
                        command=[], runs_dir_override=tmp_path)
    again = load_run(record.run_id, runs_dir_override=tmp_path)
    assert again.items == [{"id": "1", "status": "ok", "text": "t" + LONE}]
    with gzip.open(next(tmp_path.glob("*.items.jsonl.gz")), "rt", encoding="utf-8") as fh:
        assert "\\ud800" in fh.read()


# ------------------------------------------------------------------ a model's reply

def test_a_reply_with_a_lone_surrogate_is_stored_and_written(tmp_path, scripted_server,
                                                             run_cli):
    """The server's JSON body carries the escape; the reply is kept with U+FFFD in its place,
    stored, and written; a re-run answers it from the store."""
    server = scripted_server(reply=lambda body: "half " + LONE + " pair")
    req = tmp_path / "req.jsonl"
    req.write_text('{"id": "r1", "prompt": "hi"}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    argv = ["generate", req, "--out", out, "--backend", "openai", "--model", "m",
            "--base-url", server.url, "--store", tmp_path / "s.sqlite"]
    code, _, err = run_cli(*argv)
    assert code == 0, err
    assert json.loads(out.read_text(encoding="utf-8"))["text"] == "half \ufffd pair"
    code, _, err = run_cli(*argv)
    assert code == 0 and server.stats()["calls"] == 1, err
