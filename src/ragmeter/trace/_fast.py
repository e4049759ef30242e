"""A typed reader for clean JSON Lines label files (``trace score``, issue 26.3).

A label file holds, per line, ``documents_sentences`` (lists of ``[key, text]`` pairs),
``all_relevant_sentence_keys``, ``all_utilized_sentence_keys`` and
``unsupported_response_sentence_keys`` (the three may be null), and optionally ``id``.  Such
lines are decoded a block of lines at a time by msgspec against that exact shape
(:class:`_Label`): parsed and validated in C, no dict per row.  The texts are checked to be
strings and dropped; scoring needs only their count.

Anything else falls back to the row reader for its block of lines (:func:`ragmeter.io.jsonl_row`
then :func:`ragmeter.trace._data.parse_label_row`, exactly as without this module): a field
outside that shape (``status``, ``judge``, ``sentence_support_information``, any other), a
value of another type (a number id, a sentence given as an object), blank lines, invalid JSON
or UTF-8, a byte-order mark or a ``\\uD8xx`` escape.  So every problem is reported as before,
with its file, line and field, and the numbers are the same (tests compare both paths).

Before msgspec, the C scanner of :mod:`ragmeter.trace._scan` reads each block when a compiler
built it: a line of exactly the clean shape is counted there without making any text, every
other line goes the way above (tests compare the three readers).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError
from ragmeter.io import (
    LongLine,
    Row,
    detect_format,
    iter_rows,
    jsonl_blocks,
    jsonl_row,
    jsonl_views,
)
from ragmeter.io._spill import EncodedLines
from ragmeter.trace._data import COMPONENT

__all__ = ["LabelBlock", "fast_jsonl", "iter_label_blocks"]

_BLOCK = 1 << 20  # bytes read at a time (the lines of one block are decoded in one call)
_GROUP = 64  # lines: a block the decoder does not take is tried again by groups


def fast_jsonl(path: Any) -> bool:
    """Whether :func:`iter_label_blocks` can read ``path``: a JSON Lines file, with msgspec
    installed."""
    if not isinstance(path, (str, Path)):
        return False
    p = Path(path)
    try:
        if detect_format(p) != "jsonl" or not p.is_file():
            return False
    except (InputError, OSError):
        return False
    from importlib.util import find_spec

    return find_spec("msgspec") is not None  # imported when a line needs it (not by the scan)


@dataclass(frozen=True)
class LabelBlock:
    """Consecutive clean rows: their ids (a blank or missing one as ``line-<number>``, as
    :func:`~ragmeter.trace._data.row_id` names it), line numbers, and ``counts``: ``(rows,
    5)`` int64, per row the number of document sentences (never 0), relevant keys, utilized
    keys, distinct relevant keys that are also utilized, and unsupported keys."""

    ids: list[str] | EncodedLines  # encoded: as the C scanner wrote them
    numbers: range
    counts: Any


@functools.cache
def _decoder() -> Any:
    """msgspec's decoder of a clean label line (made at first use: msgspec is imported only
    here, and not at all when the C scanner takes every line)."""
    import msgspec

    sentence = msgspec.defstruct("Sentence", [("key", str), ("text", str)], array_like=True,
                                 forbid_unknown_fields=True)
    keys = list[str] | None
    label = msgspec.defstruct("Label", [
        ("documents_sentences", list[list[sentence]] | None),  # type: ignore[valid-type]
        ("all_relevant_sentence_keys", keys), ("all_utilized_sentence_keys", keys),
        ("unsupported_response_sentence_keys", keys), ("id", str | None, None),
    ], forbid_unknown_fields=True)
    return msgspec.json.Decoder(label)


def _decode(data: bytes) -> Any:
    """The clean label lines of ``data`` (msgspec's typed decode: raises on any other)."""
    return _decoder().decode_lines(data)


def _lines(data: bytes, path: Path, first: int) -> Iterator[Row]:
    """The row reader over the lines of ``data`` (line ``first`` onwards)."""
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    for i, raw in enumerate(lines):
        row = jsonl_row(raw, path, first + i, COMPONENT)
        if row is not None:
            yield row


def _block(decode: Any, data: bytes, path: str, first: int, n_lines: int
           ) -> list[LabelBlock | Row] | None:
    """The rows of ``data`` (``n_lines`` whole lines, from line ``first``): runs of clean
    rows as :class:`LabelBlock`, the others (null documents or keys, no document sentence)
    as :class:`Row` for :func:`~ragmeter.trace._data.parse_label_row`; None when the row
    reader must read the lines (see module docstring)."""
    import msgspec

    # one memchr first: the two searches alone cost 0.9 us a row, on text with no backslash
    if b"\\" in data and (b"\\ud" in data or b"\\uD" in data):
        return None  # a lone surrogate is refused by the row reader (never read as one)
    try:
        labels = decode(data)
    except (msgspec.DecodeError, ValueError):  # ValidationError is a DecodeError
        return None
    if len(labels) != n_lines:  # blank lines: the numbers would not be the lines'
        return None
    docs = [lb.documents_sentences for lb in labels]
    n = [sum(map(len, d)) if d is not None else 0 for d in docs]
    rel = [lb.all_relevant_sentence_keys for lb in labels]
    util = [lb.all_utilized_sentence_keys for lb in labels]
    unsup = [lb.unsupported_response_sentence_keys for lb in labels]
    if 0 not in n and None not in rel and None not in util and None not in unsup:
        return [_label_block(labels, range(first, first + n_lines), n, rel, util, unsup)]
    out: list[LabelBlock | Row] = []
    run = 0  # start of the current run of clean rows
    for i in range(n_lines + 1):
        if i < n_lines and n[i] and rel[i] is not None and util[i] is not None \
                and unsup[i] is not None:
            continue
        if i > run:
            out.append(_label_block(labels[run:i], range(first + run, first + i), n[run:i],
                                    rel[run:i], util[run:i], unsup[run:i]))
        if i < n_lines:  # the row as the row reader gives it (the same fields and values)
            lb = labels[i]
            fields = {"documents_sentences": None if docs[i] is None else
                      [[[s.key, s.text] for s in d] for d in docs[i]],
                      "all_relevant_sentence_keys": rel[i],
                      "all_utilized_sentence_keys": util[i],
                      "unsupported_response_sentence_keys": unsup[i]}
            out.append(Row({"id": lb.id, **fields} if lb.id is not None else fields,
                           first + i, "line", path))
        run = i + 1
    return out


def _label_block(labels: list[Any], numbers: range, n: list[int], rel: list[list[str]],
                 util: list[list[str]], unsup: list[list[str]]) -> LabelBlock:
    """The block of decoded clean rows ``labels``: their ids and counts."""
    import numpy as np

    ids = [lb.id if lb.id and not lb.id.isspace() else f"line-{number}"  # row_id's blank ids
           for lb, number in zip(labels, numbers, strict=True)]
    counts = np.empty((len(n), 5), dtype=np.int64)
    counts[:, 0] = n
    counts[:, 1] = np.fromiter(map(len, rel), dtype=np.int64, count=len(rel))
    counts[:, 2] = np.fromiter(map(len, util), dtype=np.int64, count=len(util))
    counts[:, 3] = np.fromiter((len(set(r).intersection(u)) if r else 0
                                for r, u in zip(rel, util, strict=True)), dtype=np.int64,
                               count=len(rel))
    counts[:, 4] = np.fromiter(map(len, unsup), dtype=np.int64, count=len(unsup))
    return LabelBlock(ids, numbers, counts)


def iter_label_blocks(path: str | Path) -> Iterator[LabelBlock | Row]:
    """The file's rows in order: :class:`LabelBlock` for blocks of clean lines, :class:`Row`
    (the row reader's) for the others.  Lines the C scanner (:mod:`ragmeter.trace._scan`)
    accepts are counted there; the others (or all, without it) are decoded by msgspec."""
    from ragmeter.trace._scan import scanner

    p = Path(path)
    scan = scanner()
    try:
        if scan is None:
            for first, data, n_lines in jsonl_blocks(p, _BLOCK):
                yield from _read(_decode, data, p, first, n_lines)
        else:
            yield from _scanned_file(scan, _decode, p)
    except LongLine as long:  # the row reader refuses it with its place
        yield from _from_line(p, long.line)


def _scanned_file(scan: Any, decode: Any, path: Path) -> Iterator[LabelBlock | Row]:
    """The file's rows, each block scanned as it is counted (the scan gives its lines)."""
    found: Any = None
    after = 1  # the first line of the next block
    work: dict[str, Any] = {}  # the scanner's buffers, reused block after block

    def count(view: memoryview) -> int:
        nonlocal found, after
        found = scan.scan(view, after, work)
        after += found.n_lines
        return int(found.n_lines)

    for first, view, _ in jsonl_views(path, _BLOCK, count, sha256=True):
        yield from _scanned(found, decode, view, path, first)


def _scanned(found: Any, decode: Any, data: memoryview, path: Path, first: int
             ) -> Iterator[LabelBlock | Row]:
    """The rows of ``data`` as the scanner ``found`` them: runs of lines it accepts as
    :class:`LabelBlock`, the runs between them read by :func:`_read` (from a copy: ``data``
    is reused)."""
    import numpy as np

    n_lines = found.n_lines
    accepted = found.accepted
    if len(found.counts) == n_lines:
        yield LabelBlock(found.encoded_ids() or found.ids, range(first, first + n_lines),
                         found.counts)
        return
    edges = [0, *(np.flatnonzero(accepted[1:] != accepted[:-1]) + 1).tolist(), n_lines]
    k = 0  # accepted lines so far
    for i, j in zip(edges, edges[1:], strict=False):
        if accepted[i]:
            yield LabelBlock(found.ids[k:k + j - i], range(first + i, first + j),
                             found.counts[k:k + j - i])
            k += j - i
        else:
            yield from _read(decode, data[found.starts[i]:found.starts[j]].tobytes(), path,
                             first + i, j - i)


def _read(decode: Any, data: bytes, path: Path, first: int, n_lines: int
          ) -> Iterator[LabelBlock | Row]:
    """The rows of ``data``: decoded whole, else by groups of :data:`_GROUP` lines (a line
    the decoder does not take sends only its group to the row reader)."""
    block = _block(decode, data, str(path), first, n_lines)
    if block is not None:
        yield from block
        return
    if n_lines <= _GROUP:
        yield from _lines(data, path, first)
        return
    lines = data.split(b"\n")
    for start in range(0, n_lines, _GROUP):
        group = lines[start:start + _GROUP]
        part = b"\n".join(group) + (b"\n" if start + _GROUP < len(lines) else b"")
        n = min(_GROUP, n_lines - start)
        block = _block(decode, part, str(path), first + start, n)
        if block is None:
            yield from _lines(part, path, first + start)
        else:
            yield from block


def _from_line(path: Path, first: int) -> Iterator[Row]:
    """The row reader from line ``first`` on (it refuses an over-long line with its place)."""
    for row in iter_rows(path, component=COMPONENT):
        if row.number >= first:
            yield row
