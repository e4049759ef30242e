"""The whole decoding step in C (``rk_decode_step``; backends/_local/_kernel.py DecodeStep,
issue 26.2) against the numpy step it replaces (``_NumpyLlama.decode``), on a tiny GGUF and on
the REAL offline model (``local_model``): logits within float32 noise, greedy tokens equal, a
left-padded batch equal to its rows one at a time, the portable-C build equal to the native
one, and no C step without the kernel.

Tolerances: the products are the kernel's own (the same bits), the norms follow numpy's
pairwise sum and numpy's cos/sin are passed in; what differs is libm's ``expf`` against numpy's
``exp`` (the softmax, SiLU) and the attention's dot products (BLAS adds in another order), each
a float32 rounding (~6e-8 of the value), carried through 30 layers.  Measured on SmolLM2-135M:
at most 2e-5 on logits of size up to ~35 over 24 steps; the bound below is 20 times that, and
a real mistake (a head's rotation, a cache column, a padded column) moves logits by 0.1 or more.
"""

from __future__ import annotations

import ctypes
import platform
import subprocess
import time

import numpy as np
import pytest

from ragmeter.backends._local import _backend as local
from ragmeter.backends._local import _cache as local_cache
from ragmeter.backends._local import _kernel as local_kernel
from ragmeter.backends._local._numpy import NumpyLlamaRuntime, _KVCache
from ragmeter.backends._types import Request

gguf = pytest.importorskip("gguf")

from tests.llm.test_gguf_convert_units import write_tiny  # noqa: E402

LOGITS_ATOL = 4e-4  # 20x the largest difference measured on the real model (see above)

QUESTIONS = ["What is the capital of France?", "Name three rivers of Europe.",
             "Write one sentence about the sea.", "Wie heißt die Hauptstadt von Italien?",
             "¿Cuál es el río más largo del mundo?", "中国的首都是哪里？"]


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(local_kernel.KERNEL_ENV, raising=False)
    local_kernel._kernel.cache_clear()
    yield tmp_path
    local_kernel._kernel.cache_clear()


def _decode(model, prompts, steps, use_step, forced=None):
    """Logits ``(steps, batch, vocab)`` and greedy tokens of ``steps`` decoding steps after a
    left-padded prefill, with the C step (``use_step``) or the numpy one."""
    saved = model.step
    if not use_step:
        model.step = None
    try:
        with model.blas.single():
            cache = _KVCache(np, model.layers, [len(p) for p in prompts], model.kv_heads,
                             model.head_dim, steps + 1)
            logits = np.concatenate(model.prefill(prompts, cache,
                                                  [(len(p) - 1, len(p)) for p in prompts]))
            positions = np.array([len(p) for p in prompts], dtype=np.int64)
            out, tokens = [], []
            for step in range(steps):
                nxt = logits.argmax(-1) if forced is None else forced[step]
                tokens.append(nxt)
                logits = model.decode(nxt, positions, cache)
                positions += 1
                out.append(logits)
    finally:
        model.step = saved
    return np.stack(out), np.stack(tokens)


# ------------------------------------------------------------------ a tiny GGUF


def test_the_c_step_is_the_numpy_step_on_a_tiny_model(fresh_home):
    if local_kernel.compiler() is None:
        pytest.skip("no C compiler here: the kernel cannot be built (the fall-back is tested)")
    folder, found = local_cache.convert_for_numpy(write_tiny(fresh_home / "tiny.gguf"))
    runtime = NumpyLlamaRuntime(folder, 1, kernel=found)
    model = runtime.model
    assert found is not None and model.step is not None
    prompts = [[1, 5, 9, 12, 7, 3], [4, 4, 12], [9]]
    c_logits, c_tokens = _decode(model, prompts, 8, True)
    np_logits, _ = _decode(model, prompts, 8, False, forced=c_tokens)
    np.testing.assert_allclose(c_logits, np_logits, rtol=1e-4, atol=1e-4)
    # the cache columns the step wrote are the numpy step's: decoding on from either agrees
    alone = [_decode(model, [p], 8, True)[0][:, 0] for p in prompts]
    np.testing.assert_allclose(c_logits, np.stack(alone, axis=1), rtol=1e-4, atol=1e-4)


def test_the_step_keeps_no_finished_cache_alive(fresh_home):
    """The step remembers a cache's addresses while it decodes it, not the cache itself (a
    strong reference kept the last batch's keys and values: +115 MiB peak on the demo's
    answers)."""
    import gc
    import weakref

    if local_kernel.compiler() is None:
        pytest.skip("no C compiler here: the kernel cannot be built (the fall-back is tested)")
    folder, found = local_cache.convert_for_numpy(write_tiny(fresh_home / "tiny.gguf"))
    model = NumpyLlamaRuntime(folder, 1, kernel=found).model
    cache = _KVCache(np, model.layers, [3], model.kv_heads, model.head_dim, 4)
    model.prefill([[1, 5, 9]], cache, [(2, 3)])
    first = model.decode(np.array([4]), np.array([3]), cache)
    again = model.decode(np.array([4]), np.array([4]), cache)  # the kept addresses serve
    assert cache.filled == 5 and not np.array_equal(first, again)
    gone = weakref.ref(cache.keys[0])
    del cache
    gc.collect()
    assert gone() is None


def test_int8_activations_keep_the_numpy_step(fresh_home, monkeypatch):
    """The C step's last-bit differences move int8's rounding of some activations, and with
    them answers (23 of 64 greedy texts, docs/models.md): int8 decodes as before."""
    if local_kernel.compiler() is None:
        pytest.skip("no C compiler here: the kernel cannot be built (the fall-back is tested)")
    monkeypatch.setenv(local_kernel.KERNEL_ENV, "int8")
    folder, found = local_cache.convert_for_numpy(write_tiny(fresh_home / "tiny.gguf"))
    assert found is not None and found.activations == "int8" and not found.whole_step
    assert NumpyLlamaRuntime(folder, 1, kernel=found).model.step is None


def test_without_the_kernel_there_is_no_c_step(fresh_home, monkeypatch):
    monkeypatch.setenv("CC", str(fresh_home / "no-such-compiler"))
    with pytest.warns(UserWarning, match="block kernel could not be built"):
        folder, found = local_cache.convert_for_numpy(write_tiny(fresh_home / "tiny.gguf"))
    runtime = NumpyLlamaRuntime(folder, 1, kernel=found)
    assert found is None and runtime.model.step is None
    answer = runtime.generate_batch([[1, 5, 9]], {"temperature": 0, "max_tokens": 4})[0]
    assert answer.completion_tokens >= 1


# ------------------------------------------------------------------ the real model


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """(runtime with the C step, prompt id lists) on the real model in a fresh home."""
    if local.default_model_path() is None:
        pytest.skip(f"default model not installed: {local.INSTALL_MODEL}")
    if local_kernel.compiler() is None:
        pytest.skip("no C compiler here: the kernel cannot be built")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGMETER_HOME", str(tmp_path_factory.mktemp("ragmeter-home")))
        mp.delenv(local_kernel.KERNEL_ENV, raising=False)
        local_kernel._kernel.cache_clear()
        folder, found = local_cache.convert_for_numpy(local.resolve_model(None).path)
        assert found is not None
        runtime = NumpyLlamaRuntime(folder, 1, kernel=found)
        assert runtime.model.step is not None
        prompts = [runtime.prompt_ids(Request.chat("q", [{"role": "user", "content": q}])
                                      .messages) for q in QUESTIONS]
        yield runtime, prompts
    local_kernel._kernel.cache_clear()


@pytest.mark.local_model
def test_real_logits_agree_and_greedy_texts_are_equal(real):
    runtime, prompts = real
    model = runtime.model
    worst = 0.0
    for prompt in prompts:
        c_logits, c_tokens = _decode(model, [prompt], 24, True)
        np_logits, np_tokens = _decode(model, [prompt], 24, False)
        assert np.array_equal(c_tokens, np_tokens), prompt
        worst = max(worst, float(np.abs(c_logits - np_logits).max()))
    assert worst <= LOGITS_ATOL
    # and through the runtime: the same answers with and without the step
    params = {"temperature": 0, "max_tokens": 24}
    with_step = runtime.generate_batch(prompts[:3], params)
    saved, model.step = model.step, None
    try:
        without = runtime.generate_batch(prompts[:3], params)
    finally:
        model.step = saved
    assert [g.text for g in with_step] == [g.text for g in without]


@pytest.mark.local_model
def test_real_left_padded_batch_equals_its_rows(real):
    runtime, prompts = real
    model = runtime.model
    together, tokens = _decode(model, prompts, 12, True)
    for row, prompt in enumerate(prompts):
        alone, alone_tokens = _decode(model, [prompt], 12, True)
        assert np.array_equal(tokens[:, row], alone_tokens[:, 0])
        # padding changes only the prefill's BLAS blocks: float32 noise, as for the numpy step
        np.testing.assert_allclose(together[:, row], alone[:, 0], rtol=0, atol=LOGITS_ATOL)


@pytest.mark.local_model
@pytest.mark.parametrize("march", ["x86-64", "x86-64-v3"])
def test_real_portable_builds_agree(real, tmp_path, march):
    """The kernel built for older CPUs (plain C; AVX2) decodes as the native build does."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86-64 builds")
    runtime, prompts = real
    model = runtime.model
    flags = [f for f in local_kernel.FLAGS if not f.startswith("-march")] + [f"-march={march}"]
    target = tmp_path / f"k-{march}.so"
    done = subprocess.run([local_kernel.compiler(), *flags, "-o", str(target),
                           str(local_kernel.SOURCE), *local_kernel.LIBS], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"this compiler cannot build -march={march}: {done.stderr[-200:]}")
    other = local_kernel.Kernel(ctypes.CDLL(str(target)), target, "float")
    native = model.step
    assert native is not None
    model.step = native.on(other)
    try:
        got, got_tokens = _decode(model, prompts[:2], 12, True)
    finally:
        model.step = native
    want, want_tokens = _decode(model, prompts[:2], 12, True)
    assert np.array_equal(got_tokens, want_tokens)
    np.testing.assert_allclose(got, want, rtol=0, atol=LOGITS_ATOL)



@pytest.mark.local_model
def test_real_two_threads_give_the_same_logits_as_one(real):
    """The products split across the kernel's threads (each row computed whole by one thread,
    in the same order), so a step's logits do not depend on the thread count; the worker
    takes part (its polling between products, then its sleep between prompts)."""
    runtime, prompts = real
    model = runtime.model
    kernel = model.step.kernel
    one, one_tokens = _decode(model, prompts[:2], 16, True)
    assert kernel.set_threads(2) == 2
    try:
        before = kernel.stats()
        for _ in range(3):  # workers polling through a step, asleep between the decodes
            two, two_tokens = _decode(model, prompts[:2], 16, True)
            assert np.array_equal(two, one) and np.array_equal(two_tokens, one_tokens)
            time.sleep(0.01)
        after = kernel.stats()
    finally:
        kernel.set_threads(1)
    assert after["jobs"] - before["jobs"] >= 3 * 16 * 121  # 4 products a layer, the lm_head
    assert after["worker_rows"] > before["worker_rows"]
