"""``ragmeter multilingual judge``: LBRAG's 0–1 semantic score through ragmeter's judge
machinery.  The lead attaches :data:`judge` to the ``multilingual`` group."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli.backend_options import backend_options
from ragmeter.cli.options import field_option, input_file, output_file


@click.command(name="judge")
@click.argument("path", type=input_file())
@click.option("--out", "out", required=True, type=output_file(),
              help="Write the answers with a semantic_score column (JSONL) here; feed it to "
                   "ragmeter multilingual score.")
@click.option("--scoring", type=click.Choice(["auto", "choices", "generate"]), default="auto",
              show_default=True,
              help="generate: the judge writes {\"score\": 0..1, \"explanation\": ...} (LBRAG's "
                   "way, parsed and clipped); choices: P(yes) of a yes/no question, from "
                   "logits/logprobs. auto: choices for --backend local (the tiny offline model "
                   "cannot write JSON reliably), generate otherwise.")
@field_option
@backend_options
def judge(path: str, out: str, scoring: str, fields: tuple[str, ...], **kwargs: Any) -> None:
    """Add a semantic score (0-1) to multilingual answers with an LLM judge.

    PATH is the multilingual answers file (sample_id, sample_lang, system, question,
    gold_answer, pred_answer).  A failed or unparseable judgement leaves semantic_score empty
    with a semantic_reason (LBRAG counts it 0.0), so multilingual score reports its coverage.

    Example: ragmeter multilingual judge answers.jsonl --out judged.jsonl
    """
    from ragmeter.cli.backend_options import runner_context
    from ragmeter.io import iter_rows, parse_field_options, write_jsonl
    from ragmeter.runner import estimate_requests, run_requests
    from ragmeter.suites.rubric.judge import (
        Answer,
        SemanticPrompt,
        semantic_requests,
        semantic_rows,
    )

    fm = parse_field_options(fields, component="multilingual")
    raw_rows = list(iter_rows(path, component="multilingual", field_map=fm))
    answers = []
    from ragmeter.io import as_text, require

    for i, row in enumerate(raw_rows):
        q = row.data.get("question")
        gold = require(row, "gold_answer", component="multilingual", field_map=fm)
        pred = require(row, "pred_answer", component="multilingual", field_map=fm)
        answers.append(Answer(
            id=str(i), question=as_text(row, "question", q, component="multilingual",
                                        allow_none=True),
            reference=as_text(row, "gold_answer", gold, component="multilingual"),
            response=None if pred is None else as_text(row, "pred_answer", pred,
                                                       component="multilingual"),
            extra={"sample_lang": str(row.data.get("sample_lang", ""))}))
    backend, store, config, dry_run = runner_context(**kwargs, description="semantic judge")
    mode = scoring if scoring != "auto" else ("choices" if backend.name == "local"
                                              else "generate")
    prompt = SemanticPrompt.default()
    requests = semantic_requests(answers, prompt, mode)  # type: ignore[arg-type]
    if dry_run:
        click.echo(estimate_requests(requests, backend, store).render())
        return
    outcomes = run_requests(requests, backend, store, config)
    model = str(backend.identity().get("model", backend.name))
    sem = semantic_rows(answers, outcomes, mode, prompt, model)  # type: ignore[arg-type]
    merged = []
    for row, s in zip(raw_rows, sem, strict=True):
        data = dict(row.data)
        data.update({k: v for k, v in s.items() if k not in ("id", "sample_lang")})
        merged.append(data)
    n = write_jsonl(out, merged)
    scored = sum(1 for s in sem if s["semantic_score"] is not None)
    click.echo(f"semantic score ({mode}, judge {model}, prompt {prompt.version}): "
               f"{scored}/{n} rows scored")
    reasons: dict[str, int] = {}
    for s in sem:
        if s["semantic_score"] is None:
            reasons[s["semantic_reason"]] = reasons.get(s["semantic_reason"], 0) + 1
    if reasons:
        click.echo("unscored: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())))
    click.echo(f"wrote {n} rows to {out}", err=True)
