"""The local model's forward passes side by side: numpy (the default) against torch (issue 14).

Both run the converted SmolLM2-135M from ``$RAGMETER_HOME`` (converted first when missing)
on the demo's own work: the RGB generation requests ``ragmeter demo`` sends (the built-in
sample, the demo's noise rates, greedy, ``max_tokens`` 32), in the demo's batches of 8
(left-padded, in request order).  Each measurement is a new process per runtime, round by
round interleaved (numpy, torch, numpy, torch, ...), so a busy machine slows both alike and
the two runtimes' thread pools never meet in one process; each process warms up on one short
call first.  Per batch it times:

* prefill: one pass over the 8 prompts with logits for the last position only (what choice
  scoring costs: ``choice_logprobs_batch`` with the single-token choices Yes/No);
* generation: ``generate_batch`` (prefill, then up to 32 greedy steps); decode = generation
  minus prefill.

It prints prompt tokens/s (prefill) and new tokens/s (decode) per runtime, the medians over
rounds, their ratio, the 1-minute load average, and checks: greedy texts equal between the
runtimes, batched equal to one at a time (numpy, the first batch), choice probabilities (Yes / No / a
three-token choice) within 1e-4, and the largest |logit difference| at the last prompt
position.

    python benchmarks/bench_forward.py [--rounds 2] [--batches 7] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src"
CHOICES = ("Yes", "No", " maybe so")


def demo_requests() -> list[Any]:
    """The RGB generation requests of ``ragmeter demo`` (same settings), in order."""
    from ragmeter._demo._demo import RGB_OPTIONS
    from ragmeter.io._samples import sample_path
    from ragmeter.rgb._data import load_dataset
    from ragmeter.rgb._demo import SAMPLE_FILES
    from ragmeter.rgb._prompts import load_prompts
    from ragmeter.rgb._run import RgbRunConfig, generation_requests, plan_settings

    datasets = [load_dataset(str(sample_path(n))) for n in SAMPLE_FILES]
    config = RgbRunConfig(noise_rates=tuple(RGB_OPTIONS["noise_rates"]),
                          temperature=RGB_OPTIONS["temperature"],
                          max_tokens=RGB_OPTIONS["max_tokens"], judge=True)
    return generation_requests(plan_settings(datasets, config), load_prompts(None), config)


def load_runtime(forward: str, threads: int) -> Any:
    from ragmeter.backends._local import _backend as local

    backend = local.LocalBackend(threads=threads, forward=forward)
    backend.load()
    return backend._runtime


def last_logits(runtime: Any, forward: str, prompts: list[list[int]]) -> Any:
    """The last prompt position's logits of every row (not timed)."""
    import numpy as np

    if forward == "numpy":
        with runtime.model.blas.single():
            rows = runtime.model.prefill(prompts, None, [(len(p) - 1, len(p)) for p in prompts])
        return np.concatenate(rows)
    import torch

    ids, mask = runtime._left_pad(prompts)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        logits = runtime.model.forward(ids, positions, mask, [], keep=slice(-1, None))
    return logits[:, -1].numpy()


def worker(forward: str, threads: int, batches: int, out_dir: Path, single: bool) -> None:
    """One process: load ``forward``, time every batch, write texts, choices and logits."""
    import numpy as np

    runtime = load_runtime(forward, threads)
    requests = demo_requests()
    max_tokens = int(requests[0].params["max_tokens"])
    params = {"max_tokens": max_tokens, "temperature": 0}
    prompts = [runtime.prompt_ids(r.messages) for r in requests]
    groups = [prompts[i:i + 8] for i in range(0, len(prompts), 8)][:batches]
    yes_no = [runtime.choice_ids(c) for c in CHOICES[:2]]
    runtime.generate(groups[0][0][:16], {"max_tokens": 2})  # warm-up: page in the weights
    rows: list[dict[str, Any]] = []
    texts: list[str] = []
    for batch in groups:
        t0 = time.perf_counter()
        runtime.choice_logprobs_batch(batch, [yes_no] * len(batch))
        t1 = time.perf_counter()
        gens = runtime.generate_batch(batch, params)
        t2 = time.perf_counter()
        texts += [g.text for g in gens]
        rows.append({"prompt_tokens": sum(len(p) for p in batch), "prefill_s": t1 - t0,
                     "gen_s": t2 - t1, "new_tokens": sum(g.completion_tokens for g in gens),
                     "loadavg": os.getloadavg()[0]})
    choices = [runtime.choice_ids(c) for c in CHOICES]
    result: dict[str, Any] = {
        "rows": rows, "texts": texts,
        "choices": [x for g in groups for x in runtime.choice_logprobs_batch(
            g, [choices] * len(g))]}
    if single:  # the first batch's prompts one at a time
        result["single_texts"] = [runtime.generate(p, params).text for p in groups[0]]
    logits = np.concatenate([last_logits(runtime, forward, g) for g in groups])
    np.save(out_dir / f"{forward}-logits.npy", logits)
    (out_dir / f"{forward}.json").write_text(json.dumps(result), encoding="utf-8")


def run_worker(forward: str, args: argparse.Namespace, out_dir: Path,
               single: bool = False) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", forward, "--threads", str(args.threads),
           "--batches", str(args.batches), "--out", str(out_dir)] + (["--single"] if single
                                                                      else [])
    env = dict(os.environ, PYTHONPATH=str(SRC))
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{forward} worker failed:\n{done.stderr[-3000:]}")
    return dict(json.loads((out_dir / f"{forward}.json").read_text(encoding="utf-8")))


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    prefill = sum(r["prefill_s"] for r in rows)
    decode = sum(r["gen_s"] - r["prefill_s"] for r in rows)
    return {"prefill_s": prefill, "gen_s": sum(r["gen_s"] for r in rows),
            "prefill_tok_s": sum(r["prompt_tokens"] for r in rows) / prefill,
            "decode_tok_s": sum(r["new_tokens"] for r in rows) / max(decode, 1e-9),
            "loadavg": statistics.mean(r["loadavg"] for r in rows)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batches", type=int, default=7, help="demo batches of 8 (7 = all 49)")
    parser.add_argument("--threads", type=int, default=0, help="0: the backend's default")
    parser.add_argument("--worker", choices=("numpy", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--single", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.threads or None, args.batches, args.out, args.single)
        return 0
    import numpy as np

    out_dir = Path(tempfile.mkdtemp(prefix="ragmeter-bench-forward-"))
    load_runtime("numpy", args.threads or None)  # converts the GGUF once if needed
    got: dict[str, list[dict[str, float]]] = {"numpy": [], "torch": []}
    results: dict[str, dict[str, Any]] = {}
    for r in range(args.rounds):
        for forward in ("numpy", "torch"):
            results[forward] = run_worker(forward, args, out_dir, single=(r == 0
                                                                          and forward == "numpy"))
            if "single_texts" in results[forward]:
                single_texts = results[forward]["single_texts"]
            s = summary(results[forward]["rows"])
            got[forward].append(s)
            print(f"round {r + 1} {forward:>5}: prefill {s['prefill_s']:6.2f} s "
                  f"({s['prefill_tok_s']:6.0f} prompt tok/s)  generation {s['gen_s']:6.2f} s  "
                  f"decode {s['decode_tok_s']:5.1f} new tok/s  [load avg {s['loadavg']:.1f}]",
                  flush=True)
    med = {f: {k: statistics.median(x[k] for x in got[f]) for k in got[f][0]} for f in got}
    n_req = len(results["numpy"]["texts"])
    print(f"medians over {args.rounds} rounds, {n_req} demo requests in batches of 8:")
    for f in ("numpy", "torch"):
        m = med[f]
        print(f"  {f:>5}: prefill {m['prefill_tok_s']:.0f} prompt tok/s, decode "
              f"{m['decode_tok_s']:.1f} new tok/s, generation {m['gen_s']:.2f} s "
              f"[load avg {m['loadavg']:.1f}]")
    print(f"  numpy / torch speed: prefill "
          f"{med['numpy']['prefill_tok_s'] / med['torch']['prefill_tok_s']:.2f}x, decode "
          f"{med['numpy']['decode_tok_s'] / med['torch']['decode_tok_s']:.2f}x, generation "
          f"{med['torch']['gen_s'] / med['numpy']['gen_s']:.2f}x")
    a, b = results["numpy"]["texts"], results["torch"]["texts"]
    same = sum(x == y for x, y in zip(a, b, strict=True))
    print(f"  greedy texts equal numpy vs torch: {same}/{len(a)}")
    print(f"  numpy batched equal one at a time (first batch): "
          f"{sum(x == y for x, y in zip(a, single_texts, strict=False))}/{len(single_texts)}")
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            print(f"    differs at request {i}: numpy {x!r} torch {y!r}")
    pairs = list(zip(results["numpy"]["choices"], results["torch"]["choices"], strict=True))
    diffs = [abs(u - v) for x, y in pairs for u, v in zip(x, y, strict=True)]
    print(f"  choice log-probabilities ({', '.join(map(repr, CHOICES))}): max |diff| "
          f"{max(diffs):.2e}")
    probs = []
    for x, y in pairs:
        px, py = np.exp(np.array(x) - max(x)), np.exp(np.array(y) - max(y))
        probs.append(float(np.abs(px / px.sum() - py / py.sum()).max()))
    print(f"  choice probabilities: max |diff| {max(probs):.2e}")
    ln = np.load(out_dir / "numpy-logits.npy")
    lt = np.load(out_dir / "torch-logits.npy")
    print(f"  last-position logits: max |diff| {float(np.abs(ln - lt).max()):.2e} "
          f"(largest |logit| {float(np.abs(lt).max()):.1f}); same argmax in "
          f"{int((ln.argmax(-1) == lt.argmax(-1)).sum())}/{len(ln)} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
