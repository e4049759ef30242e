"""Per-item results held as columns, for run records that cost little (issue 14).

A family whose items all have the same keys (``multilingual score``: ids and per-row scores)
hands :func:`ragmeter.runs._records.write_run` an :class:`ItemColumns` instead of one dict per item.
The record keeps the same items as before (every unscored item first, then an evenly spaced
sample of the scored ones, :func:`scored_positions`) and writes the same file; only the
items it keeps are ever built, as tuples, never as dicts.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ItemColumns", "ItemPart", "KeptItems", "scored_positions"]


@dataclass(frozen=True)
class ItemPart:
    """``n`` scored items with the same ``keys``; ``rows(positions)`` gives the value tuples
    of the items at those positions (0-based, ascending), in that order."""

    keys: tuple[str, ...]
    n: int
    rows: Callable[[Sequence[int]], list[tuple[Any, ...]]]


@dataclass(frozen=True)
class ItemColumns:
    """The items of a result: ``parts`` of scored items in item order, then ``unscored``
    dicts (their order is the family's ``iter_items`` order)."""

    parts: Sequence[ItemPart]
    unscored: Sequence[Mapping[str, Any]] = field(default_factory=list)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Every item as a dict, in item order (what the family's ``iter_items`` yields)."""
        for part in self.parts:
            for start in range(0, part.n, 4096):
                for row in part.rows(range(start, min(part.n, start + 4096))):
                    yield dict(zip(part.keys, row, strict=True))
        for item in self.unscored:
            yield dict(item)


@dataclass(frozen=True)
class KeptItems:
    """The items a record keeps: ``unscored`` dicts first, then ``scored`` as ``(keys,
    rows)`` runs, in item order."""

    unscored: list[dict[str, Any]]
    scored: list[tuple[tuple[str, ...], list[tuple[Any, ...]]]]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        yield from self.unscored
        for keys, rows in self.scored:
            for row in rows:
                yield dict(zip(keys, row, strict=True))

    def __len__(self) -> int:
        return len(self.unscored) + sum(len(rows) for _, rows in self.scored)


def scored_positions(n_scored: int, room: int, max_items: int) -> Sequence[int]:
    """Positions of the scored items a record keeps: the choice of
    :func:`ragmeter.runs._records._cap_items`, computed from the counts alone (it never looks at an
    item).  That pass keeps every ``stride``-th item, doubling the stride whenever it holds
    more than ``2 * max_items``; it ends with the multiples of the smallest power of two ``s``
    for which ``ceil(n_scored / s) <= 2 * max_items``, and takes ``room`` of those evenly
    spaced.  Tested equal to ``_cap_items`` on many sizes."""
    limit = 2 * max(max_items, 1)
    stride = 1
    while -(-n_scored // stride) > limit:
        stride *= 2
    sample = range(0, n_scored, stride)
    if n_scored <= room:
        return sample
    if room <= 0:
        return []
    step = len(sample) / room
    if room < 4096:
        return [sample[int(i * step)] for i in range(room)]
    import numpy as np  # the same float products, truncated the same way, in one pass

    picked = (np.arange(room, dtype=np.float64) * step).astype(np.int64)
    return (sample.start + picked * sample.step).tolist()  # type: ignore[no-any-return]


def keep_items(columns: ItemColumns, max_items: int) -> tuple[KeptItems, int, int, bool]:
    """:func:`ragmeter.runs._records._cap_items` for columns: ``(kept, total, n_unscored,
    truncated)``, building only the kept items."""
    n_unscored = len(columns.unscored)
    unscored = [dict(i) for i in columns.unscored[:max_items]]
    n_scored = sum(p.n for p in columns.parts)
    positions = scored_positions(n_scored, max_items - len(unscored), max_items)
    scored: list[tuple[tuple[str, ...], list[tuple[Any, ...]]]] = []
    start = 0
    for part in columns.parts:
        stop = start + part.n
        chosen = positions[bisect_left(positions, start):bisect_left(positions, stop)]
        mine: Sequence[int] = (range(chosen.start - start, chosen.stop - start, chosen.step)
                               if isinstance(chosen, range) else [p - start for p in chosen])
        if len(mine):
            scored.append((part.keys, part.rows(mine)))
        start = stop
    total = n_unscored + n_scored
    kept = KeptItems(unscored, scored)
    return kept, total, n_unscored, len(kept) < total
