"""Built-in samples: files that ship, and the multilingual sample written out on first use."""

from __future__ import annotations

import json

import pytest

from ragmeter.errors import UnknownNameError
from ragmeter.io._samples import list_samples, multilingual_sample_rows, sample_path


def test_multilingual_sample_materialized_once_and_stable(_isolated_home) -> None:
    path = sample_path("multilingual_answers.jsonl")
    assert path.parent == _isolated_home / "samples"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows == multilingual_sample_rows()
    assert len(rows) == 36 and {r["system"] for r in rows} == {"direct", "retrieve", "bridge"}
    assert len({r["sample_lang"] for r in rows}) == 12
    mtime = path.stat().st_mtime_ns
    assert sample_path("multilingual_answers.jsonl") == path
    assert path.stat().st_mtime_ns == mtime  # unchanged content is not rewritten


def test_unknown_sample_suggests() -> None:
    assert "multilingual_answers.jsonl" in list_samples()
    with pytest.raises(UnknownNameError, match="Did you mean: multilingual_answers.jsonl"):
        sample_path("multilingual_answer.jsonl")
