"""Where a cold ``ragmeter demo``'s time goes (issue 26.2): one whole demo through the CLI in
this process, from a new ``RAGMETER_HOME`` (kernel build and GGUF conversion included), with
wall-clock timers around its parts.

Printed per part: seconds, calls, and when it first started and last ended (seconds from the
start of this script), so the serial stretches show.  Parts marked ``[thread-sum]`` add the
time of both prompt threads (divide by two for their share of the wall clock); ``[wall]``
parts are timed on the thread that waits for them.  Then the prompt passes' split (matrix
products, attention, the rest), the prompt positions computed, and the peak RSS.  The timers
cost well under 1% of the demo.  Take it on a quiet machine, or read the shares only.

    python benchmarks/profile_demo.py [--home DIR]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

T0 = time.perf_counter()
TOTAL: collections.Counter[str] = collections.Counter()
CALLS: collections.Counter[str] = collections.Counter()
FIRST: dict[str, float] = {}
LAST: dict[str, float] = {}


def timed(owner: Any, name: str, label: str) -> None:
    """Replace ``owner.name`` by a wrapper that adds its wall time to ``label``."""
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        FIRST.setdefault(label, start - T0)
        try:
            return inner(*args, **kwargs)
        finally:
            end = time.perf_counter()
            TOTAL[label] += end - start
            CALLS[label] += 1
            LAST[label] = end - T0

    setattr(owner, name, wrapper)


def instrument() -> None:
    import ragmeter._demo._demo as demo_module
    import ragmeter.multilingual
    import ragmeter.reliability
    from ragmeter.backends._local import _backend, _cache, _kernel, _numpy, _weights
    from ragmeter.reports import html as report_html

    llama, runtime = _numpy._NumpyLlama, _numpy.NumpyLlamaRuntime
    timed(demo_module, "demo", "demo()")
    timed(_backend.LocalBackend, "_load_locked", "model load (all)")
    timed(_kernel, "_built", "kernel build")
    timed(_cache, "convert_direct", "GGUF conversion")
    timed(runtime, "_generate", "generation batches [wall]")
    timed(runtime, "_choices", "choice batches [wall]")
    timed(llama, "prefix_kv", "shared prefixes [wall, 1 thread]")
    timed(llama, "prefill", "prompt passes [wall]")
    timed(llama, "_prefill_rows", "prompt passes [thread-sum]")
    timed(llama, "_causal_attention", "  attention [thread-sum]")
    timed(llama, "decode", "decoding steps [wall]")
    timed(_kernel.Kernel, "rows", "  de-quantize / rows [thread-sum]")
    timed(report_html, "write_report", "report")
    timed(ragmeter.multilingual, "score", "multilingual part")
    timed(ragmeter.reliability, "score", "reliability part")
    blocks_call = _weights.Blocks.__call__

    def product(self: Any, x: Any) -> Any:  # the prompt products' BLAS time, apart
        if len(x) <= self.KERNEL_ROWS:
            return blocks_call(self, x)
        dense = self.dense()
        start = time.perf_counter()
        try:
            return x @ dense.T
        finally:
            TOTAL["  prompt products (BLAS) [thread-sum]"] += time.perf_counter() - start
            CALLS["  prompt products (BLAS) [thread-sum]"] += 1

    _weights.Blocks.__call__ = product  # type: ignore[method-assign]
    prefill = llama.prefill

    def counted(self: Any, prompts: Any, *args: Any, **kwargs: Any) -> Any:
        TOTAL["(prompt positions computed)"] += sum(len(p) for p in prompts)
        return prefill(self, prompts, *args, **kwargs)

    llama.prefill = counted  # type: ignore[method-assign]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default=None, help="RAGMETER_HOME [a new temporary one]")
    args = parser.parse_args()
    os.environ["RAGMETER_HOME"] = args.home or tempfile.mkdtemp(prefix="ragmeter-profile-")
    os.environ.pop("CI", None)
    from ragmeter.cli import main as cli_main

    imported = time.perf_counter() - T0
    instrument()
    out = os.path.join(os.environ["RAGMETER_HOME"], "out")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            cli_main(["demo", "--out", out])
        except SystemExit as exc:
            if exc.code:
                raise
    total = time.perf_counter() - T0
    print(f"cold demo in this process: {total:.2f} s (CLI imported at {imported:.2f} s), "
          f"load average {os.getloadavg()[0]:.1f}")
    for label in sorted(TOTAL, key=lambda k: FIRST.get(k, total)):
        if label.startswith("("):
            continue
        span = (f"[{FIRST[label]:6.2f} .. {LAST[label]:6.2f}]" if label in FIRST else "")
        print(f"  {label:40s} {TOTAL[label]:7.2f} s  x{CALLS[label]:<6d} {span}")
    rows = TOTAL["prompt passes [thread-sum]"]
    if rows:
        blas = TOTAL["  prompt products (BLAS) [thread-sum]"]
        attention = TOTAL["  attention [thread-sum]"]
        print(f"prompt passes: products {blas / rows:.0%}, attention {attention / rows:.0%}, "
              f"the rest {(rows - blas - attention) / rows:.0%}; "
              f"{int(TOTAL['(prompt positions computed)'])} prompt positions")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
