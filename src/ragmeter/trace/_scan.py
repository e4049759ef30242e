"""The C scanner of clean label lines (``trace score``, issue 26.3): ``_scan.c``.

It reads a block of JSON Lines and, for each line of exactly the clean shape the typed reader
(:mod:`ragmeter.trace._fast`) takes, gives the counts scoring needs and the id, without making
any text; any other line is marked deferred and read as without it (see the C file for what
it defers).  Built once per machine and CPU (``-O3 -march=native``) with the C compiler at
hand, like the local model's kernels (:func:`ragmeter._util._cbuild.build_library`), about
0.3 s once; no compiler, a failed build or ``RAGMETER_TRACE_SCAN=0``: :func:`scanner` is None
and every line goes through the typed reader, with the same results.
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.io._spill import EncodedLines

__all__ = ["Scan", "Scanner", "scanner", "SCAN_ENV"]

SOURCE = Path(__file__).with_name("_scan.c")
FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-std=gnu11")  # per CPU, as the kernels
#: ``0``: never use the scanner (the typed reader reads every line)
SCAN_ENV = "RAGMETER_TRACE_SCAN"


@dataclass(frozen=True)
class Scan:
    """What :meth:`Scanner.scan` found in a block of ``n`` lines (:attr:`n_lines`): ``starts`` (``n + 1``
    byte offsets, where each line begins, then the block's size), ``accepted`` (``n`` bools),
    and for the ``k`` accepted lines in order their ``counts`` (``(k, 5)`` int64: document
    sentences, relevant keys, utilized keys, distinct relevant keys also utilized,
    unsupported keys) and :attr:`ids` (blank ones as ``line-<number>``), given as the
    scanner wrote them: ``id_bytes``, each id followed by ``\\n``, and ``odd``, the accepted
    lines (0 to k - 1) whose id is made of spaces or non-ASCII bytes (blank when all are
    spaces); ``first``: the number of the block's first line."""

    starts: Any
    accepted: Any
    counts: Any
    id_bytes: bytes
    odd: list[int]
    first: int

    @property
    def n_lines(self) -> int:
        return len(self.accepted)

    @functools.cached_property
    def ids(self) -> list[str]:
        names = self.id_bytes.decode("utf-8").split("\n")[:len(self.counts)]
        if self.odd:
            import numpy as np

            numbers = self.first + np.flatnonzero(self.accepted)
            for i in self.odd:
                if names[i].isspace():
                    names[i] = f"line-{numbers[i]}"
        return names

    def encoded_ids(self) -> EncodedLines | None:
        """:attr:`ids` still encoded (nothing decoded), when none is odd."""
        return None if self.odd else EncodedLines(self.id_bytes, len(self.counts))


class Scanner:
    """The loaded library."""

    def __init__(self, library: ctypes.CDLL) -> None:
        pointer, i64 = ctypes.c_void_p, ctypes.c_int64
        library.rt_scan.argtypes = [pointer, i64, i64, i64, pointer, pointer, pointer, pointer,
                                    pointer, pointer, pointer]
        library.rt_scan.restype = i64
        library.rt_lines.argtypes = [pointer, i64]
        library.rt_lines.restype = i64
        self._scan = library.rt_scan
        self._lines = library.rt_lines

    def scan(self, data: Any, first: int, work: dict[str, Any] | None = None) -> Scan:
        """Scan ``data`` (bytes, or a buffer such as a bytearray's memoryview): whole lines
        (the last may lack its newline), the first of them line ``first``.  ``work``: a dict
        the caller keeps between the blocks of one file (one thread), where the scanner's
        output buffers are kept and reused (fresh ones a block cost page faults); the
        :class:`Scan` never refers to them."""
        import numpy as np

        view = np.frombuffer(data, dtype=np.uint8)
        address, size = view.ctypes.data, len(view)
        capacity = max(1024, size // 32)  # lines: counted first only when more come
        work = {} if work is None else work
        while True:
            if work.get("capacity", -1) < capacity or work["size"] < size:
                work.update(capacity=capacity, size=size,
                            starts=np.empty(capacity + 1, dtype=np.int64),
                            accepted=np.empty(capacity, dtype=np.uint8),
                            counts=np.empty((capacity, 5), dtype=np.int64),
                            ids=np.empty(size + 27 * capacity, dtype=np.uint8),
                            check=np.empty(capacity, dtype=np.uint8))
            starts, accepted, counts = work["starts"], work["accepted"], work["counts"]
            ids, check = work["ids"], work["check"]
            n_lines, written = ctypes.c_int64(), ctypes.c_int64()
            k = self._scan(address, size, capacity, first, ctypes.addressof(n_lines),
                           starts.ctypes.data, accepted.ctypes.data, counts.ctypes.data,
                           ids.ctypes.data, ctypes.addressof(written), check.ctypes.data)
            if k >= 0:
                break
            capacity = int(self._lines(address, size))
        del view  # the buffer is free again
        n = n_lines.value
        return Scan(starts[:n + 1].copy(), accepted[:n].view(np.bool_).copy(),
                    counts[:k].copy(), ids[:written.value].tobytes(),
                    np.flatnonzero(check[:k]).tolist(), first)


@functools.cache
def scanner() -> Scanner | None:
    """The scanner, built at first use; None without a C compiler, when the build fails or
    when ``RAGMETER_TRACE_SCAN=0`` (then the typed reader reads every line)."""
    if os.environ.get(SCAN_ENV, "").strip() == "0":
        return None
    try:
        from ragmeter._util._cbuild import build_library

        built = build_library("ragmeter-trace-scan", [SOURCE.read_bytes()],
                              lambda cc, out: [[cc, *FLAGS, "-o", out, str(SOURCE)]], FLAGS)
        return Scanner(ctypes.CDLL(str(built)))
    except (OSError, AttributeError):
        return None
    except Exception as error:  # a compiler that hung (subprocess, imported only to build)
        import subprocess

        if isinstance(error, subprocess.SubprocessError):
            return None
        raise
