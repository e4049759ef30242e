"""ragmeter's fitted semantic score: LBRAG's 0-1 semantic score with no generative model.

A logistic model over the lexical, numeric and script features of
:mod:`ragmeter.multilingual._semantic_features`, fitted (:mod:`ragmeter.multilingual.
_semantic_fit`) on one LBRAG run's released GPT-4o-mini semantic scores.  An answer's score is

    round_to(step, sigmoid(sharpness * (intercept + sum(weights * (x - mean) / scale))))

``sharpness`` and ``step`` are fitted too: the reference judge writes scores on a coarse grid,
mostly 0 or 1, so a score that commits (and ties where the reference ties) is a closer proxy
for it (lower MAE, higher Spearman) than a probability; neither changes the order of the
answers.  The coefficients, the choices and their measured held-out agreement live in a JSON
file (``multilingual/data/semantic-fitted-v1.json``, or a user's file from
``ragmeter multilingual fit``); its ``fingerprint`` names the coefficients.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError, InputError
from ragmeter.multilingual._rows import COMPONENT
from ragmeter.multilingual._semantic_features import FEATURE_VERSION, FEATURES, semantic_features
from ragmeter.stats._logistic import Logistic

__all__ = ["FORMAT", "DEFAULT_MODEL", "SemanticModel", "load_semantic_model", "fingerprint",
           "finish", "model_json"]

FORMAT = "ragmeter-semantic-judge"
DEFAULT_MODEL = "semantic-fitted-v1.json"


def finish(z: np.ndarray, sharpness: float, step: float) -> np.ndarray:
    """Scores from linear predictors: ``sigmoid(sharpness * z)`` rounded to a multiple of
    ``step`` (0: not rounded), at 4 decimals, in [0, 1]."""
    p = 1.0 / (1.0 + np.exp(-np.clip(sharpness * z, -40, 40)))
    if step > 0:
        p = np.round(p / step) * step
    return np.clip(np.round(p, 4), 0.0, 1.0)


def fingerprint(content: Mapping[str, Any]) -> str:
    """12 hex digits of the SHA-256 of a model's coefficients and output rule (canonical
    JSON): two files that score alike have the same fingerprint, whatever their names."""
    keep = {k: content[k] for k in ("features", "model", "sharpness", "step")}
    text = json.dumps(keep, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def model_json(content: Mapping[str, Any]) -> str:
    """Canonical text of a model file (sorted keys, fixed separators, final newline)."""
    return json.dumps(content, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class SemanticModel:
    name: str
    version: str
    model: Logistic
    sharpness: float
    step: float
    raw: dict[str, Any]

    @property
    def identity(self) -> str:
        return f"ragmeter:{self.name}"

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.raw)

    @property
    def prompt_version(self) -> str:
        """What stands for a prompt version in the signature and the judge's name: the file's
        version and its coefficients' fingerprint."""
        return f"fitted:{self.version}:{self.fingerprint}"

    def matrix(self, answers: Sequence[tuple[str, str, str]]) -> np.ndarray:
        """The model's features of ``(gold, answer, language)`` triples, one row each."""
        names = self.model.features
        index = [FEATURES.index(n) for n in names]
        rows = [semantic_features(g, a, lang) for g, a, lang in answers]
        full = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(FEATURES))
        return full[:, index]

    def score(self, answers: Sequence[tuple[str, str, str]]) -> list[float]:
        """The 0-1 semantic score of each ``(gold, answer, language)``."""
        if not answers:
            return []
        z = self.model.linear(self.matrix(answers))
        out = [float(v) for v in finish(z, self.sharpness, self.step)]
        assert all(math.isfinite(v) for v in out)
        return out

    def validation(self) -> dict[str, Any] | None:
        """The judge card's validation: the held-out agreement its file records (AUROC at the
        reference threshold, leave-one-language-out, with the other statistics and schemes
        beside it), or None when the file records none."""
        held = (self.raw.get("provenance") or {}).get("held_out") or {}
        by_lang = held.get("language") or {}
        judge = by_lang.get("judge") or {}
        if not isinstance(judge.get("auroc"), Mapping):
            return None
        data = (self.raw.get("provenance") or {}).get("data") or {}
        more = []
        for scheme, label in (("language", "leave-one-language-out"),
                              ("system", "leave-one-system-out")):
            for stat in ("auroc", "spearman", "mae"):
                if scheme == "language" and stat == "auroc":
                    continue
                est = ((held.get(scheme) or {}).get("judge") or {}).get(stat)
                if isinstance(est, Mapping):
                    more.append({"metric": f"{_LABELS[stat]} ({label})",
                                 "value": est.get("value"), "ci": est.get("ci95")})
        return {"metric": "AUROC at reference >= 0.5 (leave-one-language-out)",
                "statistic": "auroc", "value": judge["auroc"].get("value"),
                "ci": judge["auroc"].get("ci95"), "more": more,
                "data": f"{data.get('name', 'the fitting data')}; {data.get('fitted_rows', '?')} "
                        f"answers against their {data.get('reference_field', 'reference')}, "
                        "each scored by a model fitted without its language (or system) "
                        "(benchmarks/bench_semantic.py)"}


_LABELS = {"auroc": "AUROC", "spearman": "Spearman", "mae": "MAE"}


def _bad(where: Path | str, what: str) -> InputError:
    return InputError(f"is not a semantic judge file ({what}).", component=COMPONENT,
                      path=where, fix="give a file written by `ragmeter multilingual fit`.")


def load_semantic_model(path: str | Path | None = None) -> SemanticModel:
    """A user's file from ``ragmeter multilingual fit``, or (``path`` None) the shipped one."""
    from ragmeter.io._fitted import read_fitted_file

    raw, where = read_fitted_file(
        path, package="ragmeter.multilingual", shipped=DEFAULT_MODEL, file_format=FORMAT,
        component=COMPONENT, what="a semantic judge file",
        fix="give a file written by `ragmeter multilingual fit`.",
        missing_fix="give the path of a model file from `ragmeter multilingual fit`.")
    if raw.get("features") != FEATURE_VERSION:
        raise ConfigError(f"multilingual: semantic judge {where} uses features "
                          f"{raw.get('features')!r}, this ragmeter computes "
                          f"{FEATURE_VERSION!r}; refit it with `ragmeter multilingual fit`.")
    try:
        model = Logistic.from_json(raw["model"])
        sharpness, step = float(raw["sharpness"]), float(raw["step"])
        if not set(model.features) <= set(FEATURES) or not (
                len(model.mean) == len(model.scale) == len(model.weights)
                == len(model.features)):
            raise ValueError("features differ")
        if not (math.isfinite(sharpness) and sharpness > 0 and 0 <= step <= 1):
            raise ValueError("sharpness or step out of range")
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(where, f"model: {exc!r}") from None
    return SemanticModel(str(raw.get("name", "semantic")), str(raw.get("version", "?")),
                         model, sharpness, step, raw)
