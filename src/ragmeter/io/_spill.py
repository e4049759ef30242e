"""Columns that move to a temporary file past a size, so that a scorer's memory does not grow
with its rows (issue 26.3).

* :class:`NumberColumn`: numbers of one ``array`` type code, appended in order, read back by
  range, by chunk or at chosen positions;
* :class:`TextColumn`: strings, the same way;
* :class:`KeyedRecords`: rows keyed by a string (a sample id) with a few float fields, handed
  back grouped so that every row of one key comes in the same group (hash partitions on disk):
  what pairing rows by key and finding duplicate keys need, in bounded memory;
* :class:`Scatter`: float fields written at positions in any order, read back as columns in
  position order.

Each keeps up to :data:`SPILL_AT` values in memory; past that, whole blocks go to files in one
temporary directory per :class:`SpillDir` (under ``$TMPDIR``), removed when it is closed or
collected.  Small inputs never touch the disk nor import numpy.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import IO, Any

__all__ = ["SPILL_AT", "SpillDir", "NumberColumn", "TextColumn", "EncodedLines", "KeyedRecords",
           "RawKeys",
           "Scatter"]

SPILL_AT = 1 << 14
"""Values a column holds in memory before it writes them to its file."""

KEY_BLOCKS = 8
""":class:`KeyedRecords` holds ``SPILL_AT * KEY_BLOCKS`` rows (some 10 MiB) before it
partitions them to its file: fewer, bigger writes (one per partition, every bucket in it)."""

BUCKETS = 256
"""Hash partitions of :class:`KeyedRecords` once on disk (each holds rows / 256: 40,000 rows
for 10 million, what :meth:`KeyedRecords.groups` holds in memory at a time)."""

_ENC = "surrogatepass"  # JSON may carry lone surrogates: keep them through the file


class SpillDir:
    """The temporary directory of some columns, created on first use, removed by
    :meth:`close` or when collected (``tempfile.TemporaryDirectory``'s finalizer)."""

    def __init__(self) -> None:
        self._tmp: Any = None  # a tempfile.TemporaryDirectory (imported when first needed)
        self._count = 0

    def new_file(self) -> IO[bytes]:
        if self._tmp is None:
            import tempfile

            _more_files()
            self._tmp = tempfile.TemporaryDirectory(prefix="ragmeter-spill-",
                                                    ignore_cleanup_errors=True)
        self._count += 1
        return open(Path(self._tmp.name) / f"{self._count}.bin", "w+b")  # noqa: SIM115

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def _more_files() -> None:
    """Raise this process's soft limit of open files to its hard limit: each spilled column
    keeps its file open (a dozen per system, one for the key partitions)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):  # no resource module (Windows), or not allowed
        pass


def _sparse(positions: Sequence[int], n: int) -> bool:
    """Whether reading ``positions`` one by one beats reading everything in chunks."""
    return len(positions) * 64 < n


class NumberColumn:
    """Numbers of the ``array`` type ``code``, in order; the first values in memory, whole
    blocks of :data:`SPILL_AT` on disk."""

    def __init__(self, code: str, spill: SpillDir) -> None:
        self.code = code
        self._spill = spill
        self._mem = array(code)
        self._file: IO[bytes] | None = None
        self._disk = 0
        self._size = self._mem.itemsize

    def __len__(self) -> int:
        return self._disk + len(self._mem)

    def extend(self, values: Any) -> None:
        """Append ``values``: numbers, an array of this type, or a contiguous numpy array of
        this type (its bytes copied once)."""
        dtype = getattr(values, "dtype", None)
        if dtype is not None and values.flags.c_contiguous \
                and dtype.kind == ("f" if self.code in "fd" else "i") \
                and dtype.itemsize == self._mem.itemsize and dtype.isnative:
            self._mem.frombytes(memoryview(values).cast("B"))
        else:
            self._mem.extend(values)
        if len(self._mem) >= SPILL_AT:
            if self._file is None:
                self._file = self._spill.new_file()
            self._file.seek(0, os.SEEK_END)
            self._mem.tofile(self._file)
            self._disk += len(self._mem)
            self._mem = array(self.code)

    def read(self, start: int, stop: int) -> array:
        """The values at positions ``start`` to ``stop`` (excluded), as an array."""
        stop = min(stop, len(self))
        out = array(self.code)
        if start >= stop:
            return out
        if start < self._disk:
            assert self._file is not None
            self._file.flush()
            self._file.seek(start * self._size)
            end = min(stop, self._disk)
            out.frombytes(self._file.read((end - start) * self._size))
            start = end
        if start < stop:
            out.extend(self._mem[start - self._disk:stop - self._disk])
        return out

    def gather(self, positions: Any) -> Any:
        """The values at ``positions`` (a numpy array of ascending positions) as a numpy
        array: the span they cover read a window of ``64 * SPILL_AT`` values at a time
        (8 MiB), each window indexed in numpy."""
        import numpy as np

        out = np.empty(len(positions), dtype=self.code)
        window = 64 * SPILL_AT
        i = 0
        while i < len(positions):
            start = int(positions[i])
            j = int(np.searchsorted(positions, start + window, side="left"))
            stop = int(positions[j - 1]) + 1
            span = np.empty(stop - start, dtype=self.code)
            on_disk = max(0, min(stop, self._disk) - start)
            if on_disk:  # read straight into the array (one copy)
                assert self._file is not None
                self._file.flush()
                self._file.seek(start * self._size)
                into = span[:on_disk].view(np.uint8)
                if self._file.readinto(into) != on_disk * self._size:  # type: ignore[attr-defined]
                    raise OSError("a spilled column's file is shorter than written")
            if on_disk < len(span):
                span[on_disk:] = self._mem[start + on_disk - self._disk:stop - self._disk]
            out[i:j] = span[positions[i:j] - start]
            i = j
        return out

    def chunks(self, size: int | None = None) -> Iterator[array]:
        size = size or SPILL_AT
        for start in range(0, len(self), size):
            yield self.read(start, start + size)

    def chunks_from(self, first: int) -> Iterator[tuple[int, array]]:
        """``(start, values)`` chunk by chunk from position ``first``."""
        size = SPILL_AT
        for start in range(first, len(self), size):
            yield start, self.read(start, start + size)

    def __iter__(self) -> Iterator[Any]:
        for chunk in self.chunks():
            yield from chunk

    def __getitem__(self, i: int) -> Any:
        return self.read(i, i + 1)[0]

    def tolist(self) -> list[Any]:
        return self.read(0, len(self)).tolist()

    def take(self, positions: Sequence[int]) -> list[Any]:
        """The values at ``positions`` (ascending), in that order."""
        if isinstance(positions, range) and positions.step == 1:
            return self.read(positions.start, positions.stop).tolist()
        if not positions:
            return []
        if positions[0] >= self._disk or _sparse(positions, len(self)):
            return [self[p] for p in positions]
        return _take_chunked(self, positions)


def _take_chunked(column: NumberColumn, positions: Sequence[int]) -> list[Any]:
    """The values at ``positions`` (ascending), reading only the chunks from the one that
    holds the first position on, and no further than the last."""
    out: list[Any] = []
    k = 0
    for start, chunk in column.chunks_from(positions[0]):
        stop = start + len(chunk)
        end = bisect_right(positions, stop - 1, k)
        if end > k:
            out.extend(itemgetter(*[p - start for p in positions[k:end]])(chunk)
                       if end - k > 1 else (chunk[positions[k] - start],))
            k = end
        if k == len(positions):
            break
    return out


class EncodedLines:
    """``n`` strings as UTF-8 bytes, each followed by ``\\n``, none holding ``\\n`` or
    ``\\`` (as :class:`TextColumn` writes them unescaped): what :meth:`TextColumn.extend`
    takes without decoding them (``trace score``'s ids from its C scanner, issue 26.3)."""

    def __init__(self, data: bytes, n: int) -> None:
        self.data = data
        self.n = n

    def __len__(self) -> int:
        return self.n

    def decode(self) -> list[str]:
        return _decode_lines(self.data[:-1], False) if self.n else []


class TextColumn:
    """Strings in order, the first in memory, whole blocks on disk (each block one UTF-8 text
    of ``\\n``-joined strings, escaped when a string holds ``\\n`` or ``\\``).  Strings
    given encoded (:class:`EncodedLines`) go to disk as they are, decoded only if read from
    memory."""

    def __init__(self, spill: SpillDir) -> None:
        self._spill = spill
        self._mem: list[str] = []
        self._encoded: list[bytes] = []  # after _mem: EncodedLines not yet written
        self._n_encoded = 0
        self._file: IO[bytes] | None = None
        self._blocks: list[tuple[int, int, int, bool]] = []  # first row, offset, bytes, escaped
        self._disk = 0
        self._starts: list[int] = []
        self._last: tuple[int, list[str]] | None = None

    def __len__(self) -> int:
        return self._disk + len(self._mem) + self._n_encoded

    def extend(self, values: Sequence[str] | EncodedLines) -> None:
        if not len(values):  # (nothing to settle: what is still encoded stays so)
            return
        if isinstance(values, EncodedLines):
            if self._mem:  # after strings in memory: as strings
                values = values.decode()
            else:
                self._encoded.append(values.data)
                self._n_encoded += values.n
                if self._n_encoded >= SPILL_AT:
                    data = b"".join(self._encoded)[:-1]
                    self._write(data, False, self._n_encoded)
                    self._encoded, self._n_encoded = [], 0
                return
        self._settle()
        self._mem.extend(values)
        if len(self._mem) >= SPILL_AT:
            self._write_block()

    def _settle(self) -> None:
        """The encoded strings not yet written, decoded into memory."""
        if self._encoded:
            self._mem.extend(EncodedLines(b"".join(self._encoded), self._n_encoded).decode())
            self._encoded, self._n_encoded = [], 0

    def _write_block(self) -> None:
        data, escaped = _encode_lines(self._mem)
        self._write(data, escaped, len(self._mem))
        self._mem = []

    def _write(self, data: bytes, escaped: bool, n: int) -> None:
        """One block of ``n`` strings, ``data`` as :func:`_encode_lines` makes it."""
        if self._file is None:
            self._file = self._spill.new_file()
        offset = self._file.seek(0, os.SEEK_END)
        self._file.write(data)
        self._blocks.append((self._disk, offset, len(data), escaped))
        self._starts.append(self._disk)
        self._disk += n

    def _block(self, k: int) -> list[str]:
        """Block ``k``'s strings (the last one read is kept: reading a column in spans
        smaller than a block decodes each block once)."""
        if self._last is not None and self._last[0] == k:
            return self._last[1]
        assert self._file is not None
        _, offset, size, escaped = self._blocks[k]
        self._file.flush()
        self._file.seek(offset)
        values = _decode_lines(self._file.read(size), escaped)
        self._last = (k, values)
        return values

    def chunks(self) -> Iterator[list[str]]:
        self._settle()
        for k in range(len(self._blocks)):
            yield self._block(k)
        if self._mem:
            yield list(self._mem)

    def chunks_from(self, first: int) -> Iterator[tuple[int, list[str]]]:
        """``(start, strings)`` block by block from the one that holds position ``first``."""
        self._settle()
        if first < self._disk:
            for k in range(bisect_right(self._starts, first) - 1, len(self._blocks)):
                yield self._starts[k], self._block(k)
        if self._mem:
            yield self._disk, self._mem

    def __iter__(self) -> Iterator[str]:
        for chunk in self.chunks():
            yield from chunk

    def __getitem__(self, i: int) -> str:
        self._settle()
        if i >= self._disk:
            return self._mem[i - self._disk]
        k = bisect_right(self._starts, i) - 1
        return self._block(k)[i - self._starts[k]]

    def tolist(self) -> list[str]:
        return [s for chunk in self.chunks() for s in chunk]

    def take(self, positions: Sequence[int]) -> list[str]:
        """The strings at ``positions`` (ascending), in that order: from each block on disk,
        only the picked strings are decoded when they are few (:meth:`_pick`)."""
        if not positions:
            return []
        self._settle()
        out: list[str] = []
        i, n = 0, len(positions)
        while i < n and positions[i] < self._disk:
            k = bisect_right(self._starts, positions[i]) - 1
            start = self._starts[k]
            stop = self._starts[k + 1] if k + 1 < len(self._starts) else self._disk
            end = bisect_left(positions, stop, i)
            out.extend(self._pick(k, [p - start for p in positions[i:end]], stop - start))
            i = end
        base = self._disk
        out.extend([self._mem[p - base] for p in positions[i:]])
        return out

    def _pick(self, k: int, picks: list[int], size: int) -> list[str]:
        """The strings at ``picks`` (ascending) of block ``k`` of ``size`` strings.  Few picks
        of a block without escapes: its bytes are split at their newlines by numpy (a
        newline byte is never part of another UTF-8 character) and only the picked strings
        decoded; otherwise the whole block is decoded (:meth:`_block`)."""
        _, offset, nbytes, escaped = self._blocks[k]
        if escaped or len(picks) * 8 >= size or (self._last is not None and self._last[0] == k):
            values = self._block(k)
            return [values[j] for j in picks]
        import numpy as np

        assert self._file is not None
        self._file.flush()
        self._file.seek(offset)
        data = self._file.read(nbytes)
        raw = np.frombuffer(data + b"\n", dtype=np.uint8)
        ends = np.flatnonzero(raw == 10)  # each string's newline (the last one's added)
        chosen = np.asarray(picks, dtype=np.int64)
        starts = np.where(chosen > 0, ends[chosen - 1] + 1, 0)
        sizes = ends[chosen] - starts + 1  # with the newline
        # the picked strings' bytes, each with its newline, gathered and decoded at once
        shift = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
        gathered = raw[np.arange(int(sizes.sum()), dtype=np.int64) + shift]
        return gathered.tobytes().decode("utf-8", _ENC).split("\n")[:-1]


def _encode_lines(values: Sequence[str]) -> tuple[bytes, bool]:
    """``values`` as one UTF-8 text of ``\\n``-joined lines, and whether it had to escape
    ``\\n`` and ``\\`` (only then is each string rewritten)."""
    text = "\n".join(values)
    escaped = "\\" in text or text.count("\n") != len(values) - 1
    if escaped:
        text = "\n".join(v.replace("\\", "\\\\").replace("\n", "\\n") for v in values)
    return text.encode("utf-8", _ENC), escaped


def _decode_lines(data: bytes, escaped: bool) -> list[str]:
    values = data.decode("utf-8", _ENC).split("\n")
    if escaped:
        values = [_unescape(v) if "\\" in v else v for v in values]
    return values


def _unescape(value: str) -> str:
    out = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            nxt = value[i + 1]
            out.append("\n" if nxt == "n" else nxt)
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class KeyedRecords:
    """Rows of a string key and ``width`` float fields (integers up to 2**53 exact), handed
    back by :meth:`groups` so that all the rows of one key are in the same group: one group
    while they fit in memory, else :data:`BUCKETS` groups partitioned by the key's hash."""

    def __init__(self, width: int, spill: SpillDir) -> None:
        self.width = width
        self._spill = spill
        self._keys: list[str] = []
        self._fields = [array("d") for _ in range(width)]
        self._file: IO[bytes] | None = None
        self._end = 0  # bytes written to the file
        # each bucket's pieces in the file: (offset, rows, bytes of keys, escaped)
        self._parts: list[list[tuple[int, int, int, bool]]] = [[] for _ in range(BUCKETS)]
        self.n = 0

    def add(self, keys: Sequence[str], *fields: Sequence[float]) -> None:
        self._keys.extend(keys)
        for column, values in zip(self._fields, fields, strict=True):
            column.extend(values)
        self.n += len(keys)
        if len(self._keys) >= SPILL_AT * KEY_BLOCKS:
            self._partition()

    def _partition(self) -> None:
        import numpy as np

        if self._file is None:
            self._file = self._spill.new_file()
        keys = self._keys
        n = len(keys)
        # 16-bit bucket numbers: numpy's stable sort is then a radix sort (some 10x faster)
        bucket = (np.fromiter(map(hash, keys), dtype=np.int64, count=n) & (BUCKETS - 1)
                  ).astype(np.uint16)
        order = np.argsort(bucket, kind="stable")
        ends = np.cumsum(np.bincount(bucket, minlength=BUCKETS)).tolist()
        held = np.empty(n, dtype=object)
        held[:] = keys
        sorted_keys = held[order].tolist()
        fields = np.stack([np.frombuffer(f, dtype=np.float64) for f in self._fields])[:, order]
        # one write to the one file: bucket by bucket, each field's values in turn (a C-order
        # slice of the fields' rows), then the keys
        pieces: list[bytes] = []
        start = 0
        for b, end in enumerate(ends):
            if end > start:
                data, escaped = _encode_lines(sorted_keys[start:end])
                self._parts[b].append((self._end, end - start, len(data), escaped))
                pieces.append(fields[:, start:end].tobytes())
                pieces.append(data)
                self._end += len(pieces[-2]) + len(data)
            start = end
        self._file.seek(0, os.SEEK_END)
        self._file.write(b"".join(pieces))
        self._keys = []
        self._fields = [array("d") for _ in range(self.width)]

    def groups(self) -> Iterator[tuple[list[str], list[array]]]:
        """``(keys, fields)`` of each group (fields: ``width`` arrays of ``'d'``)."""
        for keys, fields in self.raw_groups():
            yield (keys.decode() if isinstance(keys, RawKeys) else keys), fields

    def raw_groups(self) -> Iterator[tuple[list[str] | RawKeys, list[array]]]:
        """:meth:`groups`, the keys of a group read from disk left as :class:`RawKeys` (no
        string made until asked for)."""
        if self._file is None:
            if self._keys:
                yield self._keys, self._fields
            return
        if self._keys:
            self._partition()
        fh = self._file
        fh.flush()
        for parts in self._parts:
            keys = RawKeys()
            fields = [array("d") for _ in range(self.width)]
            for offset, n, size, escaped in parts:
                fh.seek(offset)
                data = fh.read(8 * n * self.width + size)
                for i, f in enumerate(fields):
                    f.frombytes(data[8 * n * i:8 * n * (i + 1)])
                keys.pieces.append((data[8 * n * self.width:], escaped))
                keys.n += n
            if keys.n:
                yield keys, fields


class RawKeys:
    """The keys of one :class:`KeyedRecords` group as read from disk: pieces of UTF-8 text,
    each its keys joined by ``\n`` (escaped when one holds ``\n`` or ``\\``)."""

    def __init__(self) -> None:
        self.pieces: list[tuple[bytes, bool]] = []
        self.n = 0
        self._decoded: list[str] | None = None

    def __len__(self) -> int:
        return self.n

    def decode(self) -> list[str]:
        if self._decoded is None:
            self._decoded = [key for data, escaped in self.pieces
                             for key in _decode_lines(data, escaped)]
        return self._decoded

    def __getitem__(self, i: int) -> str:
        return self.decode()[i]


class Scatter:
    """``width`` float columns of ``n`` rows (NaN where nothing was put), filled by
    :meth:`put` at positions in any order; :meth:`columns` gives them in position order."""

    _RANGE = 1 << 18

    def __init__(self, n: int, width: int, spill: SpillDir) -> None:
        self.n = n
        self.width = width
        self._spill = spill
        self._mem: list[array] | None = None
        self._files: dict[int, IO[bytes]] = {}
        if n <= SPILL_AT:
            self._mem = [array("d", repeat(float("nan"), n)) for _ in range(width)]

    def put(self, positions: Sequence[float], *fields: Sequence[float]) -> None:
        """Write ``fields`` (``width`` sequences) at ``positions`` (whole numbers)."""
        if self._mem is not None:
            at = [int(p) for p in positions]
            for column, values in zip(self._mem, fields, strict=True):
                for p, value in zip(at, values, strict=True):
                    column[p] = value
            return
        import numpy as np

        pos = np.asarray(positions, dtype=np.int64)
        vals = [np.asarray(f, dtype=np.float64) for f in fields]
        part = pos // self._RANGE
        for r in np.flatnonzero(np.bincount(part)).tolist():  # np.unique imports numpy.ma
            sel = part == r
            fh = self._files.get(r)
            if fh is None:
                fh = self._files[r] = self._spill.new_file()
            fh.write(array("q", [int(sel.sum())]).tobytes())
            fh.write(pos[sel].tobytes())
            for field in vals:
                fh.write(field[sel].tobytes())

    def columns(self) -> list[NumberColumn]:
        out = [NumberColumn("d", self._spill) for _ in range(self.width)]
        if self._mem is not None:
            for column, values in zip(out, self._mem, strict=True):
                column.extend(values)
            return out
        import numpy as np

        for r in range(-(-self.n // self._RANGE)):
            start = r * self._RANGE
            size = min(self._RANGE, self.n - start)
            block = [np.full(size, np.nan) for _ in range(self.width)]
            fh = self._files.pop(r, None)
            if fh is not None:
                fh.flush()
                fh.seek(0)
                while True:
                    head = fh.read(8)
                    if not head:
                        break
                    k = array("q", head)[0]
                    pos = np.frombuffer(fh.read(8 * k), dtype=np.int64) - start
                    for b in block:
                        b[pos] = np.frombuffer(fh.read(8 * k), dtype=np.float64)
                fh.close()
            for column, b in zip(out, block, strict=True):
                column.extend(array("d", b.tobytes()))
        return out
