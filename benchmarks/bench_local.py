"""The local model's speed through ragmeter versus calling transformers directly, in one run.

Measures, with the default SmolLM2-135M-Instruct (Q4_1 GGUF, transformers + torch on CPU):

* generation tokens/s: ``model.generate`` called directly on the same loaded model (baseline),
  through ``LocalBackend.complete`` (chat template, worker thread, lock), and through
  ``ragmeter.runner.run_requests`` (no store, no progress bar);
* seconds per choice-scoring call (yes/no): one direct forward pass plus log-softmax, versus
  ``LocalBackend.complete`` with ``choices``.

The paths run interleaved, round by round, so a busy machine slows them alike; the medians of
the rounds are compared.  The direct calls run on the backend's model thread: torch's OpenMP
pool belongs to the calling thread, and two pools used in turn spin against each other, which
would measure that contention instead of the harness.  Goal (issue 3): harness overhead <= 10%.

    python benchmarks/bench_local.py [--rounds 5] [--max-tokens 48] [--threads N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    import torch

    from ragmeter.llm.base import Request
    from ragmeter.llm.local import LocalBackend

    backend = LocalBackend(runtime="transformers", threads=args.threads)
    t0 = time.perf_counter()
    backend.load()
    load_s = time.perf_counter() - t0
    runtime = backend._runtime  # the very model both paths use
    model, tokenizer = runtime.model, runtime.tokenizer
    print(f"model {backend.model}  runtime {backend.runtime_name}  torch threads "
          f"{torch.get_num_threads()}  load {load_s:.1f} s")

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
        from ragmeter.runner import RunnerConfig, run_requests
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
