"""Retrieval metrics exact to trec_eval, from Python.

::

    import ragmeter
    result = ragmeter.retrieval.score("run.trec", qrels="qrels.txt")
    result.summary["metrics"]["ndcg@10"]          # mean over the scored queries
    ragmeter.retrieval.compare("bm25.trec", "dense.trec", qrels="qrels.txt")

``ragmeter retrieval score`` and ``ragmeter retrieval compare`` call exactly these functions.
The inputs (TREC files, rows, DataFrames, dicts; ids or context texts) are described in
:mod:`ragmeter.retrieval._data`, the metrics in :mod:`ragmeter.retrieval._metrics`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter._verb._context import field_map, input_record
from ragmeter._verb._options import OutputOptions, gather
from ragmeter.errors import ConfigError, InputError
from ragmeter.io import is_path
from ragmeter.result import Result
from ragmeter.retrieval._types import DEFAULT_K, DUPLICATES, GAINS, MATCHES, ORDERS, Settings

__all__ = ["score", "compare", "COMPONENT"]

COMPONENT = "retrieval"
PERMUTATIONS = 10_000  # resamples of the paired randomization test (compare)


def _settings(k: int | Sequence[int], order: str, duplicates: str, gain: str,
              all_queries: bool, relevance_level: int, match: str) -> Settings:
    """The measurement's settings, checked (errors name the Python argument)."""
    cuts = (k,) if isinstance(k, int) else tuple(k)
    if not cuts or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in cuts):
        raise ConfigError(f"retrieval: k={k!r} must be positive whole numbers (cutoffs such "
                          "as k=[1, 3, 5, 10]).")
    for name, value, choices in (("order", order, ORDERS), ("duplicates", duplicates, DUPLICATES),
                                 ("gain", gain, GAINS), ("match", match, MATCHES)):
        if value not in choices:
            raise ConfigError(f"retrieval: {name}={value!r} is not one of "
                              f"{', '.join(map(repr, choices))}.")
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int) \
            or relevance_level < 1:
        raise ConfigError(f"retrieval: relevance_level={relevance_level!r} must be a whole "
                          "number of at least 1 (the least grade that counts as relevant).")
    return Settings(tuple(sorted(set(cuts))), order, duplicates, gain, bool(all_queries),
                    relevance_level, match)


def _signature(settings: Settings, texts: bool, extra: Mapping[str, Any] | None = None) -> str:
    from ragmeter.retrieval._metrics import METRIC_VERSION, METRICS
    from ragmeter.signature import Signature

    return Signature.make(COMPONENT, METRIC_VERSION, {
        "k": ",".join(map(str, settings.k)), "trec_eval": settings.trec_eval,
        "order": settings.order, "duplicates": settings.duplicates, "gain": settings.gain,
        "queries": "all-judged" if settings.all_queries else "run-and-judged",
        "relevance_level": settings.relevance_level,
        "match": settings.match if texts else None,
        "constants": METRICS.signature_settings(), **(extra or {})}).render()


def _metric_names(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """The metric keys found in the items, in METRICS order then increasing k."""
    from ragmeter.retrieval._metrics import METRICS

    found = dict.fromkeys(k for it in items for k in it if k in METRICS)
    ordered = [h.metric for h in METRICS.headline({"x": dict.fromkeys(found, 0.0)})]
    return ordered


def _aggregate(items: Sequence[Mapping[str, Any]], output: OutputOptions
               ) -> dict[str, Any]:
    """``metrics`` (means over the items that have each metric), ``n`` and, with
    ``output.ci``, ``ci95`` (percentile bootstrap of the mean)."""
    from ragmeter import stats

    metrics: dict[str, Any] = {}
    n: dict[str, int] = {}
    ci: dict[str, Any] = {}
    for name in _metric_names(items):
        values = [float(it[name]) for it in items if name in it]
        metrics[name] = stats.mean(values)
        n[name] = len(values)
        if output.ci:
            interval = stats.bootstrap_ci(values, n_resamples=output.resamples,
                                          seed=output.seed)
            ci[name] = list(interval) if interval is not None else None
    out: dict[str, Any] = {"metrics": metrics, "n": n}
    if output.ci:
        out["ci95"] = ci
    return out


def _read_qrels(qrels: Any, settings: Settings, fields: Any, qrels_fields: Any) -> Any:
    """The judgments' source (None when the run's rows carry them); ``qrels_fields`` rename
    the judgments' columns, else ``fields`` do."""
    from ragmeter.retrieval._data import ALIASES, read

    if qrels is None:
        return None
    fm = field_map(qrels_fields if qrels_fields is not None else fields, COMPONENT,
                   aliases=ALIASES)
    return read(qrels, settings, fm, "qrels")


def _evaluate(run: Any, qrels_src: Any, settings: Settings, fields: Any
              ) -> tuple[Any, Any, Any, list[str]]:
    """Read the run and score it: ``(evaluation, run source, qrels source, notes)``."""
    from ragmeter.retrieval._data import ALIASES, combine, read
    from ragmeter.retrieval._evaluate import evaluate

    run_src = read(run, settings, field_map(fields, COMPONENT, aliases=ALIASES), "run")
    queries, notes = combine(run_src, qrels_src)
    evaluation = evaluate(queries, settings)
    if not any(it["status"] == "ok" for it in evaluation.items):
        raise _nothing_scored(run_src, qrels_src, evaluation)
    return evaluation, run_src, qrels_src, notes + evaluation.notes


def _nothing_scored(run: Any, qrels: Any, evaluation: Any) -> InputError:
    """trec_eval's "No queries with both results and relevance info", with the ids."""
    def some(ids: Iterable[str]) -> str:
        ids = list(ids)
        return ", ".join(repr(i) for i in ids[:5]) + (", ..." if len(ids) > 5 else "") \
            or "none"

    in_run = [q for q, v in run.queries.items() if v.in_run]
    judged = [q for q, v in (qrels or run).queries.items() if v.judged]
    reasons = sorted({str(it.get("reason")) for it in evaluation.items})
    return InputError(
        f"no query could be scored ({', '.join(reasons)}): the run's queries are "
        f"{some(in_run)}; the judged ones {some(judged)}.", component=COMPONENT,
        fix="check that the run and the judgments use the same query ids (map a column with "
            "--field query_id=COLUMN) and that the run retrieved something.")


def _queries(evaluation: Any, run_src: Any) -> dict[str, int]:
    items = evaluation.items
    return {"total": len(items), "in_run": sum(1 for q in run_src.queries.values() if q.in_run),
            "scored": sum(1 for it in items if it["status"] == "ok")}


def score(run: Any, *, qrels: Any = None, k: int | Sequence[int] = DEFAULT_K,
          order: str = "score", duplicates: str = "error", gain: str = "linear",
          all_queries: bool = False, relevance_level: int = 1, match: str = "exact",
          fields: Mapping[str, str] | Iterable[str] | None = None,
          qrels_fields: Mapping[str, str] | Iterable[str] | None = None,
          output: OutputOptions | None = None, **options: Any) -> Result:
    """P@k, Recall@k, nDCG@k, Hit@k, MRR and MAP per query and their means, exact to trec_eval.

    ``run``: what was retrieved (a TREC run file, rows with ``query_id`` and ``retrieved_ids``
    or ``retrieved_contexts``, a DataFrame, a dict ``{query_id: {doc_id: score}}``); ``qrels``:
    the judgments (a TREC qrels file, rows with ``relevant_ids`` or ``reference_contexts``, a
    dict), or None when the run's rows carry them.  ``k``: the cutoffs.  The defaults are
    trec_eval's; ``order``, ``duplicates``, ``gain``, ``all_queries`` (trec_eval ``-c``),
    ``relevance_level`` (``-l``) and ``match`` (context texts) are described in
    :class:`ragmeter.retrieval._types.Settings`.  ``fields`` rename columns
    (``{"query_id": "qid"}``), of the judgments too unless ``qrels_fields`` are given.  Rows
    with ``retrieved_contexts`` and a ``reference`` answer also get ``answer_in_context@k``.

    ``output``: :class:`ragmeter.OutputOptions` (or its fields as keywords): ``ci`` (95%
    percentile bootstrap intervals of the means), ``resamples``, ``seed``, ``by`` (the same
    numbers per group of queries sharing a column of your rows).
    """
    out = gather("retrieval.score", options, output=(OutputOptions, output))["output"]
    settings = _settings(k, order, duplicates, gain, all_queries, relevance_level, match)
    evaluation, run_src, qrels_src, notes = _evaluate(
        run, _read_qrels(qrels, settings, fields, qrels_fields), settings, fields)
    items = evaluation.items
    doc: dict[str, Any] = {
        "family": COMPONENT, "verb": "score", "run": run_src.label,
        "qrels": qrels_src.label if qrels_src is not None else run_src.label,
        "run_tag": run_src.tag, "k": list(settings.k), "trec_eval": settings.trec_eval,
        "settings": _settings_doc(settings), **_aggregate(items, out),
        "queries": _queries(evaluation, run_src)}
    from ragmeter._verb._groups import coverage_of_items

    doc["coverage"] = coverage_of_items(items)
    if out.by:
        doc["groups"] = _groups(items, evaluation.fields, out)
    doc["notes"] = notes
    doc["signature"] = _signature(settings, _texts(run_src))
    from ragmeter.retrieval._metrics import headline

    inputs = [input_record(run, run_src.rows)]
    if qrels_src is not None:
        inputs.append(input_record(qrels, qrels_src.rows))
    return Result(COMPONENT, "score", doc, items=items, inputs=inputs, headline=headline(doc))


def _settings_doc(settings: Settings) -> dict[str, Any]:
    return {"order": settings.order, "duplicates": settings.duplicates, "gain": settings.gain,
            "all_queries": settings.all_queries, "relevance_level": settings.relevance_level,
            "match": settings.match}


def _texts(run_src: Any) -> bool:
    return any(q.contexts is not None for q in run_src.queries.values())


def _groups(items: list[dict[str, Any]], fields: Mapping[str, Mapping[str, Any]],
            out: OutputOptions) -> dict[str, Any]:
    from ragmeter._verb._groups import FieldLookup, grouped

    assert out.by is not None
    lookup = FieldLookup(out.by, COMPONENT, rows=fields, row_key=lambda it: str(it["query_id"]))
    return grouped(out.by, items, lookup, lambda part: _aggregate(part, out), with_spend=False)


# ------------------------------------------------------------------ compare


def _label(source: Any, src: Any, fallback: str) -> str:
    if src.tag:
        return str(src.tag)
    if is_path(source):
        return Path(source).stem
    return fallback


def compare(run_a: Any, run_b: Any, *, qrels: Any = None, names: Sequence[str] | None = None,
            k: int | Sequence[int] = DEFAULT_K, order: str = "score",
            duplicates: str = "error", gain: str = "linear", all_queries: bool = False,
            relevance_level: int = 1, match: str = "exact",
            fields: Mapping[str, str] | Iterable[str] | None = None,
            qrels_fields: Mapping[str, str] | Iterable[str] | None = None,
            output: OutputOptions | None = None, **options: Any) -> Result:
    """Two runs on the same queries: every metric's mean of each on the queries scored in both,
    the difference (``run_b`` minus ``run_a``) with its paired bootstrap 95% CI, and the
    two-sided p-value of a paired randomization test (sign flips, 10,000 resamples; Smucker,
    Allan & Carterette, CIKM 2007), with the number of paired queries.

    The measurement options are those of :func:`score`, applied to both runs; ``names``: the
    two runs' labels (default: the TREC run tag, else the file name, else ``a`` and ``b``);
    ``output``: ``resamples`` of the bootstrap interval, ``seed`` of the interval and the test.
    """
    from ragmeter import stats

    out = gather("retrieval.compare", options, output=(OutputOptions, output))["output"]
    settings = _settings(k, order, duplicates, gain, all_queries, relevance_level, match)
    qrels_src = _read_qrels(qrels, settings, fields, qrels_fields)
    scored = [_evaluate(r, qrels_src, settings, fields) for r in (run_a, run_b)]
    labels = list(names) if names is not None else [
        _label(src, ev[1], fallback) for src, ev, fallback in zip(
            (run_a, run_b), scored, ("a", "b"), strict=True)]
    if len(labels) != 2 or labels[0] == labels[1] or "difference" in labels:
        if names is not None:
            raise ConfigError(f"retrieval: names={names!r} must be two different labels "
                              "(and not 'difference').")
        labels = ["a", "b"]
    by_query = [{it["query_id"]: it for it in ev[0].items if it["status"] == "ok"}
                for ev in scored]
    paired = [q for q in by_query[0] if q in by_query[1]]
    if not paired:
        raise InputError(f"no query is scored in both runs ({labels[0]}: {len(by_query[0])} "
                         f"scored, {labels[1]}: {len(by_query[1])}).", component=COMPONENT,
                         fix="compare runs of the same queries, with the same judgments.")
    comparison: dict[str, Any] = {}
    for name in _metric_names([by_query[0][q] for q in paired]):
        if not all(name in by_query[1][q] for q in paired):
            continue
        a = [float(by_query[0][q][name]) for q in paired]
        b = [float(by_query[1][q][name]) for q in paired]
        test = stats.paired_permutation(b, a, n_resamples=PERMUTATIONS, seed=out.seed)
        interval = stats.paired_bootstrap(b, a, n_resamples=out.resamples, seed=out.seed)
        comparison[name] = {"a": stats.mean(a), "b": stats.mean(b),
                            "difference": test.mean_diff,
                            "ci95": [interval.ci_low, interval.ci_high],
                            "p_value": test.p_value}
    runs = []
    for label, ev in zip(labels, scored, strict=True):
        runs.append({"label": label, "run": ev[1].label,
                     "scored": sum(1 for it in ev[0].items if it["status"] == "ok"),
                     **_aggregate([it for it in ev[0].items if it["status"] == "ok"],
                                  OutputOptions())})
    items = [{"run": label, **it} for label, ev in zip(labels, scored, strict=True)
             for it in ev[0].items]
    only = {labels[i]: len(set(by_query[i]) - set(paired)) for i in (0, 1)}
    doc: dict[str, Any] = {
        "family": COMPONENT, "verb": "compare", "runs": runs,
        "qrels": qrels_src.label if qrels_src is not None else None,
        "k": list(settings.k), "trec_eval": settings.trec_eval,
        "settings": _settings_doc(settings), "paired_queries": len(paired),
        "scored_in_one_run_only": only, "comparison": comparison,
        "test": {"method": "paired randomization (sign flip), two-sided",
                 "resamples": PERMUTATIONS,
                 "ci": f"paired bootstrap percentile, {out.resamples} resamples",
                 "seed": out.seed, "difference": f"{labels[1]} - {labels[0]}"},
        "coverage": {"rows": len(set(by_query[0]) | set(by_query[1])), "scored": len(paired),
                     "unscored": sum(only.values()),
                     "reasons": {"scored in one run only": sum(only.values())}
                     if sum(only.values()) else {}},
        "notes": list(dict.fromkeys(scored[0][3] + scored[1][3])),
        "signature": _signature(settings, _texts(scored[0][1]) or _texts(scored[1][1]),
                                {"test": "paired-randomization"})}
    from ragmeter.retrieval._metrics import headline

    inputs = [input_record(r, ev[1].rows) for r, ev in zip((run_a, run_b), scored, strict=True)]
    if qrels_src is not None:
        inputs.append(input_record(qrels, qrels_src.rows))
    return Result(COMPONENT, "compare", doc, items=items, inputs=inputs, headline=headline(doc))
