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


def test_views_hash_the_file_as_read(tmp_path: Path) -> None:
    """sha256=True: the file's SHA-256 (its byte-order mark included) once read whole, and
    only while the file is unchanged; InputFile (run records) takes it from there."""
    import hashlib
    import os

    from ragmeter.io import read_sha256
    from ragmeter.runs._types import InputFile

    path = tmp_path / "rows.jsonl"
    data = b"\xef\xbb\xbf" + b"\n".join(_lines(random.Random(1), 300)) + b"\nlast"
    path.write_bytes(data)
    first = next(iter(jsonl_views(path, 64, sha256=True)))
    assert first[0] == 1 and read_sha256(path) is None  # not read whole
    for _ in jsonl_views(path, 64):
        pass
    assert read_sha256(path) is None  # not asked to hash
    for _ in jsonl_views(path, 64, sha256=True):
        pass
    assert read_sha256(path) == hashlib.sha256(data).hexdigest()
    assert InputFile.of(path).sha256 == hashlib.sha256(data).hexdigest()
    path.write_bytes(data + b"\nmore")
    os.utime(path, ns=(1, 1))
    assert read_sha256(path) is None  # changed since
    assert InputFile.of(path).sha256 == hashlib.sha256(data + b"\nmore").hexdigest()


def test_views_keep_the_last_64_digests(tmp_path: Path) -> None:
    from ragmeter.io import read_sha256

    paths = []
    for i in range(70):
        path = tmp_path / f"rows{i}.jsonl"
        path.write_bytes(b"{}\n" * (i + 1))
        for _ in jsonl_views(path, sha256=True):
            pass
        paths.append(path)
    assert read_sha256(paths[0]) is None and read_sha256(paths[-1]) is not None
