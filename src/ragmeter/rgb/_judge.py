"""RGB's judged scores Rej* and ED*: build the judge request (pure) and parse its reply (pure).

Source: chen700564/RGB @ 65ec39e ``reject_evalue.py`` and ``fact_evalue.py``.  Both send one
user message, ``prompt.format(question=..., answer=prediction)``, to gpt-3.5-turbo and apply:

* Rej* (reject_evalue.py): an item is rejected when the reply contains ``"not addressed"``;
  ``reject_rate = rejected / N`` over the noise-1.0 predictions.
* ED* (fact_evalue.py): an item is detected when the reply contains ``"has identified"`` or
  ``"Yes"``; ``ED* = detected / N``; ``CR* = (detected and 0 not in labels and 1 in labels) /
  detected`` (0 when none).

Two ways to ask (``method``):

* ``text``: the judge writes its reply and the original rule is applied to the text (any
  chat backend; what the paper did).
* ``choice``: the judge's first word is scored over ``("Yes", "No")`` (``Request.choices``,
  the backend's next-token probabilities): for the local model, which cannot be trusted to
  write the demonstrations' sentence.  ``No`` = "not addressed" (rejected); ``Yes`` =
  "has identified" (detected).  This maps the few-shot replies' first word onto the rule; it
  is an adaptation, recorded in the signature as ``judge-method:choice``.
"""

from __future__ import annotations

from typing import Any

from ragmeter.backends._types import Request, Response
from ragmeter.rgb._prompts import build_judge_message

__all__ = ["JUDGE_CHOICES", "JUDGE_METHODS", "judge_request", "parse_reject", "parse_fact"]

JUDGE_CHOICES = ("Yes", "No")
JUDGE_METHODS = ("text", "choice")
# The judge's reply is short in the demonstrations; room for a sentence.
JUDGE_MAX_TOKENS = 48


def judge_request(item_id: str, template: str, question: str, answer: str,
                  method: str) -> Request:
    """One judge call.  ``text`` asks for a greedy reply (temperature 0; the original used the
    API default), ``choice`` scores Yes/No."""
    messages = build_judge_message(template, question, answer)
    if method == "choice":
        return Request.chat(item_id, messages, choices=JUDGE_CHOICES)
    return Request.chat(item_id, messages,
                        params={"temperature": 0.0, "max_tokens": JUDGE_MAX_TOKENS})


def _choice(response: Response) -> str:
    if response.choice_probs:
        probs = response.choice_probs
        return max(JUDGE_CHOICES, key=lambda c: probs.get(c, 0.0))  # ties: "Yes" first
    return response.text.strip()


def parse_reject(response: Response, method: str) -> bool:
    """reject_evalue.py: ``"not addressed" in evaluation`` (``choice``: the judge chose No)."""
    if method == "choice":
        return _choice(response) == "No"
    return "not addressed" in response.text


def parse_fact(response: Response, method: str) -> bool:
    """fact_evalue.py: ``"has identified" in evaluation or "Yes" in evaluation``
    (``choice``: the judge chose Yes)."""
    if method == "choice":
        return _choice(response) == "Yes"
    return "has identified" in response.text or "Yes" in response.text


def judge_record(response: Response, flagged: bool, method: str) -> dict[str, Any]:
    """What an item keeps of its judge call."""
    out: dict[str, Any] = {"flag": int(flagged), "method": method,
                           "reply": response.text}
    if response.choice_probs is not None:
        out["choice_probs"] = response.choice_probs
    return out
