"""The block kernel of the numpy runtime (backends/_local/_kernel.py, _kernels.c; issue 26.2):
products over Q4_1/Q8_0 blocks against gguf's own de-quantization, its threads, the blocks
file against the float32 one on a tiny GGUF, and the fall-back when it cannot be built; the
int8-activation products (RAGMETER_LOCAL_KERNEL=int8) against a numpy model of the same
arithmetic, in each of the kernel's builds (AVX-512 VNNI, AVX2, portable C)."""

from __future__ import annotations

import ctypes
import platform
import subprocess
import time
import warnings

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from ragmeter.backends._local import _cache as local_cache  # noqa: E402
from ragmeter.backends._local import _kernel as local_kernel  # noqa: E402
from ragmeter.backends._local import _numpy as local_numpy  # noqa: E402
from tests.llm.test_gguf_convert_units import write_tiny  # noqa: E402

TYPES = {local_kernel.Q4_1: gguf.GGMLQuantizationType.Q4_1,
         local_kernel.Q8_0: gguf.GGMLQuantizationType.Q8_0}


@pytest.fixture
def fresh_kernel(tmp_path, monkeypatch):
    """kernel() built under a fresh home (and forgotten afterwards)."""
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(local_kernel.KERNEL_ENV, raising=False)
    local_kernel._kernel.cache_clear()
    yield local_kernel.kernel
    local_kernel._kernel.cache_clear()


@pytest.fixture
def built(fresh_kernel):
    if local_kernel.compiler() is None:
        pytest.skip("no C compiler here: the kernel cannot be built (the fall-back is tested)")
    found = fresh_kernel()
    assert found is not None, "a compiler is here, so the kernel must build"
    return found


@pytest.mark.parametrize("ggml_type", sorted(TYPES))
@pytest.mark.parametrize("n", [1, 3, 8, 17])
def test_products_match_gguf_dequantization(built, ggml_type, n):
    rng = np.random.default_rng(ggml_type * 100 + n)
    rows, cols = 70, 96
    blocks = gguf.quants.quantize(rng.standard_normal((rows, cols)).astype(np.float32),
                                  TYPES[ggml_type])
    weights = gguf.quants.dequantize(blocks, TYPES[ggml_type]).astype(np.float32)
    x = rng.standard_normal((n, cols)).astype(np.float32)
    got = built.matmul(ggml_type, blocks, cols, x)
    want = x.astype(np.float64) @ weights.T.astype(np.float64)
    assert got.shape == (n, rows) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    # the look-up de-quantizes bit for bit as gguf does (d * q + m in float32)
    assert np.array_equal(built.rows(ggml_type, blocks, cols), weights)
    ids = np.array([5, 0, 69, 5])
    assert np.array_equal(built.rows(ggml_type, blocks, cols, ids), weights[ids])


def test_a_prompt_product_dequantizes_its_matrix_once(built, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from ragmeter.backends._local._weights import Blocks

    rng = np.random.default_rng(5)
    rows, cols = 70, 96
    blocks = gguf.quants.quantize(rng.standard_normal((rows, cols)).astype(np.float32),
                                  TYPES[local_kernel.Q4_1])
    weights = gguf.quants.dequantize(blocks, TYPES[local_kernel.Q4_1]).astype(np.float32)
    calls: list[int] = []
    real_rows = built.rows

    def counted(*args):
        calls.append(1)
        return real_rows(*args)

    monkeypatch.setattr(built, "rows", counted)
    matrix = Blocks(built, local_kernel.Q4_1, blocks, cols)
    prompts = [rng.standard_normal((n, cols)).astype(np.float32) for n in (17, 40, 300, 17)]
    with ThreadPoolExecutor(2) as pool:  # two threads of a pass ask for it at once
        got = list(pool.map(matrix, prompts))
    assert len(calls) == 1  # not once per product
    for x, y in zip(prompts, got, strict=True):  # the same bits as de-quantizing per product
        assert np.array_equal(y, x @ weights.T)
    assert matrix(prompts[0][:16]).shape == (16, rows) and len(calls) == 1  # kernel: no copy


def test_two_threads_give_the_same_bits_as_one(built):
    rng = np.random.default_rng(7)
    blocks = gguf.quants.quantize(rng.standard_normal((300, 128)).astype(np.float32),
                                  gguf.GGMLQuantizationType.Q4_1)
    x = rng.standard_normal((4, 128)).astype(np.float32)
    built.set_threads(1)
    one = built.matmul(local_kernel.Q4_1, blocks, 128, x)
    assert built.set_threads(2) == 2
    two = built.matmul(local_kernel.Q4_1, blocks, 128, x)
    built.set_threads(1)
    assert np.array_equal(one, two)


def test_workers_poll_then_sleep_and_the_bits_stay(built):
    """Products in a row (the worker polls between them) and after pauses (it has gone to
    sleep and must be woken): every one the 1-thread bits, the split counted by stats()."""
    rng = np.random.default_rng(9)
    rows, cols = 1024, 256
    blocks = gguf.quants.quantize(rng.standard_normal((rows, cols)).astype(np.float32),
                                  gguf.GGMLQuantizationType.Q4_1)
    x = rng.standard_normal((1, cols)).astype(np.float32)
    built.set_threads(1)
    before = built.stats()
    want = built.matmul(local_kernel.Q4_1, blocks, cols, x)
    assert built.stats() == before  # one thread: nothing is split
    assert built.set_threads(2) == 2
    try:
        for i in range(400):
            if i % 50 == 0:
                time.sleep(0.005)  # longer than a worker polls
            assert np.array_equal(built.matmul(local_kernel.Q4_1, blocks, cols, x), want), i
        after = built.stats()
        deadline = time.monotonic() + 20  # a worker kept off a busy CPU may take its time
        while after["worker_rows"] == before["worker_rows"] and time.monotonic() < deadline:
            assert np.array_equal(built.matmul(local_kernel.Q4_1, blocks, cols, x), want)
            after = built.stats()
    finally:
        built.set_threads(1)
    assert after["jobs"] - before["jobs"] >= 400
    assert after["rows"] - before["rows"] == rows * (after["jobs"] - before["jobs"])
    assert 0 < after["worker_rows"] - before["worker_rows"] < after["rows"] - before["rows"]


def _runtime(gguf_path, kernel):
    folder, found = (local_cache.convert_for_numpy(gguf_path) if kernel
                     else (local_cache.convert_direct(gguf_path, "f32"), None))
    assert folder is not None
    return local_numpy.NumpyLlamaRuntime(folder, 1, kernel=found), found


def test_the_blocks_file_answers_as_the_float32_one(built, tmp_path):
    tiny = write_tiny(tmp_path / "tiny.gguf")
    blocks_rt, found = _runtime(tiny, kernel=True)
    f32_rt, _ = _runtime(tiny, kernel=False)
    assert found is built and blocks_rt.model.weights.kind == "blocks"
    assert f32_rt.model.weights.kind == "f32"
    folder = local_cache.direct_model_dir(tiny)
    # about the GGUF's size, not float32's
    assert (folder / "model-blocks.safetensors").stat().st_size < tiny.stat().st_size * 1.2
    ids = [1, 5, 9, 12, 7, 3]
    a = blocks_rt.model.prefill([ids], None, [(0, len(ids))])[0]
    b = f32_rt.model.prefill([ids], None, [(0, len(ids))])[0]
    # float32 sums in another order: logits of magnitude up to ~30 agree to ~1e-5 of it
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3)
    params = {"temperature": 0, "max_tokens": 12}
    got = blocks_rt.generate_batch([ids, ids[:3]], params)
    want = f32_rt.generate_batch([ids, ids[:3]], params)
    assert [(g.text, g.completion_tokens) for g in got] == [(w.text, w.completion_tokens) for w in want]


def test_a_gguf_in_other_types_is_read_as_float32(built, tmp_path):
    f16 = write_tiny(tmp_path / "f16.gguf", down_type=gguf.GGMLQuantizationType.F16)
    folder, found = local_cache.convert_for_numpy(f16)
    assert found is None and folder is not None
    assert (folder / "model.safetensors").is_file()
    assert not (folder / "model-blocks.safetensors").exists()
    runtime = local_numpy.NumpyLlamaRuntime(folder, 1, kernel=found)
    assert runtime.model.weights.kind == "f32"
    answer = runtime.generate_batch([[1, 5, 9]], {"temperature": 0, "max_tokens": 4})[0]
    assert answer.completion_tokens >= 1


def test_without_a_compiler_the_runtime_reads_float32(fresh_kernel, monkeypatch, tmp_path):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fresh_kernel() is None
    assert any("block kernel could not be built" in str(w.message) for w in caught)
    tiny = write_tiny(tmp_path / "tiny.gguf")
    folder, found = local_cache.convert_for_numpy(tiny)
    assert found is None and (folder / "model.safetensors").is_file()
    assert not (folder / "model-blocks.safetensors").exists()


def test_a_failing_build_falls_back_too(fresh_kernel, monkeypatch, tmp_path):
    monkeypatch.setenv("CC", "false")  # a compiler that always fails
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert fresh_kernel() is None


def test_the_environment_can_turn_it_off(fresh_kernel, monkeypatch):
    monkeypatch.setenv(local_kernel.KERNEL_ENV, "0")
    assert fresh_kernel() is None


def test_models_says_how_the_weights_are_read(monkeypatch, tmp_path):
    from ragmeter.cli.models import models_report

    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    assert local_kernel.describe() == "float32 weights (no C compiler for the block kernel)"
    monkeypatch.setenv(local_kernel.KERNEL_ENV, "off")
    assert local_kernel.describe() == f"float32 weights ({local_kernel.KERNEL_ENV}=0)"
    report = models_report()
    if report["local_runtime"] == "numpy":
        assert report["local_weights"] == local_kernel.describe()
    monkeypatch.delenv(local_kernel.KERNEL_ENV)
    monkeypatch.setenv("CC", "sh")  # found on PATH: the kernel would be built with it
    assert local_kernel.describe() == ("Q4_1/Q8_0 blocks, float activations "
                                       f"({local_kernel.KERNEL_ENV}), block kernel built with sh")
    monkeypatch.setenv(local_kernel.KERNEL_ENV, "int8")
    assert local_kernel.describe().startswith("Q4_1/Q8_0 blocks, int8 activations")


# ------------------------------------------------------------------ int8 activations


def _int8_reference(ggml_type, blocks, cols, x):
    """What the int8 path computes, in numpy: x quantized per block of 32 (d = max|x| / 127,
    q = round half away from zero of x * 127 / max|x|), integer dot products with the weights'
    codes, scaled by the two scales (Q4_1 adds its minimum times d * sum(q))."""
    n, nb = len(x), cols // 32
    xb = x.reshape(n, nb, 32).astype(np.float32)
    amax = np.abs(xb).max(axis=2, keepdims=True)
    d = amax / np.float32(127)
    with np.errstate(divide="ignore"):
        inv = np.where(amax > 0, np.float32(127) / amax, np.float32(0)).astype(np.float32)
    v = xb * inv
    q = np.clip(np.trunc(v + np.where(v >= 0, np.float32(0.5), np.float32(-0.5))), -127, 127)
    bb = local_kernel.BLOCK_BYTES[ggml_type]
    raw = blocks.reshape(len(blocks), nb, bb)
    dw = raw[:, :, 0:2].copy().view(np.float16)[..., 0].astype(np.float64)
    if ggml_type == local_kernel.Q4_1:
        mw = raw[:, :, 2:4].copy().view(np.float16)[..., 0].astype(np.float64)
        codes = np.concatenate([raw[:, :, 4:] & 0x0F, raw[:, :, 4:] >> 4], axis=2)
    else:
        mw = np.zeros_like(dw)
        codes = raw[:, :, 2:].view(np.int8)
    isum = np.einsum("rbj,nbj->nrb", codes.astype(np.float64), q.astype(np.float64))
    d64 = d[..., 0].astype(np.float64)
    mins = (d64 * q.sum(axis=2))[:, None, :] * mw[None]
    return (isum * dw[None] * d64[:, None, :] + mins).sum(axis=2)


def _int8_case(ggml_type, n, seed):
    rng = np.random.default_rng(seed)
    rows, cols = 70, 224  # 7 blocks: the four-block, two-block and one-block loops all run
    blocks = gguf.quants.quantize(rng.standard_normal((rows, cols)).astype(np.float32),
                                  TYPES[ggml_type])
    x = rng.standard_normal((n, cols)).astype(np.float32)
    x[0, :32] = 0.0  # an all-zero block quantizes to zeros with scale 0
    return blocks, cols, x


@pytest.mark.parametrize("ggml_type", sorted(TYPES))
@pytest.mark.parametrize("n", [1, 3, 8, 17])
def test_int8_products_are_the_int8_arithmetic(built, monkeypatch, ggml_type, n):
    monkeypatch.setenv(local_kernel.KERNEL_ENV, "int8")
    k = local_kernel.kernel()
    assert k is not None and k.activations == "int8" and k is not built
    blocks, cols, x = _int8_case(ggml_type, n, ggml_type * 10 + n)
    got = k.matmul(ggml_type, blocks, cols, x)
    want = _int8_reference(ggml_type, blocks, cols, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    # and it is not the float path: 8-bit activations are ~0.5% off the exact products
    exact = x.astype(np.float64) @ gguf.quants.dequantize(blocks, TYPES[ggml_type]).T
    error = np.abs(got - exact).max() / np.abs(exact).max()
    assert 1e-4 < error < 0.03


@pytest.mark.parametrize("ggml_type", sorted(TYPES))
def test_int8_rows_do_not_depend_on_the_batch(built, monkeypatch, ggml_type):
    """A batch's rows (8, then 4, then one at a time inside the kernel) get the bits each
    row gets alone: batched decoding answers as one request at a time does."""
    monkeypatch.setenv(local_kernel.KERNEL_ENV, "int8")
    k = local_kernel.kernel()
    blocks, cols, x = _int8_case(ggml_type, 13, 5)
    together = k.matmul(ggml_type, blocks, cols, x)
    alone = np.concatenate([k.matmul(ggml_type, blocks, cols, x[i:i + 1]) for i in range(13)])
    assert np.array_equal(together, alone)


def test_int8_two_threads_give_the_same_bits_as_one(built, monkeypatch):
    monkeypatch.setenv(local_kernel.KERNEL_ENV, "int8")
    k = local_kernel.kernel()
    blocks, cols, x = _int8_case(local_kernel.Q4_1, 4, 11)
    blocks = np.concatenate([blocks] * 5)
    k.set_threads(1)
    one = k.matmul(local_kernel.Q4_1, blocks, cols, x)
    assert k.set_threads(2) == 2
    two = k.matmul(local_kernel.Q4_1, blocks, cols, x)
    k.set_threads(1)
    assert np.array_equal(one, two)


@pytest.mark.parametrize("march, dot", [("x86-64", "portable C"), ("x86-64-v3", "avx2")])
def test_int8_in_the_other_builds(built, tmp_path, march, dot):
    """The kernel built for older CPUs (AVX2 without VNNI; plain C) computes the same int8
    products (and float ones) as the native build; skipped where such a build cannot run."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86-64 builds")
    flags = [f for f in local_kernel.FLAGS if not f.startswith("-march")] + [f"-march={march}"]
    target = tmp_path / f"k-{march}.so"
    done = subprocess.run([local_kernel.compiler(), *flags, "-o", str(target),
                           str(local_kernel.SOURCE)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"this compiler cannot build -march={march}: {done.stderr[-200:]}")
    other = local_kernel.Kernel(ctypes.CDLL(str(target)), target, "int8")
    assert other.int8_dot == dot
    for ggml_type in sorted(TYPES):
        blocks, cols, x = _int8_case(ggml_type, 5, ggml_type)
        np.testing.assert_allclose(other.matmul(ggml_type, blocks, cols, x),
                                   _int8_reference(ggml_type, blocks, cols, x),
                                   rtol=1e-5, atol=1e-4)
        other.activations = "float"
        np.testing.assert_allclose(other.matmul(ggml_type, blocks, cols, x),
                                   built.matmul(ggml_type, blocks, cols, x), rtol=1e-5, atol=1e-4)
        other.activations = "int8"


def test_the_kernel_mode_is_named(monkeypatch):
    from ragmeter.errors import ConfigError

    monkeypatch.delenv(local_kernel.KERNEL_ENV, raising=False)
    assert local_kernel.mode() == local_kernel.DEFAULT_MODE == "float"
    for given, want in (("int8", "int8"), ("FLOAT", "float"), ("0", "off"), ("off", "off")):
        monkeypatch.setenv(local_kernel.KERNEL_ENV, given)
        assert local_kernel.mode() == want
    monkeypatch.setenv(local_kernel.KERNEL_ENV, "int4")
    with pytest.raises(ConfigError, match="RAGMETER_LOCAL_KERNEL is 'int4'; set it to int8"):
        local_kernel.mode()


def test_int8_activations_are_part_of_the_identity(monkeypatch, tmp_path):
    """int8 activations change answers, so a stored float answer is not reused for them."""
    from ragmeter.backends._local._backend import LocalBackend

    tiny = write_tiny(tmp_path / "tiny.gguf")
    monkeypatch.delenv(local_kernel.KERNEL_ENV, raising=False)
    plain = LocalBackend(tiny, runtime="numpy").identity()
    assert "activations" not in plain  # the default keeps the identity it always had
    monkeypatch.setenv(local_kernel.KERNEL_ENV, "int8")
    assert LocalBackend(tiny, runtime="numpy").identity() == {**plain, "activations": "int8"}
