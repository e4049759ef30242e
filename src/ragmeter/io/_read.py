"""Reading user data files and writing results.

One reader for every family: JSON Lines, JSON (an array of objects, or JSON Lines saved with a
``.json`` name as RGB does), CSV/TSV and Parquet.  Rows stream (JSONL, CSV and Parquet never
load the whole file), every row carries its 1-based line (JSONL/CSV) or row number
(JSON/Parquet), and every problem becomes an :class:`~ragmeter.errors.InputError` that names the
file, the place and the field.

Column renaming (``--field pred_answer=my_column``) is a :class:`FieldMap`.

This module holds the entry point (:func:`iter_rows`, files and in-memory data), field access
and validation; the per-format readers live in :mod:`ragmeter.io._formats` and the atomic
writers and output-path guard in :mod:`ragmeter.io._write`, re-exported here.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter._util._record import record, set_field
from ragmeter.errors import InputError
from ragmeter.io._formats import (
    Row,
    _iter_csv,
    _iter_json,
    _iter_jsonl,
    _iter_parquet,
    check_text,
)
from ragmeter.io._write import (
    write_bytes,
    write_json,
    write_jsonl,
    write_text,
)
from ragmeter.text._unicode import SURROGATE, find_lone_surrogate, shown

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
    "rereadable",
    "is_one_shot",
    "as_paths",
]

FORMATS = ("jsonl", "json", "csv", "tsv", "parquet")


@record()  # a plain class, no dataclass (issue 26.5)
class FieldMap:
    """Maps ragmeter's canonical field names to the user's column names.

    ``mapping`` is what the user asked (``--field pred_answer=answer``).  ``aliases`` are the
    reader's own fallbacks: ``{"pred_answer": ("response",)}`` reads ``pred_answer`` from a
    ``response`` column when the row has no ``pred_answer`` and the user mapped none (so that
    the rows ``ragmeter app run`` writes are read as they are).  The first alias present wins.
    """

    __slots__ = ("mapping", "aliases")
    mapping: Mapping[str, str]  # default: a new empty dict
    aliases: Mapping[str, tuple[str, ...]]  # default: a new empty dict

    def __init__(self, mapping: Mapping[str, str] | None = None,
                 aliases: Mapping[str, tuple[str, ...]] | None = None) -> None:
        set_field(self, "mapping", {} if mapping is None else mapping)
        set_field(self, "aliases", {} if aliases is None else aliases)

    def source(self, canonical: str) -> str:
        return self.mapping.get(canonical, canonical)

    @property
    def renames(self) -> bool:
        """Whether :meth:`apply` can change a row."""
        return bool(self.mapping or self.aliases)

    def with_aliases(self, aliases: Mapping[str, tuple[str, ...]]) -> FieldMap:
        """This map with ``aliases`` as the reader's fallbacks (the user's mapping wins)."""
        return FieldMap(self.mapping, {**aliases, **self.aliases})

    def apply(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Return ``raw`` with mapped columns renamed to their canonical names, and a canonical
        column the row lacks (and the user did not map) read from its first alias present."""
        if not self.renames:
            return dict(raw)
        out = dict(raw)
        for canonical, src in self.mapping.items():
            if src in raw:
                out[canonical] = raw[src]
            else:  # the user named the column: the canonical one must not stand in for it
                out.pop(canonical, None)
        for canonical, names in self.aliases.items():
            if canonical in out or canonical in self.mapping:
                continue
            for name in names:
                if name in raw:
                    out[canonical] = raw[name]
                    break
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


class _Refused(Exception):
    """A value :func:`_plain` will not pass on: :func:`_memory_row` says where and why."""


def _plain(value: Any) -> Any:
    """numpy/pandas scalars and arrays as plain Python values; pandas' missing values as None.

    Also the checks a file's values get from its decoder, at no extra pass: an infinite float
    or text with a lone surrogate raises :class:`_Refused` (issues 29.3, 29.6)."""
    kind = type(value)
    if kind is str:
        if value.isascii() or not SURROGATE.search(value):
            return value
        raise _Refused
    if kind is float:
        if value - value == 0.0:
            return value
        if value != value:
            return None  # pandas stores missing cells as NaN
        raise _Refused
    if value is None or kind is int or kind is bool:
        return value
    if kind is list or kind is dict:
        if find_lone_surrogate(value) is None:
            return value
        raise _Refused
    if isinstance(value, float):
        return _plain(float(value))
    if isinstance(value, (str, int, bool, list, dict)):
        return value
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
    if callable(tolist):
        return _plain(tolist())
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value


def _duplicate_columns(names: Iterable[Any], label: str, component: str) -> None:
    """Refuse a table with two columns of one name (a dict per row would keep only one)."""
    seen: set[str] = set()
    for name in map(str, names):
        if name in seen:
            raise InputError(f'has two columns named "{shown(name)}"; a row would keep only '
                             "one of them.", component=component, path=label,
                             fix="rename or drop one of the columns.")
        seen.add(name)


def _arrow_value(value: Any) -> Any:
    """An Arrow row's value, checked as :func:`_plain` checks; a NaN stays NaN (Arrow marks a
    missing value with null, so a NaN there is a value)."""
    return value if value != value else _plain(value)


def _memory_row(data: Mapping[Any, Any], i: int, label: str, component: str,
                plain_value: Any = _plain) -> Row:
    """A row of in-memory data as plain values (:func:`_plain`), after the checks a file gets
    from its decoder: no infinite number (pandas' NaN is a missing value, None) and no lone
    surrogate in its text or its field names; the error names the index and the field."""
    try:
        plain = {str(k): plain_value(v) for k, v in data.items()}
        if all(map(str.isascii, plain)) or not find_lone_surrogate(list(plain)):
            return Row(plain, i, "index", label)
    except _Refused:
        pass
    for key, value in data.items():
        try:
            _plain(value)
        except _Refused:
            if isinstance(value, float) or hasattr(value, "dtype"):
                raise InputError(f"is {value}, which is not a finite number.",
                                 component=component, path=label, index=i,
                                 field=shown(str(key)),
                                 fix="give a finite number, or None for a missing value.") \
                    from None
    check_text({str(k): v for k, v in data.items()}, None, label, component, index=i)
    check_text(dict.fromkeys(map(str, data)), None, label, component, index=i)
    raise AssertionError("a refused value was not found again")  # pragma: no cover


def _iter_memory(source: Any, component: str) -> Iterator[Row]:
    """Rows of in-memory data: a sequence of dicts, a pandas DataFrame or a pyarrow Table.

    Rows are numbered by their 0-based position (``unit="index"``), as ``df.iloc`` counts.
    """
    label = source_label(source)
    if hasattr(source, "schema") and hasattr(source, "to_pylist"):  # pyarrow Table/RecordBatch
        _duplicate_columns(source.schema.names, label, component)
        batches = source.to_batches() if hasattr(source, "to_batches") else [source]
        i = 0
        for batch in batches:
            for rec in batch.to_pylist():
                yield _memory_row(rec, i, label, component, _arrow_value)
                i += 1
        return
    if hasattr(source, "to_dict") and hasattr(source, "columns"):  # pandas DataFrame
        columns = [str(c) for c in source.columns]
        _duplicate_columns(columns, label, component)
        for i, values in enumerate(source.itertuples(index=False, name=None)):
            yield _memory_row(dict(zip(columns, values, strict=True)), i, label, component)
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
        yield _memory_row(rec, i, label, component)


def as_paths(value: Any, arg: str, component: str, *, what: str = "files") -> list[Any]:
    """An argument that takes a path or a list of paths (``knowledge_base=``) as a list, read
    once (a generator of paths is fine).  A table, dicts or anything else is a one-line
    ConfigError naming the argument: a DataFrame's column names are not file names (issue
    29.9)."""
    from ragmeter.errors import ConfigError

    if value is None:
        return []
    if is_path(value):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, (Mapping, bytes, bytearray)) \
            and not hasattr(value, "columns") and not hasattr(value, "schema"):
        items = list(value)
        wrong = [v for v in items if not is_path(v)]
        if not wrong:
            return items
        got = f"a list holding {type(wrong[0]).__name__}"
    else:
        got = f"a {type(value).__name__}"
    raise ConfigError(f"{component}: {arg}= takes a path or a list of paths ({what}), got "
                      f"{got}. Fix: {arg}=\"kb.md\" or {arg}=[\"a.md\", \"b.md\"].")


def is_one_shot(source: Any) -> bool:
    """True for data that can be read only once: an iterator or generator (``iter(x) is x``),
    as opposed to a path, a list, a DataFrame or an Arrow table."""
    if is_path(source) or isinstance(source, (Sequence, Mapping)):
        return False
    try:
        return iter(source) is source
    except TypeError:
        return False


def rereadable(source: Any) -> Any:
    """``source`` itself, or a one-shot iterator's rows as a list, read now, once: a verb that
    reads its input twice (``by=`` groups, a second file's lookup) calls this first, so its
    second pass does not find the generator empty (issue 29.9)."""
    return list(source) if is_one_shot(source) else source


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
            yield Row(fm.apply(row.data), row.number, row.unit, row.path) if fm.renames else row
        if not seen and not allow_empty:
            one_shot = is_one_shot(source)
            raise InputError("has no rows" + (" (an iterator is empty once it was read)"
                                              if one_shot else "") + ".",
                             component=component, path=source_label(source),
                             fix="pass a list (list(rows)) when the data is read more than "
                                 "once." if one_shot else "give at least one row.")
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
        yield Row(fm.apply(row.data), row.number, row.unit, row.path) if fm.renames else row
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
        # the same words fit both doors: the argument in Python, the flag at the command line
        fix = (f"add the field, or map your column: fields={{{name!r}: 'COLUMN'}} in Python, "
               f"--field {name}=COLUMN on the command line."
               if src == name else f"the data has no column {src!r}; check the mapping "
                                   "(fields= in Python, --field on the command line).")
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
    except OverflowError:  # an int beyond the float range (10**400)
        raise row.error("is a number too large for a float, expected a finite number.",
                        component=component, field=name,
                        fix="give a number within ±1.8e308.") from None
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
