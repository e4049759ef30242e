"""Batch-1 decoding of the local model against this machine's memory-bandwidth ceiling (issue 26.2).

Decoding one token reads every weight the forward pass uses once (every layer's matrices and
the tied lm_head; the one embedding row and the small norms hardly count), so its speed is
bounded by ``memory read bandwidth / bytes of weights read per token``.  In the same process,
round by round interleaved, this benchmark measures:

* the read bandwidth numpy reaches here: ``W @ x`` (BLAS sgemv, one BLAS thread) over float32
  matrices of 512 MiB in all, 16 times the L3 cache of the development box, on one thread and
  on two Python threads at once (each its half; BLAS releases the GIL);
* batch-1 decoding: the runtime's own decode step, one token at a time after a short prompt,
  ``--tokens`` steps (no end of sequence: every step is timed), on the runtime's threads;
* batch-8 decoding the same way (eight rows per step), for the "both cores when the batch
  allows it" side;
* each of them twice when the block kernel's whole decoding step in C is there
  (``_kernel.DecodeStep``: one C call per token): with it and with the numpy step (a C call
  per product, numpy between them), and the C step's batch-1 once more on one thread when the
  runtime has more;
* with ``--baseline PATH`` (another ``_kernels.c``, or a source tree holding one, e.g. a
  ``git worktree`` of main), the C step batch-1 and batch-8 once more with that kernel built
  the same way, on the same threads, interleaved with this tree's in every round.

It prints, per round and as medians: the bandwidth (GB/s, 1 and 2 threads), the bytes the
decode step reads per token, the ceilings they give (tokens/s), decoding tokens/s, and the
fraction of each ceiling reached (target: batch-1 >= 0.75 of the ceiling), the share of the
C step's product rows the worker threads computed, and each baseline figure beside this
tree's with their ratio (median of the per-round ratios).

    python benchmarks/bench_decode.py [--rounds 3] [--tokens 64] [--threads N] [--cpu-time]
                                      [--baseline PATH]

``--cpu-time`` times with the process's CPU time instead of the wall clock: on a busy machine
(other processes on the cores), with ``--threads 1``, the 1-thread figures are then what a quiet
core gives (the 2-thread ones count both threads' CPU and mean little).  The local model's
kernel is the one ``RAGMETER_LOCAL_KERNEL`` names (``float``, the default, or ``int8``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

BANDWIDTH_BYTES = 512 << 20
CLOCK = time.perf_counter  # --cpu-time: time.process_time


def bandwidth(threads: int, mats: list[Any], x: Any) -> float:
    """GB/s of ``W @ x`` over every matrix in ``mats`` split among ``threads`` threads."""
    from threadpoolctl import threadpool_limits

    parts = [mats[i::threads] for i in range(threads)]

    def run(part: list[Any]) -> None:
        for w in part:
            w @ x

    with threadpool_limits(1, "blas"):
        run(mats[:2])  # warm the code path
        start = CLOCK()
        workers = [threading.Thread(target=run, args=(p,)) for p in parts]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = CLOCK() - start
    return sum(m.nbytes for m in mats) / elapsed / 1e9


def decode_rate(runtime: Any, rows: int, tokens: int, step: str = "default",
                threads: int = 0, other: Any = None) -> float:
    """New tokens per second (all rows together) over ``tokens`` decode steps after a prompt
    of 24 tokens per row; ``step`` "numpy" turns the C decoding step off for the measure,
    ``threads`` (when given) sets the kernel's threads for it, ``other`` (a Kernel) runs the
    C step with that build instead."""
    model = runtime.model
    kernel = model.step.kernel if model.step is not None else None
    saved, before = model.step, kernel.threads if kernel is not None else 0
    if step == "numpy":
        model.step = None
    elif other is not None and saved is not None:
        model.step = saved.on(other)
    if threads and kernel is not None:
        kernel.set_threads(threads)
    try:
        return _decode_rate(runtime, rows, tokens)
    finally:
        model.step = saved
        if threads and kernel is not None:
            kernel.set_threads(before)


def _decode_rate(runtime: Any, rows: int, tokens: int) -> float:
    import numpy as np

    from ragmeter.backends._local._numpy import _KVCache

    model = runtime.model
    prompt = runtime.prompt_ids(_messages("Name three rivers of Europe and one of Asia."))
    prompts = [prompt[:24]] * rows
    with model.blas.single():
        cache = _KVCache(np, model.layers, [len(p) for p in prompts], model.kv_heads,
                         model.head_dim, tokens + 1)
        logits = np.concatenate(model.prefill(prompts, cache, [(23, 24)] * rows))
        positions = np.full(rows, 24, dtype=np.int64)
        nxt = np.argmax(logits, axis=-1)
        start = CLOCK()
        for _ in range(tokens):
            logits = model.decode(nxt, positions, cache)
            positions += 1
            nxt = np.argmax(logits, axis=-1)
        elapsed = CLOCK() - start
    return rows * tokens / elapsed


def _messages(text: str) -> Any:
    from ragmeter.backends._types import Request

    return Request.chat("b", [{"role": "user", "content": text}]).messages


def build_baseline(path: Path, threads: int, folder: Path) -> Any:
    """The kernel of another ``_kernels.c`` (or of the source tree at ``path``), built with
    this tree's compiler and flags, on ``threads`` threads."""
    import ctypes
    import subprocess

    from ragmeter.backends._local import _kernel

    source = path if path.is_file() else path / "src/ragmeter/backends/_local/_kernels.c"
    target = folder / "baseline.so"
    subprocess.run([_kernel.compiler() or "cc", *_kernel.FLAGS, "-o", str(target), str(source),
                    *_kernel.LIBS], check=True)
    library = ctypes.CDLL(str(target))
    if not hasattr(library, "rk_stats"):  # a build from before the counts: none to give
        library.rk_stats = lambda out: None
    built = _kernel.Kernel(library, target, "float")
    built.set_threads(threads)
    return built


def bytes_per_token(runtime: Any) -> int:
    """Bytes of weights one decode step reads: every layer's tensors and the lm_head."""
    return int(runtime.model.weight_bytes_per_token())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=0, help="0: the backend's default")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time CPU seconds, not wall seconds (a busy machine; --threads 1)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another _kernels.c or source tree: its C step beside this one's")
    args = parser.parse_args()
    global CLOCK
    if args.cpu_time:
        CLOCK = time.process_time
    import numpy as np

    from ragmeter.backends._local import _backend as local

    backend = local.LocalBackend(runtime="numpy", threads=args.threads or None)
    backend.load()
    runtime = backend._runtime
    rng = np.random.default_rng(0)
    mats = [rng.standard_normal((4096, 2048), dtype=np.float32)
            for _ in range(BANDWIDTH_BYTES // (4096 * 2048 * 4))]
    x = rng.standard_normal(2048, dtype=np.float32)
    per_token = bytes_per_token(runtime)
    decode_rate(runtime, 1, 4)  # page the weights in
    print(f"model {backend.model}, runtime {backend.runtime_name}, threads {backend.threads}, "
          f"kernel {os.environ.get('RAGMETER_LOCAL_KERNEL') or 'default'}, "
          f"{'CPU' if args.cpu_time else 'wall'} time; "
          f"weights read per token {per_token / 1e6:.1f} MB; {os.cpu_count()} CPUs")
    c_step = runtime.model.step is not None
    steps = ("c", "numpy") if c_step else ("numpy",)
    extra = c_step and backend.threads > 1  # the C step's batch-1 on one thread too
    kernel = runtime.model.step.kernel if c_step else None
    folder = tempfile.TemporaryDirectory()
    base = (build_baseline(args.baseline, backend.threads, Path(folder.name))
            if args.baseline is not None and c_step else None)
    if base is not None:
        print(f"baseline: the C step of {args.baseline}, interleaved")
    print(f"decoding steps measured: {', '.join(steps)}"
          + (" (c: one C call per token; numpy: a C call per product)" if c_step else ""))
    rounds = []
    for r in range(args.rounds):
        got = {"bw1": bandwidth(1, mats, x), "bw2": bandwidth(2, mats, x)}
        for step in steps:
            for rows in (1, 8):
                if step == "c":
                    stats = kernel.stats()
                got[f"{step}{rows}"] = backend.run_in_model_thread(
                    decode_rate, runtime, rows, args.tokens, step)
                if step == "c":
                    done = kernel.stats()
                    got[f"share{rows}"] = ((done["worker_rows"] - stats["worker_rows"])
                                           / max(1, done["rows"] - stats["rows"]))
                if step == "c" and base is not None:
                    got[f"base{rows}"] = backend.run_in_model_thread(
                        decode_rate, runtime, rows, args.tokens, step, 0, base)
        if extra:
            got["c1t1"] = backend.run_in_model_thread(decode_rate, runtime, 1, args.tokens,
                                                      "c", 1)
        got["load"] = os.getloadavg()[0]
        rounds.append(got)
        rates = ", ".join(f"{s} batch-1 {got[s + '1']:.1f} tok/s, batch-8 {got[s + '8']:.1f}"
                          for s in steps)
        if extra:
            rates += f", c batch-1 on 1 thread {got['c1t1']:.1f}"
        if base is not None:
            rates += f", baseline c batch-1 {got['base1']:.1f}, batch-8 {got['base8']:.1f}"
        print(f"round {r + 1}: bandwidth {got['bw1']:.1f} GB/s (1 thread), {got['bw2']:.1f} "
              f"GB/s (2); {rates} [load avg {got['load']:.1f}]", flush=True)
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    ceiling1, ceiling2 = med["bw1"] * 1e9 / per_token, med["bw2"] * 1e9 / per_token
    print(f"medians over {args.rounds} rounds [load avg {min(r['load'] for r in rounds):.1f}-"
          f"{max(r['load'] for r in rounds):.1f}]:")
    print(f"  read bandwidth: {med['bw1']:.1f} GB/s on 1 thread, {med['bw2']:.1f} GB/s on 2")
    print(f"  ceiling: {per_token / 1e6:.1f} MB per token -> {ceiling1:.1f} tok/s (1 thread), "
          f"{ceiling2:.1f} tok/s (2 threads)")
    for step in steps:
        one, eight = med[f"{step}1"], med[f"{step}8"]
        print(f"  {step} step, batch-1 decoding: {one:.1f} tok/s = {one / ceiling1:.2f} of the "
              f"1-thread ceiling, {one / ceiling2:.2f} of the 2-thread one (target >= 0.75)")
        if step == "c" and extra:
            print(f"  c step, batch-1 on 1 thread: {med['c1t1']:.1f} tok/s = "
                  f"{med['c1t1'] / ceiling1:.2f} of the 1-thread ceiling")
        print(f"  {step} step, batch-8 decoding: {eight:.1f} tok/s ({eight / 8:.1f} steps/s = "
              f"{eight / 8 / ceiling2:.2f} of the 2-thread ceiling)")
        if step == "c" and extra:
            print(f"  c step, rows computed by the worker threads: {med['share1']:.0%} (batch-1), "
                  f"{med['share8']:.0%} (batch-8)")
        if step == "c" and base is not None:
            for rows in (1, 8):
                ratio = statistics.median(r[f"c{rows}"] / r[f"base{rows}"] for r in rounds)
                print(f"  baseline c step, batch-{rows}: {med[f'base{rows}']:.1f} tok/s; this "
                      f"tree's / baseline's, median of the rounds' ratios: {ratio:.2f}")
    folder.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
