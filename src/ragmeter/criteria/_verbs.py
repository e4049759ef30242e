"""Judging rows on your own criteria, from Python: ``judge``.

::

    import ragmeter
    result = ragmeter.criteria.judge("answers.jsonl", criteria=["relevance", "correctness"],
                                     reference_field="human")
    result.headline                     # per criterion: mean score, pass rate, QWK ...
    result.items                        # one row per (row, criterion, repeat)

``data`` is a path (JSONL, JSON, CSV/TSV, Parquet), a list of dicts, a pandas DataFrame or a
pyarrow Table; ``criteria`` a criteria file, a shipped name (``relevance``, ``correctness``,
``completeness``) or a list of them (:mod:`ragmeter.criteria._file`).  ``ragmeter criteria
judge`` calls exactly this function.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragmeter._verb._context import (
    async_variant,
    dry_run_result,
    field_map,
    input_record,
    model_context,
)
from ragmeter._verb._options import OutputOptions, RunOptions, gather
from ragmeter.criteria._options import JudgeOptions
from ragmeter.errors import ConfigError

if TYPE_CHECKING:  # the summary's modules load after the first call (issue 26.5)
    from ragmeter.result import Result

__all__ = ["judge", "ajudge", "reference_columns"]

COMPONENT = "criteria"
Fields = Mapping[str, str] | Iterable[str] | None


def reference_columns(reference_field: Any, criteria: Sequence[str]) -> tuple[dict[str, str],
                                                                              set[str]]:
    """``reference_field`` as ``{criterion: column}`` and the set of columns given without a
    criterion (they hold a number for a single criterion, or ``{criterion: score}``).

    Accepts a column name (every criterion), ``"CRITERION=COLUMN"``, a list of those, or a
    mapping ``{criterion: column}``."""
    if reference_field is None:
        return {}, set()
    if isinstance(reference_field, Mapping):
        return {str(k): str(v) for k, v in reference_field.items()}, set()
    specs = [reference_field] if isinstance(reference_field, str) else list(reference_field)
    out: dict[str, str] = {}
    shared: set[str] = set()
    for spec in specs:
        if not isinstance(spec, str) or not spec.strip() or spec.strip().endswith("="):
            raise ConfigError(f"criteria: reference_field={spec!r}; expected COLUMN or "
                              "CRITERION=COLUMN.")
        crit, eq, column = spec.partition("=")
        if eq:
            if crit.strip() not in criteria:
                raise ConfigError(f"criteria: reference field {spec!r} names the criterion "
                                  f"{crit.strip()!r}, which is not among the criteria "
                                  f"({', '.join(criteria)}).")
            out[crit.strip()] = column.strip()
        else:
            shared.add(spec.strip())
            for c in criteria:
                out.setdefault(c, spec.strip())
    return out, shared


def _judge_name(backend_obj: Any, mode: str, scoring: str, version: str) -> str:
    ident = backend_obj.identity()
    return ":".join(str(p) for p in (ident.get("backend", backend_obj.name),
                                     ident.get("model"), f"criteria-{mode}-{scoring}", version)
                    if p)


def _signature(judge_model: str, mode: str, scoring: str, prompt_version: str,
               criteria_label: str, how: JudgeOptions, out: OutputOptions,
               references: Mapping[str, str]) -> str:
    from ragmeter.criteria._metrics import METRIC_VERSION, METRICS
    from ragmeter.signature import Signature

    generated = scoring == "generate"
    return Signature.make(COMPONENT, METRIC_VERSION, {
        "judge": judge_model, "mode": mode, "scoring": scoring, "prompt": prompt_version,
        "criteria": criteria_label,
        "temperature": (how.temperature or 0.0) if generated else None,
        "max_tokens": how.max_tokens if generated else None,
        "repeats": how.repeats if how.repeats > 1 else None,
        "reference": ",".join(f"{k}={v}" for k, v in references.items()) or None,
        "bootstrap": f"{out.resamples}@seed{out.seed}" if out.ci else None,
        "constants": METRICS.signature_settings() or None}).render()


def _groups(rows: list[dict[str, Any]], items: Sequence[Any], criteria: Any,
            by: str, how: Any, repeats: int, prices: tuple[Any, Any]
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``--by``: every criterion's numbers per group (``criterion@value``), and the spend
    per value."""
    from ragmeter._verb._groups import FieldLookup, group_items
    from ragmeter.criteria._aggregate import summarize_criterion
    from ragmeter.criteria._metrics import group_name
    from ragmeter.judges._spend import add_usage, spend

    lookup = FieldLookup(by, COMPONENT, rows={i.id: i.data for i in items},
                         row_key=lambda r: str(r["id"]))
    values: dict[str, Any] = {}
    spend_by: dict[str, Any] = {}
    for value, part in group_items(rows, lookup).items():
        for crit in criteria:
            mine = [r for r in part if r["criterion"] == crit.name]
            values[group_name(crit.name, value)] = {
                "criterion": crit.name, "value": value,
                **summarize_criterion(crit, mine, how, repeats)}
        spend_by[value or "(empty)"] = spend(add_usage(r.get("usage") for r in part), *prices)
    return {"by": by, "values": values}, spend_by


def _alarms(results: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], criteria: Any,
            judge_name: str, cards: Sequence[Mapping[str, Any]]
            ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The degenerate-judge alarm per criterion (its scores on repeat 0; with choice scoring
    also the spread of its normalized expected scores), and the at-chance alarm when the
    judge's agreement with reference scores (this run's, else the one ragmeter measured for
    this judge, on its card) is at or below chance; the flags of the headline."""
    from ragmeter.judges._card import check_chance, check_degenerate

    alarms: list[dict[str, Any]] = []
    flags: dict[str, str] = {}
    for crit in criteria:
        first = [r for r in rows if r["criterion"] == crit.name and not r.get("repeat")]
        expected = [crit.normalized(float(r["expected_score"])) for r in first
                    if r.get("expected_score") is not None]
        alarm = check_degenerate([r.get("score") for r in first], judge=judge_name,
                                 what=f"criterion {crit.name}",
                                 probabilities=expected or None)
        if alarm is None:
            card = next(c for c in cards if c["judge"] == f"{judge_name}:{crit.name}")
            validation = card.get("validation") or {}
            alarm = check_chance(validation.get("value"), judge=judge_name,
                                 what=f"criterion {crit.name}", metric="QWK",
                                 data=str(validation.get("data") or ""))
        if alarm is not None:
            alarm["criterion"] = crit.name
            alarms.append(alarm)
            flags[crit.name] = ("degenerate judge" if alarm["kind"] == "degenerate_judge"
                                else "judge at or below chance")
    return alarms, flags


def _cards(results: Mapping[str, Any], criteria: Any, judge_name: str,
           references: Mapping[str, str], data_label: str) -> list[dict[str, Any]]:
    """One judge card per criterion, validated by its agreement with the reference scores
    when ``--reference-field`` gave them (else unvalidated, unless ragmeter measured it)."""
    from ragmeter.judges._card import judge_card

    cards = []
    for crit in criteria:
        v = results[crit.name].get("validation")
        validation = None
        if v and v.get("qwk") is not None:
            validation = {"metric": f"quadratic kappa with {references[crit.name]}",
                          "value": v["qwk"], "ci": v["ci95"].get("qwk"),
                          "data": f"{data_label}, n={v['n']}",
                          "spearman": v.get("spearman"),
                          "spearman_ci": v["ci95"].get("spearman")}
        cards.append(judge_card(f"{judge_name}:{crit.name}", validation))
    return cards


def judge(data: Any, *, criteria: Any, judge: JudgeOptions | None = None,
          reference_field: Any = None, fields: Fields = None, backend: Any = None,
          run: RunOptions | None = None, output: OutputOptions | None = None,
          **options: Any) -> Result:
    """Judge every row on every criterion: a score on the criterion's scale, or unscored with
    a reason.

    ``criteria``: a criteria file, a shipped name or a list of them (checked before any call).
    ``judge``: :class:`JudgeOptions` (``mode``: ``per-criterion``, the default, or
    ``combined``; ``scoring``; ``repeats``; ``temperature``; ``max_tokens``).
    ``reference_field``: the column of human scores to validate the judge against (``"human"``
    for every criterion: a number, or ``{criterion: score}`` per row; ``"relevance=COLUMN"``
    for one; a list or ``{criterion: column}``): QWK, Spearman, exact agreement and MAE with
    95% bootstrap CIs, on the judge's card.  ``fields``: rename columns
    (``{"response": "answer"}``).  ``backend``: the judge model (default: the local model).
    ``run``: :class:`ragmeter.RunOptions` (store, replay, dry run, progress).  ``output``:
    :class:`ragmeter.OutputOptions` (``ci``, on unless ``output`` is given without it;
    ``resamples``; ``seed``; ``by``: every number per group of rows sharing a column).  Every
    field of these groups is also accepted as a keyword (``judge(rows, criteria="relevance",
    mode="combined", dry_run=True)``).

    The result's items are one row per (row, criterion, repeat) (what ``--out`` writes); its
    headline has one group per criterion (``criterion@value`` per ``--by`` value) and ``all``;
    its signature names the judge, the mode, the prompt and each criteria file's hash.
    """
    from ragmeter.criteria._aggregate import Resampling, summarize_criterion, summarize_overall
    from ragmeter.criteria._file import load_criteria
    from ragmeter.criteria._judge import (
        MODES,
        SCORINGS,
        JudgePrompt,
        build_requests,
        judged_rows,
        read_items,
    )
    from ragmeter.criteria._metrics import headline
    from ragmeter.judges._repeats import check_repeats, repeat_requests

    groups = gather("criteria.judge", options, judge=(JudgeOptions, judge),
                    run=(RunOptions, run),
                    output=(OutputOptions, output if output is not None
                            else OutputOptions(ci=True)))
    how: JudgeOptions = groups["judge"]
    calls: RunOptions = groups["run"]
    out: OutputOptions = groups["output"]
    if how.mode not in MODES:
        raise ConfigError(f"criteria: mode={how.mode!r} is not one of {', '.join(MODES)}.")
    if how.scoring not in SCORINGS:
        raise ConfigError(f"criteria: scoring={how.scoring!r} is not one of "
                          f"{', '.join(SCORINGS)}.")
    check_repeats(how.repeats, COMPONENT)
    crit_set = load_criteria(criteria)
    references, shared = reference_columns(reference_field, crit_set.names)
    items = read_items(data, crit_set, field_map(fields, COMPONENT), references, shared)
    if out.by:  # a --by typo is an error before any call
        from ragmeter._verb._groups import FieldLookup

        lookup = FieldLookup(out.by, COMPONENT)
        for item in items:
            lookup(item.data)
        lookup.check()
    backend_obj, the_store, config = model_context(
        backend, calls.store, replay=calls.replay, progress=calls.progress,
        description="criteria judge", on_progress=calls.on_progress)
    scoring = how.resolved_scoring(backend_obj)
    prompt = JudgePrompt.default()
    ident = backend_obj.identity()
    model = str(ident.get("model", backend_obj.name))
    # the signature (ragmeter.signature) is made after the calls (issue 26.5)
    signing = (f"{ident.get('backend', backend_obj.name)}:{model}", how.mode, scoring,
               prompt.version, crit_set.label(), how, out, references)
    requests = repeat_requests(build_requests(
        items, crit_set, prompt, mode=how.mode, scoring=scoring,
        temperature=how.temperature or 0.0, max_tokens=how.max_tokens), how.repeats)
    if calls.dry_run:
        from ragmeter.runner._run import estimate_requests

        return dry_run_result(COMPONENT, "judge", estimate_requests(
            requests, backend_obj, the_store, config), signature=_signature(*signing),
            mode=how.mode,
            scoring=scoring, criteria=list(crit_set.names), rows=len(items))
    from ragmeter.runner._run import run_requests

    outcomes = run_requests(requests, backend_obj, the_store, config)
    signature = _signature(*signing)
    keep = (out.by,) if out.by else ()
    rows = judged_rows(items, crit_set, outcomes, mode=how.mode, scoring=scoring,
                       repeats=how.repeats, judge_model=model, prompt_version=prompt.version,
                       keep=keep)
    resampling = Resampling(out.ci, out.resamples, out.seed)
    results = {c.name: summarize_criterion(c, [r for r in rows if r["criterion"] == c.name],
                                           resampling, how.repeats) for c in crit_set}
    from ragmeter.judges._spend import add_usage, spend

    prices = (config.price_prompt_per_mtok, config.price_completion_per_mtok)
    first = [r for r in rows if not r.get("repeat")]
    from ragmeter._verb._groups import coverage_of_items

    summary: dict[str, Any] = {
        "family": COMPONENT, "verb": "judge", "signature": signature, "judge": model,
        "mode": how.mode, "scoring": scoring, "repeats": how.repeats,
        "prompt_version": prompt.version,
        "criteria": [{**c.to_dict(), "source": c.source} for c in crit_set],
        "criteria_files": [s.to_dict() for s in crit_set.sources],
        "reference_fields": references or None,
        "criteria_results": results,
        "overall": summarize_overall(crit_set, rows, resampling),
        "coverage": coverage_of_items(first),
        "spend": spend(add_usage(r.get("usage") for r in rows), *prices)}
    if how.repeats > 1:
        summary["stability"] = {n: r["stability"] for n, r in results.items()
                                if "stability" in r}
    if out.by:
        summary["groups"], summary["spend_by"] = _groups(rows, items, crit_set, out.by,
                                                         resampling, how.repeats, prices)
    judge_name = _judge_name(backend_obj, how.mode, scoring, prompt.version)
    record = input_record(data, len(items))
    cards = _cards(results, crit_set, judge_name, references, str(record.path))
    alarms, flags = _alarms(results, rows, crit_set, judge_name, cards)
    summary["flags"] = flags
    from ragmeter.result import Result

    return Result(COMPONENT, "judge", summary, items=rows, inputs=[record],
                  backends=[backend_obj.identity()], models=[model],
                  prompt_versions={"judge": prompt.version, "criteria": crit_set.label()},
                  judges=cards, alarms=alarms, engine=config.engine_name,
                  headline=headline(summary))


ajudge = async_variant(judge)
