"""Fitting ragmeter's semantic score (:mod:`ragmeter.multilingual._semantic_model`) on answers
that carry a reference 0-1 semantic score, and measuring it on answers it did not see.

The procedure (deterministic: no randomness but the seeded bootstrap of the reported CIs):

1. Every answer's :data:`~ragmeter.multilingual._semantic_features.FEATURES`; the target is
   its reference score in [0, 1] (fractional logistic regression: cross-entropy with the
   score as the target, Newton's method, :func:`ragmeter.stats._logistic.fit_logistic`).
2. The choices (:data:`FEATURE_SETS`, :data:`L2_GRID`, :data:`SHARPNESS_GRID`,
   :data:`STEP_GRID`) are made on the fitting rows only: each candidate's leave-one-language-
   out predictions over those rows, scored by ``AUROC + Spearman - MAE`` (the three numbers
   the score is validated by, :data:`THRESHOLD` for the AUROC); the first best in grid order
   wins.  The shipped model is then fitted on every row with those choices.
3. Held out (``provenance.held_out``): by language (each language scored by a model fitted,
   choices included, on the other languages) and by system (the same, per system); the
   out-of-fold scores of every row are pooled and compared with the reference, beside token
   F1 alone on the same rows, each statistic with a bootstrap 95% CI.

Every stored number is rounded (coefficients to 6 significant digits, statistics to 4
decimals), so refitting the same rows gives the same file byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.multilingual._semantic_features import FEATURE_VERSION, FEATURES, semantic_features
from ragmeter.multilingual._semantic_model import FORMAT, finish
from ragmeter.stats._core import auroc
from ragmeter.stats._logistic import Logistic, fit_logistic
from ragmeter.stats._validation import AGREEMENT_STATS, score_agreement, spearman_rho

__all__ = ["FEATURE_SETS", "L2_GRID", "SHARPNESS_GRID", "STEP_GRID", "THRESHOLD", "Fitting",
           "Choice", "choose", "fit_model", "held_out", "fit_content", "criterion"]

FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "compact": ("f1", "recall", "char2_recall", "num_gold", "num_recall", "script_mismatch"),
    "full": FEATURES,
}
L2_GRID = (0.1, 1.0, 10.0, 100.0)
SHARPNESS_GRID = (1.0, 2.0, 4.0)
STEP_GRID = (0.0, 0.05, 0.1)
THRESHOLD = 0.5
INNER = "language"  # the groups of the inner cross-validation that makes the choices


@dataclass(frozen=True)
class Fitting:
    """The fitting rows: features ``x`` (every feature), reference ``y`` in [0, 1], and each
    row's language and system (the held-out groups)."""

    x: np.ndarray
    y: np.ndarray
    language: np.ndarray
    system: np.ndarray
    names: tuple[str, ...] = FEATURES  # the columns of x

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, Any]]) -> Fitting:
        """From dicts with ``gold_answer``, ``pred_answer``, ``sample_lang``, ``system`` and
        ``reference`` (a number in [0, 1])."""
        x = np.asarray([semantic_features(r["gold_answer"], r["pred_answer"], r["sample_lang"])
                        for r in rows], dtype=np.float64).reshape(len(rows), len(FEATURES))
        return cls(x, np.asarray([float(r["reference"]) for r in rows], dtype=np.float64),
                   np.asarray([str(r["sample_lang"]) for r in rows]),
                   np.asarray([str(r["system"]) for r in rows]))

    def take(self, mask: np.ndarray) -> Fitting:
        return Fitting(self.x[mask], self.y[mask], self.language[mask], self.system[mask],
                       self.names)

    def with_column(self, name: str, values: np.ndarray) -> Fitting:
        """These rows with one more feature (a candidate measured beside the shipped ones,
        e.g. an embedding similarity in benchmarks/bench_semantic.py)."""
        return Fitting(np.hstack([self.x, np.asarray(values, dtype=np.float64)[:, None]]),
                       self.y, self.language, self.system, (*self.names, name))

    def groups(self, by: str) -> np.ndarray:
        return self.language if by == "language" else self.system

    def columns(self, names: Sequence[str]) -> np.ndarray:
        return self.x[:, [self.names.index(n) for n in names]]


@dataclass(frozen=True)
class Choice:
    feature_set: str
    l2: float
    sharpness: float
    step: float
    criterion: float  # AUROC + Spearman - MAE of the inner cross-validation


def criterion(scores: np.ndarray, reference: np.ndarray) -> float:
    """``AUROC (reference >= THRESHOLD) + Spearman - MAE`` (point values; an undefined
    statistic counts 0)."""
    value = (auroc(scores, reference >= THRESHOLD) or 0.0) \
        + (spearman_rho(scores, reference) or 0.0)
    return value - float(np.mean(np.abs(scores - reference)))


def _out_of_fold(data: Fitting, names: Sequence[str], l2: float, by: str) -> np.ndarray:
    """Each row's linear predictor from a model fitted without its group."""
    z = np.zeros(len(data.y))
    groups = data.groups(by)
    x = data.columns(names)
    for g in np.unique(groups):
        held = groups == g
        model = fit_logistic(x[~held], data.y[~held], names, l2=l2)
        z[held] = model.linear(x[held])
    return z


def choose(data: Fitting, feature_sets: Mapping[str, Sequence[str]] | None = None) -> Choice:
    """The feature set (of ``feature_sets``, default :data:`FEATURE_SETS`), penalty, sharpness
    and step that score best on ``data`` by leave-one-language-out (see the module
    docstring); ties keep the first in grid order."""
    best: Choice | None = None
    for set_name, names in (feature_sets or FEATURE_SETS).items():
        for l2 in L2_GRID:
            z = _out_of_fold(data, names, l2, INNER)
            for sharpness in SHARPNESS_GRID:
                for step in STEP_GRID:
                    value = criterion(finish(z, sharpness, step), data.y)
                    if best is None or value > best.criterion:
                        best = Choice(set_name, l2, sharpness, step, value)
    assert best is not None
    return best


def fit_model(data: Fitting, feature_sets: Mapping[str, Sequence[str]] | None = None
              ) -> tuple[Logistic, Choice]:
    """The model fitted on every row of ``data`` with the choices :func:`choose` makes on
    them."""
    sets = feature_sets or FEATURE_SETS
    choice = choose(data, sets)
    names = tuple(sets[choice.feature_set])
    return fit_logistic(data.columns(names), data.y, names, l2=choice.l2), choice


def _r4(value: Any) -> float | None:
    return None if value is None else round(float(value), 4)


def _rounded(est: Any) -> dict[str, Any]:
    """An estimate's ``{"value", "ci95", "n"}`` at 4 decimals (the stored precision)."""
    d = est.to_dict()
    return {"value": _r4(d["value"]),
            "ci95": None if d["ci95"] is None else [_r4(v) for v in d["ci95"]], "n": d["n"]}


def held_out(data: Fitting, by: str, *, n_resamples: int = 1000, seed: int = 12345,
             feature_sets: Mapping[str, Sequence[str]] | None = None
             ) -> tuple[np.ndarray, dict[str, Any]]:
    """The out-of-fold scores of every row with its ``by`` group (``language`` or
    ``system``) held out, and their agreement with the reference beside token F1's, with
    bootstrap 95% CIs, and each fold's choices."""
    scores = np.zeros(len(data.y))
    groups = data.groups(by)
    folds: dict[str, Any] = {}
    for g in np.unique(groups):
        held = groups == g
        model, choice = fit_model(data.take(~held), feature_sets)
        names = model.features
        scores[held] = finish(model.linear(data.take(held).columns(names)), choice.sharpness,
                              choice.step)
        folds[str(g)] = {"rows": int(held.sum()), "feature_set": choice.feature_set,
                         "l2": choice.l2, "sharpness": choice.sharpness, "step": choice.step}
    f1 = data.columns(("f1",))[:, 0]
    out = {"scheme": f"leave-one-{by}-out", "rows": int(len(data.y)), "folds": folds}
    for name, values in (("judge", scores), ("f1", f1)):
        found = score_agreement(values, data.y, threshold=THRESHOLD, n_resamples=n_resamples,
                                seed=seed)
        out[name] = {stat: _rounded(found[stat]) for stat in AGREEMENT_STATS}
    return scores, out


def fit_content(data: Fitting, *, name: str, data_provenance: Mapping[str, Any],
                held_out_schemes: Sequence[str] = ("language", "system")) -> dict[str, Any]:
    """The model file's content (see the module docstring)."""
    from ragmeter._version import __version__

    model, choice = fit_model(data)
    held = {by: held_out(data, by)[1] for by in held_out_schemes
            if len(np.unique(data.groups(by))) > 1}
    return {
        "format": FORMAT,
        "name": name,
        "version": __version__,
        "features": FEATURE_VERSION,
        "model": model.to_json(),
        "sharpness": choice.sharpness,
        "step": choice.step,
        "target": f"the reference 0-1 semantic score; AUROC counts a reference >= {THRESHOLD} "
                  "as semantically right",
        "choices": {"feature_set": choice.feature_set, "l2": choice.l2,
                    "criterion": round(choice.criterion, 4),
                    "rule": "chosen on the fitting rows only: leave-one-language-out "
                            "predictions of every candidate (feature sets "
                            + ", ".join(FEATURE_SETS) + "; l2 "
                            + ", ".join(f"{v:g}" for v in L2_GRID) + "; sharpness "
                            + ", ".join(f"{v:g}" for v in SHARPNESS_GRID) + "; step "
                            + ", ".join(f"{v:g}" for v in STEP_GRID)
                            + ") scored by AUROC + Spearman - MAE; first best in grid order"},
        "provenance": {
            "data": dict(data_provenance),
            "ragmeter_version": __version__,
            "held_out": held,
            "note": "held_out: every row scored by a model fitted, choices included, without "
                    "its language (or system); token F1 alone on the same rows beside it. "
                    "95% CIs: percentile bootstrap over rows (1000 resamples, seed 12345).",
        },
    }
