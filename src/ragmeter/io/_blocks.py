"""Whole lines of a JSON Lines file by blocks, for the readers that decode many lines in one
call (``multilingual score``'s Arrow path, ``trace score``'s scanner and typed reader), and the
input's SHA-256 taken on the way.

Private to :mod:`ragmeter.io`, which re-exports the public names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from ragmeter.io._formats import max_line_bytes

__all__ = ["LongLine", "jsonl_blocks", "jsonl_views", "read_sha256"]


class LongLine(Exception):
    """A line over :func:`max_line_bytes` (at ``line``) met by :func:`jsonl_blocks`: the row
    reader, read from that line, refuses it with its place."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


def jsonl_blocks(path: Path, size: int = 1 << 20) -> Iterator[tuple[int, bytes, int]]:
    """``(first line number, data, number of lines)`` for whole lines of a file, about
    ``size`` bytes at a time (for readers that decode many lines in one call), holding at most
    one bounded line besides; the byte-order mark of line 1 dropped, as the JSON Lines reader
    does.  A line over :func:`max_line_bytes` raises :class:`LongLine` (no row of it or after
    it is given)."""
    for first, view, n_lines in jsonl_views(path, size):
        yield first, view.tobytes(), n_lines


_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}


def _file_key(path: Path, st: os.stat_result) -> tuple[str, int, int, int, int]:
    return (str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_sha256(path: str | Path) -> str | None:
    """The SHA-256 of ``path`` as :func:`jsonl_views` (``sha256=True``) found it reading the
    whole file, when the file is still the one it read (device, inode, size, modification
    time); None otherwise."""
    if not _DIGESTS:
        return None
    p = Path(path)
    try:
        return _DIGESTS.get(_file_key(p, p.stat()))
    except OSError:
        return None


def jsonl_views(path: Path, size: int = 1 << 20,
                lines: Callable[[memoryview], int] | None = None, sha256: bool = False
                ) -> Iterator[tuple[int, memoryview, int]]:
    """The blocks of :func:`jsonl_blocks` as views of one buffer, reused: a view is valid
    until the next block is asked for (no new buffer a block: allocating a fresh megabyte
    for every block cost more than reading the file).  ``lines(view)`` counts a block's
    lines when given (the newlines, and one more for a last line without): it is called once
    for each block, in order, just before the block is given.  ``sha256``: hash the bytes as
    they are read, for :func:`read_sha256` once the whole file is read unchanged (a run
    record's hash of its input then costs no second read)."""
    limit = max_line_bytes()
    size = min(size, limit)  # a line inside one read is then within the limit
    first = 1
    buf = bytearray(2 * size)
    held = 0  # the bytes at the start of buf carried over: a line begun
    with path.open("rb") as fh:
        if sha256:
            import hashlib

            digest, before = hashlib.sha256(), os.fstat(fh.fileno())
        while True:
            if len(buf) < held + size:  # a long line: a larger buffer (views may hold buf)
                grown = bytearray(max(2 * len(buf), held + size))
                grown[:held] = buf[:held]
                buf = grown
            got = fh.readinto(memoryview(buf)[held:held + size])
            if sha256:
                digest.update(memoryview(buf)[held:held + got])
                if not got:
                    after = os.fstat(fh.fileno())
                    if _file_key(path, after) == _file_key(path, before):
                        if len(_DIGESTS) >= 64:  # a long-lived process (the web app)
                            del _DIGESTS[next(iter(_DIGESTS))]
                        _DIGESTS[_file_key(path, after)] = digest.hexdigest()
            if first == 1 and not held and buf.startswith(b"\xef\xbb\xbf", 0, got):
                buf[:got - 3] = buf[3:got]
                got -= 3
            if not got:
                n, held = held, 0
            else:
                end = buf.rfind(b"\n", held, held + got)
                if end < 0:
                    held += got
                    if held > limit:
                        raise LongLine(first)
                    continue
                n = end + 1
                if buf.find(b"\n", 0, n) + 1 > limit:  # the first line began in earlier reads
                    raise LongLine(first)
            if not n:
                return
            view = memoryview(buf)[:n]
            n_lines = lines(view) if lines is not None else \
                buf.count(b"\n", 0, n) + (buf[n - 1] != 0x0A)
            yield first, view, n_lines
            first += n_lines
            if got:
                rest = held + got - n
                buf[:rest] = buf[n:n + rest]
                held = rest
