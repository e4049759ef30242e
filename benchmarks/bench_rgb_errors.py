"""Offline ED* judges against hand-labelled answers: the error detector and the rule-based
notions of error detection (issue 27, item 3).

Labelled sets (tests/suites/rgb/ERROR_LABELS.md): ``dev`` = ``error_labels.jsonl`` (48
hand-written answers, the set the detector's patterns were written against) and ``heldout``
= ``error_labels_heldout.jsonl`` (91 answers labelled after ``error-patterns-1`` was frozen:
44 hand-written, 47 written by the local model SmolLM2-135M to RGB prompts), with its two
parts reported apart too.

Judges: ``detector`` (:func:`ragmeter.rgb._errors.detect_error`); ``strict`` (evalue.py's
``factlabel``: the answer contains "factual errors" or 事实性错误); ``refactor`` (the
refactor's ``detects_error`` keyword list, without its counterfactual-answer rule, which needs
the item's fake answer).  For each: accuracy (Wilson 95% CI) and Cohen's kappa (bootstrap 95%
CI, 2000 resamples).  No model is called.

    python benchmarks/bench_rgb_errors.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent / "tests" / "suites" / "rgb"
SETS = {"dev": HERE / "error_labels.jsonl", "heldout": HERE / "error_labels_heldout.jsonl"}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def judges() -> dict[str, Callable[[str], bool]]:
    from ragmeter.rgb._errors import detect_error
    from ragmeter.rgb._metrics import FACT_MARKERS
    from ragmeter.rgb._refactor_metrics import detects_error

    return {"detector": lambda a: detect_error(a).detects,
            "strict": lambda a: any(m in a for m in FACT_MARKERS),
            "refactor": lambda a: detects_error(a, None)}


def measure() -> dict[str, Any]:
    from ragmeter.rgb._refusal import agreement

    out: dict[str, Any] = {}
    for set_name, path in SETS.items():
        rows = _rows(path)
        parts = {set_name: rows}
        if set_name == "heldout":
            parts["heldout: hand-written"] = [r for r in rows if r["source"].startswith("hand")]
            parts["heldout: local model"] = [r for r in rows if r["source"].startswith("Smol")]
        for part, items in parts.items():
            ref = [bool(r["detects"]) for r in items]
            out[part] = {name: agreement(ref, [fn(r["answer"]) for r in items])
                         for name, fn in judges().items()}
    return out


def _fmt(a: dict[str, Any]) -> str:
    acc = f"{a['accuracy']:.3f}"
    if a["accuracy_ci95"]:
        acc += f" [{a['accuracy_ci95'][0]:.3f}, {a['accuracy_ci95'][1]:.3f}]"
    one_class = a["reference_declines"] in (0, a["n"])
    kappa = "— (one class)" if one_class or a["kappa"] is None else f"{a['kappa']:.3f}"
    if not one_class and a["kappa"] is not None and a["kappa_ci95"]:
        kappa += f" [{a['kappa_ci95'][0]:.3f}, {a['kappa_ci95'][1]:.3f}]"
    return f"{acc} | {kappa} | {a['predicted_declines']}/{a['reference_declines']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None, help="also write the numbers here")
    args = parser.parse_args()
    result = measure()
    print("| set | judge | n | accuracy [95% CI] | kappa [95% CI] | flagged / labelled |")
    print("|---|---|---|---|---|---|")
    for part, by_judge in result.items():
        for name, a in by_judge.items():
            print(f"| {part} | {name} | {a['n']} | {_fmt(a)} |")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
