"""Offline Rej* judges against hand-labelled answers: the refusal detector and the local model's
choice scoring (issue 12, item 8).

Labelled sets (written by hand by the ragmeter authors, English and Chinese, see
tests/suites/rgb/REFUSAL_LABELS.md): ``refusal_labels.jsonl`` (80 answers, the development set
the detector's patterns were written against) and ``refusal_labels_heldout.jsonl`` (40
answers, written after detector v1 was frozen).

Judges:

* ``detector``: :func:`ragmeter.metrics.refusal.detect_refusal`;
* ``choice@0.5``: the local model asked RGB's rejection judge prompt (ragmeter's own few-shot
  prompt) with Yes/No choice scoring; declines when p(No) > 0.5 (``--judge-method choice``);
* ``choice@calibrated``: the same p(No) with the threshold that maximises accuracy on the
  development set, applied to the held-out set.

For each: accuracy (Wilson 95% CI) and Cohen's kappa (bootstrap 95% CI), per set.

    python benchmarks/bench_rgb_refusal.py [--no-model] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent / "tests" / "suites" / "rgb"
SETS = {"dev": HERE / "refusal_labels.jsonl", "heldout": HERE / "refusal_labels_heldout.jsonl"}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _p_no(rows: list[dict[str, Any]], store_path: str | None) -> list[float]:
    from ragmeter.llm.registry import create_backend
    from ragmeter.runner import RunnerConfig, run_requests
    from ragmeter.store import Store
    from ragmeter.suites.rgb.judge import judge_request
    from ragmeter.suites.rgb.prompts import load_judge_prompts

    template = load_judge_prompts(None).reject
    requests = [judge_request(r["id"], template, r["question"], r["answer"], "choice")
                for r in rows]
    store = Store(store_path)  # answers persist: an interrupted run resumes
    outcomes = {o.request.id: o for o in run_requests(
        requests, create_backend("local"), store, RunnerConfig(concurrency=1, progress=False))}
    store.close()
    out = []
    for r in rows:
        resp = outcomes[r["id"]].response
        if resp is None or resp.choice_probs is None:
            raise SystemExit(f"no choice probabilities for {r['id']}")
        out.append(float(resp.choice_probs.get("No", 0.0)))
    return out


def _best_threshold(p: list[float], y: list[bool]) -> float:
    cands = sorted(set(p))
    cuts = [(a + b) / 2 for a, b in zip(cands, cands[1:], strict=False)] or [0.5]
    return max(cuts, key=lambda t: (sum((pi > t) == yi for pi, yi in zip(p, y, strict=True)),
                                    -abs(t - 0.5)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-model", action="store_true", help="detector only")
    parser.add_argument("--json", default=None)
    parser.add_argument("--store", default=None, help="store path [default: ragmeter's]")
    args = parser.parse_args()
    from ragmeter.metrics.refusal import DETECTOR_VERSION, agreement, detect_refusal

    data = {k: _rows(v) for k, v in SETS.items()}
    report: dict[str, Any] = {"detector_version": DETECTOR_VERSION, "results": {}}
    probs = ({k: _p_no(rows, args.store) for k, rows in data.items()}
             if not args.no_model else {})
    threshold = (_best_threshold(probs["dev"], [bool(r["declines"]) for r in data["dev"]])
                 if probs else None)
    report["choice_threshold_calibrated_on_dev"] = threshold
    for name, rows in data.items():
        y = [bool(r["declines"]) for r in rows]
        judges = {"detector": [detect_refusal(r["answer"]).declines for r in rows]}
        if probs:
            judges["choice@0.5"] = [p > 0.5 for p in probs[name]]
            judges["choice@calibrated"] = [p > threshold for p in probs[name]]  # type: ignore[operator]
            report.setdefault("p_no_spread", {})[name] = [min(probs[name]), max(probs[name])]
        for judge, verdicts in judges.items():
            for lang in ("all", "en", "zh"):
                idx = [i for i, r in enumerate(rows) if lang == "all" or r["lang"] == lang]
                a = agreement([y[i] for i in idx], [verdicts[i] for i in idx])
                report["results"][f"{name}/{judge}/{lang}"] = a
                print(f"{name:8s} {judge:18s} {lang:3s} n={a['n']:3d} "
                      f"acc {a['accuracy']:.3f} [{a['accuracy_ci95'][0]:.3f}, "
                      f"{a['accuracy_ci95'][1]:.3f}]  kappa {a['kappa']:.3f} "
                      f"[{a['kappa_ci95'][0]:.3f}, {a['kappa_ci95'][1]:.3f}]  "
                      f"declines {a['predicted_declines']}/{a['reference_declines']}")
    if threshold is not None:
        print(f"choice threshold calibrated on dev: p(No) > {threshold:.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
