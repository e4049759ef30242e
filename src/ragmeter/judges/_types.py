"""Types that every judged verb shares (in their own module: nothing here imports a verb)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Answer"]


@dataclass(frozen=True)
class Answer:
    """One answer to judge, with the columns to carry into the output."""

    id: str
    question: str
    reference: str
    response: str | None  # None: no answer (unscored, not judged)
    extra: dict[str, Any] = field(default_factory=dict)
