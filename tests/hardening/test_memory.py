"""Memory on hostile files (issue 16): one 100 MB line, and 100 MB without any newline, are
rejected with a clear error (the line limit, 32 MiB by default) while the reading process stays
far below the size of the file.  Measured in a subprocess (its own peak RSS)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

# The peak is this process's own high-water mark (VmHWM, reset by execve).  getrusage's
# ru_maxrss is not: Linux keeps it across fork+exec, so a child of a pytest process that once
# held a 1.5 GB model would report 1.5 GB whatever it did itself.
_READ = """
import sys
from ragmeter.errors import InputError
from ragmeter.io import iter_rows
try:
    n = sum(1 for _ in iter_rows(sys.argv[1]))
    print("rows", n)
except InputError as err:
    print("error", str(err)[:300])
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
print("peak_mib", int(hwm[0].split()[1]) / 1024)
"""

SIZE = 100 * 1024 * 1024


def _write(path: Path, head: bytes, fill: bytes, tail: bytes) -> Path:
    with path.open("wb") as fh:
        fh.write(head)
        chunk = fill * (1 << 20)
        for _ in range(SIZE // len(chunk)):
            fh.write(chunk)
        fh.write(tail)
    return path


def _peak(path: Path) -> tuple[str, float]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    env.pop("RAGMETER_MAX_LINE_MB", None)
    done = subprocess.run([sys.executable, "-c", _READ, str(path)], env=env, text=True,
                          capture_output=True, timeout=300)
    lines = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines()
                 if line.startswith(("error ", "rows ", "peak_mib ")))
    assert done.returncode == 0 and "peak_mib" in lines, (done.stdout, done.stderr[-2000:])
    return lines.get("error", lines.get("rows", "")), float(lines["peak_mib"])


@pytest.mark.slow
@pytest.mark.parametrize("name, head, fill, tail", [
    ("line.jsonl", b'{"id": 1}\n{"id": "', b"x", b'"}\n'),        # one 100 MB line
    ("noline.jsonl", b"", b"x", b""),                            # 100 MB, no newline
    ("noline.json", b'[{"id": "', b"x", b""),                    # an array that never ends
    ("noline.csv", b'id,text\n1,"', b"x", b""),                  # a quote that never closes
])
@pytest.mark.skipif(not Path("/proc/self/status").exists(),
                    reason="reads the peak RSS from /proc (Linux)")
def test_hostile_line_is_rejected_in_bounded_memory(tmp_path, name, head, fill, tail):
    path = _write(tmp_path / name, head, fill, tail)
    message, peak_mib = _peak(path)
    assert "limit of 32 MiB" in message or "never closed" in message, message
    assert peak_mib < 200, f"peak RSS {peak_mib:.0f} MiB reading {name}"
