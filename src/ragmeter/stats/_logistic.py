"""L2-penalized logistic regression fitted by Newton's method: deterministic, numpy only, and
stored at 6 significant digits so that a refit gives the same file byte for byte.

Shared by the fitted judges (the TRACe detector, the multilingual semantic score).  ``y`` may
be 0/1 labels or scores in [0, 1] (fractional logistic regression: the same cross-entropy
loss, the same Newton steps).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Logistic", "fit_logistic", "round6"]


def round6(x: float) -> float:
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
    l2: float = 1.0

    def linear(self, x: np.ndarray) -> np.ndarray:
        """The linear predictor ``intercept + sum(weights * (x - mean) / scale)`` per row."""
        if x.shape[0] == 0:
            return np.zeros(0)
        return self.intercept + ((x - self.mean) / self.scale) @ self.weights

    def predict(self, x: np.ndarray) -> np.ndarray:
        if x.shape[0] == 0:
            return np.zeros(0)
        z = self.intercept + ((x - self.mean) / self.scale) @ self.weights
        return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))

    def to_json(self) -> dict[str, Any]:
        return {"features": list(self.features),
                "mean": [round6(v) for v in self.mean], "scale": [round6(v) for v in self.scale],
                "weights": [round6(v) for v in self.weights], "intercept": round6(self.intercept),
                "l2": self.l2}

    @classmethod
    def from_json(cls, raw: dict[str, Any], default_l2: float = 1.0) -> Logistic:
        return cls(tuple(raw["features"]), np.asarray(raw["mean"], dtype=np.float64),
                   np.asarray(raw["scale"], dtype=np.float64),
                   np.asarray(raw["weights"], dtype=np.float64), float(raw["intercept"]),
                   float(raw.get("l2", default_l2)))


def fit_logistic(x: np.ndarray, y: np.ndarray, features: Sequence[str], *, l2: float = 1.0,
                 max_iter: int = 100) -> Logistic:
    """L2-penalized logistic regression (intercept not penalized) by Newton's method on
    standardized features; deterministic.  Mean and scale are rounded before use so that the
    stored model is exactly the fitted one."""
    mean = np.array([round6(v) for v in x.mean(axis=0)]) if len(x) else np.zeros(x.shape[1])
    sd = x.std(axis=0) if len(x) else np.ones(x.shape[1])
    scale = np.array([round6(v) if v > 1e-12 else 1.0 for v in sd])
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
    return Logistic(tuple(features), mean, scale, w[1:], float(w[0]), l2)
