"""The block kernels of ``_kernels.c``: built once per machine, loaded with ctypes.

The numpy runtime keeps a quantized GGUF's Q4_1 and Q8_0 blocks as they are and multiplies
them with float32 activations in C, de-quantizing each block in registers (see the C file).
This module compiles ``_kernels.c`` with the C compiler at hand (``$CC``, else ``cc``, ``gcc``
or ``clang``) into ``$RAGMETER_HOME/kernels/``, keyed by the source, the compiler and the CPU
(``-march=native`` code runs only on the CPU it was built for), and loads it.  Building takes
about a second, once.  When there is no compiler, the build fails or the library cannot be
loaded, :func:`kernel` returns None and says why once (a warning), and the runtime reads
float32 weights through numpy's BLAS instead; ``RAGMETER_LOCAL_KERNEL=0`` asks for that.
``RAGMETER_LOCAL_KERNEL=int8`` quantizes the activations to 8-bit blocks and multiplies in
integers (faster decoding, answers not bit-identical: docs/models.md); ``float``, the
default, keeps float32 activations.  :class:`DecodeStep` runs a whole decoding step (every
layer, the final norm and the lm_head) in one call, with these products; the runtime decodes
with it wherever the kernel is loaded (docs/models.md: the same greedy texts as the numpy step).
"""

from __future__ import annotations

import copy
import ctypes
import functools
import os
import shutil
import subprocess
import threading
import warnings
import weakref
from pathlib import Path
from typing import Any

from ragmeter._util._cbuild import build_library, compiler, kernels_dir

__all__ = ["Kernel", "DecodeStep", "kernel", "describe", "mode", "kernels_dir", "Q4_1", "Q8_0",
           "BLOCK_BYTES", "KERNEL_ENV", "DEFAULT_MODE", "compiler"]

Q4_1, Q8_0 = 3, 8  # GGML type ids
BLOCK_BYTES = {Q4_1: 20, Q8_0: 34}  # bytes per block of 32 weights
KERNEL_ENV = "RAGMETER_LOCAL_KERNEL"
SOURCE = Path(__file__).with_name("_kernels.c")
ABI = 4
#: what ``RAGMETER_LOCAL_KERNEL`` asks for: ``int8`` (activations quantized to 8-bit blocks,
#: integer dot products), ``float`` (float32 activations, blocks de-quantized in registers) or
#: ``0`` (no kernel: float32 weights through numpy's BLAS); unset: DEFAULT_MODE
MODES = ("int8", "float", "off")
DEFAULT_MODE = "float"
FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-std=gnu11", "-pthread")
LIBS = ("-lm",)  # expf for the decoding step


class Kernel:
    """The loaded library: products and row look-ups over blocks (thread-safe; each call
    releases the GIL and runs on this thread and the library's workers)."""

    def __init__(self, library: ctypes.CDLL, path: Path, activations: str = "float",
                 whole_step: bool = True) -> None:
        import numpy as np

        self.np = np
        self.path = path
        self._lib = library
        pointer, i64 = ctypes.c_void_p, ctypes.c_int64
        library.rk_matmul.argtypes = [ctypes.c_int, pointer, i64, i64, pointer, i64, pointer]
        library.rk_matmul.restype = None
        library.rk_rows.argtypes = [ctypes.c_int, pointer, i64, pointer, i64, pointer]
        library.rk_rows.restype = None
        library.rk_matmul_q8.argtypes = library.rk_matmul.argtypes
        library.rk_matmul_q8.restype = ctypes.c_int
        library.rk_int8_dot.argtypes = []
        library.rk_int8_dot.restype = ctypes.c_char_p
        library.rk_set_threads.argtypes = [ctypes.c_int]
        library.rk_set_threads.restype = ctypes.c_int
        library.rk_stats.argtypes = [pointer]
        library.rk_stats.restype = None
        library.rk_decode_step.argtypes = [pointer, pointer, pointer, pointer, pointer, i64,
                                           pointer, pointer, pointer, pointer, i64, i64, pointer,
                                           ctypes.c_int, pointer]
        library.rk_decode_step.restype = ctypes.c_int
        self.threads = 1
        #: how matmul multiplies: "int8" activations or "float" (float32) ones
        self.activations = activations
        #: whether the runtime decodes with :class:`DecodeStep` (one C call per token)
        self.whole_step = whole_step
        #: the integer dot product of this build ("avx512-vnni", "avx-vnni", "avx2", "portable C")
        self.int8_dot = library.rk_int8_dot().decode()

    def set_threads(self, threads: int) -> int:
        """Use ``threads`` threads per call (the caller's and ``threads - 1`` workers)."""
        self.threads = int(self._lib.rk_set_threads(int(threads)))
        return self.threads

    def stats(self) -> dict[str, int]:
        """Counts since the library was loaded: ``jobs`` (products and look-ups split across
        threads), their ``rows``, and the ``worker_rows`` of those the workers computed (the
        rest: the calling thread)."""
        out = (ctypes.c_int64 * 3)()
        self._lib.rk_stats(out)
        return {"jobs": out[0], "rows": out[1], "worker_rows": out[2]}

    def matmul(self, ggml_type: int, blocks: Any, cols: int, x: Any) -> Any:
        """``x @ W.T`` for ``x`` ``(n, cols)`` float32 and ``W`` given as ``blocks``
        ``(rows, cols / 32 * block bytes)`` uint8: ``(n, rows)`` float32, with float32 or
        int8 activations as :attr:`activations` says."""
        np = self.np
        x = np.ascontiguousarray(x, dtype=np.float32)
        n, rows = x.shape[0], blocks.shape[0]
        out = np.empty((n, rows), dtype=np.float32)
        if self.activations == "int8":
            if self._lib.rk_matmul_q8(ggml_type, blocks.ctypes.data, rows, cols, x.ctypes.data,
                                      n, out.ctypes.data) != 0:
                raise MemoryError(f"block kernel: no memory for {n} x {cols} int8 activations")
        else:
            self._lib.rk_matmul(ggml_type, blocks.ctypes.data, rows, cols, x.ctypes.data, n,
                                out.ctypes.data)
        return out

    def rows(self, ggml_type: int, blocks: Any, cols: int, ids: Any = None) -> Any:
        """Rows ``ids`` of ``W`` (all when None) as float32 ``(len(ids), cols)``."""
        np = self.np
        if ids is None:
            count, pointer = blocks.shape[0], None
        else:
            ids = np.ascontiguousarray(ids, dtype=np.int64)
            count, pointer = len(ids), ids.ctypes.data
        out = np.empty((count, cols), dtype=np.float32)
        self._lib.rk_rows(ggml_type, blocks.ctypes.data, cols, pointer, count, out.ctypes.data)
        return out


class DecodeStep:
    """The whole decoding step in one C call (``rk_decode_step`` in ``_kernels.c``): every
    layer, the final norm and the lm_head of a blocks model for a batch of new tokens, with the
    kernel's products (float32 or int8 activations, as the kernel's :attr:`Kernel.activations`
    says) and threads.  ``weights`` and ``types`` are :meth:`Weights.step_weights
    <ragmeter.backends._local._weights.Weights.step_weights>`'s; the arrays stay referenced
    here, so their pointers stay valid."""

    def __init__(self, kernel: Kernel, weights: list[Any], types: list[int],
                 dims: dict[str, int], eps: float, scaling: float) -> None:
        np = kernel.np
        self.kernel = kernel
        self.np = np
        self._arrays = weights
        self.vocab = int(dims["vocab"])
        self.head_dim = int(dims["head_dim"])
        self._dims = np.array([dims["layers"], dims["hidden"], dims["heads"], dims["kv_heads"],
                               dims["head_dim"], dims["intermediate"], dims["vocab"],
                               *types[-2:]], dtype=np.int64)
        self._types = np.array(types[:-2], dtype=np.int64)
        self._scalars = np.array([eps, scaling], dtype=np.float32)
        self._pointers = np.array([a.ctypes.data for a in weights], dtype=np.uintp)
        self._cache: tuple[Any, ...] = ()

    def on(self, kernel: Kernel) -> DecodeStep:
        """The same step run by another build of the kernel (tests: the portable builds)."""
        other = copy.copy(self)
        other.kernel = kernel
        return other

    def _cache_pointers(self, keys: list[Any], values: list[Any]) -> tuple[Any, Any]:
        """The arrays' addresses, kept while the same arrays are given (weak references:
        a finished generation's cache is freed as before)."""
        arrays = (*keys, *values)
        kept = self._cache
        if not kept or len(kept[0]) != len(arrays) or any(
                ref() is not a for ref, a in zip(kept[0], arrays, strict=True)):
            np = self.np
            shape = keys[0].shape
            if not all(a.dtype == np.float32 and a.flags.c_contiguous and a.shape == shape
                       and len(shape) == 4 and shape[-1] == self.head_dim for a in arrays):
                raise ValueError("decoding step: the key/value cache is not per layer "
                                 "(batch, kv_heads, capacity, head_dim) contiguous float32")
            kept = self._cache = (tuple(weakref.ref(a) for a in arrays),
                                  np.array([k.ctypes.data for k in keys], dtype=np.uintp),
                                  np.array([v.ctypes.data for v in values], dtype=np.uintp))
        return kept[1], kept[2]

    def __call__(self, tokens: Any, cos: Any, sin: Any, keys: list[Any], values: list[Any],
                 bias: Any, col: int) -> Any:
        """Logits ``(batch, vocab)`` of one step: ``tokens`` ``(batch,)``, ``cos``/``sin``
        ``(batch, head_dim)`` float32 of their positions; ``keys``/``values`` per layer
        ``(batch, kv_heads, capacity, head_dim)`` float32 (column ``col`` is written),
        ``bias`` ``(batch, capacity)`` float32 (-inf on padding)."""
        np = self.np
        tokens = np.ascontiguousarray(tokens, dtype=np.int64)
        batch = len(tokens)
        cos = np.ascontiguousarray(cos, dtype=np.float32)
        sin = np.ascontiguousarray(sin, dtype=np.float32)
        kp, vp = self._cache_pointers(keys, values)
        capacity = int(keys[0].shape[2])
        if (bias.dtype != np.float32 or not bias.flags.c_contiguous
                or bias.size != batch * capacity or keys[0].shape[0] != batch):
            raise ValueError("decoding step: the padding bias is not (batch, capacity) float32")
        out = np.empty((batch, self.vocab), dtype=np.float32)
        if self.kernel._lib.rk_decode_step(
                self._dims.ctypes.data, self._scalars.ctypes.data, self._pointers.ctypes.data,
                self._types.ctypes.data, tokens.ctypes.data, batch, cos.ctypes.data,
                sin.ctypes.data, kp.ctypes.data, vp.ctypes.data, capacity, int(col),
                bias.ctypes.data, int(self.kernel.activations == "int8"),
                out.ctypes.data) != 0:
            raise MemoryError(f"block kernel: no memory for a decoding step of {batch} rows")
        return out


_LOCK = threading.Lock()


def mode() -> str:
    """What ``RAGMETER_LOCAL_KERNEL`` asks for: "int8", "float" or "off" (unset: DEFAULT_MODE)."""
    from ragmeter.errors import ConfigError

    given = os.environ.get(KERNEL_ENV, "").strip().lower()
    if not given:
        return DEFAULT_MODE
    if given in ("0", "false", "no", "off"):
        return "off"
    if given in ("int8", "float"):
        return given
    raise ConfigError(f"local model: {KERNEL_ENV} is {given!r}; set it to int8 (8-bit "
                      "activations), float (float32 activations) or 0 (no block kernel)")


def _turned_off() -> bool:
    return mode() == "off"


def describe() -> str:
    """How the numpy runtime reads a Q4_1/Q8_0 GGUF's weights here, in a few words, without
    building anything (``ragmeter models``)."""
    if _turned_off():
        return f"float32 weights ({KERNEL_ENV}=0)"
    cc = compiler()
    if cc is None or shutil.which(cc) is None:
        return "float32 weights (no C compiler for the block kernel)"
    return (f"Q4_1/Q8_0 blocks, {mode()} activations ({KERNEL_ENV}), block kernel built "
            f"with {Path(cc).name}")


def kernel() -> Kernel | None:
    """The block kernel for the activations ``RAGMETER_LOCAL_KERNEL`` asks for, built when
    needed; None when it is turned off or cannot be had (said once)."""
    return _kernel(mode())


@functools.lru_cache(maxsize=3)
def _kernel(wanted: str) -> Kernel | None:
    if wanted == "off":
        return None
    with _LOCK:
        try:
            path = _built()
            library = ctypes.CDLL(str(path))
            if library.rk_abi() != ABI:
                raise OSError(f"{path} has ABI {library.rk_abi()}, expected {ABI}")
            # the C decoding step with float activations only: its last-bit differences
            # from the numpy step change int8's rounding of some activations, and through
            # the layers its answers (docs/models.md)
            return Kernel(library, path, wanted, whole_step=wanted == "float")
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            warnings.warn(f"local: the block kernel could not be built or loaded ({exc}); "
                          "the numpy runtime reads float32 weights instead (slower decoding, "
                          "a 5x larger converted copy). Install a C compiler (e.g. apt-get "
                          "install gcc) to get it.", stacklevel=3)
            return None


def _built() -> Path:
    """The compiled library for this source, compiler and CPU, compiled when missing."""
    return build_library("ragmeter-kernels", [SOURCE.read_bytes()],
                         lambda cc, out: [[cc, *FLAGS, "-o", out, str(SOURCE), *LIBS]],
                         FLAGS + LIBS)


