"""RGB (Chen et al., AAAI 2024) from Python: ``build`` prompts, ``score`` and ``judge`` predictions
you already have, ``run`` the benchmark against a model.

::

    import ragmeter
    preds = [{"id": 0, "prediction": "insufficient information"}, ...]
    result = ragmeter.rgb.judge(preds, data="RGB/data/en.json")     # Rej*, offline detector
    result.summary["metrics"]["reject_rate_judged"], result.summary["ci95"]
    ragmeter.rgb.score(preds, data=rows, noise_rate=1.0, mode="refactor").summary

``data`` (the RGB data) and ``predictions`` are each a path (JSONL, JSON, CSV/TSV, Parquet), a
list of dicts, a pandas DataFrame or a pyarrow Table; for in-memory RGB data, ``name`` stands for
the file name (evalue.py reads the kind, ``_int``/``_fact``, and the language, ``zh``, from it).
Options are the CLI flags in snake_case with the CLI's defaults; ``ragmeter rgb ...`` calls
exactly these functions.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragmeter._util._record import as_dict, replace
from ragmeter._verb._context import async_variant, dry_run_result, input_record, model_context
from ragmeter._verb._failure import check_run
from ragmeter._verb._options import RunOptions, gather
from ragmeter.io import rereadable
from ragmeter.rgb._options import GenerationOptions, JudgeOptions, SettingOptions

if TYPE_CHECKING:  # the summary's modules load after the first call (issue 26.5)
    from ragmeter.result import Result

__all__ = ["build", "score", "judge", "run", "ajudge", "arun"]

COMPONENT = "rgb"
PAPER_NOISE_RATES = (0.0, 0.2, 0.4, 0.6, 0.8)
PAPER_INT_NOISE_RATES = (0.0, 0.2, 0.4)


def _dataset(data: Any, kind: str | None, lang: str | None, name: str | None) -> Any:
    from ragmeter.rgb._data import load_dataset

    return load_dataset(data, kind=kind, lang=lang, name=name)


def _setting(noise_rate: float, setting: SettingOptions) -> Any:
    """evalue.py's setting: the noise rate and the :class:`SettingOptions`."""
    from ragmeter.rgb._build import BuildConfig

    return BuildConfig(noise_rate=noise_rate, passage_num=setting.passage_num,
                       correct_rate=setting.correct_rate, seed=setting.seed)


def build(data: Any, *, noise_rate: float, kind: str | None = None, lang: str | None = None,
          prompts: str | None = None, name: str | None = None,
          setting: SettingOptions | None = None, **options: Any) -> Result:
    """The documents and messages evalue.py would send, one item per instance: ``{"id",
    "query", "answer", "docs", "messages"}``.  ``prompts``: RGB's config/instruction.yaml
    [default: ragmeter's own prompts].  ``setting``: passages, correct rate and seed
    (:class:`SettingOptions`; or their plain keywords ``passage_num=``...).  Nothing is
    measured: the headline is empty; the signature names the data, setting and prompts."""
    from ragmeter.rgb._build import build_rows
    from ragmeter.rgb._prompts import load_prompts

    groups = gather("rgb.build", options, setting=(SettingOptions, setting))
    dataset = _dataset(data, kind, lang, name)
    the_prompts = load_prompts(prompts)
    config = _setting(noise_rate, groups["setting"])
    from ragmeter.rgb._metrics import headline
    from ragmeter.rgb._scoring import build_signature

    rows = list(build_rows(dataset, the_prompts, config))
    summary = {"family": COMPONENT, "verb": "build", "dataset": dataset.name,
               "kind": dataset.kind, "lang": dataset.lang, "setting": config.label(),
               "prompts": the_prompts.version,
               "coverage": {"rows": len(rows), "scored": len(rows), "unscored": 0,
                            "reasons": {}},
               "signature": build_signature(dataset, config, the_prompts.version)}
    from ragmeter.result import Result  # loaded on use (issue 26.5)

    return Result(COMPONENT, "build", summary, items=rows,
                  inputs=[input_record(data, len(rows))],
                  prompt_versions={"instruction": the_prompts.version},
                  headline=headline(summary))  # nothing measured: an empty headline


def score(predictions: Any, *, data: Any, noise_rate: float, kind: str | None = None,
          lang: str | None = None, mode: str = "strict", name: str | None = None,
          by: str | None = None, setting: SettingOptions | None = None,
          **options: Any) -> Result:
    """evalue.py's labels and rates for predictions ``{"id", "prediction"}`` made at
    ``noise_rate``.  ``mode``: ``strict`` (the paper), ``lenient`` (ragmeter's flexible labels)
    or ``refactor`` (the refactored RGB app's rules); the last two are reported beside strict
    with their flips, never instead of it.  ``by``: also the rates per group of items sharing
    this field (a column of the predictions or data rows, or ``lang``/``kind``/``dataset``):
    ``summary["groups"]``.  ``setting``: :class:`SettingOptions` (or ``passage_num=``...).
    The headline names the setting's numbers (``accuracy``, ``reject_rate``,
    ``integration_accuracy``, ``accuracy_doc``/``ed``/``cr`` ...) in group ``<data>@<noise>``."""
    from ragmeter.rgb._metrics import headline
    from ragmeter.rgb._scoring import read_predictions, score_predictions

    groups = gather("rgb.score", options, setting=(SettingOptions, setting))
    if by:  # predictions and data are read again for the groups (issue 29.9)
        predictions, data = rereadable(predictions), rereadable(data)
    dataset = _dataset(data, kind, lang, name)
    config = _setting(noise_rate, groups["setting"])
    detail = score_predictions(dataset, read_predictions(predictions), config, mode=mode)
    summary = detail.to_json()
    if by:
        summary["groups"] = _groups(by, detail.items, [dataset], predictions, data,
                                    noise_rate=noise_rate, task=None, with_spend=False)
    from ragmeter.result import Result  # loaded on use (issue 26.5)

    return Result(COMPONENT, "score", summary, items=detail.items, detail=detail,
                  inputs=[input_record(predictions), input_record(data,
                                                                  len(dataset.instances))],
                  headline=headline(summary))


def _groups(by: str, items: Sequence[dict[str, Any]], datasets: Sequence[Any],
            predictions: Any, data: Any, *, noise_rate: float | None, task: str | None,
            runner: Any = None, with_spend: bool = True) -> dict[str, Any]:
    """RGB's rates per ``by`` group (:mod:`ragmeter.rgb._groups`).  The field comes
    from the item (``dataset``, ``setting``, ``role``, ``noise_rate`` in runs), the data file
    (``lang``, ``kind``, ``dataset``), else the predictions' or data's row of the item's id."""
    from ragmeter._verb._groups import FieldLookup, grouped
    from ragmeter.rgb._groups import raw_rows_by_id, rgb_group_summary

    by_name = {d.name: d for d in datasets}
    first = datasets[0]

    def extra(item: Any) -> dict[str, Any]:
        ds = by_name.get(item.get("dataset"), first)
        out = {"dataset": ds.name, "lang": ds.lang, "kind": ds.kind}
        if noise_rate is not None:
            out["noise_rate"] = noise_rate
        return out

    def kind_of(item: Any) -> str:
        return str(by_name.get(item.get("dataset"), first).kind)

    def task_of(item: Any) -> str | None:
        role = item.get("role")
        if role is None:
            return task
        return {"rejection": "reject", "fact_doc": "fact"}.get(role)

    rows: dict[str, dict[str, Any]] = {}
    probe = FieldLookup(by, COMPONENT, extra=extra)
    for item in items:
        probe(item)
    if probe.found < len(items):  # not on every item: look in the input rows too
        for source in (predictions, data):
            if source is not None:
                for key, row in raw_rows_by_id(source).items():
                    rows.setdefault(key, row)
    lookup = FieldLookup(by, COMPONENT, extra=extra, rows=rows,
                         row_key=lambda i: str(i.get("id")))
    return grouped(by, items, lookup, lambda part: rgb_group_summary(
        part, is_fact=lambda i: kind_of(i) == "fact" and i.get("role") != "fact_nodoc",
        task_of=task_of), with_spend=with_spend,
        price_in=getattr(runner, "price_prompt_per_mtok", None),
        price_out=getattr(runner, "price_completion_per_mtok", None))


def _spend(items: Sequence[dict[str, Any]], runner: Any) -> dict[str, Any]:
    """What this run spent, from its items' usage (:mod:`ragmeter.judges._spend`)."""
    from ragmeter.judges._spend import add_usage, spend

    return spend(add_usage(i.get("usage") for i in items), runner.price_prompt_per_mtok,
                 runner.price_completion_per_mtok)


def _judge_prompts(judge_prompts: str | None) -> Any:
    from ragmeter.rgb._prompts import load_judge_prompts

    return load_judge_prompts(judge_prompts)


def judge(predictions: Any, *, data: Any, kind: str | None = None, lang: str | None = None,
          noise_rate: float | None = None, name: str | None = None, by: str | None = None,
          setting: SettingOptions | None = None, judge: JudgeOptions | None = None,
          backend: Any = None, run: RunOptions | None = None, **options: Any) -> Result:
    """Rej* (default data; predictions at noise 1.0) or ED* and CR* (_fact data) of existing
    predictions, as ``rgb run`` judges them, without generating.

    ``judge``: :class:`JudgeOptions` (or its fields as keywords): ``judge_method`` ``auto``
    (text for remote backends; the refusal detector for Rej* and the error detector for ED*
    with the local model), ``text``, ``choice`` or ``detector``; ``judge_prompts``; ``judge_model``
    (another model of ``backend``); ``repeats`` (judge every item N times with distinct calls;
    ``summary["stability"]`` has the flip rate, mean per-item agreement and Fleiss' κ; the
    rates stay repeat 0's).  ``backend``: :func:`ragmeter.backends.local` (default) or
    ``.openai(...)``.  ``run``: :class:`ragmeter.RunOptions` (store, replay, dry run,
    progress; or their keywords).  ``setting``: :class:`SettingOptions`.  Each rate carries n
    and a Wilson 95% interval; a degenerate judge raises an alarm in ``alarms`` and flags the
    judged numbers of the headline.  ``by``: the rates, coverage and spend per group (as
    :func:`score`).  ``summary["spend"]``: the tokens and money of the judge calls, from the
    endpoint's usage.
    """
    from ragmeter.judges._repeats import check_repeats

    groups = gather("rgb.judge", options, setting=(SettingOptions, setting),
                    judge=(JudgeOptions, judge), run=(RunOptions, run))
    setting, jopts, run_opts = groups["setting"], groups["judge"], groups["run"]
    repeats, judge_method = jopts.repeats, jopts.judge_method
    check_repeats(repeats, COMPONENT)
    from ragmeter.rgb._build import BuildConfig
    from ragmeter.rgb._judged import JudgeTask, judge_predictions, judge_requests, task_kind
    from ragmeter.rgb._metrics import headline
    from ragmeter.rgb._scoring import read_predictions, score_predictions
    from ragmeter.runner._run import estimate_requests

    if by:  # predictions and data are read again for the groups (issue 29.9)
        predictions, data = rereadable(predictions), rereadable(data)
    dataset = _dataset(data, kind, lang, name)
    preds = read_predictions(predictions)
    jprompts = _judge_prompts(jopts.judge_prompts)
    if jopts.judge_model:
        from ragmeter.backends import resolve

        backend = _with_model(resolve(backend), jopts.judge_model)
    backend_obj, the_store, runner = model_context(backend, run_opts.store,
                                                   replay=run_opts.replay,
                                                   progress=run_opts.progress,
                                                   description="rgb judge calls",
                                                   on_progress=run_opts.on_progress)
    if run_opts.dry_run:
        tk = task_kind(dataset)
        cfg = BuildConfig(noise_rate=1.0 if tk == "reject" else 0.0)
        task = JudgeTask(dataset.name, tk, dataset, score_predictions(dataset, preds, cfg))
        from ragmeter.judges._repeats import repeat_requests
        from ragmeter.rgb._judged import judge_result_signature, resolve_method, task_judge_info

        info = task_judge_info(backend_obj, jprompts,
                               resolve_method(judge_method, backend_obj, tk), tk)
        return dry_run_result(COMPONENT, "judge", estimate_requests(repeat_requests(
            judge_requests([task], jprompts, judge_method, backend_obj), repeats),
            backend_obj, the_store, runner), headline=[], signature=judge_result_signature(
                dataset, noise_rate if noise_rate is not None else cfg.noise_rate, info,
                repeats))
    detail = judge_predictions(dataset, preds, jprompts, backend_obj, the_store, runner,
                               method=judge_method, noise_rate=noise_rate,
                               passage_num=setting.passage_num,
                               correct_rate=setting.correct_rate, seed=setting.seed,
                               repeats=repeats)
    identity = backend_obj.identity()
    items = detail.iter_items()
    summary = detail.to_json()
    summary["spend"] = _spend(items, runner)
    if by:
        summary["groups"] = _groups(by, items, [dataset], predictions, data,
                                    noise_rate=detail.score.config.noise_rate,
                                    task=detail.kind, runner=runner)
    from ragmeter.result import Result  # after the calls (issue 26.5)

    return check_run(Result(COMPONENT, "judge", summary, items=items, detail=detail,
                            inputs=[input_record(predictions),
                                    input_record(data, len(dataset.instances))],
                            backends=[identity], models=[str(identity.get("model", ""))],
                            prompt_versions={"judge": jprompts.version},
                            judges=[detail.rates["card"]], alarms=detail.alarms,
                            engine=runner.engine_name, headline=headline(summary)),
                     "rgb.judge")


def _rates(value: str | Sequence[float], option: str) -> tuple[float, ...]:
    """Noise rates as a sequence of floats or the CLI's ``"0,0.2,0.4"``."""
    from ragmeter.errors import ConfigError

    parts: Sequence[Any] = value.split(",") if isinstance(value, str) else value
    out: list[float] = []
    for part in parts:
        try:
            rate = float(str(part).strip())
        except ValueError:
            raise ConfigError(f"rgb: {option} {value!r}: {str(part).strip()!r} is not a number. "
                              "Fix: write rates like 0,0.2,0.4.") from None
        if not 0.0 <= rate <= 1.0:
            raise ConfigError(f"rgb: {option}: {rate} is outside [0, 1].")
        out.append(rate)
    return tuple(out)


def _with_model(backend: Any, model: str) -> Any:
    """The same backend value with another model (``judge_model``)."""
    return replace(backend, model=model, _lock=threading.Lock(), _instance=[])


def run(data: Any = None, *, lang: str | None = None,
        noise_rates: str | Sequence[float] = PAPER_NOISE_RATES,
        int_noise_rates: str | Sequence[float] = PAPER_INT_NOISE_RATES,
        no_rejection: bool = False, mode: str = "strict", by: str | None = None,
        judge: bool | JudgeOptions = False, setting: SettingOptions | None = None,
        generation: GenerationOptions | None = None, backend: Any = None,
        run: RunOptions | None = None, **options: Any) -> Result:
    """Build every setting of the paper's tables, generate through the runner (cached,
    resumable), score and (``judge=True``, or a :class:`JudgeOptions`) judge.

    ``data``: one RGB data file (path) or a list of paths [default: the built-in sample].
    ``generation``: :class:`GenerationOptions` (prompts, temperature, max tokens, limit);
    ``setting``: :class:`SettingOptions`; ``judge``: as :func:`judge` (``repeats``: judge
    every judged item N times; the answers are generated once); ``run``:
    :class:`ragmeter.RunOptions` (``on_progress(stats, done, todo)`` is called as calls
    finish: ``ragmeter view`` pushes it to the page; raising in it stops the run).  The fields
    of every group are also accepted as plain keywords (``temperature=0``).  The Result's
    ``detail`` is the run (tables, per-setting scores) that ``rgb run`` prints and writes; its
    headline has every number of the paper's tables by ``<data>@<setting>``.  ``by``: rates,
    coverage and spend per group (``noise_rate``, ``lang``, ``dataset``, ``role``,
    ``setting`` or a column of the data).  ``summary["spend"]``: tokens and money of every
    call, from the endpoint's usage."""
    from ragmeter.judges._repeats import check_repeats

    groups = gather("rgb.run", options, setting=(SettingOptions, setting),
                    generation=(GenerationOptions, generation),
                    judge=(JudgeOptions, judge if isinstance(judge, JudgeOptions) else None),
                    run=(RunOptions, run))
    setting, gen, jopts, run_opts = (groups["setting"], groups["generation"], groups["judge"],
                                     groups["run"])
    judging = isinstance(judge, JudgeOptions) or bool(judge)
    check_repeats(jopts.repeats, COMPONENT)
    from ragmeter.backends import resolve
    from ragmeter.io._samples import sample_path
    from ragmeter.rgb._data import load_dataset
    from ragmeter.rgb._demo import SAMPLE_FILES
    from ragmeter.rgb._metrics import headline
    from ragmeter.rgb._prompts import load_prompts
    from ragmeter.rgb._run import (
        RgbRunConfig,
        _limited,
        dry_run_judge_info,
        dry_run_judge_requests,
        generation_requests,
        plan_settings,
        run_rgb,
        run_signature,
    )
    from ragmeter.runner._run import estimate_requests

    files = ([data] if isinstance(data, str) or hasattr(data, "__fspath__") else list(data)
             ) if data else [str(sample_path(n)) for n in SAMPLE_FILES]
    datasets = [load_dataset(f, lang=lang) for f in files]
    the_prompts = load_prompts(gen.prompts)
    jprompts = _judge_prompts(jopts.judge_prompts) if judging else None
    config = RgbRunConfig(
        noise_rates=_rates(noise_rates, "--noise-rates"),
        int_noise_rates=_rates(int_noise_rates, "--int-noise-rates"),
        rejection=not no_rejection, passage_num=setting.passage_num,
        correct_rate=setting.correct_rate, seed=setting.seed, temperature=gen.temperature,
        max_tokens=gen.max_tokens, mode=mode, judge=judging, judge_method=jopts.judge_method,
        limit=gen.limit, repeats=jopts.repeats)
    backend_value = resolve(backend)
    backend_obj, the_store, runner = model_context(backend_value, run_opts.store,
                                                   replay=run_opts.replay,
                                                   progress=run_opts.progress,
                                                   description="rgb answers",
                                                   on_progress=run_opts.on_progress)
    judge_value = (_with_model(backend_value, jopts.judge_model)
                   if judging and jopts.judge_model else None)
    judge_obj = judge_value.instance() if judge_value is not None else backend_obj
    if run_opts.dry_run:
        limited = [_limited(d, config) for d in datasets]
        answers = estimate_requests(generation_requests(plan_settings(limited, config),
                                                        the_prompts, config),
                                    backend_obj, the_store, runner)
        text = "answers: " + answers.render()
        extra: dict[str, Any] = {}
        if jprompts is not None:
            jreq, placeholders = dry_run_judge_requests(datasets, the_prompts, config,
                                                        backend_obj, the_store, jprompts,
                                                        judge_obj)
            jest = estimate_requests(jreq, judge_obj, the_store, runner)
            extra = {"judge": as_dict(jest), "judge_placeholders": placeholders}
            text += "\njudge: " + jest.render()
            if placeholders:
                text += (f"\n({placeholders} judged answer(s) not generated yet: their judge "
                         f"prompts are counted with a {gen.max_tokens}-token answer, an upper "
                         "bound.)")
        model = f"{backend_obj.name}:{backend_obj.identity().get('model', backend_obj.name)}"
        info = (dry_run_judge_info(limited, config, judge_obj, jprompts)
                if jprompts is not None else None)
        result = dry_run_result(COMPONENT, "run", answers, **extra, headline=[],
                                signature=run_signature(model, the_prompts.version, config,
                                                        info))
        result.dry_run_text = text  # type: ignore[attr-defined]
        return result
    detail = run_rgb(datasets, the_prompts, backend_obj, the_store, runner, config,
                     judge_prompts=jprompts,
                     judge_backend=judge_obj if judge_value is not None else None)
    identity = backend_obj.identity()
    judges = []
    for row in detail.judged.values():
        card = row.get("card")
        if card and card not in judges:
            judges.append(card)
    items = list(detail.iter_items())
    summary = detail.to_json()
    summary["spend"] = _spend(items, runner)
    if by:
        summary["groups"] = _groups(by, items, datasets, None,
                                    None if len(files) != 1 else files[0], noise_rate=None,
                                    task=None, runner=runner)
    from ragmeter.result import Result  # after the calls (issue 26.5)

    return check_run(Result(COMPONENT, "run", summary, items=items, detail=detail,
                            inputs=[input_record(f) for f in files], backends=[identity],
                            models=[str(identity.get("model", ""))],
                            prompt_versions={"instruction": str(the_prompts.version)},
                            judges=judges, alarms=detail.alarms, engine=runner.engine_name,
                            headline=headline(summary)), "rgb.run")


ajudge = async_variant(judge)
arun = async_variant(run)
