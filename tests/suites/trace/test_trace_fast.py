"""Issue 26.3: ``trace score`` reads clean JSON Lines label files through a typed decoder
(:mod:`ragmeter.trace._fast`).  It must give what the row reader gives, number for number and
error for error (file, line, field), whatever the file holds, and the run record built from
columns must keep the very items it kept from dicts."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from ragmeter.errors import InputError
from ragmeter.runs._columns import keep_items
from ragmeter.runs._records import _cap_items
from ragmeter.trace import _fast
from ragmeter.trace._data import JUDGE_FIELDS, iter_trace_rows
from ragmeter.trace._fast import LabelBlock, iter_label_blocks
from ragmeter.trace._scorer import SCORE_COLUMNS, ScoreConfig, score_file, score_rows

pytest.importorskip("msgspec")


def _row(rng: random.Random, i: int) -> dict[str, Any]:
    docs = [[[f"{d}{chr(97 + k)}", "text é [x] \"q\""] for k in range(rng.randint(1, 5))]
            for d in range(rng.randint(1, 3))]
    keys = [k for doc in docs for k, _ in doc]
    return {"id": f"t{i}", "documents_sentences": docs,
            "all_relevant_sentence_keys": rng.sample(keys, rng.randint(0, len(keys))),
            "all_utilized_sentence_keys": rng.sample(keys, rng.randint(0, len(keys))),
            "unsupported_response_sentence_keys": ["r1"] * rng.choice((0, 0, 1))}


def _odd(rng: random.Random, i: int) -> str:
    """A line the typed decoder must not take as it is (or must take exactly)."""
    row = _row(rng, i)
    kind = i % 13
    if kind == 0:
        row["documents_sentences"] = None  # unscored: missing_labels
    elif kind == 1:
        row["all_utilized_sentence_keys"] = None  # partial labels
    elif kind == 2:
        row["documents_sentences"] = []  # no document sentence
    elif kind == 3:
        row["id"] = "  "  # a blank id: line-N
    elif kind == 4:
        del row["id"]
    elif kind == 5:
        row["id"] = 17  # a number id: the row reader's str()
    elif kind == 6:
        row["status"], row["reason"] = "unscored", "judge_error"
    elif kind == 7:
        row.update(judge="gpt-x", prompt_version="v2", strategy="choice", threshold=0.5)
    elif kind == 8:
        del row["unsupported_response_sentence_keys"]
        row["sentence_support_information"] = [
            {"response_sentence_key": "a", "fully_supported": True},
            {"response_sentence_key": "b", "fully_supported": False}]
    elif kind == 9:
        row["documents_sentences"][0][0] = {"key": "0a", "text": "as an object"}
    elif kind == 10:
        row["question"] = "an extra field"
    elif kind == 11:
        row["adherence_probability"] = 0.25
    elif kind == 12:
        for v in (None, None, None):
            row["all_relevant_sentence_keys"] = row["all_utilized_sentence_keys"] = v
            row["unsupported_response_sentence_keys"] = v  # every label null
    return json.dumps(row, ensure_ascii=i % 2 == 0)


def _write_mixed(path: Path, n: int, dense: bool, seed: int = 0) -> None:
    """Odd lines: 30% at random (``dense``), else every 40th (each kind of :func:`_odd`)."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8", newline="") as fh:
        for i in range(n):
            odd = rng.random() < 0.3 if dense else i % 40 == 9
            line = _odd(rng, i) if odd else json.dumps(_row(rng, i))
            fh.write(line + ("\r\n" if i % 17 == 0 else "\n"))
            if i % 97 == 50:
                fh.write("\n")  # a blank line: the numbers of the lines after it still hold


def _row_path(path: Path, config: ScoreConfig) -> Any:
    rows = iter_trace_rows(path, (*SCORE_COLUMNS, *JUDGE_FIELDS), field_map=config.field_map)
    return score_rows(rows, config, source=str(path))


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("block", [1 << 20, 700, 64])
def test_typed_reader_matches_row_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         block: int, dense: bool) -> None:
    """Small blocks cut lines everywhere (a line longer than a block is carried over)."""
    monkeypatch.setattr(_fast, "_BLOCK", block)
    monkeypatch.setattr(_fast, "_GROUP", 8)
    path = tmp_path / "labels.jsonl"
    _write_mixed(path, 600, dense)
    config = ScoreConfig(n_resamples=200)
    fast, slow = score_file(path, config), _row_path(path, config)
    assert fast.to_json() == slow.to_json()
    assert list(fast.iter_items()) == list(slow.iter_items())
    assert fast.coverage["unscored"] > 0 and "judge" in fast.signature
    kinds = {type(b).__name__ for b in iter_label_blocks(path)}
    assert kinds == {"LabelBlock", "Row"}


def test_clean_file_is_read_by_blocks(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    rng = random.Random(3)
    path.write_text("\ufeff" + "".join(json.dumps(_row(rng, i)) + "\n" for i in range(500)),
                    encoding="utf-8")  # a byte-order mark too
    blocks = list(iter_label_blocks(path))
    assert all(isinstance(b, LabelBlock) for b in blocks)
    assert sum(len(b.ids) for b in blocks) == 500
    config = ScoreConfig(n_resamples=200)
    assert score_file(path, config).to_json() == _row_path(path, config).to_json()


def _assert_same_error(path: Path, place: str) -> None:
    """Both readers refuse ``path`` with the same message, naming ``place``."""
    config = ScoreConfig(n_resamples=100)
    with pytest.raises(InputError) as fast:
        score_file(path, config)
    with pytest.raises(InputError) as slow:
        _row_path(path, config)
    assert str(fast.value) == str(slow.value)
    assert place in str(fast.value)


@pytest.mark.parametrize("bad", [
    '{"id": "x", "documents_sentences": [[["0a", 5]]], "all_relevant_sentence_keys": [], '
    '"all_utilized_sentence_keys": [], "unsupported_response_sentence_keys": []}',
    '{"id": ',
    '{"id": "x", "documents_sentences": [[["0a", "t"]]], "all_relevant_sentence_keys": [3], '
    '"all_utilized_sentence_keys": [], "unsupported_response_sentence_keys": []}',
    '{"id": "\\ud800", "documents_sentences": [[["0a", "t"]]], '
    '"all_relevant_sentence_keys": [], "all_utilized_sentence_keys": [], '
    '"unsupported_response_sentence_keys": []}',
    '{"x": 1e999, "documents_sentences": [[["0a", "t"]]], "all_relevant_sentence_keys": [], '
    '"all_utilized_sentence_keys": [], "unsupported_response_sentence_keys": []}',
    '[1, 2]',
])
def test_bad_row_is_the_same_error_at_the_same_line(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "labels.jsonl"
    rng = random.Random(5)
    lines = [json.dumps(_row(rng, i)) for i in range(300)]
    lines.insert(211, bad)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _assert_same_error(path, "line 212")


def test_overlong_line_is_refused_at_its_line(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_MAX_LINE_MB", "1")
    monkeypatch.setattr(_fast, "_BLOCK", 4096)
    path = tmp_path / "labels.jsonl"
    rng = random.Random(6)
    long = _row(rng, 0)
    long["documents_sentences"] = [[["0a", "x" * (1 << 20)]]]
    lines = [json.dumps(_row(rng, i)) for i in range(40)]
    lines.insert(30, json.dumps(long))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _assert_same_error(path, "line 31")


@pytest.mark.parametrize("max_items", [5, 40, 100_000])
def test_record_items_from_columns_are_those_from_dicts(tmp_path: Path,
                                                        max_items: int) -> None:
    path = tmp_path / "labels.jsonl"
    rng = random.Random(8)
    lines = [json.dumps(_row(rng, i)) for i in range(400)]
    for at in (0, 3, 4, 150, 399):  # unscored rows among the scored ones, at both ends
        lines[at] = json.dumps({**_row(rng, at), "documents_sentences": None})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = score_file(path, ScoreConfig(n_resamples=100))
    columns = result.item_columns()
    assert columns is not None
    kept, total, n_unscored, truncated = keep_items(columns, max_items)
    want = _cap_items(result.iter_items(), max_items)
    assert (list(kept), total, n_unscored, truncated) == want
    assert n_unscored == 5


def test_record_items_fall_back_when_keys_differ(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    rng = random.Random(9)
    path.write_text(json.dumps({**_row(rng, 0), "adherence_probability": 0.5}) + "\n"
                    + json.dumps(_row(rng, 1)) + "\n", encoding="utf-8")
    assert score_file(path, ScoreConfig(n_resamples=100)).item_columns() is None
