"""The one reader layer (ragmeter.io) against malformed and hostile files (issue 16).

Hypothesis writes random rows and checks that every row comes back, exactly, and that one stray
quote in a CSV is either an error naming the line where its field starts or changes nothing:
never silently fewer rows.  Hand-written cases cover each class of the issue."""

from __future__ import annotations

import csv
import io as _io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter import io as rio
from ragmeter.errors import InputError
from ragmeter.io import _formats as io_formats

CELL = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"),
               max_size=30)
NAMES = st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), min_size=1, max_size=5,
                 unique=True)
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _table(draw_names, draw_rows):
    return draw_names, draw_rows


@st.composite
def tables(draw):
    names = draw(NAMES)
    rows = draw(st.lists(st.fixed_dictionaries({n: CELL for n in names}), min_size=1,
                         max_size=12))
    return names, rows


def _write_csv(path: Path, names, rows, delimiter=",") -> Path:
    buf = _io.StringIO()
    w = csv.DictWriter(buf, fieldnames=names, delimiter=delimiter, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8", newline="")
    return path


@SETTINGS
@given(tables(), st.sampled_from([",", "\t"]))
def test_csv_round_trip_keeps_every_row(tmp_path, table, delimiter):
    names, rows = table
    ext = "csv" if delimiter == "," else "tsv"
    path = _write_csv(tmp_path / f"t.{ext}", names, rows, delimiter)
    assert [r.data for r in rio.iter_rows(path)] == rows


@SETTINGS
@given(st.integers(min_value=20, max_value=60), st.data())
def test_one_stray_quote_is_an_error_or_harmless(tmp_path, n, data):
    """The issue's case: one stray quote in a CSV of n rows.  Either an InputError naming the
    line where the quoted field starts, or all n rows come back."""
    lines = ["id,question,answer"] + [f"{i},question {i},answer {i}" for i in range(n)]
    target = data.draw(st.integers(min_value=1, max_value=n))
    text = lines[target]
    cells = text.split(",")
    cell = data.draw(st.integers(min_value=0, max_value=len(cells) - 1))
    at = data.draw(st.integers(min_value=0, max_value=len(cells[cell])))
    cells[cell] = cells[cell][:at] + '"' + cells[cell][at:]
    lines[target] = ",".join(cells)
    path = tmp_path / "stray.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        rows = list(rio.iter_rows(path))
    except InputError as err:
        assert err.line == target + 1, (str(err), target + 1)  # the line the field starts on
        return
    assert len(rows) == n


@SETTINGS
@given(st.lists(st.dictionaries(st.text(max_size=8), st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.text(max_size=5), children, max_size=3), max_leaves=8), max_size=5),
    min_size=1, max_size=10), st.sampled_from([1, 7, 64]))
def test_json_array_streams_at_any_chunk_boundary(tmp_path, monkeypatch, rows, chunk):
    monkeypatch.setattr(io_formats, "_CHUNK", chunk)
    path = tmp_path / "a.json"
    path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    assert [r.data for r in rio.iter_rows(path)] == rows
    jl = tmp_path / "a.jsonl"
    jl.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                  encoding="utf-8")
    assert [r.data for r in rio.iter_rows(jl)] == rows


@SETTINGS
@given(st.integers(min_value=1, max_value=8), st.sampled_from(
    ['{"a": 1', '[1, 2]', '"text"', "{'a': 1}", '{"a": 1}}', "nul", '{"a": NaN x}']))
def test_a_bad_jsonl_line_is_named(tmp_path, bad_line, garbage):
    lines = [json.dumps({"id": i}) for i in range(8)]
    lines.insert(bad_line - 1, garbage)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        list(rio.iter_rows(path))
    assert info.value.line == bad_line


# ------------------------------------------------------------------ hand-written classes


def _error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        list(rio.iter_rows(path))
    return info.value


CSV_CASES = {
    # name: (content, line named, words in the message)
    "unterminated quote at line 6": (
        "id,q\n" + "".join(f"{i},x\n" for i in range(1, 5)) + '5,"never closed\n6,y\n7,z\n',
        6, "never closed"),
    "quote then text": ('id,q\n1,"a"b\n2,c\n', 2, "stray quote"),
    "too many cells": ("id,q\n1,a,b\n", 2, "3 cells"),
    "bad utf-8": (b"id,q\n1,a\n2,\xff\xfe\n".decode("latin-1"), 3, "UTF-8"),
}


@pytest.mark.parametrize("name", list(CSV_CASES))
def test_csv_cases(tmp_path, name):
    content, line, words = CSV_CASES[name]
    path = tmp_path / "x.csv"
    path.write_bytes(content.encode("latin-1") if name == "bad utf-8" else content.encode())
    err = _error(path)
    assert err.line == line and words in str(err), str(err)


def test_csv_multiline_cell_and_huge_cell_are_read(tmp_path):
    big = "y" * (300 * 1024)  # over the csv module's 128 KiB default field limit
    path = tmp_path / "ok.csv"
    path.write_text(f'id,q\n1,"two\nlines"\n2,{big}\n3,z\n', encoding="utf-8")
    rows = list(rio.iter_rows(path))
    assert [(r.number, r.data["id"]) for r in rows] == [(2, "1"), (4, "2"), (5, "3")]
    assert rows[1].data["q"] == big


@pytest.mark.parametrize("ext, content, where", [
    ("jsonl", "[" * 100_000 + "\n", "line 1"),
    ("json", "[" + "[" * 100_000, "row 1"),
    ("json", '{"a": ' + "[" * 100_000, "row 1"),
])
def test_deep_nesting_is_an_input_error(tmp_path, ext, content, where):
    path = tmp_path / f"deep.{ext}"
    path.write_text(content, encoding="utf-8")
    err = _error(path)
    assert where in str(err)


def test_line_over_the_limit_names_it_and_the_flag(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETER_MAX_LINE_MB", "0.01")  # 10 KiB
    path = tmp_path / "long.jsonl"
    path.write_text('{"id": 1}\n{"id": "' + "x" * 20_000 + '"}\n', encoding="utf-8")
    err = _error(path)
    assert err.line == 2 and "--max-line-mb" in str(err)
    arr = tmp_path / "long.json"
    arr.write_text('[{"id": 1}, {"id": "' + "x" * 20_000 + '"}]', encoding="utf-8")
    err = _error(arr)
    assert err.row == 2 and "--max-line-mb" in str(err)


def test_json_array_errors_name_the_row(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('[{"a": 1}, {"a": 2} {"a": 3}]', encoding="utf-8")
    assert _error(path).row == 2
    path.write_text('[{"a": 1}, {"a": 2}] trailing', encoding="utf-8")
    assert "after the closing ]" in str(_error(path))
    path.write_text('[{"a": 1}, {"a": ', encoding="utf-8")
    assert _error(path).row == 2


def test_corrupt_parquet_pages_are_an_input_error(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "c.parquet"
    table = pa.table({"id": [str(i) for i in range(20_000)],
                      "text": [f"row {i} " * 5 for i in range(20_000)]})
    pq.write_table(table, path, row_group_size=2048, compression="snappy")
    raw = bytearray(path.read_bytes())
    for at in range(len(raw) // 3, 2 * len(raw) // 3, 97):  # scramble the middle pages
        raw[at] ^= 0x5A
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError):
        list(rio.iter_rows(path))


@pytest.mark.parametrize("value, words", [(None, "is null"), ("", "is empty")])
def test_null_id_says_null_not_missing(tmp_path, run_cli, value, words):
    path = tmp_path / "req.jsonl"
    path.write_text(json.dumps({"id": value, "prompt": "x"}) + "\n", encoding="utf-8")
    code, _, err = run_cli("generate", path, "--out", tmp_path / "o.jsonl", "--backend",
                           "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert code == 2 and words in err and "missing" not in err, err
    assert 'field "id"' in err and "line 1" in err
