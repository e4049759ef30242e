"""The C scanner of clean label lines (ragmeter.trace._scan, issue 26.3): it accepts only
lines the typed reader takes as clean rows, gives their numbers exactly, and defers every
other line to the readers that report problems; without a compiler nothing changes."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from ragmeter.errors import InputError
from ragmeter.trace import _fast, _scan
from ragmeter.trace._data import JUDGE_FIELDS, iter_trace_rows
from ragmeter.trace._scorer import SCORE_COLUMNS, ScoreConfig, score_file, score_rows

pytest.importorskip("msgspec")

_FIELDS = ("documents_sentences", "all_relevant_sentence_keys", "all_utilized_sentence_keys",
           "unsupported_response_sentence_keys")
_TEXTS = ["plain words", "é ü 漢字 😀", 'quote " and \\ backslash', "tab\tnew\nline\r",
          "\u0000nul \u001f unit", "\u2028 sep", "", "/ slash"]


@pytest.fixture(scope="module")
def scanner() -> _scan.Scanner:
    built = _scan.scanner()
    if built is None:
        pytest.skip("no C compiler: the scanner is not built (the typed reader reads all)")
    return built


def _row(rng: random.Random, i: int) -> dict[str, Any]:
    docs = [[[f"{d}{chr(97 + k)}", rng.choice(_TEXTS)] for k in range(rng.randint(0, 4))]
            for d in range(rng.randint(1, 3))]
    keys = [k for doc in docs for k, _ in doc] or ["0a"]
    docs[0].append(["z", "always one sentence"])
    rel = rng.choices(keys, k=rng.randint(0, 6))  # repeats too
    return {"id": rng.choice([f"t{i}", f"ü{i}", "", "  ", "\u3000", None, " x "]),
            "documents_sentences": docs, "all_relevant_sentence_keys": rel,
            "all_utilized_sentence_keys": rng.sample(keys, rng.randint(0, len(keys))),
            "unsupported_response_sentence_keys": rng.choices(["r1", "é"], k=rng.randint(0, 2))}


def _dump(rng: random.Random, row: dict[str, Any]) -> str:
    """``row`` as a line: key order, separators, ASCII escapes and whitespace varied."""
    if rng.random() < 0.2:
        del row["id"]
    items = list(row.items())
    rng.shuffle(items)
    sep = rng.choice([(", ", ": "), (",", ":"), (" ,\t", " :  ")])
    line = json.dumps(dict(items), ensure_ascii=rng.random() < 0.5, separators=sep)
    return rng.choice(["", " ", "\t"]) + line + rng.choice(["", " ", "\r", " \t "])


def _odd(rng: random.Random, i: int) -> str:
    """A line the scanner must defer; the readers behind it take or refuse it as today."""
    row = _row(rng, i)
    kind = i % 12
    if kind == 0:
        row[rng.choice(_FIELDS)] = None
    elif kind == 1:
        row["documents_sentences"] = rng.choice([[], [[]], [[], []]])
    elif kind == 2:
        row["id"] = rng.choice([17, 1.5, True, ["x"]])
    elif kind == 3:
        row["status"] = "unscored"
    elif kind == 4:
        return _dump(rng, row).replace('"id"', '"\\u0069d"', 1) if "id" in row else "{}"
    elif kind == 5:  # a key with an escape (the same key as "0a" once decoded)
        row["all_relevant_sentence_keys"] = ["\\u0030a"]
        return json.dumps(row).replace("\\\\u0030a", "\\u0030a")
    elif kind == 6:
        row["documents_sentences"][0][0] = {"key": "0a", "text": "an object"}
    elif kind == 7:
        row["id"] = "a \ud83d\ude00 pair"
        return json.dumps(row, ensure_ascii=True)  # a \ud83d escape
    elif kind == 8:
        line = json.dumps(row)
        return line[:-1] + ', "id": "again"}'  # a duplicate field
    elif kind == 9:
        del row[rng.choice(_FIELDS[1:])]
    elif kind == 10:
        row["all_utilized_sentence_keys"] = [str(k) for k in range(300)]  # over MAX_KEYS
    elif kind == 11:
        row["id"] = "tab\tin id"  # an escape in the id
    return json.dumps(row)


def _write(path: Path, n: int, odd_share: float, seed: int) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8", newline="") as fh:
        for i in range(n):
            line = _odd(rng, i) if rng.random() < odd_share else _dump(rng, _row(rng, i))
            fh.write(line + "\n")
            if i % 89 == 40:
                fh.write(rng.choice(["\n", "  \n"]))  # blank lines


def _results(path: Path, monkeypatch: pytest.MonkeyPatch, use: bool) -> tuple[Any, list[Any]]:
    config = ScoreConfig(n_resamples=150)
    with monkeypatch.context() as m:
        if not use:
            m.setattr(_scan, "scanner", lambda: None)
        result = score_file(path, config)
    return result.to_json(), list(result.iter_items())


@pytest.mark.parametrize(("odd_share", "block"), [(0.0, 1 << 20), (0.05, 1 << 20), (0.3, 700)])
def test_scanner_matches_typed_and_row_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               scanner: _scan.Scanner, odd_share: float,
                                               block: int) -> None:
    monkeypatch.setattr(_fast, "_BLOCK", block)
    path = tmp_path / "labels.jsonl"
    _write(path, 1500, odd_share, seed=int(odd_share * 100) + block)
    with_scan = _results(path, monkeypatch, True)
    assert with_scan == _results(path, monkeypatch, False)
    config = ScoreConfig(n_resamples=150)
    rows = score_rows(iter_trace_rows(path, (*SCORE_COLUMNS, *JUDGE_FIELDS)), config,
                      source=str(path))
    assert with_scan == (rows.to_json(), list(rows.iter_items()))
    data = path.read_bytes()
    found = scanner.scan(data, 1)
    # every clean line is taken by the scanner but those with a \ud83d escape or an escape
    # in the id (deferred)
    lines = data.split(b"\n")[:-1]
    escaped_id = re.compile(rb'"id"\s*:\s*"[^"\\]*\\')
    expected = [bool(line.strip()) and b"\\ud" not in line and not escaped_id.search(line)
                for line in lines]
    if odd_share:
        assert sum(found.accepted) < sum(expected)
    else:
        wrong = [line for line, a, e in zip(lines, found.accepted, expected, strict=True)
                 if a != e]
        assert not wrong and sum(expected) > 1000


def _clean(**change: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"id": "r", "documents_sentences": [[["0a", "t"], ["0b", "u"]]],
                           "all_relevant_sentence_keys": ["0a", "0b", "0a"],
                           "all_utilized_sentence_keys": ["0b", "0c"],
                           "unsupported_response_sentence_keys": ["x"]}
    row.update(change)
    return row


def test_scanner_counts(scanner: _scan.Scanner) -> None:
    """Sentences, relevant (repeats counted), utilized, distinct relevant also utilized,
    unsupported; blank and missing ids as line numbers."""
    lines = [json.dumps(_clean()), json.dumps(_clean(id="  ")),
             json.dumps({k: v for k, v in _clean().items() if k != "id"}),
             json.dumps(_clean(id=None, all_relevant_sentence_keys=[])),
             json.dumps(_clean(id="\u3000", documents_sentences=[[], [["a", "b"]]]),
                        ensure_ascii=False)]
    data = ("\n".join(lines)).encode()
    found = scanner.scan(data, 7)
    assert found.accepted.tolist() == [True] * 5
    assert found.counts.tolist() == [[2, 3, 2, 1, 1], [2, 3, 2, 1, 1], [2, 3, 2, 1, 1],
                                     [2, 0, 2, 0, 1], [1, 3, 2, 1, 1]]
    assert found.ids == ["r", "line-8", "line-9", "line-10", "line-11"]
    assert found.starts.tolist()[-1] == len(data)


_CLEAN = json.dumps(_clean()).encode()


@pytest.mark.parametrize("line", [
    b"", b"   ", b"{}", b"[]", b"null", _CLEAN + b"x", _CLEAN + b"{}", _CLEAN[:-1],
    _CLEAN[:-1] + b",}", _CLEAN.replace(b'"r"', b'"\xff"'),
    _CLEAN.replace(b'"r"', b'"\xc0\xaf"'),  # overlong
    _CLEAN.replace(b'"r"', b'"\xed\xa0\x80"'),  # an encoded surrogate
    _CLEAN.replace(b'"r"', b'"\xf4\x90\x80\x80"'),  # above U+10FFFF
    _CLEAN.replace(b'"t"', b'"\xe6\xbc"'),  # cut
    _CLEAN.replace(b'"t"', b'"a\x01"'),  # a control character
    _CLEAN.replace(b'"t"', b'"\\x"'), _CLEAN.replace(b'"t"', b'"\\u12"'),
    _CLEAN.replace(b'"t"', b'"\\ud800"'), _CLEAN.replace(b'"t"', b'"\\uDBFF\\uDFFF"'),
    _CLEAN.replace(b'"t"', b"'t'"), _CLEAN.replace(b'["x"]', b'["x",]'),
    _CLEAN.replace(b'["x"]', b"[1]"), _CLEAN.replace(b'"r"', b"nul"),
    _CLEAN.replace(b", ", b",\x0c"), b"\xef\xbb\xbf" + _CLEAN,  # form feed; a mid-file BOM
    _CLEAN.replace(b'[["0a", "t"], ["0b", "u"]]', b'[["0a", "t", "v"]]'),
    _CLEAN.replace(b'[["0a", "t"], ["0b", "u"]]', b'[["0a"]]'),
])
def test_scanner_defers_what_it_is_not_sure_of(scanner: _scan.Scanner, line: bytes) -> None:
    data = _CLEAN + b"\n" + line + b"\n" + _CLEAN
    assert scanner.scan(data, 1).accepted.tolist() == [True, False, True]


@pytest.mark.parametrize("bad", [
    b'"\xff"', b'"\xed\xa0\x80"', b'"\\ud800"', b'"a\x01"', b'"\\x"', b"nul", b'"t", "u"',
])
def test_deferred_bad_line_is_the_same_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             scanner: _scan.Scanner, bad: bytes) -> None:
    path = tmp_path / "labels.jsonl"
    lines = [_CLEAN] * 300
    lines[211] = _CLEAN.replace(b'"t"', bad)
    path.write_bytes(b"\n".join(lines) + b"\n")
    errors = []
    for use in (True, False):
        with pytest.raises(InputError) as caught:
            _results(path, monkeypatch, use)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "line 212" in errors[0]


def test_no_compiler_reads_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No compiler: no scanner, silently, and the same results through the typed reader."""
    path = tmp_path / "labels.jsonl"
    _write(path, 400, 0.05, seed=9)
    expected = _results(path, monkeypatch, False)
    _scan.scanner.cache_clear()
    try:
        monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
        assert _scan.scanner() is None
        assert _results(path, monkeypatch, True) == expected
        _scan.scanner.cache_clear()
        monkeypatch.delenv("CC")
        monkeypatch.setenv(_scan.SCAN_ENV, "0")
        assert _scan.scanner() is None
    finally:
        _scan.scanner.cache_clear()


def test_scanner_counts_many_short_lines(scanner: _scan.Scanner) -> None:
    """More lines than the first guess (a thirty-second of the bytes, at least 1,024): they
    are counted and scanned again."""
    data = b"\n" * 3000 + _CLEAN + b"\n{}\n" + _CLEAN
    found = scanner.scan(data, 1)
    assert found.n_lines == 3003 and found.starts.tolist()[-1] == len(data)
    assert [i for i, a in enumerate(found.accepted) if a] == [3000, 3002]
    assert found.ids == ["r", "r"] and found.counts.tolist() == [[2, 3, 2, 1, 1]] * 2


_PIECES = [b",", b"]", b"[", b'"', b"\\", b"u", b"d", b"0", b" ", b"\t", b"\r", b"\x00", b"\x1f",
           b"\x7f", b"\x80", b"\xc3", b"\xa9", b"\xed", b"\xf4", b"\xff", b"null", b"{", b"}",
           b":", b"\\u00", b"\\ud83d", b'"id"', b"1", b"\xef\xbb\xbf", b"\\n"]


def _mutate(rng: random.Random, line: bytes) -> bytes:
    b = bytearray(line)
    for _ in range(rng.choice([1, 1, 2, 3])):
        i, k = rng.randrange(len(b)), rng.random()
        if k < 0.4:
            b[i:i] = rng.choice(_PIECES)
        elif k < 0.7:
            del b[i]
        elif k < 0.85:
            b[i] = rng.randrange(256)
        else:
            j = rng.randrange(len(b) + 1)
            b[i:i] = b[min(i, j):max(i, j)][:40]
    return bytes(b).replace(b"\n", b" ")


def test_scanner_accepts_only_what_msgspec_takes_clean(scanner: _scan.Scanner) -> None:
    """Fuzzed lines (bytes inserted, deleted, changed, repeated): every line the scanner
    accepts is one msgspec's typed decoder takes as a clean row, with the same counts and id.
    (450,000 such lines were checked the same way once, against json.loads too.)"""
    rng = random.Random(26)
    decode = _fast._decoder().decode_lines
    taken = 0
    for i in range(4000):
        line = _mutate(rng, _dump(rng, _row(rng, i)).encode())
        found = scanner.scan(line, 1)
        if not (found.n_lines == 1 and found.accepted[0]):
            continue
        taken += 1
        label = decode(line)[0]  # raises if msgspec refuses what the scanner took
        rel, util = label.all_relevant_sentence_keys, label.all_utilized_sentence_keys
        counts = [sum(map(len, label.documents_sentences)), len(rel), len(util),
                  len(set(rel) & set(util)) if rel else 0,
                  len(label.unsupported_response_sentence_keys)]
        rid = label.id if label.id and not label.id.isspace() else "line-1"
        assert (found.counts[0].tolist(), found.ids[0]) == (counts, rid), line
    assert taken > 250  # mutations inside texts keep many lines clean (297 with this seed)


def test_scanner_tells_keys_apart_past_their_first_seven_bytes(scanner: _scan.Scanner
                                                                ) -> None:
    """Relevant and utilized keys are matched by a fingerprint (length, first seven bytes),
    then byte by byte: keys of 7, 8, 255, 256 and 300 bytes that share a prefix, and repeats,
    give the counts of Python's sets."""
    rng = random.Random(7)
    stems = ["abcdefg", "abcdefgh", "abcdefgi", "é" * 4, "x" * 255, "x" * 256, "x" * 254 + "y",
             "x" * 300, "x" * 299 + "z", "x" * 300 + "é", "s", "t"]
    lines, expected = [], []
    for i in range(300):
        rel = rng.choices(stems, k=rng.randint(0, 8))
        util = rng.choices(stems, k=rng.randint(0, 8))
        lines.append(json.dumps({"id": f"k{i}", "documents_sentences": [[["s", "x"]]],
                                 "all_relevant_sentence_keys": rel,
                                 "all_utilized_sentence_keys": util,
                                 "unsupported_response_sentence_keys": []},
                                ensure_ascii=False))
        expected.append([1, len(rel), len(util), len(set(rel) & set(util)) if rel else 0, 0])
    found = scanner.scan(("\n".join(lines) + "\n").encode(), 1)
    assert found.accepted.all()
    assert found.counts.tolist() == expected


def test_a_built_library_is_found_again_without_running_a_process(tmp_path, monkeypatch):
    """The compiler's version and the platform (in the library's digest) are kept beside the
    built libraries while the compiler's file, Python's and the kernel are the same: finding
    the scanner again starts no process (it cost some 25 ms a run), with the same digest."""
    import subprocess

    from ragmeter._util import _cbuild

    if _cbuild.compiler() is None:
        pytest.skip("no C compiler")
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path / "home"))
    commands = lambda cc, out: [[cc, *_scan.FLAGS, "-o", out, str(_scan.SOURCE)]]  # noqa: E731
    first = _cbuild.build_library("t-scan", [_scan.SOURCE.read_bytes()], commands, _scan.FLAGS)
    kept = list((tmp_path / "home" / "compilers").glob("*.json"))
    assert len(kept) == 1

    def no_process(*args, **kwargs):
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setattr(subprocess, "run", no_process)
    assert _cbuild.build_library("t-scan", [_scan.SOURCE.read_bytes()], commands,
                                 _scan.FLAGS) == first
    # a compiler file that changed (here: the record of it) is asked again
    record = json.loads(kept[0].read_text(encoding="utf-8"))
    record["stamp"][0][2] += 1
    kept[0].write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(AssertionError, match="a process was started"):
        _cbuild.build_library("t-scan", [_scan.SOURCE.read_bytes()], commands, _scan.FLAGS)
