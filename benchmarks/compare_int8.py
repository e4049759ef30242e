"""How far int8 activations (``RAGMETER_LOCAL_KERNEL=int8``) move the local model's answers.

    python benchmarks/compare_int8.py REQUESTS... [--store STORE.sqlite] [--max-tokens 48]
                                      [--against int8|step]

REQUESTS are ``ragmeter generate`` request files (rows with ``messages`` or ``prompt``);
``--store`` adds the requests of a ragmeter store (e.g. a ``ragmeter demo`` home's
``store.sqlite``: the demo's RGB prompts), each with its own ``max_tokens``.  For every prompt,
one at a time on the numpy runtime with the block kernel: the prompt's prefill (numpy's BLAS,
the same in both modes), then greedy decoding with float32 activations and with int8 ones;
then the float answer's tokens fed again with int8 activations (teacher forcing), to compare
the two next-token distributions at the same positions.  Prints: how many greedy answers
differ (and at which token the first difference comes), the largest probability difference of
any token at any position, and how often the most likely token differs.  Written for issue 26
item 2 (docs/models.md quotes it).  ``--against step`` compares the whole decoding step in C
(``_kernel.DecodeStep``) with the numpy step instead, both with the activations
``RAGMETER_LOCAL_KERNEL`` names.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def requests_of(files: list[Path], store: Path | None, max_tokens: int) -> list[tuple[Any, int]]:
    """(messages, max_tokens) of every request (choice requests left out)."""
    out: list[tuple[Any, int]] = []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                messages = row.get("messages") or (
                    ([{"role": "system", "content": row["system"]}] if row.get("system") else [])
                    + [{"role": "user", "content": row["prompt"]}])
                out.append((messages, int(row.get("params", {}).get("max_tokens", max_tokens))))
    if store is not None:
        with sqlite3.connect(store) as db:
            for (text,) in db.execute("SELECT request_json FROM calls ORDER BY key"):
                material = json.loads(text)
                if not material.get("choices"):
                    tokens = material.get("params", {}).get("max_tokens") or max_tokens
                    out.append((material["messages"], int(tokens)))
    return out


def run(model: Any, prompt: list[int], steps: int, forced: list[int] | None,
        eos: set[int]) -> tuple[list[int], list[Any]]:
    """Greedy tokens (or ``forced`` ones) and the softmax at each step."""
    import numpy as np

    from ragmeter.backends._local._numpy import _KVCache

    cache = _KVCache(np, model.layers, [len(prompt)], model.kv_heads, model.head_dim, steps + 1)
    logits = model.prefill([prompt], cache, [(len(prompt) - 1, len(prompt))])[0]
    position = np.array([len(prompt)], dtype=np.int64)
    tokens: list[int] = []
    probs: list[Any] = []
    for step in range(steps):
        z = logits.reshape(-1).astype(np.float64)
        p = np.exp(z - z.max())
        probs.append(p / p.sum())
        token = forced[step] if forced is not None else int(np.argmax(z))
        tokens.append(token)
        if (forced is not None and step + 1 >= len(forced)) or token in eos:
            break
        logits = model.decode(np.array([token]), position, cache)
        position += 1
    return tokens, probs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", nargs="*", type=Path)
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--against", choices=("int8", "step"), default="int8",
                        help="int8 activations (default) or the C decoding step")
    args = parser.parse_args()
    from ragmeter.backends._local import _backend as local
    from ragmeter.backends._local import _kernel
    from ragmeter.backends._types import Request

    backend = local.LocalBackend(runtime="numpy", threads=1)
    backend.load()
    runtime = backend._runtime
    model = runtime.model
    found = _kernel.kernel()
    if found is None or model.weights.kind != "blocks":
        print("the block kernel is not in use here: nothing to compare")
        return 1
    eos = {int(t) for t in (runtime._generation_eos or runtime.eos)}
    todo = requests_of(args.requests, args.store, args.max_tokens)
    differ, first, worst, flips, positions = 0, [], 0.0, 0, 0
    if args.against == "step" and model.step is None:  # int8: built for the measure only
        found.whole_step = True
        model.step = model._decode_step(found, runtime.config)
    c_step = model.step
    if args.against == "step" and c_step is None:
        print("the C decoding step is not in use here: nothing to compare")
        return 1

    def other(on: bool) -> None:  # the compared mode on, or the float numpy step
        if args.against == "int8":
            found.activations = "int8" if on else "float"
        model.step = c_step if on and args.against == "step" else None

    with model.blas.single():
        for messages, steps in todo:
            prompt = runtime.prompt_ids(Request.chat("c", messages).messages)
            other(False)
            want, p_float = run(model, prompt, steps, None, eos)
            other(True)
            got, _ = run(model, prompt, steps, None, eos)
            _, p_other = run(model, prompt, len(want), want, eos)
            other(False)
            if got != want:
                differ += 1
                pairs = enumerate(zip(got, want, strict=False))
                first.append(next((i for i, (a, b) in pairs if a != b), min(len(got), len(want))))
            for a, b in zip(p_float, p_other, strict=True):
                worst = max(worst, float(abs(a - b).max()))
                flips += int(a.argmax() != b.argmax())
                positions += 1
    print(f"{len(todo)} prompts, {positions} positions of the float answers")
    what = "int8 activations" if args.against == "int8" else "the C decoding step"
    print(f"greedy answers that differ with {what}: {differ} of {len(todo)}"
          + (f" (first differing token: {sorted(first)})" if first else ""))
    print(f"largest probability difference of any token: {worst:.3g}; most likely token "
          f"differs at {flips} of {positions} positions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
