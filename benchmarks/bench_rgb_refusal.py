"""Offline Rej* judges against hand-labelled answers: the refusal detector and the local model's
choice scoring (issue 12, item 8).

Labelled sets (written by hand by the ragmeter authors, English and Chinese, see
tests/suites/rgb/REFUSAL_LABELS.md): ``dev`` = ``refusal_labels.jsonl`` (80 answers, the set
the detector's patterns were written against) and ``heldout`` =
``refusal_labels_heldout.jsonl`` (40 answers, written after detector v1 was frozen).

Judges:

* ``detector``: :func:`ragmeter.rgb._refusal.detect_refusal`;
* ``choice@0.5``: the local model asked ragmeter's few-shot rejection judge prompt with Yes/No
  choice scoring; declines when p(No) > 0.5 (``--judge-method choice``);
* ``choice@best``: p(No) with the threshold that maximises accuracy on the same items, an
  in-sample upper bound of what any calibrated threshold could reach; and the AUROC of p(No),
  which says whether p(No) separates the classes at all.

For each: accuracy (Wilson 95% CI) and Cohen's kappa (bootstrap 95% CI).  ``--subset N`` runs
the model on N items per set, evenly spaced (the sets hold declining / non-declining pairs per
question, English then Chinese, so an even step keeps both balanced): the local model takes
30-60 s per judge call on a loaded 2-core machine.

    python benchmarks/bench_rgb_refusal.py [--no-model] [--subset N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent / "tests" / "suites" / "rgb"
SETS = {"dev": HERE / "refusal_labels.jsonl", "heldout": HERE / "refusal_labels_heldout.jsonl",
        # 47 answers the local model wrote to RGB prompts, labelled after v2 (issue 27.3)
        "model": HERE / "refusal_labels_model.jsonl"}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _subset(rows: list[dict[str, Any]], n: int | None) -> list[dict[str, Any]]:
    """``n`` rows as whole (decline, non-decline) pairs, evenly spaced over the set."""
    if not n or n >= len(rows):
        return rows
    pairs = [rows[i:i + 2] for i in range(0, len(rows), 2)]
    step = len(pairs) / (n // 2)
    return [r for k in range(n // 2) for r in pairs[int(k * step)]]


def _p_no(rows: list[dict[str, Any]], store_path: str | None) -> list[float]:
    from ragmeter.backends._registry import create_backend
    from ragmeter.rgb._judge import judge_request
    from ragmeter.rgb._prompts import load_judge_prompts
    from ragmeter.runner._run import RunnerConfig, run_requests
    from ragmeter.runner._store import Store

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


def _line(name: str, judge: str, lang: str, a: dict[str, Any]) -> str:
    return (f"{name:8s} {judge:12s} {lang:3s} n={a['n']:3d} acc {a['accuracy']:.3f} "
            f"[{a['accuracy_ci95'][0]:.3f}, {a['accuracy_ci95'][1]:.3f}]  kappa "
            f"{a['kappa']:.3f} [{a['kappa_ci95'][0]:.3f}, {a['kappa_ci95'][1]:.3f}]  "
            f"declines {a['predicted_declines']}/{a['reference_declines']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-model", action="store_true", help="detector only")
    parser.add_argument("--subset", type=int, default=None,
                        help="items per set for the model (even; default: all)")
    parser.add_argument("--sets", default="heldout,dev", help="sets for the model")
    parser.add_argument("--json", default=None)
    parser.add_argument("--store", default=None, help="store path [default: ragmeter's]")
    args = parser.parse_args()
    from ragmeter.rgb._refusal import DETECTOR_VERSION, agreement, detect_refusal
    from ragmeter.stats import auroc

    data = {k: _rows(v) for k, v in SETS.items()}
    data["heldout+model"] = data["heldout"] + data["model"]  # the judge card's 87 answers
    report: dict[str, Any] = {"detector_version": DETECTOR_VERSION, "results": {}}
    for name, rows in data.items():
        y = [bool(r["declines"]) for r in rows]
        verdicts = [detect_refusal(r["answer"]).declines for r in rows]
        for lang in ("all", "en", "zh"):
            idx = [i for i, r in enumerate(rows) if lang == "all" or r["lang"] == lang]
            a = agreement([y[i] for i in idx], [verdicts[i] for i in idx])
            report["results"][f"{name}/detector/{lang}"] = a
            print(_line(name, "detector", lang, a), flush=True)
    if not args.no_model:
        for name in args.sets.split(","):
            rows = _subset(data[name], args.subset)
            y = [bool(r["declines"]) for r in rows]
            p = _p_no(rows, args.store)
            t = _best_threshold(p, y)
            det = agreement(y, [detect_refusal(r["answer"]).declines for r in rows])
            report["results"][f"{name}[subset]/detector/all"] = det
            print(_line(name + "*", "detector", "all", det))
            for judge, verdicts in (("choice@0.5", [pi > 0.5 for pi in p]),
                                    ("choice@best", [pi > t for pi in p])):
                a = agreement(y, verdicts)
                report["results"][f"{name}[subset]/{judge}/all"] = a
                print(_line(name + "*", judge, "all", a))
            auc = auroc(p, [int(v) for v in y])
            report[f"{name}_p_no"] = {"auroc": auc, "min": min(p), "max": max(p),
                                      "best_threshold": t, "ids": [r["id"] for r in rows],
                                      "p_no": p}
            print(f"{name}* p(No): AUROC {auc:.3f}, range [{min(p):.3f}, {max(p):.3f}], "
                  f"best threshold {t:.4f} (in-sample)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
