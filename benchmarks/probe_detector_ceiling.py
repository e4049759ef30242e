"""Do the TRACe detector's inputs carry signal on each split?  Three probes, fitted within the split.

    python benchmarks/probe_detector_ceiling.py [--data ../shared/data/ragbench]
        [--probes rows,shares,lm] [--lm-split hotpotqa] [--lm-limit 0] [--folds 5 --repeats 5]

``bench_detector.py`` scores the detector on a split it was not fitted on.  When it misses a
target there, two causes are possible: the other splits teach the wrong weights (fixable by
fitting), or the inputs carry no signal for that split (fixable only by new inputs).  These
probes tell them apart by fitting **on the split itself** (k-fold cross-validation within the
split, repeated with shuffled folds): the folds share the split's annotator, documents and
style, so weights that transfer badly are no longer the excuse.  They are not an upper bound:
a training fold holds only four fifths of the split's few positives (10-31), so on covidqa
the row model fitted within the split ranks worse than the held-out detector fitted on three
whole splits.  What they show is where the inputs rank **at or below chance however they are
weighted** (hotpotqa's hallucinations), and how close a share model fitted on the split's own
annotations comes to GPT-3.5's utilization RMSE.

- ``rows``: hallucination AUROC of a logistic model on every lexical row-level input the
  detector has: its six row features plus the max and mean of each of its 15 sentence
  support features over the response's sentences (36 columns, standardized within the
  training folds; penalties 1, 10, 100, 1000, each printed).
- ``shares``: utilization RMSE of the least-squares share model (the detector's own
  :func:`~ragmeter.trace._shares.share_features`, from sentence models fitted on the
  other three splits), fitted within the split, counted as the detector counts it (a whole
  number of sentences); and the same inputs with every pairwise product added (ridge 10,
  30, 100), for a nonlinear share model.
- ``lm``: the local model (SmolLM2-135M-Instruct, the offline default; ``pip install
  'ragmeter[local]'``) as a probe of context support: the log-probability of each response
  token after the documents and the question, and its pointwise mutual information with the
  documents (the same log-probability minus the one after the question alone), summarized
  per row (mean, minimum, low quantile, the weakest sentence).  Each summary's AUROC alone,
  no fitting.  Slow (two prompts of up to ~2,000 tokens a row: about 2 s a row on 2 cores),
  so it runs on one split (``--lm-split``), optionally its first ``--lm-limit`` rows.

Each line prints the released judges' values on the same rows beside it (GPT-3.5's
utilization RMSE; the best released hallucination AUROC).  Measured results: docs/trace.md.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

SPLITS = ("covidqa", "delucionqa", "emanual", "hotpotqa")
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ragbench"
PENALTIES = (1.0, 10.0, 100.0, 1000.0)


def _parquet(data: Path, split: str) -> Path:
    return data / split / "test-00000-of-00001.parquet"


def _released(data: Path, split: str) -> dict[str, float]:
    """The released judges' hallucination AUROC (the best of the three) and GPT-3.5's
    utilization RMSE on the split, computed by ``trace validate``'s code."""
    from ragmeter.trace._validate import ValidateConfig, validate_file

    judges = validate_file(_parquet(data, split), ValidateConfig(n_resamples=10)).judges

    def value(judge: str, stat: str) -> float:
        est = judges.get(judge, {}).get(stat)
        return float(est.value) if est is not None and est.value is not None else math.nan

    return {"best_auroc": max(value(j, "hallucination_auroc") for j in judges),
            "gpt35_utilization_rmse": value("gpt-3.5 (released)", "utilization_rmse")}


def _folds(n: int, folds: int, seed: int) -> list[np.ndarray]:
    return np.array_split(np.random.default_rng(seed).permutation(n), folds)


def probe_rows(rows: list[Any], folds: int, repeats: int) -> dict[float, float]:
    """Within-split cross-validated AUROC of the row model on all lexical row inputs."""
    from ragmeter import stats
    from ragmeter.trace._detector import fit_logistic
    from ragmeter.trace._features import row_features, support_features

    x = []
    for a in rows:
        s = support_features(a.text)
        agg = np.concatenate([s.max(axis=0), s.mean(axis=0)]) if len(s) \
            else np.zeros(2 * s.shape[1])
        x.append(np.concatenate([row_features(a.text), agg]))
    xm = np.array(x)
    y = np.array([0.0 if a.adherent else 1.0 for a in rows])
    names = [f"f{i}" for i in range(xm.shape[1])]
    out = {}
    for l2 in PENALTIES:
        values = []
        for rep in range(repeats):
            pred = np.zeros(len(rows))
            for test in _folds(len(rows), folds, rep):
                train = np.setdiff1d(np.arange(len(rows)), test)
                mu, sd = xm[train].mean(axis=0), xm[train].std(axis=0) + 1e-9
                model = fit_logistic((xm[train] - mu) / sd, y[train], names, l2=l2)
                pred[test] = model.predict((xm[test] - mu) / sd)
            values.append(stats.auroc(pred.tolist(), (y > 0).tolist()) or 0.5)
        out[l2] = float(np.mean(values))
    return out


def _quadratic(f: np.ndarray) -> np.ndarray:
    """The share inputs (intercept first) with every pairwise product and square added."""
    x = f[:, 1:]
    pairs = [x[:, i] * x[:, j] for i in range(x.shape[1]) for j in range(i, x.shape[1])]
    return np.hstack([f, np.column_stack(pairs)])


def _cv_rmse(f: np.ndarray, y: np.ndarray, sizes: list[int], folds: int, repeats: int,
             ridge: float) -> float:
    """Cross-validated RMSE of a ridge least-squares share model (inputs standardized in the
    training folds, intercept unpenalized), each prediction a whole number of sentences."""
    values = []
    for rep in range(repeats):
        pred = np.zeros(len(y))
        for test in _folds(len(y), folds, rep):
            train = np.setdiff1d(np.arange(len(y)), test)
            mu, sd = f[train, 1:].mean(axis=0), f[train, 1:].std(axis=0) + 1e-9
            z = np.hstack([f[:, :1], (f[:, 1:] - mu) / sd])
            penalty = ridge * np.eye(f.shape[1])
            penalty[0, 0] = 0.0
            w = np.linalg.solve(z[train].T @ z[train] + penalty, z[train].T @ y[train])
            for i in test:
                share = min(1.0, max(0.0, float(z[i] @ w)))
                pred[i] = math.floor(share * sizes[i] + 0.5) / sizes[i]
        values.append(math.sqrt(float(np.mean((pred - y) ** 2))))
    return float(np.mean(values))


def probe_shares(rows: list[Any], others: dict[str, list[Any]], folds: int,
                 repeats: int) -> dict[str, float]:
    """Within-split cross-validated utilization RMSE of the share model (its inputs from
    sentence models fitted on the other splits, as the held-out detector has them): the
    detector's linear model, and a quadratic one (every pairwise product) at three ridges."""
    from ragmeter.trace._detector import feature_matrices, fit_splits

    det = fit_splits(others)
    feats, target, sizes = [], [], []
    for a in rows:
        probs, f = det.share_inputs(a.text, feature_matrices(a.text, None))
        feats.append(f)
        target.append(a.utilization)
        sizes.append(len(probs["relevance"]))
    f, y = np.array(feats), np.array(target)
    out = {"linear": _cv_rmse(f, y, sizes, folds, repeats, 1e-6)}
    for ridge in (10.0, 30.0, 100.0):
        out[f"quadratic, ridge {ridge:g}"] = _cv_rmse(_quadratic(f), y, sizes, folds, repeats,
                                                     ridge)
    return out


def probe_lm(path: Path, limit: int) -> dict[str, float]:
    """AUROC of each local-model log-probability summary alone (see the module docstring)."""
    import pyarrow.parquet as pq

    from ragmeter import stats
    from ragmeter.backends._local._backend import _transformers_runtime, resolve_model
    from ragmeter.backends._local._numpy import _log_softmax

    runtime = _transformers_runtime(resolve_model(None), threads=2)
    model = getattr(runtime, "model", None)
    if model is None or not hasattr(model, "prefill"):
        raise SystemExit("the lm probe needs the numpy forward pass of the default model")
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(runtime.folder / "tokenizer.json"))
    table = pq.read_table(path).to_pylist()
    if limit:
        table = table[:limit]
    summaries: dict[str, list[float]] = {}
    positives = []
    t0 = time.perf_counter()
    for n, r in enumerate(table):
        docs = "\n".join(f"Document {i}: " + " ".join(s for _, s in doc)
                         for i, doc in enumerate(r["documents_sentences"]))
        per = []
        for head in (f"{docs}\n\nQuestion: {r['question']}\nAnswer:",
                     f"Question: {r['question']}\nAnswer:"):
            prompt = tok.encode(head).ids[-1800:]
            ids, bounds = list(prompt), []
            for _, sentence in r["response_sentences"]:
                piece = tok.encode(" " + sentence).ids
                bounds.append((len(ids) - len(prompt), len(ids) + len(piece) - len(prompt)))
                ids += piece
            ids = ids[:2047]
            with model.blas.single():
                logits = model.prefill([ids], None, [(len(prompt) - 1, len(ids) - 1)])[0]
            logp = _log_softmax(np, logits)
            target = np.array(ids[len(prompt):])
            per.append((logp[np.arange(len(target)), target], bounds))
        (with_docs, bounds), (without, _) = per
        k = min(len(with_docs), len(without))
        lp, pmi = with_docs[:k], with_docs[:k] - without[:k]
        sentences = [(float(lp[a:min(b, k)].mean()), float(pmi[a:min(b, k)].mean()))
                     for a, b in bounds if min(b, k) > a] or [(0.0, 0.0)]
        # higher = more suspicious (a hallucinated row should read as less likely)
        for name, value in (("mean log-p after the documents", -lp.mean()),
                            ("min log-p", -lp.min()),
                            ("10% quantile of log-p", -np.quantile(lp, 0.1)),
                            ("mean PMI with the documents", -pmi.mean()),
                            ("min PMI", -pmi.min()),
                            ("share of tokens with PMI < 0", float((pmi < 0).mean())),
                            ("weakest sentence, mean log-p", -min(s[0] for s in sentences)),
                            ("weakest sentence, mean PMI", -min(s[1] for s in sentences))):
            summaries.setdefault(name, []).append(float(value))
        positives.append(not r["adherence_score"])
        if n % 25 == 0:
            print(f"  lm probe: {n + 1}/{len(table)} rows, {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr, flush=True)
    out = {name: float(stats.auroc(v, positives) or 0.5) for name, v in summaries.items()}
    out["seconds_per_row"] = (time.perf_counter() - t0) / max(len(table), 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--probes", default="rows,shares")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--lm-split", default="hotpotqa", choices=SPLITS)
    ap.add_argument("--lm-limit", type=int, default=0, help="first N rows only [all]")
    args = ap.parse_args(argv)
    if not (args.data / "hotpotqa").is_dir():
        print(f"no RAGBench splits under {args.data}", file=sys.stderr)
        return 2
    probes = {p.strip() for p in args.probes.split(",") if p.strip()}
    from ragmeter.trace._detector import read_annotated

    if probes & {"rows", "shares"}:
        rows = {s: read_annotated(_parquet(args.data, s))[0] for s in SPLITS}
        for split in SPLITS:
            released = _released(args.data, split)
            if "rows" in probes:
                aucs = probe_rows(rows[split], args.folds, args.repeats)
                print(f"{split}: hallucination AUROC fitted within the split "
                      f"({args.folds}-fold x{args.repeats}): "
                      + ", ".join(f"l2={k:g} {v:.3f}" for k, v in aucs.items())
                      + f"; best released judge {released['best_auroc']:.3f}")
            if "shares" in probes:
                others = {s: rows[s] for s in SPLITS if s != split}
                rmses = probe_shares(rows[split], others, args.folds, args.repeats)
                print(f"{split}: utilization RMSE fitted within the split: "
                      + ", ".join(f"{k} {v:.4f}" for k, v in rmses.items())
                      + f"; GPT-3.5 {released['gpt35_utilization_rmse']:.4f}")
    if "lm" in probes:
        released = _released(args.data, args.lm_split)
        res = probe_lm(_parquet(args.data, args.lm_split), args.lm_limit)
        print(f"{args.lm_split}: local-model summaries, AUROC alone "
              f"({res.pop('seconds_per_row'):.2f} s a row; best released judge "
              f"{released['best_auroc']:.3f} on all rows):")
        for name, value in res.items():
            print(f"  {name}: {value:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
