"""User data in (one reader for every shape: path, list of dicts, DataFrame, Arrow table;
:class:`FieldMap`; row validators) and files out (atomic, guarded)."""

from __future__ import annotations

from ragmeter.io._blocks import LongLine, jsonl_blocks, jsonl_views, read_sha256
from ragmeter.io._formats import (
    has_pyarrow,
    import_parquet,
    iter_text_lines,
    jsonl_row,
    max_line_bytes,
)
from ragmeter.io._read import (
    FieldMap,
    Row,
    absent_error,
    as_number,
    as_paths,
    as_text,
    detect_format,
    is_blank,
    is_one_shot,
    is_path,
    iter_rows,
    parse_field_options,
    read_rows,
    require,
    rereadable,
    seq_of_dicts,
    source_label,
    write_bytes,
    write_json,
    write_jsonl,
    write_text,
)
from ragmeter.io._write import (
    check_output,
    os_error_message,
    utf8,
    write_bytes_stream,
)

__all__ = [
    "FieldMap",
    "LongLine",
    "Row",
    "absent_error",
    "as_number",
    "as_paths",
    "as_text",
    "check_output",
    "detect_format",
    "has_pyarrow",
    "import_parquet",
    "is_blank",
    "is_one_shot",
    "is_path",
    "iter_rows",
    "iter_text_lines",
    "jsonl_blocks",
    "jsonl_views",
    "jsonl_row",
    "max_line_bytes",
    "read_sha256",
    "os_error_message",
    "parse_field_options",
    "read_rows",
    "require",
    "rereadable",
    "seq_of_dicts",
    "source_label",
    "utf8",
    "write_bytes",
    "write_bytes_stream",
    "write_json",
    "write_jsonl",
    "write_text",
]
