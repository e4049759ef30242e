"""A GGUF file's header: metadata, tensor table and where the tensor data starts.

``gguf.GGUFReader`` builds a numpy view for every part of every metadata value; for a
49k-token vocabulary and its 49k merges that takes about 6 s on 2 cores, longer than
de-quantizing all the weights.  This reader walks the same layout (GGUF v2/v3, little-endian,
as specified in ggml's ``docs/gguf.md``) with ``struct`` over a memory map: metadata in a
fraction of a second, tensor data left in the file until asked for.  Values are parsed the
way transformers' GGUF loader parses them (integers and floats to Python numbers, strings
decoded as UTF-8, arrays to lists), so what the converter derives from them is the same.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["GgufFile", "GgufFormatError", "TensorInfo", "read_gguf"]

# value type id -> struct format of one item (8: string and 9: array are read apart)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_NUMPY = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?",
          10: "<u8", 11: "<i8", 12: "<f8"}
_STRING, _ARRAY = 8, 9
_DEFAULT_ALIGNMENT = 32


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]  # numpy order: ggml's dimensions reversed
    ggml_type: int
    offset: int  # from the start of the data section


@dataclass
class GgufFile:
    path: Path
    version: int
    metadata: dict[str, Any]
    tensors: list[TensorInfo]
    data_start: int
    buffer: mmap.mmap

    def close(self) -> None:
        try:
            self.buffer.close()
        except BufferError:
            pass  # a numpy view still points into it; the map goes when that view does


class GgufFormatError(ValueError):
    """The file is not a GGUF file this reader understands."""


def read_gguf(path: Path) -> GgufFile:
    """Parse ``path``'s header (raises :class:`GgufFormatError` for what it cannot read)."""
    with path.open("rb") as fh:
        buffer = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return _parse(path, buffer)
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        buffer.close()
        raise GgufFormatError(f"{path}: unreadable GGUF header ({exc})") from exc
    except GgufFormatError:
        buffer.close()
        raise


def _parse(path: Path, buf: mmap.mmap) -> GgufFile:
    if buf[:4] != b"GGUF":
        raise GgufFormatError(f"{path}: no GGUF magic bytes at the start")
    version, tensor_count, kv_count = struct.unpack_from("<IQQ", buf, 4)
    if version not in (2, 3):
        raise GgufFormatError(f"{path}: GGUF version {version} (this reader reads 2 and 3)")
    pos = 24
    metadata: dict[str, Any] = {}
    for _ in range(kv_count):
        key, pos = _string(buf, pos)
        (value_type,) = struct.unpack_from("<I", buf, pos)
        metadata[key], pos = _value(buf, pos + 4, value_type)
    tensors = []
    for _ in range(tensor_count):
        name, pos = _string(buf, pos)
        (n_dims,) = struct.unpack_from("<I", buf, pos)
        dims = struct.unpack_from(f"<{n_dims}Q", buf, pos + 4)
        pos += 4 + 8 * n_dims
        ggml_type, offset = struct.unpack_from("<IQ", buf, pos)
        pos += 12
        tensors.append(TensorInfo(name, tuple(int(d) for d in reversed(dims)), int(ggml_type),
                                  int(offset)))
    alignment = int(metadata.get("general.alignment", _DEFAULT_ALIGNMENT))
    data_start = (pos + alignment - 1) // alignment * alignment
    return GgufFile(path, int(version), metadata, tensors, data_start, buf)


def _string(buf: mmap.mmap, pos: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<Q", buf, pos)
    start = pos + 8
    return buf[start:start + length].decode("utf-8"), start + length


def _value(buf: mmap.mmap, pos: int, value_type: int) -> tuple[Any, int]:
    if value_type == _STRING:
        return _string(buf, pos)
    if value_type == _ARRAY:
        item_type, count = struct.unpack_from("<IQ", buf, pos)
        pos += 12
        if item_type in _NUMPY:
            import numpy as np

            values = np.frombuffer(buf, dtype=_NUMPY[item_type], count=count, offset=pos)
            return values.tolist(), pos + values.nbytes
        items = []
        for _ in range(count):
            item, pos = _value(buf, pos, item_type)
            items.append(item)
        return items, pos
    if value_type not in _SCALARS:
        raise GgufFormatError(f"unknown GGUF value type {value_type} at byte {pos}")
    fmt = _SCALARS[value_type]
    (value,) = struct.unpack_from(fmt, buf, pos)
    return value, pos + struct.calcsize(fmt)
