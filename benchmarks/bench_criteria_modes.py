"""Which criteria mode agrees better with human scores: one call per row and criterion
(``per-criterion``, with choice scoring or generated JSON) or all criteria in one call
(``combined``)?  Issue 28 item 2; the answer is ``JudgeOptions.mode``'s default.

Data (both offline):

- ``sample``: ragmeter's built-in ``criteria_answers.jsonl``: 36 answers to 12 bike-workshop
  questions, scored by one ragmeter author on the three shipped criteria (relevance 1-5,
  correctness 1-5, completeness 0-2) from the anchors alone, before any judge ran;
- ``ragaliq``: RAGaliq's 71 English questions (``../shared/data/ragaliq/data/
  questions_en.json``) with the 1-5 ratings of its Gemini-Flash critic on groundedness,
  relevance and standalone-ness; the criteria are written here in ragmeter's words
  (:data:`RAGALIQ_CRITERIA`), the judged fields are the question and its source context.

For each data set and configuration: per criterion the rows scored, QWK and Spearman against
the reference with 95% bootstrap CIs; then the mean QWK over the criteria and the coverage.
Every call goes through the store given with ``--store`` (a re-run pays nothing).

Run: ``PYTHONPATH=src python benchmarks/bench_criteria_modes.py --data sample
[--backend local | --base-url URL --model NAME] [--store PATH] [--limit N]
[--configs per-criterion/choices,combined/generate]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import ragmeter
from ragmeter.criteria import JudgeOptions

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ragaliq"

CONFIGS = (("per-criterion", "choices"), ("per-criterion", "generate"),
           ("combined", "generate"))

RAGALIQ_CRITERIA: dict[str, Any] = {"version": "bench-1", "criteria": [
    {"name": "groundedness", "inputs": ["context", "question"],
     "question": "Can the question be answered without ambiguity from the context alone?",
     "scale": {1: "The context does not allow an answer.",
               2: "The context hints at an answer but leaves it mostly open.",
               3: "The context gives part of the answer.",
               4: "The context answers the question, with a little ambiguity.",
               5: "The context answers the question clearly and without ambiguity."}},
    {"name": "relevance", "inputs": ["question"],
     "question": "How useful is this question to a new student who is learning about the "
                 "university from its orientation course?",
     "scale": {1: "Of no use to a new student.",
               2: "Of little use.",
               3: "Somewhat useful.",
               4: "Useful.",
               5: "Very useful: a new student would want to know this."}},
    {"name": "standalone", "inputs": ["question"],
     "question": "Does the question make sense on its own, without the document it was "
                 "written from?",
     "scale": {1: "It depends on the document to make sense (e.g. 'in the text above').",
               2: "It needs much unstated context.",
               3: "It needs some unstated context.",
               4: "It makes sense on its own, with a small ambiguity.",
               5: "It makes complete sense on its own."}},
]}


def _data(name: str, limit: int | None) -> tuple[list[dict[str, Any]], Any, str]:
    """Rows, criteria and the reference field of a data set."""
    if name == "sample":
        from ragmeter.io._samples import sample_path

        rows = [json.loads(line) for line in
                Path(sample_path("criteria_answers.jsonl")).read_text().splitlines()]
        criteria: Any = ["relevance", "correctness", "completeness"]
        ref = "human"
    else:
        raw = json.loads((SHARED / "data" / "questions_en.json").read_text(encoding="utf-8"))
        rows = [{"id": str(i), "question": r["question"].strip(), "context": r["context"],
                 "reference": {c: int(r[f"{c}_score"])
                               for c in ("groundedness", "relevance", "standalone")}}
                for i, r in enumerate(raw)]
        criteria = RAGALIQ_CRITERIA
        ref = "reference"
    return rows[:limit] if limit else rows, criteria, ref


def _cell(v: dict[str, Any], key: str) -> str:
    value = v.get(key)
    ci = (v.get("ci95") or {}).get(key)
    if value is None:
        return "—"
    return f"{value:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=("sample", "ragaliq"), default="sample")
    parser.add_argument("--backend", default="local")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--model", default=None)
    parser.add_argument("--store", default="bench_criteria.sqlite")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", default=None, help="also write the numbers here")
    parser.add_argument("--configs", default=",".join(f"{m}/{s}" for m, s in CONFIGS),
                        help="MODE/SCORING,... to run (default: all three)")
    args = parser.parse_args()
    rows, criteria, ref = _data(args.data, args.limit)
    backend = (ragmeter.backends.openai(args.model, base_url=args.base_url)
               if args.base_url else ragmeter.backends.local(args.model))
    print(f"data: {args.data}, {len(rows)} rows; backend: {args.backend} {args.model or ''}")
    print("| mode | scoring | criterion | scored | QWK [95% CI] | Spearman [95% CI] | "
          "Spearman of expected score | exact |")
    print("|---|---|---|---|---|---|---|---|")
    out: dict[str, Any] = {}
    for mode, scoring in (c.split("/") for c in args.configs.split(",")):
        t0 = time.perf_counter()
        result = ragmeter.criteria.judge(
            rows, criteria=criteria, reference_field=ref, backend=backend,
            judge=JudgeOptions(mode=mode, scoring=scoring), store=args.store, progress=False)
        seconds = time.perf_counter() - t0
        qwks = []
        for name, part in result.summary["criteria_results"].items():
            v = part.get("validation") or {}
            cov = part["coverage"]
            print(f"| {mode} | {scoring} | {name} | {cov['scored']}/{cov['rows']} | "
                  f"{_cell(v, 'qwk')} | {_cell(v, 'spearman')} | "
                  f"{_cell(v, 'spearman_expected')} | {_cell(v, 'exact')} |")
            qwks.append(v.get("qwk") if v.get("qwk") is not None else 0.0)
        cov = result.summary["coverage"]
        mean_qwk = sum(qwks) / len(qwks)
        print(f"| {mode} | {scoring} | **mean** | {cov['scored']}/{cov['rows']} | "
              f"{mean_qwk:.3f} | | | | ({seconds:.0f} s)")
        out[f"{mode}/{scoring}"] = {"mean_qwk": mean_qwk, "coverage": cov,
                                    "seconds": round(seconds, 1),
                                    "criteria": {n: p.get("validation")
                                                 for n, p in result.summary[
                                                     "criteria_results"].items()},
                                    "signature": result.signature}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
