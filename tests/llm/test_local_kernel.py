"""The block kernel of the numpy runtime (backends/_local/_kernel.py, _kernels.c; issue 26.2):
products over Q4_1/Q8_0 blocks against gguf's own de-quantization, its threads, the blocks
file against the float32 one on a tiny GGUF, and the fall-back when it cannot be built."""

from __future__ import annotations

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
    local_kernel.kernel.cache_clear()
    yield local_kernel.kernel
    local_kernel.kernel.cache_clear()


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
    assert local_kernel.describe() == "Q4_1/Q8_0 blocks, block kernel built with sh"
