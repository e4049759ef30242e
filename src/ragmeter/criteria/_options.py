"""The criteria judge's option group: a frozen value, each field named as its CLI flag
(``--max-tokens`` is ``max_tokens``), with the CLI's defaults.  Nothing here imports the rest
of the family."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["JudgeOptions", "DEFAULT_MODE"]

# The default mode, from benchmarks/bench_criteria_modes.py (docs/criteria.md, "Which mode:
# measured"): with the offline judge neither mode agreed with the human scores, and
# per-criterion was the only one that scored every row and the only one with
# probability-weighted scores.
DEFAULT_MODE = "per-criterion"


@dataclass(frozen=True)
class JudgeOptions:
    """How rows are judged on the criteria.

    ``mode``: ``per-criterion`` (one call per row and criterion) or ``combined`` (one call per
    row for all its criteria).  ``scoring``: ``choices`` (the probability of each point of the
    scale and the probability-weighted score; per-criterion only), ``generate`` (the judge
    writes JSON, parsed), ``auto`` (choices when the backend can score choices and the mode
    is per-criterion, else generate).  ``repeats``: judge every row N times (repeat ``k`` is
    its own call, with seed ``k``; at temperature 0 most servers repeat themselves, so give a
    ``temperature`` to measure sampling stability).  ``temperature`` (default 0) and
    ``max_tokens`` (default 128 per criterion, 48 + 80 per criterion combined) apply to
    generated replies.
    """

    mode: str = DEFAULT_MODE
    scoring: str = "auto"
    repeats: int = 1
    temperature: float | None = None
    max_tokens: int | None = None

    def resolved_scoring(self, backend: Any = None) -> str:
        """``scoring`` with ``auto`` decided: ``generate`` in combined mode or for a backend
        that declares it cannot score choices, else ``choices`` (a backend that learns it from
        the server's first reply, as ``openai``, answers with logprobs or constrained text)."""
        if self.scoring != "auto":
            return self.scoring
        if self.mode == "combined":
            return "generate"
        from ragmeter.backends import scores_choices

        return "generate" if backend is not None and scores_choices(backend) is False \
            else "choices"
