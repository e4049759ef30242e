"""How much RAGBench's TRACe definitions and the GPT-labelling write-up's variant disagree on
the same released labels (issue 15 item 3).

    python benchmarks/trace_definitions.py [--data ../shared/data/ragbench]

Per split: the mean of each metric under both definitions, the mean absolute per-row
difference, the share of rows whose value differs, and the rows whose adherence flips
(RAGBench reads ``unsupported_response_sentence_keys``; the write-up reads
``fully_supported``, where a null verdict counts as unsupported).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SPLITS = ("covidqa", "delucionqa", "emanual", "hotpotqa")
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ragbench"
METRICS = ("relevance", "utilization", "completeness", "adherence")


def compare(path: Path) -> dict[str, dict[str, float]]:
    import ragmeter.trace

    ours = {d: ragmeter.trace.score(str(path), definitions=d, resamples=100).items
            for d in ("ragbench", "writeup")}
    pairs = [(a, b) for a, b in zip(ours["ragbench"], ours["writeup"], strict=True)
             if a["status"] == "ok" and b["status"] == "ok"]
    out: dict[str, dict[str, float]] = {}
    for m in METRICS:
        both = [(float(a[m]), float(b[m])) for a, b in pairs
                if a.get(m) is not None and b.get(m) is not None]
        out[m] = {"ragbench": sum(x for x, _ in both) / len(both),
                  "writeup": sum(y for _, y in both) / len(both),
                  "mean_abs_diff": sum(abs(x - y) for x, y in both) / len(both),
                  "rows_differ": sum(1 for x, y in both if abs(x - y) > 1e-12) / len(both),
                  "n": len(both)}
    avg = [float(b["average"]) for _, b in pairs if b.get("average") is not None]
    out["average"] = {"writeup": sum(avg) / len(avg), "n": len(avg)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args(argv)
    if not (args.data / "hotpotqa").is_dir():
        print(f"no RAGBench splits under {args.data}", file=sys.stderr)
        return 2
    print("| split | metric | RAGBench mean | write-up mean | mean abs. diff | rows differing |")
    print("|---|---|---|---|---|---|")
    for split in SPLITS:
        res = compare(args.data / split / "test-00000-of-00001.parquet")
        for m in METRICS:
            r = res[m]
            print(f"| {split} | {m} | {r['ragbench']:.4f} | {r['writeup']:.4f} | "
                  f"{r['mean_abs_diff']:.4f} | {r['rows_differ']:.1%} of {r['n']} |")
        print(f"| {split} | average (write-up only) | — | {res['average']['writeup']:.4f} "
              "| — | — |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
