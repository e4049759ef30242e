"""``multilingual score --engine ray``: Parquet datasets too large for one process.

The files (a folder, a glob or one file) are read as a Ray Dataset; the per-row text work
(normalization, EM, F1, RLC: :meth:`_Accumulator.score_texts`, the very code one process runs)
is done by ``map_batches`` on the cluster's workers, one Parquet row group at a time, and only compact columns come back (ids,
language, the three scores, cost, semantic score; the texts only with ``keep_text``).  The
driver takes the batches in input order (``preserve_order``) and aggregates them with the
one-process code (:func:`ragmeter.suites.multilingual.aggregate.aggregate`), so every number,
interval and item equals one process scoring the files concatenated in sorted path order.

Rows are numbered across the dataset (``row N``: the N-th row of the files in that order).
A row one process would report or treat specially is an error here, with the fix of running
without ``--engine ray`` to see it with its place: a null required field, a missing
``translate_tokens`` (costs from ``evidence`` are one-process only), an unknown language, a
number out of range.  A null ``pred_answer`` is an unscored row, as in one process.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, InputError

__all__ = ["parquet_files", "score_parquet_on_ray"]

COMPONENT = "multilingual"
FIELDS = ("sample_id", "sample_lang", "system", "gold_answer", "pred_answer",
          "translate_tokens", "semantic_score", "question")
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
    worker).  A batch names Parquet row groups (``file``, ``row_group``); the worker reads
    each itself (its columns only) and scores its rows."""

    def __init__(self, names: dict[str, str], normalize: str, keep_text: bool) -> None:
        self.names = names
        self.normalize = normalize
        self.keep_text = keep_text

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa
        import pyarrow.parquet as pq

        parts = []
        for file, group in zip(batch.column("file").to_pylist(),
                               batch.column("row_group").to_pylist(), strict=True):
            pf = pq.ParquetFile(str(file))
            wanted = [n for n in dict.fromkeys(self.names.values())
                      if n in pf.schema_arrow.names]
            parts.append(pa.table(self.score(pf.read_row_group(int(group), columns=wanted)),
                                  schema=self.schema()))
        return pa.concat_tables(parts)

    def schema(self) -> Any:
        """The columns a worker returns (texts typed, so that a null stays None)."""
        import pyarrow as pa

        fields = [("sample_id", pa.string()), ("system", pa.string()), ("lang", pa.string()),
                  ("em", pa.float64()), ("f1", pa.float64()), ("rlc", pa.float64()),
                  ("cost", pa.float64()), ("semantic", pa.float64()), ("missing", pa.bool_())]
        if self.keep_text:
            fields += [("question", pa.string()), ("gold", pa.string()), ("pred", pa.string())]
        return pa.schema(fields)

    def score(self, batch: Any) -> dict[str, Any]:
        """EM, F1 and RLC of one table's rows, with the columns the driver needs."""
        import numpy as np

        from ragmeter.suites.multilingual.fast import _schema
        from ragmeter.suites.multilingual.scorer import _Accumulator
        from ragmeter.text.languages import canonical_language, is_known_language

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
        for req in ("sample_id", "sample_lang", "system", "gold_answer", "translate_tokens"):
            if None in cols[req]:
                raise ValueError(f"ragmeter: a row has no {self.names[req]} (null or missing); "
                                 f"--engine ray needs it in every row")
        cost = np.asarray(cols["translate_tokens"], dtype=np.float64)
        sem = np.asarray([np.nan if s is None else s for s in cols["semantic_score"]],
                         dtype=np.float64)
        sem_ok = sem[~np.isnan(sem)]
        if len(sem_ok) != sum(s is not None for s in cols["semantic_score"]) \
                or not (np.isfinite(cost).all() and (cost >= 0).all()) \
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
        em, f1, rlc = acc.score_texts([p or "" for p in preds], cols["gold_answer"], langs,
                                      golds_are_text=True)
        out: dict[str, Any] = {
            "sample_id": cols["sample_id"], "system": cols["system"], "lang": langs,
            "em": np.asarray(em), "f1": np.asarray(f1), "rlc": np.asarray(rlc),
            "cost": cost, "semantic": sem, "missing": np.asarray(missing, dtype=bool)}
        if self.keep_text:
            out.update(question=cols["question"], gold=cols["gold_answer"], pred=preds)
        return out


def score_parquet_on_ray(path: str | Path, config: Any, *, address: str | None = None,
                         workers: int = 2) -> Any:
    """Score the Parquet files ``path`` names on Ray; a
    :class:`~ragmeter.suites.multilingual.scorer.MultilingualResult` equal to one process's
    on the files concatenated in sorted order (see the module docstring)."""
    from ragmeter.engine.ray_engine import connect, import_ray, one_line
    from ragmeter.suites.multilingual.aggregate import aggregate
    from ragmeter.suites.multilingual.scorer import BATCH, _Accumulator

    if config.rlc_lid:
        raise ConfigError("multilingual: --rlc-lid runs in one process only; drop --engine "
                          "ray or --rlc-lid.")
    if workers < 1:
        raise ConfigError("multilingual: --ray-workers must be at least 1.")
    files = parquet_files(path)
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
        names = {k: config.field_map.source(k) for k in FIELDS}
        # One item per row group, in file order; each worker reads its row groups itself
        # (Ray's read_parquet would need fsspec's HTTP support even for local files).
        import pyarrow.parquet as pq

        groups = [{"file": str(f), "row_group": g} for f in files
                  for g in range(pq.ParquetFile(f).metadata.num_row_groups)]
        dataset = ray.data.from_items(groups, override_num_blocks=max(1, len(groups))
                                      ).map_batches(
            ScoreRowGroups, fn_constructor_args=(names, config.normalize, config.keep_text),
            batch_size=1, batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=workers))
        acc = _Accumulator(str(path), "row", None, config.keep_text, config.normalize)
        number = 0
        pending: dict[str, list[Any]] = {}

        def flush(size: int) -> None:
            """Add the first ``size`` pending rows: in chunks of the row path's BATCH, so
            that even the order systems first appear in equals one process's."""
            nonlocal number
            chunk = {k: v[:size] for k, v in pending.items()}
            for k in pending:
                del pending[k][:size]
            texts = ((chunk["question"], chunk["gold"], chunk["pred"]) if config.keep_text
                     else None)
            acc.add_scored(chunk["system"], chunk["sample_id"], chunk["lang"], chunk["em"],
                           chunk["f1"], chunk["rlc"], chunk["cost"],
                           [None if s != s else s for s in chunk["semantic"]],
                           range(number + 1, number + size + 1), chunk["missing"], texts)
            number += size

        try:
            for batch in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
                for name in batch.column_names:
                    pending.setdefault(name, []).extend(batch.column(name).to_pylist())
                while len(pending.get("em", ())) >= BATCH:
                    flush(BATCH)
            if pending.get("em"):
                flush(len(pending["em"]))
        except ray.exceptions.RayError as err:
            raise InputError(f"could not be scored on Ray: {_reason(err, one_line)}.",
                             component=COMPONENT, path=str(path), fix=ROW_PATH_FIX) from None
        if number == 0:
            raise InputError("has no rows.", component=COMPONENT, path=str(path),
                             fix="give at least one row")
        return aggregate(acc, config, None, exact_places=True)
    finally:
        data_log.setLevel(level)
        if started:
            ray.shutdown()


def _reason(err: BaseException, fallback: Any) -> str:
    """A worker's own message (``ValueError: ragmeter: ...``) out of Ray's wrapping, else
    Ray's line."""
    import re

    found = re.search(r"Error: ragmeter: ([^\n]*)", str(err))
    return found.group(1).strip().rstrip(".") if found else str(fallback(err))
