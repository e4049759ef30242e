"""Reading user data files and writing results.

One reader for every family: JSON Lines, JSON (an array of objects, or JSON Lines saved with a
``.json`` name as RGB does), CSV/TSV and Parquet.  Rows stream (JSONL, CSV and Parquet never
load the whole file), every row carries its 1-based line (JSONL/CSV) or row number
(JSON/Parquet), and every problem becomes an :class:`~ragmeter.errors.InputError` that names the
file, the place and the field.

Column renaming (``--field pred_answer=my_column``) is a :class:`FieldMap`.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError, MissingDependencyError

__all__ = [
    "FieldMap",
    "Row",
    "iter_rows",
    "read_rows",
    "is_path",
    "source_label",
    "detect_format",
    "write_json",
    "write_jsonl",
    "write_text",
    "write_bytes",
    "parse_field_options",
]

FORMATS = ("jsonl", "json", "csv", "tsv", "parquet")


@dataclass(frozen=True)
class FieldMap:
    """Maps ragmeter's canonical field names to the user's column names."""

    mapping: Mapping[str, str] = field(default_factory=dict)

    def source(self, canonical: str) -> str:
        return self.mapping.get(canonical, canonical)

    def apply(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Return ``raw`` with mapped columns renamed to their canonical names."""
        if not self.mapping:
            return dict(raw)
        out = dict(raw)
        for canonical, src in self.mapping.items():
            if src in raw:
                out[canonical] = raw[src]
            else:  # the user named the column: the canonical one must not stand in for it
                out.pop(canonical, None)
        return out

    def hint(self, canonical: str) -> str:
        src = self.source(canonical)
        if src != canonical:
            return f'column "{src}" (mapped to {canonical})'
        return f'"{canonical}"'


def parse_field_options(options: Iterable[str], component: str = "ragmeter") -> FieldMap:
    """Parse ``--field canonical=column`` options."""
    mapping: dict[str, str] = {}
    for opt in options:
        name, sep, column = opt.partition("=")
        if not sep or not name.strip() or not column.strip():
            raise InputError(
                f"--field {opt!r} is not of the form CANONICAL=COLUMN.",
                component=component,
                fix="write it like --field pred_answer=my_column.",
            )
        mapping[name.strip()] = column.strip()
    return FieldMap(mapping)


@dataclass(frozen=True)
class Row:
    """One input row with its place in the file."""

    data: dict[str, Any]
    number: int  # 1-based for files; 0-based for in-memory data (unit "index")
    unit: str  # "line" (JSONL, CSV), "row" (JSON array, Parquet) or "index" (in memory)
    path: str  # the file, or a label such as "<DataFrame>" for in-memory data

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


def detect_format(path: Path) -> str:
    """Format from the file name; ``.json`` files are sniffed later (array vs JSON Lines)."""
    name = path.name.lower()
    for suffix, fmt in ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "json"),
                        (".csv", "csv"), (".tsv", "tsv"), (".parquet", "parquet"),
                        (".pq", "parquet")):
        if name.endswith(suffix):
            return fmt
    raise InputError(
        f"cannot tell the format from the file name {path.name!r}.",
        path=path,
        fix="use one of the extensions .jsonl, .json, .csv, .tsv or .parquet.",
    )


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


def _loads(text: str, path: Path, component: str, *, line: int | None = None) -> Any:
    """``json.loads`` whose every failure is an InputError at ``where`` (line= or row=)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"is not valid JSON ({exc.msg} at column {exc.colno}).",
            component=component, path=path,
            fix="each line must hold one JSON object; check quotes and commas.", line=line,
        ) from None
    except RecursionError:
        raise _too_deep(path, component, line=line) from None


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


def _iter_jsonl(path: Path, component: str) -> Iterator[Row]:
    with path.open("rb") as fh:
        for number, raw in _bounded_lines(fh, path, component):
            text = _decode(raw, path, number, "line", component).strip()
            if not text:
                continue
            obj = _loads(text, path, component, line=number)
            if not isinstance(obj, dict):
                raise InputError(
                    f"holds a JSON {type(obj).__name__}, expected an object {{...}}.",
                    component=component, path=path, line=number,
                    fix="write one JSON object per line.",
                )
            yield Row(obj, number, "line", str(path))


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
        self.json = json.JSONDecoder()
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
                obj, end = self.json.raw_decode(self.buf, self.pos)
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


def is_path(source: Any) -> bool:
    """True when ``source`` names a file (str or os.PathLike) rather than in-memory data."""
    return isinstance(source, (str, os.PathLike))


def source_label(source: Any) -> str:
    """How errors and run records name ``source``: the path, or ``<DataFrame>`` and the like."""
    if is_path(source):
        return str(source)
    kind = type(source).__name__
    if kind in ("DataFrame", "Table", "RecordBatch"):
        return f"<{'Arrow ' if kind != 'DataFrame' else ''}{kind}>"
    return "<list of dicts>" if isinstance(source, Sequence) else f"<{kind}>"


def _plain(value: Any) -> Any:
    """numpy/pandas scalars and arrays as plain Python values; pandas' missing values as None."""
    if isinstance(value, float):
        return None if value != value else value  # pandas stores missing cells as NaN
    if value is None or isinstance(value, (str, int, bool, list, dict)):
        return value
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
    if callable(tolist):
        return _plain(tolist())
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value


def _iter_memory(source: Any, component: str) -> Iterator[Row]:
    """Rows of in-memory data: a sequence of dicts, a pandas DataFrame or a pyarrow Table.

    Rows are numbered by their 0-based position (``unit="index"``), as ``df.iloc`` counts.
    """
    label = source_label(source)
    if hasattr(source, "schema") and hasattr(source, "to_pylist"):  # pyarrow Table/RecordBatch
        batches = source.to_batches() if hasattr(source, "to_batches") else [source]
        i = 0
        for batch in batches:
            for rec in batch.to_pylist():
                yield Row(rec, i, "index", label)
                i += 1
        return
    if hasattr(source, "to_dict") and hasattr(source, "columns"):  # pandas DataFrame
        columns = [str(c) for c in source.columns]
        for i, values in enumerate(source.itertuples(index=False, name=None)):
            yield Row({c: _plain(v) for c, v in zip(columns, values, strict=True)}, i, "index",
                      label)
        return
    if isinstance(source, Mapping) or isinstance(source, (bytes, bytearray)) \
            or not isinstance(source, Iterable):
        raise InputError(f"is a {type(source).__name__}, expected a file path, a list of dicts, "
                         "a pandas DataFrame or a pyarrow Table.", component=component,
                         fix="pass the path of a data file or a list of row dicts.")
    for i, rec in enumerate(source):
        if not isinstance(rec, Mapping):
            raise InputError(f"is a {type(rec).__name__}, expected a dict of fields.",
                             component=component, path=label, index=i,
                             fix="give one dict per row, e.g. {\"id\": ..., ...}.")
        yield Row({str(k): _plain(v) for k, v in rec.items()}, i, "index", label)


def iter_rows(source: Any, *, component: str = "ragmeter",
              field_map: FieldMap | None = None, allow_empty: bool = False) -> Iterator[Row]:
    """Stream the rows of ``source``, renamed by ``field_map``.

    ``source`` is the path of a data file (JSONL, JSON, CSV/TSV, Parquet) or in-memory data: a
    list of dicts, a pandas DataFrame or a pyarrow Table (rows then carry their 0-based index).
    Raises InputError for a missing, empty or malformed source, with the place of the problem.
    """
    fm = field_map or FieldMap()
    if not is_path(source):
        seen = False
        for row in _iter_memory(source, component):
            seen = True
            yield Row(fm.apply(row.data), row.number, row.unit, row.path) if fm.mapping else row
        if not seen and not allow_empty:
            raise InputError("has no rows.", component=component, path=source_label(source),
                             fix="give at least one row.")
        return
    path = source
    p = Path(path)
    if not p.exists():
        raise InputError("does not exist.", component=component, path=p,
                         fix="check the path.")
    if p.is_dir():
        raise InputError("is a folder, expected a data file.", component=component, path=p)
    fmt = detect_format(p)
    if p.stat().st_size == 0 and not allow_empty:
        raise InputError("is empty.", component=component, path=p,
                         fix="give a file with at least one row.")
    if fmt == "jsonl":
        rows = _iter_jsonl(p, component)
    elif fmt == "json":
        rows = _iter_json(p, component)
    elif fmt == "csv":
        rows = _iter_csv(p, component, ",")
    elif fmt == "tsv":
        rows = _iter_csv(p, component, "\t")
    else:
        rows = _iter_parquet(p, component)
    seen = False
    for row in rows:
        seen = True
        yield Row(fm.apply(row.data), row.number, row.unit, row.path) if fm.mapping else row
    if not seen and not allow_empty:
        raise InputError("has no rows.", component=component, path=p,
                         fix="give a file with at least one row.")


def read_rows(path: str | Path, **kwargs: Any) -> list[Row]:
    """All rows of a file as a list (see :func:`iter_rows`)."""
    return list(iter_rows(path, **kwargs))


# ---------------------------------------------------------------- field accessors


def absent_error(row: Row, name: str, *, component: str, fix: str) -> InputError:
    """The error for a required field without a value: says whether it is missing, null or
    empty (``"id": null`` is null, not missing) and lists the fields found."""
    value = row.data.get(name)
    found = ", ".join(sorted(map(str, row.data))[:15]) or "none"
    if name not in row.data:
        problem = f"is missing (required). Found fields: {found}."
    elif value is None:
        problem = "is null; a value is required."
    else:
        problem = "is empty; a value is required."
    return row.error(problem, component=component, field=name, fix=fix)


def require(row: Row, name: str, *, component: str, field_map: FieldMap | None = None) -> Any:
    """The value of a required field; InputError naming the found fields when missing."""
    if name not in row.data:
        found = ", ".join(sorted(map(str, row.data))[:15]) or "none"
        src = (field_map or FieldMap()).source(name)
        fix = (f"add the field, or map your column with --field {name}=COLUMN."
               if src == name else f"the file has no column {src!r}; check --field.")
        raise row.error(f"is missing (required). Found fields: {found}.",
                        component=component, field=name, fix=fix)
    return row.data[name]


def as_text(row: Row, name: str, value: Any, *, component: str, allow_none: bool = False) -> str:
    """A string field; numbers are accepted as their text (CSV cells are text anyway)."""
    if value is None:
        if allow_none:
            return ""
        raise row.error("is null, expected text.", component=component, field=name,
                        fix="give a string (use \"\" for an empty answer).")
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or isinstance(value, (list, dict)):
        raise row.error(f"is a {type(value).__name__} ({_short(value)}), expected text.",
                        component=component, field=name, fix="give a string.")
    if isinstance(value, (int, float)):
        return str(value)
    raise row.error(f"has type {type(value).__name__}, expected text.",
                    component=component, field=name, fix="give a string.")


def as_number(row: Row, name: str, value: Any, *, component: str,
              lo: float | None = None, hi: float | None = None) -> float:
    """A finite number; numeric strings (CSV) are parsed."""
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        raise row.error(f"is {_short(value)}, expected a number.", component=component,
                        field=name, fix="give a plain number such as 0.5.")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise row.error(f"is {value!r}, expected a number.", component=component,
                            field=name, fix="give a plain number such as 0.5.") from None
    try:
        num = float(value)
    except (TypeError, ValueError):
        raise row.error(f"is {_short(value)}, expected a number.", component=component,
                        field=name, fix="give a plain number.") from None
    if not math.isfinite(num):
        raise row.error(f"is {num}, expected a finite number.", component=component,
                        field=name, fix="replace NaN/inf by a number or leave the field out.")
    if (lo is not None and num < lo) or (hi is not None and num > hi):
        raise row.error(f"is {num}, expected a number in [{lo}, {hi}].", component=component,
                        field=name, fix="check the column's scale.")
    return num


def is_blank(value: Any) -> bool:
    """True for a missing value: None, or an empty CSV cell."""
    return value is None or (isinstance(value, str) and value.strip() == "")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------- writing


def _default_file_mode() -> int:
    """0o666 less the process umask: what ``open()`` would give a new file."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _atomic_write(path: Path, write: Any, *, binary: bool = False,
                  private: bool = False) -> None:
    """Write through a temporary file in the same folder, then rename it over ``path``: a
    reader never sees half a file.  The file gets ordinary permissions (``mkstemp`` would
    leave it readable by its owner only), or 0600 in a new folder of 0700 with ``private``
    (run records hold every prompt and reply).

    A folder that cannot be written or a full disk is a :class:`~ragmeter.errors.UserError`
    naming the file; the previous file, if any, is left as it was.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700 if private else 0o777)
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _write_error(path, exc) from None
    try:
        os.fchmod(fd, 0o600 if private else _default_file_mode())
        if binary:
            with os.fdopen(fd, "wb") as fb:
                write(fb)
                fb.flush()
                os.fsync(fb.fileno())
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise _write_error(path, exc) from None
        raise


def _why(exc: OSError) -> str:
    import errno

    return {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
            errno.EACCES: "permission denied", errno.EPERM: "permission denied",
            errno.EROFS: "the file system is read-only", errno.ENOENT: "no such file or folder",
            errno.EISDIR: "it is a folder"}.get(exc.errno or 0, exc.strerror or str(exc))


def os_error_message(exc: OSError) -> str:
    """One line for an operating-system error on a file the user named (CLI exit 2)."""
    name = f" {exc.filename!r}" if exc.filename else ""
    return (f"ragmeter: cannot use{name}: {_why(exc)}. Results already in the store are kept; "
            f"running the same command again resumes without paying again. Fix: check the "
            f"path and its permissions, or free disk space.")


def _write_error(path: Path, exc: OSError) -> Exception:
    from ragmeter.errors import UserError

    why = _why(exc)
    return UserError(
        f"ragmeter: cannot write {str(path)!r}: {why}. Nothing was written there (an earlier "
        f"file of that name is unchanged); results already stored in the store are kept, so "
        f"running the same command again resumes without paying again. Fix: free space or "
        f"choose a folder you can write to.")


def write_text(path: str | Path, text: str) -> None:
    """Write text (UTF-8) atomically."""
    _atomic_write(Path(path), lambda fh: fh.write(text))


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write bytes (a PNG, say) atomically."""
    _atomic_write(Path(path), lambda fb: fb.write(data), binary=True)


def write_bytes_stream(path: str | Path, write: Any) -> None:
    """Call ``write(binary_file)`` on a temporary file, then rename it over ``path``."""
    _atomic_write(Path(path), write, binary=True)


def write_json(path: str | Path, obj: Any, *, private: bool = False) -> None:
    """Write ``obj`` as pretty JSON, atomically (a reader never sees half a file); ``private``
    makes the file 0600 (see :func:`_atomic_write`)."""
    def _write(fh: Any) -> None:
        json.dump(obj, fh, ensure_ascii=False, indent=2, allow_nan=False)
        fh.write("\n")

    _atomic_write(Path(path), _write, private=private)


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> int:
    """Write rows as JSON Lines, atomically; returns the number of rows."""
    count = 0

    def _write(fh: Any) -> None:
        nonlocal count
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False, allow_nan=False))
            fh.write("\n")
            count += 1

    _atomic_write(Path(path), _write)
    return count


def seq_of_dicts(value: Any) -> Sequence[Any]:
    """A list field that may arrive as a JSON string (CSV) or a numpy array (Parquet)."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    if hasattr(value, "tolist"):
        value = value.tolist()
    return value if isinstance(value, list) else []


# ---------------------------------------------------------------- the output-path guard


def same_file(a: str | Path, b: str | Path) -> bool:
    """True when both paths exist and are one file (through symlinks and hard links)."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_output(output: str | Path, inputs: Iterable[tuple[str, str | Path, str | None]],
                 *, label: str = "output") -> None:
    """Refuse an output that would replace an input, before any work is done.

    ``inputs`` holds ``(label, path, pattern)``: a file, or a folder with the glob pattern of
    the files read from it (``report`` reads ``*.json`` from its runs folder).  The output is
    compared by device and inode, so a symlink or hard link to an input is caught too.
    """
    from fnmatch import fnmatch

    from ragmeter.errors import ConfigError

    out = Path(output)
    if not out.exists():
        return
    for in_label, in_path, pattern in inputs:
        src = Path(in_path)
        clash = same_file(out, src)
        if not clash and pattern is not None and src.is_dir():
            clash = any(fnmatch(p.name, pattern) and same_file(out, p) for p in src.iterdir())
        if clash:
            raise ConfigError(
                f"ragmeter: {label} {str(out)!r} is the same file as the input {in_label} "
                f"{str(src)!r}; writing it would destroy the input. Nothing was done. "
                f"Fix: choose another output path.")
