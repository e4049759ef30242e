"""The JSON-array reader's row numbers, pinned on the reader itself (io/_formats.py).

A bad row is named by its place in the array (1-based): first, middle or last; a non-object
(a nested array, a number, null) or broken syntax; whatever the whitespace between rows; and
whatever the size of the chunks the stream reads (a row cut by a chunk boundary).
"""

from __future__ import annotations

import json

import pytest

from ragmeter.errors import InputError
from ragmeter.io import _formats as io_formats
from ragmeter.io import iter_rows

GOOD = ['{"id": 1, "q": "a, ] b"}', '{"id": 2, "nested": [[1, 2], {"x": [3]}]}',
        '{"id": 3, "q": "[{\\"not\\": \\"a row\\"}]"}', '{"id": 4}', '{"id": 5}']
BAD = {
    "nested array": ("[1, [2, 3]]", "is a JSON list, expected an object"),
    "number": ("7", "is a JSON int, expected an object"),
    "null": ("null", "expected an object"),
    "string": ('"{\\"id\\": 9}"', "is a JSON str, expected an object"),
    "broken syntax": ('{"id" 9}', "is not valid JSON"),
}
# (between rows, after "[" and before "]")
SPACING = {
    "compact": (",", ""),
    "one per line": (",\n", "\n"),
    "pretty": (",\n  ", "\n  "),
    "crlf and tabs": ("\t,\r\n\t", "\r\n"),
    "space before comma": (" , ", " "),
}


def _write(tmp_path, rows, spacing, bom=False):
    sep, pad = SPACING[spacing]
    path = tmp_path / "rows.json"
    text = "[" + pad + sep.join(rows) + pad + "]\n"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


@pytest.mark.parametrize("chunk", [3, 1 << 20])
@pytest.mark.parametrize("spacing", list(SPACING))
@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("row", [1, 3, 5])  # first, middle, last
def test_a_bad_row_is_named_by_its_place(tmp_path, monkeypatch, chunk, spacing, bad, row):
    monkeypatch.setattr(io_formats, "_CHUNK", chunk)
    rows = list(GOOD)
    text, words = BAD[bad]
    rows[row - 1] = text
    with pytest.raises(InputError) as info:
        list(iter_rows(_write(tmp_path, rows, spacing)))
    assert info.value.row == row
    assert words in str(info.value) and f"row {row} of" in str(info.value)


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
@pytest.mark.parametrize("spacing", list(SPACING))
def test_good_rows_are_numbered_from_1(tmp_path, monkeypatch, chunk, spacing):
    monkeypatch.setattr(io_formats, "_CHUNK", chunk)
    read = list(iter_rows(_write(tmp_path, GOOD, spacing, bom=True)))
    assert [(r.number, r.unit, r.data["id"]) for r in read] == [(i, "row", i) for i in range(1, 6)]
    assert read[2].data["q"] == json.loads(GOOD[2])["q"]


@pytest.mark.parametrize("content, row, words", [
    # a comma missing after row 2: named as the row it follows
    ('[{"id": 1}, {"id": 2} {"id": 3}]', 2, "expected , or ] after row 2"),
    # the file ends inside row 2, or right after it
    ('[{"id": 1},\n {"id": 2, "q": "cut', 2, "is not valid JSON"),
    ('[{"id": 1}, {"id": 2}', 2, "expected , or ] after row 2"),
    # a comma with no row after it: the missing row is row 3
    ('[{"id": 1}, {"id": 2},]', 3, "is not valid JSON"),
    # rows far apart: only commas at the top level count
    ('[\n\n{"id": 1, "a": [[[]]]}\n\n,\n\n{"id": 2, "b": {"c": [1, {"d": []}]}}\n\n,\n\n[]\n]',
     3, "is a JSON list"),
])
def test_syntax_errors_name_the_row(tmp_path, content, row, words):
    path = tmp_path / "rows.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        list(iter_rows(path))
    assert info.value.row == row and words in str(info.value)
