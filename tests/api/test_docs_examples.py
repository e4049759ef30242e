"""Every ``python`` block of docs/python.md runs as written (issue 13: one runnable example per
family, executed by the test suite)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index: int, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pandas")
    exec(compile(BLOCKS[index], f"docs/python.md block {index + 1}", "exec"), {})
