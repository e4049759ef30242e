"""The per-format readers behind :func:`ragmeter.io.iter_rows`: JSON Lines, JSON (arrays
streamed element by element), CSV/TSV (strict quoting) and Parquet, each bounded in the size of
one line or record, and the :class:`Row` they yield.

Private to :mod:`ragmeter.io`, which re-exports the public names.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter._util._record import record, set_field
from ragmeter.errors import InputError, MissingDependencyError

if TYPE_CHECKING:  # csv loads with the first CSV/TSV file, not before a run's first call
    import csv


@record()  # a plain class, no dataclass (issue 26.5)
class Row:
    """One input row with its place in the file."""

    __slots__ = ("data", "number", "unit", "path")
    data: dict[str, Any]
    number: int  # 1-based for files; 0-based for in-memory data (unit "index")
    unit: str  # "line" (JSONL, CSV), "row" (JSON array, Parquet) or "index" (in memory)
    path: str  # the file, or a label such as "<DataFrame>" for in-memory data

    def __init__(self, data: dict[str, Any], number: int, unit: str, path: str) -> None:
        set_field(self, "data", data)
        set_field(self, "number", number)
        set_field(self, "unit", unit)
        set_field(self, "path", path)

    def where(self) -> dict[str, Any]:
        """Keyword arguments for :class:`InputError` that point at this row."""
        if self.unit == "line":
            return {"path": self.path, "line": self.number}
        if self.unit == "index":
            return {"path": self.path, "index": self.number}
        return {"path": self.path, "row": self.number}

    def error(self, problem: str, *, component: str, field: str | None = None,
              fix: str | None = None) -> InputError:
        return InputError(problem, component=component, field=field, fix=fix, **self.where())


# ---------------------------------------------------------------- bounded reading

DEFAULT_MAX_LINE_MB = 32
_CHUNK = 1 << 20  # bytes read at a time by the streaming JSON reader


def max_line_bytes() -> int:
    """The largest line (JSONL, CSV) or record (JSON) a reader accepts, in bytes.

    ``RAGMETER_MAX_LINE_MB`` (set by ``ragmeter --max-line-mb N``) raises or lowers it; the
    default is 32 MiB.  Bounding it keeps a hostile file (one 1 GB line) from taking gigabytes
    of memory before it is rejected.
    """
    raw = os.environ.get("RAGMETER_MAX_LINE_MB")
    if not raw:
        return DEFAULT_MAX_LINE_MB << 20
    try:
        mb = float(raw)
    except ValueError:
        mb = -1.0
    if not (mb > 0 and math.isfinite(mb)):
        raise InputError(f"RAGMETER_MAX_LINE_MB is {raw!r}, expected a positive number of MiB.",
                         fix="set it to a number such as 64, or unset it.")
    return max(1024, int(mb * (1 << 20)))


def _too_long(path: Path, number: int, unit: str, limit: int, component: str) -> InputError:
    return InputError(
        f"is longer than the limit of {limit / (1 << 20):.3g} MiB for one {unit}.",
        component=component, path=path,
        line=number if unit == "line" else None, row=None if unit == "line" else number,
        fix="check that the file has one record per line; if the record is really that "
            "large, raise the limit with ragmeter --max-line-mb N (or RAGMETER_MAX_LINE_MB=N).")


def _bounded_lines(fh: Any, path: Path, component: str) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw bytes)`` of a binary file, never holding more than one bounded
    line (a file without newlines is rejected after the limit, not read whole)."""
    limit = max_line_bytes()
    number = 0
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit:
            raise _too_long(path, number, "line", limit, component)
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        yield number, raw


class _NotFinite(ValueError):
    """A number in JSON that is no finite float: NaN, Infinity, 1e999, a 400-digit integer."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _refuse(text: str) -> Any:
    raise _NotFinite(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # inf (a JSON number is never nan)
        raise _NotFinite(text)
    return value


def _finite_int(text: str) -> int:
    if len(text) > 300:  # beyond a float's range (or Python's 4300-digit limit)
        try:
            float(int(text))
        except (OverflowError, ValueError):
            raise _NotFinite(text[:12] + f"... ({len(text)} digits)") from None
    return int(text)


class _Mark:
    """Stands in for a refused number while :func:`_field_of_number` looks for its field."""


# Every decode refuses NaN and Infinity (parse_constant: no cost) and floats that overflow
# (parse_float: one Python call per float, ~0.2 us).  Integers are checked one by one only in
# text with a run of 300 digits: an int beyond a float's range (beyond 4300 digits, int()
# itself refuses it).  A regex for a three-digit exponent would cost more than the floats'
# check: every "e" of English text starts a match attempt.
_DECODER = json.JSONDecoder(parse_constant=_refuse, parse_float=_finite_float)
_CHECKING = json.JSONDecoder(parse_constant=_refuse, parse_float=_finite_float,
                             parse_int=_finite_int)
_MARKING = json.JSONDecoder(parse_constant=lambda t: _Mark(), parse_float=lambda t: (
    _Mark() if not math.isfinite(float(t)) else 0.0), parse_int=lambda t: _Mark()
    if len(t) > 300 else 0)
_BIG_INT = re.compile(r"[0-9]{300}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _decode_value(text: str, pos: int = 0) -> tuple[Any, int]:
    """``raw_decode`` of the JSON value at ``pos`` that refuses non-finite numbers."""
    try:
        obj, end = _DECODER.raw_decode(text, pos)
    except (_NotFinite, json.JSONDecodeError):
        raise
    except ValueError:  # an integer of more than 4300 digits
        return _CHECKING.raw_decode(text, pos)  # type: ignore[no-any-return]
    if _BIG_INT.search(text, pos, end):
        obj, end = _CHECKING.raw_decode(text, pos)
    return obj, end


def _field_of_number(text: str, pos: int = 0) -> str | None:
    """The top-level field of a refused number in the JSON value at ``pos``."""
    try:
        obj, _ = _MARKING.raw_decode(text, pos)
    except (ValueError, RecursionError):
        return None

    def has_mark(v: Any) -> bool:
        if isinstance(v, _Mark):
            return True
        if isinstance(v, dict):
            return any(has_mark(x) for x in v.values())
        return isinstance(v, list) and any(has_mark(x) for x in v)

    if isinstance(obj, dict):
        return next((str(k) for k, v in obj.items() if has_mark(v)), None)
    return None


def _not_finite_error(exc: _NotFinite, text: str, pos: int, path: Path, component: str,
                      **where: Any) -> InputError:
    from ragmeter.text._unicode import shown

    field = _field_of_number(text, pos)
    return InputError(
        f"holds the number {exc.text}, which is not finite: JSON has no NaN or Infinity, and "
        f"numbers beyond ±1.8e308 do not fit a float.", component=component, path=path,
        field=None if field is None else shown(field),
        fix="write null for a missing value, or a finite number.", **where)


def check_text(obj: Any, raw: str | None, path: Path | str, component: str,
               **where: Any) -> None:
    """Refuse a record holding a lone UTF-16 surrogate (:mod:`ragmeter.text._unicode`):
    one line naming the place, the field and the position.  ``raw``: the JSON text it was
    decoded from (only a ``\\uD8xx``-``\\uDFxx`` escape there can make one), or None for
    in-memory data (always looked at)."""
    if raw is not None and not _SURROGATE_ESCAPE.search(raw):
        return
    from ragmeter.text._unicode import find_lone_surrogate

    found = find_lone_surrogate(obj)
    if found is None:
        return
    field, index, char = found
    raise InputError(
        f"holds a lone UTF-16 surrogate (\\u{ord(char):04x} at character {index + 1}), which "
        f"is not valid Unicode text and cannot be written to any output.",
        component=component, path=path, field=field,
        fix="re-encode the text as UTF-8; in JSON, an escape \\uD800-\\uDBFF must be "
            "followed by its second half \\uDC00-\\uDFFF.", **where)


def _loads(text: str, path: Path, component: str, *, line: int | None = None) -> Any:
    """The JSON value of ``text``, every failure an InputError at ``line``: invalid JSON,
    nesting too deep, a non-finite number, a lone surrogate."""
    try:
        obj = (_CHECKING if _BIG_INT.search(text) else _DECODER).decode(text)
    except _NotFinite as exc:
        raise _not_finite_error(exc, text.strip(), 0, path, component, line=line) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"is not valid JSON ({exc.msg} at column {exc.colno}).",
            component=component, path=path,
            fix="each line must hold one JSON object; check quotes and commas.", line=line,
        ) from None
    except RecursionError:
        raise _too_deep(path, component, line=line) from None
    check_text(obj, text, path, component, line=line)
    return obj


def _too_deep(path: Path, component: str, *, line: int | None = None,
              row: int | None = None) -> InputError:
    return InputError("is nested too deeply to read (thousands of [ or { inside each other).",
                      component=component, path=path, line=line, row=row,
                      fix="flatten the record; no ragmeter field needs such nesting.")


def _decode(raw: bytes, path: Path, number: int, unit: str, component: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"is not valid UTF-8 (byte {exc.start + 1} of the {unit}: "
            f"{raw[exc.start:exc.start + 4]!r}).",
            component=component, path=path, fix="re-save the file as UTF-8.",
            line=number if unit == "line" else None,
            row=None if unit == "line" else number,
        ) from None


def iter_text_lines(path: str | os.PathLike[str], component: str) -> Iterator[tuple[int, str]]:
    """``(1-based line number, text)`` of every line of a UTF-8 text file, line ends stripped:
    the bounded, decoded lines the JSON Lines reader reads, for whitespace formats such as TREC
    run and qrels files.  Missing files, folders, over-long lines and bad UTF-8 are
    :class:`InputError` naming the line."""
    p = Path(path)
    if not p.exists():
        raise InputError("does not exist.", component=component, path=p, fix="check the path.")
    if p.is_dir():
        raise InputError("is a folder, expected a data file.", component=component, path=p)
    with p.open("rb") as fh:
        for number, raw in _bounded_lines(fh, p, component):
            yield number, _decode(raw, p, number, "line", component).rstrip("\r\n")


def _iter_jsonl(path: Path, component: str) -> Iterator[Row]:
    with path.open("rb") as fh:
        for number, raw in _bounded_lines(fh, path, component):
            row = jsonl_row(raw, path, number, component)
            if row is not None:
                yield row


def jsonl_row(raw: bytes, path: Path, number: int, component: str) -> Row | None:
    """The row of one JSON Lines line (``raw``: its bytes, the byte-order mark of line 1
    already dropped, at most :func:`max_line_bytes`), None for a blank line; every problem an
    InputError at line ``number``.  What the JSON Lines reader does for each line, for a
    reader that splits the lines itself."""
    text = _decode(raw, path, number, "line", component).strip()
    if not text:
        return None
    obj = _loads(text, path, component, line=number)
    if not isinstance(obj, dict):
        raise InputError(
            f"holds a JSON {type(obj).__name__}, expected an object {{...}}.",
            component=component, path=path, line=number,
            fix="write one JSON object per line.",
        )
    return Row(obj, number, "line", str(path))


class _JsonStream:
    """Reads JSON values one at a time from a file, holding at most one bounded record.

    ``json.JSONDecoder.raw_decode`` parses each value at C speed; a value cut by the end of
    the buffer is retried after reading more, up to :func:`max_line_bytes`.
    """

    def __init__(self, fh: Any, path: Path, component: str) -> None:
        import codecs

        self.fh = fh
        self.path = path
        self.component = component
        self.limit = max_line_bytes()
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.consumed = 0  # bytes read so far, for error messages

    def _more(self, want: int = _CHUNK) -> None:
        raw = self.fh.read(max(_CHUNK, want))
        self.consumed += len(raw)
        try:
            text = self.decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            raise InputError(
                f"is not valid UTF-8 (near byte {self.consumed - len(raw) + exc.start + 1}).",
                component=self.component, path=self.path, fix="re-save the file as UTF-8.",
            ) from None
        if not raw:
            self.eof = True
        self.buf = self.buf[self.pos:] + text
        self.pos = 0

    def peek(self) -> str:
        """The next non-space character ('' at the end of the file)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf) or self.eof:
                return self.buf[self.pos:self.pos + 1]
            self._more()

    def take(self) -> None:
        """Step over the next non-space character (a bracket or comma seen by peek)."""
        self.peek()
        self.pos += 1

    def value(self, number: int) -> Any:
        """The JSON value starting at the next non-space character (record ``number``)."""
        self.peek()
        tried_end = False
        while True:
            try:
                obj, end = _decode_value(self.buf, self.pos)
            except _NotFinite as exc:
                raise _not_finite_error(exc, self.buf, self.pos, self.path, self.component,
                                        row=number) from None
            except json.JSONDecodeError as exc:
                # Cut by the end of the buffer (or a string still open): read more and retry.
                cut = exc.pos >= len(self.buf) - 16 or exc.msg.startswith("Unterminated")
                if cut and not self.eof:
                    self._grow(number)
                    continue
                raise InputError(
                    f"is not valid JSON ({exc.msg}).", component=self.component,
                    path=self.path, row=number, fix="check the file's syntax.") from None
            except RecursionError:
                raise _too_deep(self.path, self.component, row=number) from None
            if end - self.pos > self.limit:
                raise _too_long(self.path, number, "record", self.limit, self.component)
            if end == len(self.buf) and not self.eof and not tried_end:
                tried_end = True  # a number may go on in the next chunk
                self._grow(number)
                continue
            if _SURROGATE_ESCAPE.search(self.buf, self.pos, end):
                check_text(obj, None, self.path, self.component, row=number)
            self.pos = end
            return obj

    def _grow(self, number: int) -> None:
        held = len(self.buf) - self.pos
        if held > self.limit:
            raise _too_long(self.path, number, "record", self.limit, self.component)
        self._more(held)


def _iter_json(path: Path, component: str) -> Iterator[Row]:
    with path.open("rb") as fh:
        stream = _JsonStream(fh, path, component)
        head = stream.peek()
        if head == "{":
            # Either one object holding a list, or JSON Lines under a .json name (RGB's files).
            obj = stream.value(1)
            if stream.peek():
                yield from _iter_jsonl(path, component)
                return
            lists = [k for k, v in obj.items() if isinstance(v, list) and v and
                     all(isinstance(x, dict) for x in v)]
            items = obj[lists[0]] if len(lists) == 1 and len(obj) <= 3 else [obj]
            for number, item in enumerate(items, start=1):
                yield _json_row(item, number, path, component)
            return
        if head != "[":
            raise InputError(
                "does not start with [ or { and is not JSON.", component=component, path=path,
                fix="give a JSON array of objects, or JSON Lines with a .jsonl name.",
            )
        stream.take()
        number = 0
        if stream.peek() == "]":
            stream.take()
        else:
            while True:
                number += 1
                yield _json_row(stream.value(number), number, path, component)
                sep = stream.peek()
                if sep == ",":
                    stream.take()
                    continue
                if sep == "]":
                    stream.take()
                    break
                raise InputError(
                    f"is not valid JSON (expected , or ] after row {number}, found "
                    f"{sep or 'the end of the file'!r}).", component=component, path=path,
                    row=number, fix="check the file's syntax.")
        if stream.peek():
            raise InputError("has more text after the closing ] of its array.",
                             component=component, path=path, fix="check the file's syntax.")


def _json_row(item: Any, number: int, path: Path, component: str) -> Row:
    if not isinstance(item, dict):
        raise InputError(
            f"is a JSON {type(item).__name__}, expected an object.",
            component=component, path=path, row=number,
            fix="the array must hold one object per row.",
        )
    return Row(item, number, "row", str(path))


def _iter_csv(path: Path, component: str, delimiter: str) -> Iterator[Row]:
    """Rows of a CSV/TSV file, streamed, each numbered by the line it starts on.

    Strict quoting: a quote that opens a field and is never closed, or a closing quote followed
    by more text, is an error naming the line where that record starts, never a field that
    silently swallows the rest of the file.
    """
    import csv

    limit = max_line_bytes()
    if csv.field_size_limit() < limit:
        csv.field_size_limit(limit)
    last_line = 0

    with path.open("rb") as fh:
        def text_lines() -> Iterator[str]:
            nonlocal last_line
            for number, raw in _bounded_lines(fh, path, component):
                last_line = number
                yield _decode(raw, path, number, "line", component)

        reader = csv.reader(text_lines(), delimiter=delimiter, strict=True)
        header: list[str] | None = None
        start = 1
        try:
            for rec in reader:
                first, start = start, last_line + 1
                if not rec:
                    continue
                if header is None:
                    header = rec
                    continue
                if len(rec) > len(header):
                    raise InputError(
                        f"has {len(rec)} cells but the header has {len(header)}.",
                        component=component, path=path, line=first,
                        fix="quote cells that contain the delimiter.")
                data: dict[str, Any] = dict(zip(header, rec, strict=False))
                for name in header[len(rec):]:
                    data.setdefault(name, None)
                yield Row(data, first, "line", str(path))
        except csv.Error as exc:
            raise _csv_error(exc, path, component, start, last_line) from None


def _csv_error(exc: csv.Error, path: Path, component: str, start: int,
               last_line: int) -> InputError:
    msg = str(exc)
    if "unexpected end of data" in msg or "EOF" in msg:
        return InputError(
            "opens a quoted field (\") that is never closed: the file ends inside it.",
            component=component, path=path, line=start,
            fix="close the quote, double a quote that belongs to the text (\"\"), or "
                "remove the stray quote.")
    if "expected after" in msg:
        where = "" if last_line == start else f" (the quote closes on line {last_line})"
        return InputError(
            f"has a quoted field followed by more text{where}: a stray quote.",
            component=component, path=path, line=start,
            fix="double a quote that belongs to the text (\"\"), or remove the stray quote.")
    if "field larger than field limit" in msg:
        return _too_long(path, start, "line", max_line_bytes(), component)
    return InputError(f"is not valid CSV ({msg}).", component=component, path=path,
                      line=start, fix="check the quoting of this record.")


INSTALL_PARQUET = "pip install 'ragmeter[parquet]'"


def import_parquet() -> Any:
    """``pyarrow.parquet``, or MissingDependencyError with the install hint (Parquet is the
    ``parquet`` extra; JSON Lines, JSON and CSV need nothing)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependencyError(
            "Parquet support (pyarrow)", INSTALL_PARQUET,
            detail="or give the data as JSON Lines, JSON or CSV") from None
    return pq


def has_pyarrow() -> bool:
    """True when pyarrow can be imported (checked without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec("pyarrow") is not None
    except (ImportError, ValueError):
        return False


def _iter_parquet(path: Path, component: str) -> Iterator[Row]:
    pq = import_parquet()
    import pyarrow as pa

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several unrelated types for bad files
        raise InputError(
            f"is not a readable Parquet file ({exc}).", component=component, path=path,
            fix="check that the file is complete and really Parquet.",
        ) from None
    number = 0
    batches = pf.iter_batches(batch_size=2048)
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(
                f"has a corrupt or unreadable part after row {number} ({str(exc)[:200]}).",
                component=component, path=path, row=number + 1,
                fix="re-write the file; check that it was copied completely.") from None
        if batch is None:
            return
        for rec in batch.to_pylist():
            number += 1
            yield Row(rec, number, "row", str(path))
