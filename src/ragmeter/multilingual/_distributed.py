"""``multilingual score --engine ray``: Parquet datasets too large for one process.

The files (a folder, a glob or one file) are read as a Ray Dataset; the per-row work
(normalization, EM, F1, RLC: :meth:`_Accumulator.score_texts`, the very code one process runs;
costs from ``evidence`` with the row path's own function; ``--rlc-lid``'s language
identification) is done by ``map_batches`` on the cluster's workers, one Parquet row group at a
time, and only compact columns come back (ids, language, the scores, cost, semantic score, the
``--by`` group; the texts only with ``keep_text``).  The driver takes the batches in input
order (``preserve_order``) and aggregates them with the one-process code
(:func:`ragmeter.multilingual._aggregate.aggregate`), once for the whole dataset and once
per ``--by`` group, so every number, interval and item equals one process scoring the files
concatenated in sorted path order.

Rows are numbered across the dataset (``row N``: the N-th row of the files in that order).
A row one process would report or treat specially is an error here, with the fix of running
without ``--engine ray`` to see it with its place: a null required field, an unknown
language, a number out of range.  A null ``pred_answer`` is an unscored row and a row with
neither ``translate_tokens`` nor an ``evidence`` column has no cost, as in one process.
``--rlc-lid`` needs every language of the dataset before the first row is scored (lingua is
restricted to them): the driver reads the language column of the files first.
``--by`` with ``--rlc-lid`` is one-process only (each group restricts lingua to its own
languages).
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, InputError

__all__ = ["parquet_files", "score_parquet_on_ray"]

COMPONENT = "multilingual"
FIELDS = ("sample_id", "sample_lang", "system", "gold_answer", "pred_answer",
          "translate_tokens", "semantic_score", "question")
FLOAT_NAN = float("nan")
ROW_PATH_FIX = ("run the same command without --engine ray on one of the files to see the "
                "problem with its row, or fix the data")


def parquet_files(path: str | Path) -> list[Path]:
    """The Parquet files ``path`` names, sorted: a file, a folder (``*.parquet`` in it and
    below) or a glob pattern."""
    text = str(path)
    p = Path(text)
    if p.is_dir():
        files = sorted(f for f in p.rglob("*.parquet") if f.is_file())
    elif p.is_file():
        files = [p]
    else:
        files = sorted(Path(f) for f in glob.glob(text, recursive=True) if Path(f).is_file())
    if not files:
        raise InputError("names no Parquet file (a .parquet file, a folder of them or a glob "
                         "such as 'answers/*.parquet').", component=COMPONENT, path=text,
                         fix="check the path; quote a glob so the shell leaves it to ragmeter")
    return files


class ScoreRowGroups:
    """The per-row work on a Ray worker (a callable class: Ray Data builds it once per
    worker).  A batch names Parquet row groups (``file``, ``row_group``, ``first``: the
    file's row number before the group); the worker reads each itself (its columns only) and
    scores its rows with ``threads`` intra-op threads (the CPUs it reserved).
    ``languages``: the dataset's languages for ``--rlc-lid`` (None: off); ``by``: the column
    whose value groups the rows (``--by``), ``by_lang`` when it is the language."""

    def __init__(self, names: dict[str, str], normalize: str, keep_text: bool,
                 threads: int = 1, languages: list[str] | None = None,
                 by: str | None = None, by_lang: bool = False) -> None:
        from ragmeter.runner.engines._ray import limit_threads

        limit_threads(threads)
        self.names = names
        self.normalize = normalize
        self.keep_text = keep_text
        self.by = by
        self.by_lang = by_lang
        self.lid: Any = None
        if languages is not None:
            from ragmeter.text._rlc import LidRlc

            self.lid = LidRlc(languages)

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa
        import pyarrow.parquet as pq

        parts = []
        for file, group, first in zip(batch.column("file").to_pylist(),
                                      batch.column("row_group").to_pylist(),
                                      batch.column("first").to_pylist(), strict=True):
            pf = pq.ParquetFile(str(file))
            sources = [*self.names.values(), *([self.by] if self.by else [])]
            wanted = [n for n in dict.fromkeys(sources) if n in pf.schema_arrow.names]
            table = pf.read_row_group(int(group), columns=wanted)
            parts.append(pa.table(self.score(table, str(file), int(first)),
                                  schema=self.schema()))
        return pa.concat_tables(parts)

    def schema(self) -> Any:
        """The columns a worker returns (texts typed, so that a null stays None)."""
        import pyarrow as pa

        from ragmeter.multilingual._scorer import GIVEN, LID, TEXT_METRICS

        fields = [("sample_id", pa.string()), ("system", pa.string()), ("lang", pa.string()),
                  *((m.name, pa.float64()) for m in (*TEXT_METRICS, *GIVEN)),
                  ("missing", pa.bool_())]
        if self.lid is not None:
            fields += [(m.name, pa.float64()) for m in LID]
        if self.by:
            fields.append(("group", pa.string()))
        if self.keep_text:
            fields += [("question", pa.string()), ("gold", pa.string()), ("pred", pa.string())]
        return pa.schema(fields)

    def score(self, batch: Any, file: str = "", first: int = 0) -> dict[str, Any]:
        """EM, F1 and RLC of one table's rows, with the columns the driver needs (``file``
        and ``first``: where the rows are, for error messages)."""
        import numpy as np

        from ragmeter.multilingual._fast import _schema
        from ragmeter.multilingual._scorer import _Accumulator
        from ragmeter.text._languages import canonical_language, is_known_language

        schema = _schema(self.names)

        def column(name: str) -> list[Any]:
            """The column as Python values, cast as the one-process columnar reader casts."""
            source = self.names[name]
            if source not in batch.column_names:
                return [None] * batch.num_rows
            col = batch.column(source)
            want = schema.field(source).type
            if not col.type.equals(want):
                try:
                    col = col.cast(want)
                except Exception as exc:  # noqa: BLE001 - ArrowInvalid & co., one line
                    raise ValueError(f"ragmeter: {source} cannot be read as {want} "
                                     f"({type(exc).__name__})") from None
            return col.to_pylist()  # type: ignore[no-any-return]

        cols = {name: column(name) for name in FIELDS}
        for req in ("sample_id", "sample_lang", "system", "gold_answer"):
            if None in cols[req]:
                raise ValueError(f"ragmeter: a row has no {self.names[req]} (null or missing); "
                                 f"--engine ray needs it in every row")
        costs = self._costs(batch, cols["translate_tokens"], file, first)
        cost = np.asarray(costs, dtype=np.float64)
        cost_ok = cost[~np.isnan(cost)]
        sem = np.asarray([np.nan if s is None else s for s in cols["semantic_score"]],
                         dtype=np.float64)
        sem_ok = sem[~np.isnan(sem)]
        if len(sem_ok) != sum(s is not None for s in cols["semantic_score"]) \
                or len(cost_ok) != sum(c is not None for c in costs) \
                or not (np.isfinite(cost_ok).all() and (cost_ok >= 0).all()) \
                or not ((sem_ok >= 0).all() and (sem_ok <= 1).all()):
            raise ValueError("ragmeter: a translate_tokens or semantic_score is out of range")
        canon = {}
        for raw in set(cols["sample_lang"]):
            canon[raw] = canonical_language(raw)
            if not is_known_language(canon[raw]):
                raise ValueError(f"ragmeter: {raw!r} is not a known language code")
        langs = [canon[raw] for raw in cols["sample_lang"]]
        preds = cols["pred_answer"]
        missing = [p is None for p in preds]
        acc = _Accumulator("", "row", None, False, self.normalize)
        scores = acc.score_texts([p or "" for p in preds], cols["gold_answer"], langs,
                                 golds_are_text=True)
        out: dict[str, Any] = {
            "sample_id": cols["sample_id"], "system": cols["system"], "lang": langs,
            **{name: np.asarray(values) for name, values in scores.items()},
            "cost": cost, "semantic_score": sem, "missing": np.asarray(missing, dtype=bool)}
        if self.lid is not None:  # the row path scores the rows that have a prediction
            from ragmeter.multilingual._scorer import LID

            lid = [None if p is None else self.lid.score(p, lg)
                   for p, lg in zip(preds, langs, strict=True)]
            out.update({m.name: np.asarray([FLOAT_NAN if v is None else v for v in lid],
                                           dtype=np.float64) for m in LID})
        if self.by:
            out["group"] = self._groups(batch, langs)
        if self.keep_text:
            out.update(question=cols["question"], gold=cols["gold_answer"], pred=preds)
        return out

    def _costs(self, batch: Any, tokens: list[Any], file: str, first: int
               ) -> list[float | None]:
        """Each row's cost: ``translate_tokens``, else the sum of its evidence's token
        counts (the row path's own function), else None when the file has no evidence."""
        from ragmeter.errors import InputError
        from ragmeter.io import Row
        from ragmeter.multilingual._rows import _row_cost

        if None not in tokens:
            return tokens
        source = self.names.get("evidence", "evidence")
        evidence = (batch.column(source).to_pylist() if source in batch.column_names else None)
        out: list[float | None] = []
        for i, tt in enumerate(tokens):
            if tt is not None:
                out.append(tt)
            elif evidence is None:
                out.append(None)
            else:
                row = Row({"evidence": evidence[i]}, first + i + 1, "row", file)
                try:
                    out.append(_row_cost(row))
                except InputError as err:
                    raise ValueError(f"ragmeter: {err}".replace("\n", " ")) from None
        return out

    def _groups(self, batch: Any, langs: list[str]) -> list[str]:
        """Each row's ``--by`` value as one process groups it (``str`` of the value, ``""``
        for a null; the canonical code for the language)."""
        if self.by_lang:
            return langs
        assert self.by is not None
        if self.by not in batch.column_names:
            raise ValueError(f"ragmeter: the data has no column {self.by!r} (--by); every "
                             "row needs it")
        return ["" if v is None else str(v) for v in batch.column(self.by).to_pylist()]


def dataset_languages(files: list[Path], source: str) -> list[str]:
    """The canonical codes of the languages in the files' ``source`` column, sorted, as one
    process collects them for ``--rlc-lid`` (the driver reads that column only)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ragmeter.text._languages import canonical_language

    raw: set[Any] = set()
    for f in files:
        pf = pq.ParquetFile(f)
        if source not in pf.schema_arrow.names:
            continue
        for batch in pf.iter_batches(batch_size=65536, columns=[source]):
            raw.update(pc.unique(batch.column(0)).to_pylist())
    return sorted({lg for lg in (canonical_language(str(v)) for v in raw if v is not None)
                   if lg})


def score_parquet_on_ray(path: str | Path, config: Any, *, address: str | None = None,
                         workers: int = 2, cpus_per_worker: int = 1,
                         by: str | None = None) -> tuple[Any, dict[str, Any] | None]:
    """Score the Parquet files ``path`` names on Ray: a
    :class:`~ragmeter.multilingual._scorer.MultilingualResult` equal to one process's
    on the files concatenated in sorted order (see the module docstring), and with ``by`` (a
    field name, ``sample_lang`` for the language) the ``summary["groups"]`` of one process,
    else None.  ``cpus_per_worker``: CPUs each worker reserves and computes with."""
    from ragmeter.multilingual._aggregate import aggregate, group_summary
    from ragmeter.multilingual._scorer import BATCH, _Accumulator
    from ragmeter.runner.engines._ray import connect, import_ray, one_line

    if config.rlc_lid and by:
        raise ConfigError("multilingual: --by with --rlc-lid runs in one process only (each "
                          "group restricts language identification to its own languages). "
                          "Fix: drop --engine ray, or run --by and --rlc-lid separately.")
    if workers < 1:
        raise ConfigError("multilingual: --ray-workers must be at least 1.")
    if cpus_per_worker < 1:
        raise ConfigError("multilingual: --ray-cpus-per-worker must be at least 1.")
    files = parquet_files(path)
    names = {k: config.field_map.source(k) for k in (*FIELDS, "evidence")}
    lid = None
    languages = None
    if config.rlc_lid:
        from ragmeter.text._rlc import LidRlc

        languages = dataset_languages(files, names["sample_lang"])
        lid = LidRlc(languages)
    by_lang = by == "sample_lang"
    by_source = config.field_map.source(by) if by else None
    ray = import_ray()
    started = connect(ray, address)
    import logging

    data_log = logging.getLogger("ray.data")  # a failed row is one line of ours, not Ray's log
    level = data_log.level
    data_log.setLevel(logging.CRITICAL)
    try:
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.execution_options.preserve_order = True  # rows come back in input order
        # One item per row group, in file order; each worker reads its row groups itself
        # (Ray's read_parquet would need fsspec's HTTP support even for local files).
        import pyarrow.parquet as pq

        groups = []
        for f in files:
            meta = pq.ParquetFile(f).metadata
            first = 0
            for g in range(meta.num_row_groups):
                groups.append({"file": str(f), "row_group": g, "first": first})
                first += meta.row_group(g).num_rows
        dataset = ray.data.from_items(groups, override_num_blocks=max(1, len(groups))
                                      ).map_batches(
            ScoreRowGroups, fn_constructor_args=(names, config.normalize, config.keep_text,
                                                 cpus_per_worker, languages, by_source,
                                                 by_lang),
            batch_size=1, batch_format="pyarrow", num_cpus=cpus_per_worker,
            compute=ray.data.ActorPoolStrategy(size=workers))
        whole = _Feed(_Accumulator(str(path), "row", lid, config.keep_text, config.normalize),
                      config.keep_text)
        by_group: dict[str, _Feed] = {}
        try:
            for batch in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
                columns = {name: batch.column(name).to_pylist() for name in batch.column_names}
                numbers = range(whole.seen + 1, whole.seen + batch.num_rows + 1)
                whole.take(columns, numbers, BATCH)
                if by:
                    _take_groups(by_group, columns, numbers, config, str(path), BATCH)
            whole.flush()
            for feed in by_group.values():
                feed.flush()
        except ray.exceptions.RayError as err:
            raise InputError(f"could not be scored on Ray: {_reason(err, one_line)}.",
                             component=COMPONENT, path=str(path), fix=ROW_PATH_FIX) from None
        if whole.seen == 0:
            raise InputError("has no rows.", component=COMPONENT, path=str(path),
                             fix="give at least one row")
        result = aggregate(whole.acc, config, lid, exact_places=True)
        summary = None
        if by:
            summary = {"by": by, "values": {
                key: group_summary(aggregate(by_group[key].acc, config, None,
                                             exact_places=True).to_json())
                for key in sorted(by_group)}}
        return result, summary
    finally:
        data_log.setLevel(level)
        if started:
            ray.shutdown()


class _Feed:
    """Rows streamed back from the workers, added to an accumulator in chunks of the row
    path's BATCH, so that even the order systems first appear in equals one process's."""

    def __init__(self, acc: Any, keep_text: bool) -> None:
        self.acc = acc
        self.keep_text = keep_text
        self.pending: dict[str, list[Any]] = {}
        self.numbers: list[int] = []
        self.seen = 0

    def take(self, columns: dict[str, list[Any]], numbers: Sequence[int], batch: int) -> None:
        for name, values in columns.items():
            self.pending.setdefault(name, []).extend(values)
        self.numbers.extend(numbers)
        self.seen += len(numbers)
        while len(self.numbers) >= batch:
            self.flush(batch)

    def flush(self, size: int | None = None) -> None:
        """Add the first ``size`` pending rows (all of them for None)."""
        size = len(self.numbers) if size is None else size
        if not size:
            return
        chunk = {k: v[:size] for k, v in self.pending.items()}
        numbers = self.numbers[:size]
        for values in (*self.pending.values(), self.numbers):
            del values[:size]
        from ragmeter.multilingual._scorer import GIVEN, LID, TEXT_METRICS

        texts = ((chunk["question"], chunk["gold"], chunk["pred"]) if self.keep_text
                 else None)
        scores = {m.name: chunk[m.name] for m in (*TEXT_METRICS, *LID) if m.name in chunk}
        given = {m.name: [None if v != v else v for v in chunk[m.name]] for m in GIVEN}
        self.acc.add_scored(chunk["system"], chunk["sample_id"], chunk["lang"], scores, given,
                            numbers, chunk["missing"], texts)


def _take_groups(feeds: dict[str, _Feed], columns: dict[str, list[Any]],
                 numbers: Sequence[int], config: Any, path: str, batch: int) -> None:
    """Hand each row of a streamed batch to its ``--by`` group's accumulator, in order."""
    from ragmeter.multilingual._scorer import _Accumulator

    positions: dict[str, list[int]] = {}
    for i, key in enumerate(columns["group"]):
        positions.setdefault(key, []).append(i)
    for key, idx in positions.items():
        feed = feeds.get(key)
        if feed is None:
            feed = feeds[key] = _Feed(_Accumulator(path, "row", None, False,
                                                   config.normalize), False)
        feed.take({name: [values[i] for i in idx] for name, values in columns.items()
                   if name not in ("question", "gold", "pred")},
                  [numbers[i] for i in idx], batch)


def _reason(err: BaseException, fallback: Any) -> str:
    """A worker's own message (``ValueError: ragmeter: ...``) out of Ray's wrapping, else
    Ray's line."""
    import re

    found = re.search(r"Error: ragmeter: ([^\n]*)", str(err))
    return found.group(1).strip().rstrip(".") if found else str(fallback(err))
