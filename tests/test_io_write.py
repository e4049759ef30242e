"""Atomic writers: whole files only, ordinary permissions (not mkstemp's 0600)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ragmeter.io import write_bytes, write_json, write_jsonl, write_text


@pytest.mark.parametrize("writer", [
    lambda p: write_json(p, {"a": 1}),
    lambda p: write_jsonl(p, [{"a": 1}]),
    lambda p: write_text(p, "<html></html>"),
    lambda p: write_bytes(p, b"\x89PNG"),
])
def test_written_with_umask_permissions(tmp_path: Path, writer) -> None:
    old = os.umask(0o022)
    try:
        target = tmp_path / "sub" / "out"
        writer(target)
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in target.parent.iterdir()] == ["out"]  # no temporary left behind


def test_failed_write_keeps_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    write_text(target, "old\n")

    def rows():
        yield {"a": 1}
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_jsonl(target, rows())
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]
