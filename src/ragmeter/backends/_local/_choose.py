"""Choices and next tokens: the probabilities of a request's choices and their expected value
(every local runtime), and the numpy runtime's (:mod:`ragmeter.backends._local._numpy`)
log-softmax of choice scoring and next-token choice when a request samples or penalizes
repetition, in the order of transformers' logits processors."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["Chooser", "expected_value", "log_softmax", "normalize_logprobs"]


class Chooser:
    """The next token of each row of a batch that samples (temperature > 0) or penalizes
    repetition, in the order of transformers' logits processors: the repetition penalty on
    the logits of every token already in the row (``RepetitionPenaltyLogitsProcessor``:
    negative logits multiplied, positive ones divided), then temperature, top-k
    (``TopKLogitsWarper``), top-p (``TopPLogitsWarper``: the smallest tokens whose cumulative
    probability stays at or below ``1 - top_p`` are removed, at least one kept), and a draw
    from the softmax; without temperature, the argmax.  ``top_k`` applies only when given
    (as OpenAI's API has none).  Each row draws from its own ``numpy.random.default_rng(seed)``,
    so a row's tokens do not depend on the batch it shares (the draws are numpy's, not
    torch's: the same seed gives other tokens than the transformers runtime)."""

    def __init__(self, np: Any, params: Mapping[str, Any], prompts: Sequence[list[int]],
                 vocab: int) -> None:
        self.np = np
        self.temperature = float(params.get("temperature") or 0.0)
        top_p = params.get("top_p")
        self.top_p = 1.0 if top_p is None else float(top_p)
        self.top_k = int(params["top_k"]) if params.get("top_k") else 0
        penalty = params.get("repetition_penalty")
        self.penalty = None if penalty is None else float(penalty)
        seed = int(params.get("seed", 0) or 0)
        self.rngs = [np.random.default_rng(seed) for _ in prompts]
        self.seen = np.zeros((len(prompts), vocab), dtype=bool)
        for row, prompt in enumerate(prompts):
            self.seen[row, prompt] = True

    @classmethod
    def of(cls, np: Any, params: Mapping[str, Any], prompts: Sequence[list[int]],
           vocab: int) -> Chooser | None:
        """A chooser, or None for plain greedy decoding (the argmax of the logits)."""
        if float(params.get("temperature") or 0.0) > 0 or \
                params.get("repetition_penalty") is not None:
            return cls(np, params, prompts, vocab)
        return None

    def pick(self, logits: Any) -> Any:
        np = self.np
        scores = logits.astype(np.float64)
        if self.penalty is not None:
            seen = scores[self.seen]
            scores[self.seen] = np.where(seen < 0, seen * self.penalty, seen / self.penalty)
        if self.temperature <= 0:
            chosen = np.argmax(scores, axis=-1)
        else:
            chosen = np.array([self._draw(row, scores[row] / self.temperature)
                               for row in range(len(scores))], dtype=np.int64)
        self.seen[np.arange(len(chosen)), chosen] = True
        return chosen

    def _draw(self, row: int, scores: Any) -> int:
        np = self.np
        if 0 < self.top_k < len(scores):
            kth = np.partition(scores, -self.top_k)[-self.top_k]
            scores[scores < kth] = -np.inf
        if self.top_p < 1.0:
            order = np.argsort(scores, kind="stable")
            probs = np.exp(scores[order] - scores[order[-1]])
            cumulative = np.cumsum(probs / probs.sum())
            remove = cumulative <= 1.0 - self.top_p
            remove[-1] = False
            scores[order[remove]] = -np.inf
        weights = np.exp(scores - scores.max())
        cumulative = np.cumsum(weights)
        drawn = int(np.searchsorted(cumulative, self.rngs[row].random() * cumulative[-1],
                                    side="right"))
        return min(drawn, len(scores) - 1)


def log_softmax(np: Any, logits: Any) -> Any:
    """log_softmax over the last axis in float64 (the few rows read; exact enough to 1e-7)."""
    x = logits.astype(np.float64)
    x -= x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def normalize_logprobs(logprobs: Mapping[str, float]) -> dict[str, float]:
    """Softmax of per-choice log-probabilities: probabilities that sum to 1 over the choices.

    A choice with log-probability ``-inf`` gets 0; if every choice is ``-inf`` the result is
    uniform (the model gives no information, which is not the same as "could not score").
    """
    if not logprobs:
        raise ValueError("no choices to normalize")
    finite = [v for v in logprobs.values() if math.isfinite(v)]
    if not finite:
        return {k: 1.0 / len(logprobs) for k in logprobs}
    top = max(finite)
    weights = {k: (math.exp(v - top) if math.isfinite(v) else 0.0) for k, v in logprobs.items()}
    total = math.fsum(weights.values())
    return {k: w / total for k, w in weights.items()}


def expected_value(choice_probs: Mapping[str, float]) -> float:
    """Expected score over numeric choices: ``sum(p(s) * s)`` after renormalizing.

    G-Eval's graded score (Liu et al., 2023, eq. 1): with choices ``"0"``..``"5"`` the result
    is a real number in [0, 5].  Choices that are not numbers raise ``ValueError``; a mapping
    whose probabilities sum to 0 raises ``ValueError`` too (there is no score to give).
    """
    values: list[tuple[float, float]] = []
    for choice, prob in choice_probs.items():
        try:
            score = float(choice.strip())
        except ValueError:
            raise ValueError(f"choice {choice!r} is not a number") from None
        if not math.isfinite(score) or not math.isfinite(prob) or prob < 0:
            raise ValueError(f"choice {choice!r} has invalid score or probability {prob!r}")
        values.append((score, prob))
    total = math.fsum(p for _, p in values)
    if not values or total <= 0:
        raise ValueError("probabilities sum to 0: no expected value")
    return math.fsum(s * p for s, p in values) / total
