"""The run records' shared types: the schema version and :class:`InputFile` (in their own module
so that the record writer and the pydantic model share them without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["RUN_SCHEMA_VERSION", "InputFile"]

RUN_SCHEMA_VERSION = 1


@dataclass
class InputFile:
    """One data file a run read: its path as given, SHA-256 of its bytes, and row count."""

    path: str
    sha256: str | None = None
    rows: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "rows": self.rows}

    @classmethod
    def of(cls, path: str | Path, rows: int | None = None) -> InputFile:
        """Hash ``path`` (streamed); a missing file gets ``sha256=None``."""
        from ragmeter.io import read_sha256

        p = Path(path)
        digest: str | None = read_sha256(p)  # hashed as it was read, the file unchanged since
        if digest is None and p.is_file():
            import hashlib

            h = hashlib.sha256()
            with p.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            digest = h.hexdigest()
        return cls(path=str(path), sha256=digest, rows=rows)
