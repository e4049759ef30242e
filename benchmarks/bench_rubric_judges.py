"""How well rubric judges agree with RAGaliq's reference grades (issue 12 item 6).

Reference: the grades of RAGaliq's Gemini-Flash judge in its two judged runs
(``../shared/data/ragaliq/logs/eval``, en and ru, 70 answers each).  Rows of the table:

- ``overlap`` cross-language: cut points fitted on one language, scored on the other (the
  honest number for the offline grader);
- ``overlap`` shipped (fitted on both languages: in-sample, shown for completeness);
- baselines: a constant grade 5 (the reference's most common grade) and the abstention rule
  alone (0 when the answer says nothing was found, else 5), which shows how much of the kappa
  the recall cut points add;
- any judged file given with ``--judged FILE`` (e.g. the local model's grades from
  ``ragmeter rubric judge SAMPLE --scoring choices``), paired by question.

Run: ``PYTHONPATH=src python benchmarks/bench_rubric_judges.py [--judged FILE ...]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ragmeter.rubric._judge import read_answers
from ragmeter.rubric._metrics import agreement
from ragmeter.rubric._offline import OverlapGrader, fit_files, overlap_rows
from ragmeter.rubric._overlap import is_abstention
from ragmeter.rubric._validate import ValidateConfig, validate_files

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ragaliq" / "logs" / "eval"
LOG = ("eval_res_questions_{0}_Qwen2.5-7B-Instruct_multilingual-e5-large-instruct_"
       "bge-reranker-v2-m3_{0}.json")


def _fmt(a: dict, name: str) -> str:
    def cell(key: str) -> str:
        ci = a["ci95"].get(key)
        value = a[key]
        if value is None:
            return "—"
        return f"{value:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.3f}"

    return (f"| {name} | {a['n']} | {cell('qwk')} | {cell('exact')} | {cell('within_one')} | "
            f"{cell('mae')} | {cell('spearman')} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=Path, default=SHARED)
    parser.add_argument("--judged", nargs="*", default=[], help="judged files to compare")
    args = parser.parse_args()
    logs = {lang: args.logs / LOG.format(lang) for lang in ("en", "ru")}
    print("| judge | n | quadratic kappa [95% CI] | exact | within one | MAE | Spearman |")
    print("|---|---|---|---|---|---|---|")
    fitted = fit_files(list(logs.values()))
    for c in fitted["validation"]["cross_language"]:
        print(_fmt(c, f"overlap, fit {c['fit_on']} → test {c['tested_on']}"))
    grader = OverlapGrader.shipped()
    ref_all: list[int] = []
    pred_all: list[int] = []
    const: list[int] = []
    abst: list[int] = []
    start = time.perf_counter()
    for path in logs.values():
        refs = [r["score"] for r in json.loads(path.read_text(encoding="utf-8"))]
        answers = read_answers(path)
        rows = overlap_rows(answers, grader)
        ref_all += refs
        pred_all += [r["score"] for r in rows]
        const += [5] * len(refs)
        abst += [0 if is_abstention(a.response or "") else 5 for a in answers]
    rate = len(ref_all) / (time.perf_counter() - start)
    print(_fmt(agreement(pred_all, ref_all).to_dict(), "overlap shipped (in-sample, en+ru)"))
    print(_fmt(agreement(abst, ref_all).to_dict(), "baseline: abstention rule, else 5"))
    print(_fmt(agreement(const, ref_all).to_dict(), "baseline: constant 5"))
    for judged in args.judged:
        result = validate_files([judged], list(logs.values()), ValidateConfig(on="question"))
        print(_fmt(result.overall, f"{Path(judged).name}"))
    print(f"\noverlap grader speed: {rate:.0f} answers/s (parse + grade, one core)")


if __name__ == "__main__":
    main()
