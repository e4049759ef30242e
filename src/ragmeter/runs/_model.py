"""The pydantic model of a run record (see :mod:`ragmeter.runs._records`), in its own module so that
writing a record needs no pydantic; ``ragmeter.runs._records.RunRecord`` is this class."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ragmeter._version import __version__
from ragmeter.runs._types import RUN_SCHEMA_VERSION, InputFile

__all__ = ["RunRecord"]


class RunRecord(BaseModel):
    """The stored results of one run (schema_version 1).  Unknown fields are kept."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = RUN_SCHEMA_VERSION
    run_id: str
    family: str
    created_at: str
    ragmeter_version: str = __version__
    command: list[str] = Field(default_factory=list)
    inputs: list[InputFile] = Field(default_factory=list)
    backends: list[Any] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    prompt_versions: dict[str, str] = Field(default_factory=dict)
    signature: str | None = None
    result: dict[str, Any] = Field(default_factory=dict)
    items: list[dict[str, Any]] = Field(default_factory=list)
    items_total: int = 0
    items_unscored: int = 0
    items_truncated: bool = False
    notes: list[str] = Field(default_factory=list)

    _path: Path | None = PrivateAttr(default=None)

    @property
    def path(self) -> Path | None:
        """The file this record was written to or read from."""
        return self._path

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def __repr__(self) -> str:
        # One line naming the record and where it lies; pydantic's default repr would print
        # every stored item (a ~120 KB line in a notebook after ``result.save()``, issue 25).
        where = f", path={str(self._path)!r}" if self._path is not None else ""
        return (f"RunRecord(run_id={self.run_id!r}, family={self.family!r}{where}, "
                f"items={self.items_total}, unscored={self.items_unscored})")

    __str__ = __repr__
