"""Columnar reading of clean answer files (JSON Lines and Parquet) through Apache Arrow.

Only the columns ragmeter needs are parsed, in C++, in batches; the text passes then run over
whole batches (see :func:`ragmeter.text._normalize.normalize_many` and
:func:`ragmeter.text._rlc.rlc_batch`).  Anything that the row path would report or treat
specially (a type Arrow cannot take, a null where a value is required, costs that must come from
``evidence``, an unknown language, a duplicate) raises :class:`FastPathUnsupported`, and the
caller re-runs the file on the row path, which gives the exact error with its line.  Both paths
produce identical numbers (tests compare them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError
from ragmeter.io import LongLine, detect_format, has_pyarrow, jsonl_blocks, jsonl_views

__all__ = ["accumulate_columnar"]

_BLOCK = 1 << 19  # bytes of JSON lines per msgspec call
_ARROW_BLOCK = 1 << 21
"""Bytes of JSON lines per Arrow batch (some 12,000 rows of answers): against Arrow's streaming
reader in blocks of 512 KiB, about 5% less CPU time and ~5 MiB less peak memory at 1,000,000
rows (issue 26.3, measured in one process)."""


def _schema(names: dict[str, str]) -> Any:
    import pyarrow as pa

    return pa.schema([
        (names["sample_id"], pa.string()), (names["sample_lang"], pa.string()),
        (names["system"], pa.string()), (names["gold_answer"], pa.string()),
        (names["pred_answer"], pa.string()), (names["translate_tokens"], pa.float64()),
        (names["semantic_score"], pa.float64()), (names["question"], pa.string()),
    ])


def _batches(path: Path, fmt: str, names: dict[str, str]) -> Iterator[Any]:
    import pyarrow as pa

    schema = _schema(names)
    if fmt == "jsonl":
        import pyarrow.json as pj

        # Whole lines, _ARROW_BLOCK bytes at a time, each parsed as one batch: Arrow's own
        # streaming reader reads ahead (its blocks of 512 KiB hold ~30 MiB; bigger ones
        # more), and each batch's fixed costs count less in bigger batches.  One thread and
        # the system allocator (threads and mimalloc's arenas add ~60 MiB; same CPU time).
        parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        # one reused buffer, no line count; the input's SHA-256 taken on the way, for the
        # run record (io.read_sha256: no second read of the file)
        for _, data, _ in jsonl_views(path, _ARROW_BLOCK, lines=_no_count, sha256=True):
            table = pj.read_json(
                pa.BufferReader(pa.py_buffer(data)),
                read_options=pj.ReadOptions(block_size=len(data) + 1, use_threads=False),
                parse_options=parse, memory_pool=pa.system_memory_pool())
            yield from table.to_batches()
        return
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    present = set(pf.schema_arrow.names)
    wanted = [n for n in schema.names if n in present]
    for batch in pf.iter_batches(batch_size=65536, columns=wanted):
        cols = {}
        for f in schema:
            if f.name in batch.schema.names:
                col = batch.column(f.name)
                if not col.type.equals(f.type):
                    col = col.cast(f.type)  # raises ArrowInvalid for text that is no number
                cols[f.name] = col
            else:
                cols[f.name] = pa.nulls(batch.num_rows, f.type)
        yield pa.record_batch(cols)


def _no_count(view: memoryview) -> int:
    """Lines are not counted here (some 0.1 s at 1,000,000 rows): a line over the limit sends
    the whole file to the row path, which names its line."""
    return 0


_NUMPY_TYPES = {"double": "float64", "int32": "int32", "int64": "int64", "int8": "int8",
                "int16": "int16"}


def _numpy(arr: Any) -> Any:
    """An Arrow array of float64 (nulls become NaN) or of integers (no nulls) as numpy, read
    from its buffers: pyarrow's own ``to_numpy``/``__array__`` import pandas on first use
    (~0.3 s of a 2.5 s whole-process score of 200k rows) for nothing here."""
    import numpy as np

    if hasattr(arr, "combine_chunks"):
        arr = arr.combine_chunks()
    dtype = _NUMPY_TYPES.get(str(arr.type))
    if dtype is None or (arr.null_count and dtype != "float64"):
        return arr.to_numpy(zero_copy_only=False)  # any other type: pyarrow's conversion
    n, offset = len(arr), arr.offset
    validity, data = arr.buffers()[:2]
    if data is None:  # an all-null array may carry no data buffer
        return np.full(n, np.nan)
    values = np.frombuffer(data, dtype=dtype)[offset:offset + n]
    if arr.null_count:
        bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
        values = np.where(bits[offset:offset + n].astype(bool), values, np.nan)
    return values


def accumulate_columnar(path: Path, config: Any, make_acc: Callable[..., Any]) -> Any | None:
    """Score ``path`` column-wise into a fresh accumulator, or None when the format has no
    columnar path (CSV, JSON arrays).  Raises FastPathUnsupported to ask for the row path."""
    from ragmeter.multilingual._rows import FastPathUnsupported
    from ragmeter.text._languages import canonical_language, is_known_language

    try:
        fmt = detect_format(path)
    except InputError:
        return None
    if fmt not in ("jsonl", "parquet") or not path.is_file() or path.stat().st_size == 0:
        return None
    fm = config.field_map
    names = {k: fm.source(k) for k in ("sample_id", "sample_lang", "system", "gold_answer",
                                       "pred_answer", "translate_tokens", "semantic_score",
                                       "question")}
    if not has_pyarrow():  # the row path names the extra for Parquet
        if fmt == "jsonl" and _typed_decoder(names) is not None:
            # Arrow's reader is first where installed: 5-7% less CPU at 1M rows (measured),
            # for ~65 MiB more peak memory
            return _accumulate_jsonl(path, config, make_acc(str(path), "line", None,
                                                             config.keep_text), names)
        return None
    import numpy as np
    import pyarrow as pa

    acc = make_acc(str(path), "line" if fmt == "jsonl" else "row", None, config.keep_text)
    lang_ok: dict[str, str] = {}
    number = 0
    try:
        for batch in _batches(path, fmt, names):
            n = batch.num_rows
            if n == 0:
                continue
            col = {k: batch.column(v) for k, v in names.items()}
            # A missing pred_answer and a null one look the same to Arrow; only the row path
            # tells them apart (error vs unscored), so any null goes there.
            for req in ("sample_id", "sample_lang", "system", "gold_answer", "pred_answer"):
                if col[req].null_count:
                    raise FastPathUnsupported(f"null or missing {req}")
            if col["translate_tokens"].null_count:
                raise FastPathUnsupported("cost needs evidence")  # or is missing: row path
            cost_np = _numpy(col["translate_tokens"])
            sem_col = col["semantic_score"]
            sem_np = _numpy(sem_col)  # nulls become NaN
            present = ~np.isnan(sem_np)
            if int(n - present.sum()) != sem_col.null_count:
                raise FastPathUnsupported("NaN semantic score")  # the row path names it
            if not (np.isfinite(cost_np).all() and (cost_np >= 0).all()) or not (
                    np.isfinite(sem_np[present]).all() and (sem_np[present] >= 0).all()
                    and (sem_np[present] <= 1).all()):
                raise FastPathUnsupported("out-of-range number")
            # each distinct language code is checked once; rows take theirs by index
            codes = _dictionary_encode(col["sample_lang"])
            canon_of = []
            for raw in codes.dictionary.to_pylist():
                canon = lang_ok.get(raw)
                if canon is None:
                    canon = canonical_language(raw)
                    if not is_known_language(canon):
                        raise FastPathUnsupported("unknown language")
                    lang_ok[raw] = canon
                canon_of.append(canon)
            langs = np.array(canon_of, dtype=object)[_numpy(codes.indices)].tolist()
            # Arrow skips blank lines, so JSONL line numbers are exact only on the row path;
            # every error that needs a place re-runs there.
            numbers = range(number + 1, number + n + 1)
            number += n
            try:
                acc.add(_coded(col["system"]), col["sample_id"].to_pylist(), langs,
                        _coded(col["gold_answer"]), col["pred_answer"].to_pylist(),
                        {"cost": cost_np, "semantic_score": sem_np}, numbers,
                        col["question"].to_pylist() if config.keep_text else None,
                        golds_are_text=True)
            except InputError:
                raise FastPathUnsupported("row error") from None
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError,
            UnicodeError, LongLine):  # UnicodeEncodeError: a file name that is not UTF-8
        raise FastPathUnsupported("arrow could not read the file") from None
    if number == 0:
        raise FastPathUnsupported("no rows")
    return acc


def _coded(arr: Any) -> Any:
    """A string column as :class:`~ragmeter.multilingual._scorer.Coded` (Arrow's dictionary
    encoding: each distinct string once, an index per row)."""
    from ragmeter.multilingual._scorer import Coded

    enc = _dictionary_encode(arr)
    return Coded(enc.dictionary.to_pylist(), _numpy(enc.indices))


def _dictionary_encode(arr: Any) -> Any:
    """``arr.dictionary_encode()`` through pyarrow's compute kernel registry: the method
    imports ``pyarrow.compute``, which builds a wrapper and docstring for every kernel on
    import (some 50 ms of a whole-process score, measured) for this one call."""
    try:
        from pyarrow._compute import call_function
    except ImportError:  # pragma: no cover - a pyarrow without the private module
        return arr.dictionary_encode()
    return call_function("dictionary_encode", [arr])


def _typed_decoder(names: dict[str, str]) -> Any:
    """msgspec's decoder of an answers line (the columns of :func:`_schema`, read from the
    user's column names, other fields skipped), or None without msgspec."""
    try:
        import msgspec
    except ImportError:
        return None
    if len(set(names.values())) < len(names):  # two fields read from one column
        return None
    required = [(k, float if k == "translate_tokens" else str, msgspec.field(name=names[k]))
                for k in ("sample_id", "sample_lang", "system", "gold_answer", "pred_answer",
                          "translate_tokens")]
    optional = [(k, t, msgspec.field(default=None, name=names[k]))
                for k, t in (("semantic_score", float | None), ("question", str | None))]
    answer = msgspec.defstruct("Answer", [*required, *optional], gc=False)  # never in a cycle
    return msgspec.json.Decoder(answer)


def _accumulate_jsonl(path: Path, config: Any, acc: Any, names: dict[str, str]) -> Any:
    """:func:`accumulate_columnar` for JSON Lines through msgspec: a block of lines decoded
    in one call against the answer's types (a null, a missing field or another type is a
    validation error: the row path then reads the file), the same checks as on Arrow's
    columns, the same lists to the accumulator (numbers: rows, as Arrow's, blank lines
    skipped)."""
    import math

    import msgspec

    from ragmeter.multilingual._rows import FastPathUnsupported
    from ragmeter.text._languages import canonical_language, is_known_language

    decode = _typed_decoder(names).decode_lines
    lang_ok: dict[str, str] = {}
    number = 0
    try:
        for _, data, _ in jsonl_blocks(path, _BLOCK):
            rows = decode(data)
            n = len(rows)
            if n == 0:
                continue
            costs = [r.translate_tokens for r in rows]
            sems = [r.semantic_score for r in rows]
            if not all(0 <= c < math.inf for c in costs) or not all(
                    0 <= v <= 1 for v in sems if v is not None):  # NaN fails both
                raise FastPathUnsupported("out-of-range number")
            raw_langs = [r.sample_lang for r in rows]
            for raw in set(raw_langs).difference(lang_ok):
                canon = canonical_language(raw)
                if not is_known_language(canon):
                    raise FastPathUnsupported("unknown language")
                lang_ok[raw] = canon
            numbers = range(number + 1, number + n + 1)
            number += n
            try:
                acc.add([r.system for r in rows], [r.sample_id for r in rows],
                        list(map(lang_ok.__getitem__, raw_langs)),
                        [r.gold_answer for r in rows], [r.pred_answer for r in rows],
                        {"cost": costs, "semantic_score": sems}, numbers,
                        [r.question for r in rows] if config.keep_text else None,
                        golds_are_text=True)
            except InputError:
                raise FastPathUnsupported("row error") from None
    except (msgspec.DecodeError, ValueError, LongLine, OSError):
        raise FastPathUnsupported("the typed decoder could not read the file") from None
    if number == 0:
        raise FastPathUnsupported("no rows")
    return acc
