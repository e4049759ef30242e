"""The signature of a number: every setting that produced it (sacrebleu's signatures).

A plain frozen dataclass, so that scoring a file needs no pydantic at import
(``ragmeter.runs._schema.Signature`` is this same class).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmeter._version import __version__

__all__ = ["Signature"]


@dataclass(frozen=True)
class Signature:
    """Everything that produced a number, rendered like sacrebleu's signatures.

    Two numbers are comparable only when their signatures are equal.
    """

    family: str
    metric_version: str
    settings: dict[str, str] = field(default_factory=dict)
    ragmeter_version: str = __version__

    def render(self) -> str:
        parts = [f"family:{self.family}", f"metrics:{self.metric_version}"]
        parts += [f"{k}:{v}" for k, v in sorted(self.settings.items())]
        parts.append(f"ragmeter:{self.ragmeter_version}")
        return "|".join(parts)

    @classmethod
    def make(cls, family: str, metric_version: str, settings: Mapping[str, Any]) -> Signature:
        return cls(family=family, metric_version=metric_version,
                   settings={k: str(v) for k, v in settings.items() if v is not None})
