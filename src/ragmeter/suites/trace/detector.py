"""ragmeter's TRACe detector: RAGBench's label columns with no generative model.

Three L2-regularized logistic regressions over the lexical features of
:mod:`ragmeter.suites.trace.features`:

- **support**: p(response sentence is unsupported).  Sentences with p >= ``threshold`` are the
  row's ``unsupported_response_sentence_keys``; the threshold is fitted so that the share of
  training sentences labelled unsupported equals the annotated share (unsupported sentences
  are rare, ~5-15%, so p seldom reaches 0.5); the row's probability of not being adherent is
  the noisy-or ``1 - prod(1 - p)`` over its sentences (``adherence_probability`` is one minus
  it, so ``trace validate`` ranks a probability, not a 0/1).
- **relevance** / **utilization**: p(document sentence is relevant / utilized).  The row's
  expected count is ``sum(p)``; the labels are the ``round(sum(p))`` sentences of highest p, so
  the relevance and utilization computed from the keys equal (up to rounding) the expected
  share, which is what minimizes RMSE, rather than a thresholded count that would be biased
  low for a rare class.

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
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError, InputError
from ragmeter.suites.trace.data import COMPONENT, LabelRow, SourceRow
from ragmeter.suites.trace.features import (
    DOCUMENT_FEATURES,
    FEATURE_VERSION,
    SUPPORT_FEATURES,
    RowText,
    document_features,
    row_text,
    support_features,
)

__all__ = ["FORMAT", "DEFAULT_DETECTOR", "Logistic", "Detector", "load_detector",
           "fit_logistic", "Annotated", "annotate", "read_annotated", "fit_rows",
           "fit_detector", "detector_json", "split_name", "held_out_scores",
           "RAGBENCH_ATTRIBUTION"]

FORMAT = "ragmeter-trace-detector"
DEFAULT_DETECTOR = "trace-detector-v1.json"
L2 = 1.0
RAGBENCH_ATTRIBUTION = (
    "RAGBench (Friel, Belyi, Sanyal 2024, arXiv:2407.11005), Hugging Face rungalileo/ragbench, "
    "license CC-BY-4.0; test splits with their TRACe annotations (annotator models listed in "
    "the dataset card).")
# Relevance leaves out the two "which sentence did the response draw on" features (they
# lowered its held-out score); utilization uses every document feature.
RELEVANCE_FEATURES = tuple(f for f in DOCUMENT_FEATURES
                           if f not in ("covers_response", "best_for_response"))
_TASKS = {"support": SUPPORT_FEATURES, "relevance": RELEVANCE_FEATURES,
          "utilization": DOCUMENT_FEATURES}
_RELEVANCE_COLUMNS = [DOCUMENT_FEATURES.index(f) for f in RELEVANCE_FEATURES]


def _r(x: float) -> float:
    """6 significant digits: the stored precision (byte-stable across BLAS builds)."""
    return float(f"{x:.6g}")


@dataclass(frozen=True)
class Logistic:
    """``p = sigmoid(intercept + sum(weights * (x - mean) / scale))``."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    intercept: float

    def predict(self, x: np.ndarray) -> np.ndarray:
        if x.shape[0] == 0:
            return np.zeros(0)
        z = self.intercept + ((x - self.mean) / self.scale) @ self.weights
        return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))

    def to_json(self) -> dict[str, Any]:
        return {"features": list(self.features),
                "mean": [_r(v) for v in self.mean], "scale": [_r(v) for v in self.scale],
                "weights": [_r(v) for v in self.weights], "intercept": _r(self.intercept)}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Logistic:
        return cls(tuple(raw["features"]), np.asarray(raw["mean"], dtype=np.float64),
                   np.asarray(raw["scale"], dtype=np.float64),
                   np.asarray(raw["weights"], dtype=np.float64), float(raw["intercept"]))


def fit_logistic(x: np.ndarray, y: np.ndarray, features: Sequence[str], *, l2: float = L2,
                 max_iter: int = 100) -> Logistic:
    """L2-penalized logistic regression (intercept not penalized) by Newton's method on
    standardized features; deterministic.  Mean and scale are rounded before use so that the
    stored model is exactly the fitted one."""
    mean = np.array([_r(v) for v in x.mean(axis=0)]) if len(x) else np.zeros(x.shape[1])
    sd = x.std(axis=0) if len(x) else np.ones(x.shape[1])
    scale = np.array([_r(v) if v > 1e-12 else 1.0 for v in sd])
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -40, 40)))
        grad = z.T @ (p - y) + penalty * w
        hess = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w = w - step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return Logistic(tuple(features), mean, scale, w[1:], float(w[0]))


@dataclass(frozen=True)
class Detector:
    name: str
    version: str
    threshold: float
    support: Logistic
    relevance: Logistic
    utilization: Logistic
    raw: dict[str, Any]

    @property
    def identity(self) -> str:
        return f"ragmeter:{self.name}"

    def label(self, question: str, documents_sentences: Sequence[Sequence[tuple[str, str]]],
              response_sentences: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """RAGBench's label columns for one row, plus the probabilities behind them."""
        rt = row_text(question, documents_sentences, response_sentences)
        return self.label_text(rt)

    def label_text(self, rt: RowText) -> dict[str, Any]:
        doc_keys = [s.key for d in rt.documents for s in d]
        dx = document_features(rt)
        cols: dict[str, Any] = {}
        for task, model, column in (
                ("relevance", self.relevance, "all_relevant_sentence_keys"),
                ("utilization", self.utilization, "all_utilized_sentence_keys")):
            p = model.predict(dx[:, _RELEVANCE_COLUMNS] if task == "relevance" else dx)
            k = int(math.floor(float(p.sum()) + 0.5))
            top = sorted(np.argsort(-p, kind="stable")[:k].tolist())
            cols[column] = [doc_keys[i] for i in top]
            cols[f"{task}_probabilities"] = {key: round(float(v), 4)
                                             for key, v in zip(doc_keys, p, strict=True)}
        ps = self.support.predict(support_features(rt))
        info = []
        for r, pv in zip(rt.response, ps, strict=True):
            info.append({"response_sentence_key": r.key, "explanation": f"p(unsupported)="
                         f"{float(pv):.4f}", "supporting_sentence_keys": [],
                         "fully_supported": bool(pv < self.threshold)})
        unsupported = [s["response_sentence_key"] for s in info if not s["fully_supported"]]
        not_adherent = 1.0 - float(np.prod(1.0 - ps)) if len(ps) else 0.0
        cols.update({
            "sentence_support_information": info,
            "unsupported_response_sentence_keys": unsupported,
            "adherence_score": not unsupported,
            "not_adherent_probability": round(not_adherent, 6),
            "adherence_probability": round(1.0 - not_adherent, 6),
            "support_probabilities": {r.key: round(float(v), 4)
                                      for r, v in zip(rt.response, ps, strict=True)},
            "threshold": self.threshold,
        })
        return cols


def _bad(path: Path | str, what: str) -> InputError:
    return InputError(f"is not a TRACe detector file ({what}).", component=COMPONENT,
                      path=path, fix="give a file written by `ragmeter trace fit`.")


def load_detector(path: str | Path | None = None) -> Detector:
    """The shipped detector (``path`` None) or a user's file from ``ragmeter trace fit``."""
    if path is None:
        text = (resources.files("ragmeter") / "data" / "detector" / DEFAULT_DETECTOR) \
            .read_text(encoding="utf-8")
        where: Path | str = f"ragmeter/data/detector/{DEFAULT_DETECTOR}"
    else:
        p = Path(path)
        if not p.is_file():
            raise InputError("does not exist.", component=COMPONENT, path=p,
                             fix="give the path of a detector JSON from `ragmeter trace fit`.")
        text = p.read_text(encoding="utf-8")
        where = p
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(where, f"not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise _bad(where, f"\"format\" is not {FORMAT!r}")
    if raw.get("features") != FEATURE_VERSION:
        raise ConfigError(f"trace: detector {where} uses features {raw.get('features')!r}, "
                          f"this ragmeter computes {FEATURE_VERSION!r}; refit it with "
                          "`ragmeter trace fit`.")
    try:
        models = {t: Logistic.from_json(raw["models"][t]) for t in _TASKS}
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(where, f"models: {exc!r}") from None
    for task, names in _TASKS.items():
        m = models[task]
        if m.features != names or not (len(m.mean) == len(m.scale) == len(m.weights)
                                       == len(names)):
            raise ConfigError(f"trace: detector {where}: the {task} model's features differ "
                              "from this ragmeter's; refit it with `ragmeter trace fit`.")
    return Detector(str(raw.get("name", "detector")), str(raw.get("version", "?")),
                    float(raw.get("threshold", 0.5)), models["support"], models["relevance"],
                    models["utilization"], raw)


# ------------------------------------------------------------------------------ fitting


@dataclass(frozen=True)
class Annotated:
    """One annotated row, tokenized, with its sentence labels."""

    text: RowText
    unsupported: frozenset[str]
    relevant: frozenset[str]
    utilized: frozenset[str]
    relevance: float
    utilization: float
    adherent: bool


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
                     frozenset(label.utilized_keys), len(label.relevant_keys) / n,
                     len(label.utilized_keys) / n, not label.unsupported_keys)


def _matrices(rows: Sequence[Annotated]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    sx: list[np.ndarray] = []
    dx: list[np.ndarray] = []
    sy: list[float] = []
    ry: list[float] = []
    uy: list[float] = []
    for a in rows:
        f = support_features(a.text)
        sx.append(f)
        sy.extend(1.0 if r.key in a.unsupported else 0.0 for r in a.text.response)
        dx.append(document_features(a.text))
        for d in a.text.documents:
            for s in d:
                ry.append(1.0 if s.key in a.relevant else 0.0)
                uy.append(1.0 if s.key in a.utilized else 0.0)
    sxa = np.vstack(sx) if sx else np.zeros((0, len(SUPPORT_FEATURES)))
    dxa = np.vstack(dx) if dx else np.zeros((0, len(DOCUMENT_FEATURES)))
    return {"support": (sxa, np.asarray(sy)),
            "relevance": (dxa[:, _RELEVANCE_COLUMNS], np.asarray(ry)),
            "utilization": (dxa, np.asarray(uy))}


def _fit_models(rows: Sequence[Annotated]) -> tuple[dict[str, Logistic], float]:
    """The three models and the rate-matching support threshold."""
    mats = _matrices(rows)
    models = {t: fit_logistic(mats[t][0], mats[t][1], _TASKS[t]) for t in _TASKS}
    x, y = mats["support"]
    p = models["support"].predict(x)
    rate = float(y.mean()) if len(y) else 0.0
    threshold = _r(float(np.quantile(p, 1.0 - rate))) if len(p) and rate > 0 else 1.0
    return models, threshold


def _detector(models: dict[str, Logistic], threshold: float, name: str = "fold") -> Detector:
    return Detector(name, name, threshold, models["support"], models["relevance"],
                    models["utilization"], {})


def fit_rows(rows: Sequence[Annotated], name: str = "fitted") -> Detector:
    """A detector fitted on ``rows`` (threshold fitted), without writing a file."""
    models, threshold = _fit_models(rows)
    return _detector(models, threshold, name)


def held_out_scores(detector: Detector, rows: Sequence[Annotated]) -> dict[str, float | None]:
    """Point values of hallucination AUROC and relevance/utilization RMSE on ``rows``."""
    from ragmeter.metrics import stats

    scores, positives, rel_p, rel_t, util_p, util_t = [], [], [], [], [], []
    for a in rows:
        cols = detector.label_text(a.text)
        n = sum(len(d) for d in a.text.documents)
        scores.append(cols["not_adherent_probability"])
        positives.append(not a.adherent)
        rel_p.append(len(cols["all_relevant_sentence_keys"]) / n)
        util_p.append(len(cols["all_utilized_sentence_keys"]) / n)
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
                 name: str = "trace-detector-v1", threshold: float | None = None,
                 leave_one_out: bool = True) -> dict[str, Any]:
    """The detector file's content, fitted on every split; ``splits`` maps a split name to
    its rows and its provenance entry (file name, rows, sha256).  ``threshold`` None fits
    it (see module docstring).  With ``leave_one_out``
    and two or more splits, each split is also scored by a model fitted on the others."""
    from ragmeter._version import __version__

    names = sorted(splits)
    every = [a for s in names for a in splits[s][0]]
    if not every:
        raise ConfigError("trace fit: no annotated row can train (rows need "
                          "documents_sentences, response_sentences and the three label "
                          "columns).")
    models, fitted = _fit_models(every)
    loso: dict[str, Any] = {}
    if leave_one_out and len(names) > 1:
        for held in names:
            fold, fold_t = _fit_models([a for s in names if s != held for a in splits[s][0]])
            loso[held] = held_out_scores(_detector(fold, fold_t if threshold is None
                                                   else threshold), splits[held][0])
    return {
        "format": FORMAT,
        "name": name,
        "version": __version__,
        "features": FEATURE_VERSION,
        "threshold": fitted if threshold is None else threshold,
        "threshold_rule": "fitted: training share labelled unsupported = annotated share"
                          if threshold is None else "given",
        "l2": L2,
        "models": {t: models[t].to_json() for t in _TASKS},
        "provenance": {
            "training": [{"split": s, **splits[s][1]} for s in names],
            "dataset": RAGBENCH_ATTRIBUTION,
            "ragmeter_version": __version__,
            "leave_one_split_out": loso,
            "note": "leave_one_split_out: each split scored by a model fitted on the other "
                    "splits (point values; bootstrap CIs in benchmarks/bench_detector.py).",
        },
    }


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
    from ragmeter.suites.trace.data import iter_trace_rows, parse_label_row, parse_source_row

    out: list[Annotated] = []
    n = 0
    for row in iter_trace_rows(path, _FIT_COLUMNS, field_map=field_map):
        n += 1
        a = annotate(parse_source_row(row), parse_label_row(row))
        if a is not None:
            out.append(a)
    return out, n

