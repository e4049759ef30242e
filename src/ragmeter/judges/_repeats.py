"""``--repeats N``: judge every item N times with distinct calls, shared by every judged verb.

Repeat 0 is the request exactly as a single run sends it (so ``--repeats 3`` after a plain run
reuses its stored answers and pays for the two new repeats only).  Repeat ``k`` > 0 gets the
id suffix ``#k``, ``Request.repeat = k`` (part of the cache key, so it is a distinct call and
never a cache hit of another repeat, while a killed run resumes each repeat from the store)
and, for generated replies, ``seed = k`` for servers that honour it.  Choice-scored requests
keep their parameters: their repeats measure the endpoint's own nondeterminism.

The stability figures are :func:`ragmeter.stats._stability.repeat_agreement`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter._util._record import replace
from ragmeter.errors import ConfigError

__all__ = ["check_repeats", "repeat_requests", "repeat_id", "deterministic_stability"]


def check_repeats(repeats: int, component: str) -> None:
    if not isinstance(repeats, int) or repeats < 1:
        raise ConfigError(f"{component}: repeats={repeats!r}; expected 1 or more. "
                          "Fix: --repeats 3 (or leave it out for one judgement per item).")


def repeat_id(request_id: str, k: int) -> str:
    """The id of repeat ``k`` of the request ``request_id``."""
    return request_id if k == 0 else f"{request_id}#{k}"


def repeat_requests(requests: Sequence[Any], repeats: int) -> list[Any]:
    """``requests`` (repeat 0) followed by repeats 1..N-1 of each (see module docstring)."""
    out = list(requests)
    for k in range(1, repeats):
        for r in requests:
            params = r.params if r.choices is not None else {**r.params, "seed": k}
            out.append(replace(r, id=repeat_id(r.id, k), repeat=k, params=params))
    return out


def deterministic_stability(repeats: int, judge: str) -> dict[str, Any]:
    """What ``stability`` says for a judge that gives the same verdict by construction (a
    fitted detector, a keyword rule): no call is repeated, nothing is measured."""
    return {"repeats": repeats, "deterministic": True, "flip_rate": 0.0,
            "mean_agreement": 1.0, "fleiss_kappa": None,
            "note": f"{judge} is deterministic: every repeat gives the same verdict by "
                    "construction, so no repeat was computed (repeats measure model judges)."}
