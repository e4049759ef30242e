"""Sample data that ships with ragmeter (written by the ragmeter authors, Apache-2.0)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ragmeter.errors import UnknownNameError

__all__ = ["sample_path", "list_samples"]


def list_samples() -> list[str]:
    root = resources.files("ragmeter") / "data" / "samples"
    return sorted(p.name for p in root.iterdir() if p.is_file())


def sample_path(name: str) -> Path:
    """Path of a built-in sample file."""
    root = resources.files("ragmeter") / "data" / "samples"
    target = root / name
    if not target.is_file():
        raise UnknownNameError("sample", name, list_samples())
    return Path(str(target))
