"""Records that cross module boundaries: per-item results, coverage, summaries, signatures.

Stored records carry ``schema_version`` so that old files stay readable.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.signature import Signature

__all__ = ["ItemResult", "Coverage", "MetricSummary", "Signature", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1


class ItemResult(BaseModel):
    """The result of one item: scored (``ok``) or explicitly ``unscored`` with a reason.

    ``values`` holds the metric values of a scored item; an unscored item has none and its
    ``reason`` is a short code (``parse_error``, ``timeout``, ``http_429``, ``missing_prediction``)
    with ``detail`` for humans.  Aggregates skip unscored items and count them.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    status: Literal["ok", "unscored"] = "ok"
    reason: str | None = None
    detail: str | None = None
    group: str | None = None
    values: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def unscored(cls, id: str, reason: str, detail: str | None = None,
                 group: str | None = None) -> ItemResult:
        return cls(id=id, status="unscored", reason=reason, detail=detail, group=group)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Coverage(BaseModel):
    """How many items an aggregate covers, and why the others are not scored."""

    total: int
    scored: int
    unscored: int
    reasons: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def of(cls, items: Iterable[ItemResult]) -> Coverage:
        items = list(items)
        reasons = Counter(i.reason or "unknown" for i in items if not i.ok)
        scored = sum(1 for i in items if i.ok)
        return cls(total=len(items), scored=scored, unscored=len(items) - scored,
                   reasons=dict(sorted(reasons.items())))


class MetricSummary(BaseModel):
    """An aggregate of one metric: mean, sample std, item count and optional 95% CI."""

    mean: float | None
    std: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None


