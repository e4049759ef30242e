"""The local model's speed through ragmeter versus calling transformers directly, in one run.

Measures, with the default SmolLM2-135M-Instruct (Q4_1 GGUF, transformers + torch on CPU):

* generation tokens/s: ``model.generate`` called directly on the same loaded model (baseline),
  through ``LocalBackend.complete`` (chat template, worker thread, lock), and through
  ``ragmeter.runner._run.run_requests`` (no store, no progress bar);
* seconds per choice-scoring call (yes/no): one direct forward pass plus log-softmax, versus
  ``LocalBackend.complete`` with ``choices``.

* batched inference (issue 14): 8 concurrent generation requests and 8 concurrent yes/no
  requests through the backend one at a time (``batch_size=1``) and gathered into one batch
  (``batch_size=8``), against ``model.generate`` / one forward pass on the same left-padded
  batch called directly.  Targets: >= 2.5x generation throughput, >= 1.5x choice scoring,
  harness within 10% of the direct batched call; greedy texts must be identical.

The backend runs on the transformers runtime here (``RAGMETER_LOCAL_FAST=0``).  The paths run
interleaved, round by round, so a busy machine slows them alike; the medians of
the rounds are compared.  The direct calls run on the backend's model thread: torch's OpenMP
pool belongs to the calling thread, and two pools used in turn spin against each other, which
would measure that contention instead of the harness.  Goal (issue 3): harness overhead <= 10%.

    python benchmarks/bench_local.py [--rounds 5] [--max-tokens 48] [--threads N] [--batch 8]
                                     [--only single|batch|choice]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from typing import Any


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--only", choices=("single", "batch", "choice"), default=None)
    args = parser.parse_args()

    import os

    # the transformers runtime: its model is what the direct calls below use (the runtime
    # without transformers, ragmeter.backends._local._fast, is timed by bench_load.py)
    os.environ["RAGMETER_LOCAL_FAST"] = "0"
    import torch

    from ragmeter.backends._local._backend import LocalBackend

    backend = LocalBackend(runtime="transformers", threads=args.threads)
    t0 = time.perf_counter()
    backend.load()
    load_s = time.perf_counter() - t0
    print(f"model {backend.model}  runtime {backend.runtime_name}  torch threads "
          f"{torch.get_num_threads()}  load {load_s:.1f} s")

    if args.only in (None, "single"):
        single_call_overhead(args, backend, torch)
    if args.only in (None, "batch", "choice"):
        batched_throughput(args, backend, torch)
    return 0


def single_call_overhead(args: argparse.Namespace, backend: Any, torch: Any) -> None:
    from ragmeter.backends._types import Request

    runtime = backend._runtime
    model, tokenizer = runtime.model, runtime.tokenizer
    messages = [{"role": "user", "content": "Write a short story about a lighthouse keeper "
                                            "who finds a message in a bottle."}]
    gen_req = Request.chat("gen", messages, params={"max_tokens": args.max_tokens})
    claim = [{"role": "user", "content": "Document: The capital of Freedonia is Brindlemoor.\n"
                                         "Claim: The capital is Brindlemoor. Yes or No?"}]
    choice_req = Request.chat("choice", claim, choices=("Yes", "No"))

    prompt = runtime.prompt_ids(gen_req.messages)
    choice_prompt = runtime.prompt_ids(choice_req.messages)
    yes_no = [tokenizer.encode(c, add_special_tokens=False)[0] for c in ("Yes", "No")]

    def direct_generate_here() -> tuple[int, float]:
        ids = torch.tensor([prompt])
        start = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                 max_new_tokens=args.max_tokens, do_sample=False,
                                 pad_token_id=tokenizer.eos_token_id)
        tokenizer.decode(out[0, len(prompt):], skip_special_tokens=True)
        return out.shape[1] - len(prompt), time.perf_counter() - start

    def direct_generate() -> tuple[int, float]:
        return backend.run_in_model_thread(direct_generate_here)

    def backend_generate() -> tuple[int, float]:
        start = time.perf_counter()
        resp = asyncio.run(backend.complete(gen_req))
        return resp.usage.completion_tokens, time.perf_counter() - start

    try:
        from ragmeter.runner._run import RunnerConfig, run_requests
    except ImportError:
        run_requests = None

    def runner_generate() -> tuple[int, float]:
        config = RunnerConfig(concurrency=1, progress=False, max_retries=0)
        start = time.perf_counter()
        outcome = run_requests([gen_req], backend, None, config)[0]
        assert outcome.status == "ok", outcome.reason
        return outcome.response.usage.completion_tokens, time.perf_counter() - start

    def direct_choice_here() -> float:
        start = time.perf_counter()
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([choice_prompt])).logits[0, -1]
            logp = torch.log_softmax(logits.float(), dim=-1)[yes_no]
            torch.softmax(logp, dim=-1).tolist()
        return time.perf_counter() - start

    def direct_choice() -> float:
        return backend.run_in_model_thread(direct_choice_here)

    def backend_choice() -> float:
        start = time.perf_counter()
        asyncio.run(backend.complete(choice_req))
        return time.perf_counter() - start

    paths = {"direct transformers": direct_generate, "ragmeter backend": backend_generate}
    if run_requests is not None:
        paths["ragmeter runner"] = runner_generate
    direct_generate()  # warm-up (first-call allocations)
    backend_choice()
    rates: dict[str, list[float]] = {name: [] for name in paths}
    secs: dict[str, list[float]] = {name: [] for name in paths}
    choice_s: dict[str, list[float]] = {"direct forward": [], "ragmeter backend": []}
    for _ in range(args.rounds):
        for name, fn in paths.items():
            n, s = fn()
            rates[name].append(n / s)
            secs[name].append(s)
        choice_s["direct forward"].append(direct_choice())
        choice_s["ragmeter backend"].append(backend_choice())

    base = statistics.median(rates["direct transformers"])
    print(f"\ngeneration, {args.max_tokens} new tokens, greedy, median of {args.rounds} rounds:")
    for name in paths:
        tps = statistics.median(rates[name])
        print(f"  {name:20s} {tps:7.1f} tokens/s  {statistics.median(secs[name]):6.2f} s/call"
              f"  overhead {base / tps - 1:+6.1%}")
    cbase = statistics.median(choice_s["direct forward"])
    print("choice scoring (Yes/No), median:")
    for name, values in choice_s.items():
        med = statistics.median(values)
        print(f"  {name:20s} {med:7.3f} s/call  overhead {med / cbase - 1:+6.1%}")
    worst = max(base / statistics.median(rates[n]) - 1 for n in paths
                if n != "direct transformers")
    print(f"\nharness overhead on generation: {worst:+.1%} (goal <= +10%)")


QUESTIONS = ["What is the capital of France?", "Name three colours of the rainbow.",
             "Explain in one sentence why the sky is blue.", "What do bees make?",
             "Write a haiku about the sea.", "How many legs does a spider have?",
             "Give one tip for sleeping well.", "What is the boiling point of water?"]
CLAIMS = ["The sun rises in the east.", "Fish can climb trees.", "Water freezes at 0 C.",
          "Paris is the capital of Peru.", "Cats are mammals.", "The moon is made of cheese.",
          "Bees make honey.", "Spiders have six legs."]


def batched_throughput(args: argparse.Namespace, backend: Any, torch: Any) -> None:
    """Batch of ``args.batch`` concurrent requests: one at a time vs batched vs direct."""
    from ragmeter.backends._types import Request

    runtime = backend._runtime
    model = runtime.model
    n = args.batch
    gen_reqs = [Request.chat(f"g{i}", [{"role": "user", "content": QUESTIONS[i % 8]}],
                             params={"max_tokens": args.max_tokens}) for i in range(n)]
    yes_no = [Request.chat(f"c{i}", [{"role": "user", "content": f"Is this true? "
                                      f"{CLAIMS[i % 8]} Answer Yes or No."}],
                           choices=("Yes", "No")) for i in range(n)]
    prompts = [runtime.prompt_ids(r.messages) for r in gen_reqs]
    choice_prompts = [runtime.prompt_ids(r.messages) for r in yes_no]
    yes_no_ids = [runtime.choice_ids(c)[0] for c in ("Yes", "No")]
    worst = 0.0

    def through_backend(requests: list[Any], batch_size: int) -> tuple[list[Any], float]:
        backend.batch_size = batch_size  # the same backend, model thread and model
        backend._batcher.batch_size = batch_size

        async def gather() -> list[Any]:
            return await asyncio.gather(*(backend.complete(r) for r in requests))

        start = time.perf_counter()
        responses = asyncio.run(gather())
        return responses, time.perf_counter() - start

    def direct_generate_here() -> tuple[list[str], int, float]:
        start = time.perf_counter()
        ids, mask = runtime._left_pad(prompts)
        with torch.inference_mode():
            out = model.generate(input_ids=ids, attention_mask=mask,
                                 max_new_tokens=args.max_tokens, do_sample=False,
                                 pad_token_id=runtime.pad_id)
        texts = runtime.tokenizer.batch_decode(out[:, ids.shape[1]:], skip_special_tokens=True)
        return texts, 0, time.perf_counter() - start

    def direct_choice_here() -> float:
        start = time.perf_counter()
        ids, mask = runtime._left_pad(choice_prompts)
        with torch.inference_mode():
            logits = model(input_ids=ids, attention_mask=mask, logits_to_keep=1,
                           position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits[:, -1]
            torch.softmax(torch.log_softmax(logits.float(), dim=-1)[:, yes_no_ids],
                          dim=-1).tolist()
        return time.perf_counter() - start

    through_backend(gen_reqs[:2], 2)  # warm-up
    gen_s: dict[str, list[float]] = {"one at a time": [], f"batched x{n}": [], "direct": []}
    choice_s: dict[str, list[float]] = {"one at a time": [], f"batched x{n}": [], "direct": []}
    tokens = 0
    identical = True
    for _ in range(args.rounds):
        if args.only != "choice":
            singles, s1 = through_backend(gen_reqs, 1)
            batched, sb = through_backend(gen_reqs, n)
            _, _, sd = backend.run_in_model_thread(direct_generate_here)
            identical &= [r.text for r in singles] == [r.text for r in batched]
            tokens = sum(r.usage.completion_tokens for r in singles)
            gen_s["one at a time"].append(s1)
            gen_s[f"batched x{n}"].append(sb)
            gen_s["direct"].append(sd)
        c1, t1 = through_backend(yes_no, 1)
        cb, tb = through_backend(yes_no, n)
        worst = max(worst, *(abs(a.choice_probs[k] - b.choice_probs[k])
                    for a, b in zip(c1, cb, strict=True) for k in ("Yes", "No")))
        choice_s["one at a time"].append(t1)
        choice_s[f"batched x{n}"].append(tb)
        choice_s["direct"].append(backend.run_in_model_thread(direct_choice_here))
    cmed = {k: statistics.median(v) for k, v in choice_s.items()}
    if args.only != "choice":
        print_generation(args, n, tokens, identical,
                         {k: statistics.median(v) for k, v in gen_s.items()})
    print(f"batched choice scoring (Yes/No): {n} concurrent requests, median:")
    for name, sec in cmed.items():
        print(f"  {name:20s} {sec:7.3f} s  {n / sec:7.1f} calls/s")
    print(f"  throughput batched / one at a time: "
          f"{cmed['one at a time'] / cmed[f'batched x{n}']:.2f}x (goal >= 1.5x)")
    print(f"  harness overhead batched vs direct: {cmed[f'batched x{n}'] / cmed['direct'] - 1:+.1%}"
          " (goal <= +10%)")
    print(f"  largest probability difference batched vs one at a time: {worst:.2e} "
          "(goal <= 1e-4)")




def print_generation(args: argparse.Namespace, n: int, tokens: int, identical: bool,
                     med: dict[str, float]) -> None:
    print(f"\nbatched generation: {n} concurrent requests, {args.max_tokens} new tokens max, "
          f"greedy, median of {args.rounds} rounds ({tokens} tokens in all):")
    for name, sec in med.items():
        print(f"  {name:20s} {sec:7.2f} s  {tokens / sec:7.1f} tokens/s")
    print(f"  throughput batched / one at a time: {med['one at a time'] / med[f'batched x{n}']:.2f}x"
          " (goal >= 2.5x)")
    print(f"  harness overhead batched vs direct: {med[f'batched x{n}'] / med['direct'] - 1:+.1%}"
          " (goal <= +10%)")
    print(f"  greedy texts identical to one at a time: {identical}")


if __name__ == "__main__":
    sys.exit(main())
