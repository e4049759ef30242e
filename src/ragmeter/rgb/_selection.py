"""Document selection exactly as RGB's ``evalue.py`` ``processdata``.

Source: chen700564/RGB @ 65ec39e, ``evalue.py`` lines 12-68 (``processdata``) and the main loop,
which calls ``random.seed(2333)`` before every instance and skips ``processdata`` when
``passage_num == 0``.  A fresh ``random.Random(seed)`` per instance draws the same numbers as the
module-level generator after ``random.seed(seed)`` (CPython's Mersenne Twister, version-2
seeding of an int).

Details that matter for a bit-identical doc list:

* ``neg_num = math.ceil(passage_num * noise_rate)`` is computed in the same float arithmetic
  (for 1-20 passages and rates in tenths the product is exact; other rates round up as in
  the original);
* ``int`` files shuffle each positive group in place; the original loads the file once per
  noise rate, so here every call works on copies (several noise rates in one process give the
  same lists as separate runs);
* the final ``random.shuffle(docs)`` uses the same generator after the draws above.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from ragmeter.errors import ConfigError

__all__ = ["DEFAULT_SEED", "DEFAULT_PASSAGE_NUM", "select_docs"]

DEFAULT_SEED = 2333  # evalue.py: random.seed(2333)
DEFAULT_PASSAGE_NUM = 5  # evalue.py: --passage_num default


def _default(rng: random.Random, positive: Sequence[str], negative: Sequence[str],
             noise_rate: float, passage_num: int) -> list[str]:
    neg_num = math.ceil(passage_num * noise_rate)
    pos_num = passage_num - neg_num
    if noise_rate == 1:
        neg_num = passage_num
        pos_num = 0
    elif neg_num > len(negative):
        neg_num = len(negative)
        pos_num = passage_num - neg_num
    elif pos_num > len(positive):
        pos_num = len(positive)
        neg_num = passage_num - pos_num
    return list(positive[:pos_num]) + list(negative[:neg_num])


def _integration(rng: random.Random, groups: Sequence[Sequence[str]], negative: Sequence[str],
                 noise_rate: float, passage_num: int) -> list[str]:
    neg_num = math.ceil(passage_num * noise_rate)
    pos_num = passage_num - neg_num
    shuffled = [list(g) for g in groups]  # copies: the original shuffles the loaded data
    for g in shuffled:
        rng.shuffle(g)
    docs = [g[0] for g in shuffled]
    if len(docs) < pos_num:
        longest = max(len(g) for g in shuffled)
        for depth in range(1, longest):
            for g in shuffled:
                if len(g) > depth:
                    docs.append(g[depth])
                    if len(docs) == pos_num:
                        break
            if len(docs) == pos_num:
                break
    neg_num = passage_num - len(docs)
    if neg_num > 0:
        docs += list(negative[:neg_num])
    return docs


def _counterfactual(rng: random.Random, positive: Sequence[str], positive_wrong: Sequence[str],
                    negative: Sequence[str], noise_rate: float, passage_num: int,
                    correct_rate: float) -> list[str]:
    neg_num = math.ceil(passage_num * noise_rate)
    correct_num = math.ceil(passage_num * correct_rate)
    pos_num = passage_num - neg_num - correct_num
    if pos_num < 0:
        # evalue.py: random.sample(..., negative k) raises ValueError and the instance is
        # skipped, for every instance; refuse the setting instead.
        raise ConfigError(
            f"rgb: noise rate {noise_rate} and correct rate {correct_rate} leave "
            f"{pos_num} counterfactual documents out of {passage_num}; evalue.py fails on "
            "every instance with these settings. Fix: keep noise_rate + correct_rate <= 1.")
    indexes = list(range(len(positive)))
    selected = rng.sample(indexes, min(len(indexes), pos_num))
    docs = [positive_wrong[i] for i in selected]
    remain = [i for i in indexes if i not in selected]
    if correct_num > 0 and len(remain) > 0:
        docs += [positive[i] for i in rng.sample(remain, min(len(remain), correct_num))]
    if neg_num > 0:
        docs += list(negative[:neg_num])
    return docs


def select_docs(instance: Any, kind: str, noise_rate: float, passage_num: int = 5,
                correct_rate: float = 0.0, seed: int = DEFAULT_SEED) -> list[str]:
    """The documents evalue.py would send for ``instance`` (an :class:`RgbInstance` or any
    object with ``positive``, ``negative`` and, for ``fact``, ``positive_wrong``).

    ``passage_num == 0`` gives ``[]`` (evalue.py skips ``processdata``).
    """
    if passage_num == 0:
        return []
    rng = random.Random(seed)
    if kind == "int":
        docs = _integration(rng, instance.positive, instance.negative, noise_rate, passage_num)
    elif kind == "fact":
        docs = _counterfactual(rng, instance.positive, instance.positive_wrong,
                               instance.negative, noise_rate, passage_num, correct_rate)
    else:
        docs = _default(rng, instance.positive, instance.negative, noise_rate, passage_num)
    rng.shuffle(docs)
    return docs
