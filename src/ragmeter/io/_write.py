"""Writing results atomically (text, bytes, JSON, JSON Lines) and the output-path guard that
refuses an output which is one of the command's inputs.

Private to :mod:`ragmeter.io`, which re-exports the public names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# ---------------------------------------------------------------- writing

# How every writer encodes text that UTF-8 cannot hold (a lone surrogate, "\ud800"): as the
# escape \ud800.  Inside a JSON string that is the very escape that decodes back to it, so a
# JSON or JSON Lines output stays valid and exact; in other text it shows as written.  A writer
# never fails half-way on such text (issue 29.6; readers refuse it in user data, see
# ragmeter.text._unicode).
UTF8_ERRORS = "backslashreplace"


def utf8(text: str) -> bytes:
    """``text`` as UTF-8 bytes, lone surrogates escaped (:data:`UTF8_ERRORS`)."""
    return text.encode("utf-8", UTF8_ERRORS)



def _default_file_mode() -> int:
    """0o666 less the process umask: what ``open()`` would give a new file."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _temp_file(path: Path) -> tuple[int, str]:
    """A new, empty ``.<name>.<random>.tmp`` beside ``path``, opened for writing (0600, as
    ``tempfile.mkstemp``; not imported: it costs a small command more than its writing)."""
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                           0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")  # pragma: no cover


def _atomic_write(path: Path, write: Any, *, binary: bool = False,
                  private: bool = False) -> None:
    """Write through a temporary file in the same folder, then rename it over ``path``: a
    reader never sees half a file.  The file gets ordinary permissions (``mkstemp`` would
    leave it readable by its owner only), or 0600 in a new folder of 0700 with ``private``
    (run records hold every prompt and reply).

    A folder that cannot be written or a full disk is a :class:`~ragmeter.errors.UserError`
    naming the file; the previous file, if any, is left as it was.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700 if private else 0o777)
        fd, tmp = _temp_file(path)
    except OSError as exc:
        raise _write_error(path, exc) from None
    try:
        os.fchmod(fd, 0o600 if private else _default_file_mode())
        if binary:
            with os.fdopen(fd, "wb") as fb:
                write(fb)
                fb.flush()
                os.fsync(fb.fileno())
        else:
            with os.fdopen(fd, "w", encoding="utf-8", errors=UTF8_ERRORS, newline="\n") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise _write_error(path, exc) from None
        raise


def _why(exc: OSError) -> str:
    import errno

    return {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
            errno.EACCES: "permission denied", errno.EPERM: "permission denied",
            errno.EROFS: "the file system is read-only", errno.ENOENT: "no such file or folder",
            errno.EISDIR: "it is a folder"}.get(exc.errno or 0, exc.strerror or str(exc))


def os_error_message(exc: OSError) -> str:
    """One line for an operating-system error on a file the user named (CLI exit 2)."""
    name = f" {exc.filename!r}" if exc.filename else ""
    return (f"ragmeter: cannot use{name}: {_why(exc)}. Results already in the store are kept; "
            f"running the same command again resumes without paying again. Fix: check the "
            f"path and its permissions, or free disk space.")


def _write_error(path: Path, exc: OSError) -> Exception:
    from ragmeter.errors import UserError

    why = _why(exc)
    return UserError(
        f"ragmeter: cannot write {str(path)!r}: {why}. Nothing was written there (an earlier "
        f"file of that name is unchanged); results already stored in the store are kept, so "
        f"running the same command again resumes without paying again. Fix: free space or "
        f"choose a folder you can write to.")


def write_text(path: str | Path, text: str) -> None:
    """Write text (UTF-8) atomically."""
    _atomic_write(Path(path), lambda fh: fh.write(text))


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write bytes (a PNG, say) atomically."""
    _atomic_write(Path(path), lambda fb: fb.write(data), binary=True)


def write_bytes_stream(path: str | Path, write: Any, *, private: bool = False) -> None:
    """Call ``write(binary_file)`` on a temporary file, then rename it over ``path``
    (``private``: 0600, see :func:`_atomic_write`)."""
    _atomic_write(Path(path), write, binary=True, private=private)


def write_json(path: str | Path, obj: Any, *, private: bool = False) -> None:
    """Write ``obj`` as pretty JSON, atomically (a reader never sees half a file); ``private``
    makes the file 0600 (see :func:`_atomic_write`)."""
    def _write(fh: Any) -> None:
        json.dump(obj, fh, ensure_ascii=False, indent=2, allow_nan=False)
        fh.write("\n")

    _atomic_write(Path(path), _write, private=private)


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> int:
    """Write rows as JSON Lines, atomically; returns the number of rows."""
    count = 0

    def _write(fh: Any) -> None:
        nonlocal count
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False, allow_nan=False))
            fh.write("\n")
            count += 1

    _atomic_write(Path(path), _write)
    return count


# ---------------------------------------------------------------- the output-path guard


def same_file(a: str | Path, b: str | Path) -> bool:
    """True when both paths exist and are one file (through symlinks and hard links)."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_output(output: str | Path, inputs: Iterable[tuple[str, str | Path, str | None]],
                 *, label: str = "output") -> None:
    """Refuse an output that would replace an input, before any work is done.

    ``inputs`` holds ``(label, path, pattern)``: a file, or a folder with the glob pattern of
    the files read from it (``report`` reads ``*.json`` from its runs folder).  The output is
    compared by device and inode, so a symlink or hard link to an input is caught too.
    """
    from fnmatch import fnmatch

    from ragmeter.errors import ConfigError

    out = Path(output)
    if not out.exists():
        return
    for in_label, in_path, pattern in inputs:
        src = Path(in_path)
        clash = same_file(out, src)
        if not clash and pattern is not None and src.is_dir():
            clash = any(fnmatch(p.name, pattern) and same_file(out, p) for p in src.iterdir())
        if clash:
            raise ConfigError(
                f"ragmeter: {label} {str(out)!r} is the same file as the input {in_label} "
                f"{str(src)!r}; writing it would destroy the input. Nothing was done. "
                f"Fix: choose another output path.")
