"""The converted model's weights as the numpy forward pass multiplies them.

Two files of the converted folder (:mod:`ragmeter.backends._local._cache`) serve:

* ``model-blocks.safetensors`` with the block kernel (:mod:`ragmeter.backends._local._kernel`):
  every matrix keeps the GGUF's Q4_1 or Q8_0 blocks, q/k/v and gate/up fused into one matrix
  each.  A product with a few rows of activations (decoding: one row per sequence) runs in the
  kernel, which de-quantizes each block in registers and reads 5.6 times fewer bytes than
  float32 weights; a product with many rows (a prompt) goes through numpy's BLAS, whose matrix
  product is faster than the kernel's once the weights are reused across rows, with the matrix
  de-quantized on its first such product (bit for bit the float32 copy's values) and kept for
  the next ones (at most the float32 model's size, 425 MB for SmolLM2-135M's layers);
* ``model.safetensors``, float32, without the kernel: every product through numpy's BLAS, as
  views of one memory map (``x @ W.T`` with ``W.T`` a view: no copy).

Either way the weights are memory-mapped and read-only, and every matrix is used as ``x @ W.T``
with ``W`` ``(out, in)`` as Hugging Face stores it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["Dense", "Blocks", "Layer", "Weights", "load_weights", "load_safetensors_numpy"]

_DTYPES = {"F32": "float32", "F16": "float16", "U8": "uint8"}
_BLOCK_TYPES = {"Q4_1": 3, "Q8_0": 8}


def _layout(path: Path) -> tuple[Any, dict[str, Any], list[tuple[str, str, list[int], int, int]]]:
    """:func:`~ragmeter.backends._local._fast.safetensors_layout` and the file's metadata."""
    from ragmeter.backends._local._fast import safetensors_layout

    mapped, layout = safetensors_layout(path)
    size = int.from_bytes(mapped[:8], "little")
    return mapped, dict(json.loads(mapped[8:8 + size]).get("__metadata__") or {}), layout


def load_safetensors_numpy(path: Path) -> dict[str, Any]:
    """The tensors of a safetensors file as read-only numpy views of one memory map."""
    import numpy as np

    mapped, _, layout = _layout(path)
    tensors: dict[str, Any] = {}
    for name, code, shape, offset, length in layout:
        if code not in _DTYPES:
            raise RuntimeError(f"{path}: tensor {name} has dtype {code}; the numpy runtime "
                               "reads F32, F16 or U8")
        dtype = np.dtype(_DTYPES[code])
        flat = np.frombuffer(mapped, dtype=dtype, count=length // dtype.itemsize, offset=offset)
        tensors[name] = flat.reshape(shape)
    return tensors


class Dense:
    """``x @ W.T`` over float32 weights ``W`` ``(out, in)``, through numpy's BLAS."""

    def __init__(self, weight: Any) -> None:
        self.t = weight.T  # a view: BLAS reads it transposed
        self.nbytes = int(weight.nbytes)
        self.rows = int(weight.shape[0])

    def __call__(self, x: Any) -> Any:
        return x @ self.t

    def values(self, ids: Any) -> Any:
        return self.t.T[ids]


class Blocks:
    """``x @ W.T`` over ``W`` kept in quantized blocks ``(out, in / 32 * block bytes)``."""

    #: up to this many rows of ``x`` go through the kernel; more through de-quantized BLAS
    #: (measured on 2 cores: the kernel wins up to 8-16 rows)
    KERNEL_ROWS = 16

    def __init__(self, kernel: Any, ggml_type: int, blocks: Any, cols: int) -> None:
        self.kernel = kernel
        self.type = ggml_type
        self.blocks = blocks
        self.cols = int(cols)
        self.nbytes = int(blocks.nbytes)
        self.rows = int(blocks.shape[0])
        self._dense: Any = None
        self._dense_lock = threading.Lock()

    def __call__(self, x: Any) -> Any:
        if len(x) <= self.KERNEL_ROWS:
            return self.kernel.matmul(self.type, self.blocks, self.cols, x)
        return x @ self.dense().T

    def dense(self) -> Any:
        """``W`` as float32 ``(out, in)``: de-quantized on the first call and kept (a prompt
        pass's threads and every later pass share it; de-quantizing per product took ~8% of
        the demo's prompt passes)."""
        dense = self._dense
        if dense is None:
            with self._dense_lock:  # the other thread of a pass waits for this one's copy
                if self._dense is None:
                    self._dense = self.kernel.rows(self.type, self.blocks, self.cols)
                dense = self._dense
        return dense

    def values(self, ids: Any) -> Any:
        """Rows ``ids`` of ``W`` as float32 (the embedding look-up)."""
        return self.kernel.rows(self.type, self.blocks, self.cols, ids)


class Layer:
    """One decoder layer's norms and matrices; the projections return what Llama's separate
    ``q_proj``, ``k_proj``, ... would (from one fused matrix when the blocks file has it)."""

    def __init__(self, ln1: Any, ln2: Any, qkv: Sequence[Any], o: Any,
                 gate_up: Sequence[Any], down: Any) -> None:
        self.ln1, self.ln2, self.o, self.down = ln1, ln2, o, down
        self._qkv, self._gate_up = list(qkv), list(gate_up)
        self.nbytes = int(ln1.nbytes + ln2.nbytes + o.nbytes + down.nbytes
                          + sum(m.nbytes for m in self._qkv + self._gate_up))

    def qkv(self, x: Any, sizes: Sequence[int]) -> list[Any]:
        """``[x @ Wq.T, x @ Wk.T, x @ Wv.T]`` (``sizes``: their widths)."""
        if len(self._qkv) == 3:
            return [m(x) for m in self._qkv]
        return _split(self._qkv[0](x), sizes)

    def gate_up(self, x: Any) -> list[Any]:
        """``[x @ Wgate.T, x @ Wup.T]``."""
        if len(self._gate_up) == 2:
            return [m(x) for m in self._gate_up]
        both = self._gate_up[0](x)
        half = both.shape[-1] // 2
        return [both[:, :half], both[:, half:]]


def _split(y: Any, sizes: Sequence[int]) -> list[Any]:
    out, start = [], 0
    for size in sizes:
        out.append(y[:, start:start + size])
        start += size
    return out


class Weights:
    """Every weight of the model: ``layers``, ``final_norm``, the embedding look-up
    (:meth:`embed`) and the lm_head (:meth:`head`, tied to the embedding or not)."""

    def __init__(self, layers: list[Layer], final_norm: Any, embed: Any, head: Any,
                 vocab: int, kind: str) -> None:
        self.layers = layers
        self.final_norm = final_norm
        self._embed = embed
        self._head = head
        self.vocab = vocab
        self.kind = kind  # "f32" or "blocks"

    def embed(self, ids: Any) -> Any:
        return self._embed.values(ids)

    def head(self, h: Any) -> Any:
        return self._head(h)

    def step_weights(self) -> tuple[list[Any], list[int]] | None:
        """What the C decoding step (:class:`~ragmeter.backends._local._kernel.DecodeStep`)
        reads: per layer ``ln1, ln2`` (float32) and the fused ``qkv, o, gate_up, down`` blocks,
        then the final norm, the embedding's and the lm_head's blocks (arrays); and the block
        types, per layer ``qkv, o, gate_up, down``, then the embedding's and the lm_head's.
        None when the weights are not all of that form (float32 matrices, unfused ones)."""
        import numpy as np

        def norm(a: Any) -> bool:
            return (isinstance(a, np.ndarray) and a.dtype == np.float32
                    and a.flags.c_contiguous)

        def blocks(m: Any) -> bool:
            return isinstance(m, Blocks) and m.blocks.flags.c_contiguous

        arrays: list[Any] = []
        types: list[int] = []
        for layer in self.layers:
            mats = [*layer._qkv, layer.o, *layer._gate_up, layer.down]
            if (len(mats) != 4 or not all(map(blocks, mats))
                    or not (norm(layer.ln1) and norm(layer.ln2))):
                return None
            arrays += [layer.ln1, layer.ln2, *(m.blocks for m in mats)]
            types += [m.type for m in mats]
        if not (norm(self.final_norm) and blocks(self._embed) and blocks(self._head)):
            return None
        arrays += [self.final_norm, self._embed.blocks, self._head.blocks]
        return arrays, [*types, self._embed.type, self._head.type]

    def bytes_per_token(self) -> int:
        """Bytes of weights one decode step reads: every layer's, the final norm, the
        lm_head and one embedding row."""
        row = self._embed.nbytes // self.vocab
        return int(sum(layer.nbytes for layer in self.layers) + self.final_norm.nbytes
                   + self._head.nbytes + row)


def load_weights(folder: Path, config: Mapping[str, Any], kernel: Any = None) -> Weights:
    """The weights of a converted folder: the blocks file when ``kernel`` is given (and the
    file is there), else the float32 one."""
    layers = int(config["num_hidden_layers"])
    blocks_file = folder / "model-blocks.safetensors"
    if kernel is not None and blocks_file.is_file():
        return _load_blocks(blocks_file, layers, kernel)
    w = load_safetensors_numpy(folder / "model.safetensors")
    embed = Dense(w["model.embed_tokens.weight"])
    head = Dense(w["lm_head.weight"]) if "lm_head.weight" in w else embed  # tied: one tensor
    built = []
    for i in range(layers):
        p = f"model.layers.{i}."
        built.append(Layer(
            w[p + "input_layernorm.weight"], w[p + "post_attention_layernorm.weight"],
            [Dense(w[p + f"self_attn.{n}_proj.weight"]) for n in "qkv"],
            Dense(w[p + "self_attn.o_proj.weight"]),
            [Dense(w[p + f"mlp.{n}_proj.weight"]) for n in ("gate", "up")],
            Dense(w[p + "mlp.down_proj.weight"])))
    return Weights(built, w["model.norm.weight"], embed, head, embed.rows, "f32")


def _load_blocks(path: Path, layers: int, kernel: Any) -> Weights:
    import numpy as np

    mapped, meta, layout = _layout(path)
    if meta.get("format") != "ragmeter-blocks-1":
        raise RuntimeError(f"{path}: not a ragmeter blocks file ({meta.get('format')!r})")
    kinds = json.loads(meta["blocks"])
    tensors: dict[str, Any] = {}
    for name, code, shape, offset, length in layout:
        dtype = np.dtype(_DTYPES[code])
        array = np.frombuffer(mapped, dtype=dtype, count=length // dtype.itemsize,
                              offset=offset).reshape(shape)
        if name in kinds:
            kind, cols = kinds[name]
            tensors[name] = Blocks(kernel, _BLOCK_TYPES[kind], array, int(cols))
        else:
            tensors[name] = array
    embed = tensors["model.embed_tokens.weight"]
    head = tensors.get("lm_head.weight", embed)
    built = []
    for i in range(layers):
        p = f"model.layers.{i}."
        built.append(Layer(tensors[p + "input_layernorm.weight"],
                           tensors[p + "post_attention_layernorm.weight"],
                           [tensors[p + "self_attn.qkv_proj.weight"]],
                           tensors[p + "self_attn.o_proj.weight"],
                           [tensors[p + "mlp.gate_up_proj.weight"]],
                           tensors[p + "mlp.down_proj.weight"]))
    return Weights(built, tensors["model.norm.weight"], embed, head, embed.rows, "blocks")
