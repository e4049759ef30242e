"""jsonl_blocks and jsonl_views (one reused buffer): whole lines in order, their numbers, the
byte-order mark of line 1 dropped, a line over the limit refused at its place."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ragmeter.io import LongLine, jsonl_blocks, jsonl_views


def _lines(rng: random.Random, n: int) -> list[bytes]:
    return [b"x" * rng.choice([0, 1, 5, 40, 300]) + (b" \xc3\xa9" if i % 7 == 0 else b"")
            for i in range(n)]


@pytest.mark.parametrize("size", [4, 7, 64, 1000, 1 << 20])  # 4: the mark in one read
@pytest.mark.parametrize(("bom", "last_newline"), [(False, True), (True, False)])
def test_blocks_are_the_file_lines(tmp_path: Path, size: int, bom: bool,
                                   last_newline: bool) -> None:
    rng = random.Random(size)
    lines = _lines(rng, 400)
    path = tmp_path / "rows.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines)
                     + (b"\n" if last_newline else b""))
    got, number = [], 1
    for first, data, n_lines in jsonl_blocks(path, size):
        assert first == number and n_lines == data.count(b"\n") + (not data.endswith(b"\n"))
        got.extend(data.split(b"\n")[:n_lines])
        number += n_lines
    assert got == lines
    views = [(first, view.tobytes(), n) for first, view, n in jsonl_views(path, size)]
    assert views == list(jsonl_blocks(path, size))
    counted = list(jsonl_views(path, size, lines=lambda v: v.tobytes().count(b"\n") + 100))
    assert counted[0][2] == views[0][2] + 100  # the line counter given is used


def test_long_line_is_refused_at_its_number(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMETER_MAX_LINE_MB", "1")
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"a\nb\n" + b"c" * (1 << 20) + b"x\nd\n")
    seen = []
    with pytest.raises(LongLine) as caught:
        for first, data, _ in jsonl_blocks(path, 4096):
            seen.append((first, data))
    assert caught.value.line == 3 and seen == [(1, b"a\nb\n")]
