"""The C scanner of clean label lines (``trace score``, issue 26.3): ``_scan.c``.

It reads a block of JSON Lines and, for each line of exactly the clean shape the typed reader
(:mod:`ragmeter.trace._fast`) takes, gives the counts scoring needs and the id, without making
any text; any other line is marked deferred and read as without it (see the C file for what
it defers).  Built once per machine with the C compiler at hand, like the local model's
kernels (:func:`ragmeter._util._cbuild.build_library`), about 0.2 s once;
no compiler, a failed build or ``RAGMETER_TRACE_SCAN=0``: :func:`scanner` is None and every
line goes through the typed reader, with the same results.
"""

from __future__ import annotations

import ctypes
import functools
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Scan", "Scanner", "scanner", "SCAN_ENV"]

SOURCE = Path(__file__).with_name("_scan.c")
FLAGS = ("-O2", "-fPIC", "-shared", "-std=gnu11")
#: ``0``: never use the scanner (the typed reader reads every line)
SCAN_ENV = "RAGMETER_TRACE_SCAN"


@dataclass(frozen=True)
class Scan:
    """What :meth:`Scanner.scan` found in a block of ``n`` lines (:attr:`n_lines`): ``starts`` (``n + 1``
    byte offsets, where each line begins, then the block's size), ``accepted`` (``n`` bools),
    and for the ``k`` accepted lines in order their ``counts`` (``(k, 5)`` int64: document
    sentences, relevant keys, utilized keys, distinct relevant keys also utilized,
    unsupported keys) and ``ids`` (blank ones as ``line-<number>``)."""

    starts: Any
    accepted: Any
    counts: Any
    ids: list[str]

    @property
    def n_lines(self) -> int:
        return len(self.accepted)


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

    def scan(self, data: Any, first: int) -> Scan:
        """Scan ``data`` (bytes, or a buffer such as a bytearray's memoryview): whole lines
        (the last may lack its newline), the first of them line ``first``."""
        import numpy as np

        view = np.frombuffer(data, dtype=np.uint8)
        address, size = view.ctypes.data, len(view)
        capacity = max(1024, size // 32)  # lines: counted first only when more come
        while True:
            starts = np.empty(capacity + 1, dtype=np.int64)
            accepted = np.empty(capacity, dtype=np.uint8)
            counts = np.empty((capacity, 5), dtype=np.int64)
            ids = np.empty(size + 27 * capacity, dtype=np.uint8)
            check = np.empty(capacity, dtype=np.uint8)
            n_lines, written = ctypes.c_int64(), ctypes.c_int64()
            k = self._scan(address, size, capacity, first, ctypes.addressof(n_lines),
                           starts.ctypes.data, accepted.ctypes.data, counts.ctypes.data,
                           ids.ctypes.data, ctypes.addressof(written), check.ctypes.data)
            if k >= 0:
                break
            capacity = int(self._lines(address, size))
        del view  # the buffer is free again
        n = n_lines.value
        names = ids[:written.value].tobytes().decode("utf-8").split("\n")[:k]
        odd = np.flatnonzero(check[:k])
        if len(odd):  # ids of spaces and non-ASCII bytes: blank when all are spaces
            numbers = first + np.flatnonzero(accepted[:n])
            for i in odd.tolist():
                if names[i].isspace():
                    names[i] = f"line-{numbers[i]}"
        return Scan(starts[:n + 1], accepted[:n].view(np.bool_), counts[:k].copy(), names)


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
    except (OSError, subprocess.SubprocessError, AttributeError):
        return None
