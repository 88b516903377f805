"""ONNX string tensors in the scratchpad: each string in a fixed slot of bytes.

An ONNX string is variable-length, and a static plan needs every buffer's size before the
program runs. With a declared bound (`tela-import --string-width BYTES`,
`ImportOptions.string_width`) a string tensor of shape `S` is the `i8` memref of shape
`S + (BYTES,)`: each string's UTF-8 bytes, then NULs to the end of its slot (a string
itself holding NUL bytes cannot be told from its padding: `encode` refuses it). A string
longer than the bound is an error where it is written (an input, a constant, a kernel's
output), never a silent truncation.

`encode` and `decode` convert between numpy arrays of Python strings (what ONNX's
reference implementation computes on, `dtype=object`) and those byte slots (`int8`).
"""

from __future__ import annotations

import numpy as np


class StringSlotError(ValueError):
    """A string that does not fit its slot, or slot bytes that are no UTF-8 text."""


def encode(values, width: int) -> np.ndarray:
    """`values` (strings or bytes, any shape) as `int8` slots of `width` bytes: shape
    `values.shape + (width,)`. `StringSlotError` naming the first string that is longer
    than `width` bytes in UTF-8 or holds a NUL byte."""
    array = np.asarray(values, dtype=object)
    slots = np.zeros(array.shape + (width,), dtype=np.uint8)
    for index in np.ndindex(array.shape):
        value = array[index]
        data = value if isinstance(value, bytes) else str(value).encode("utf-8")
        if len(data) > width:
            raise StringSlotError(f"string {_shown(data)} at {_at(index)} takes {len(data)} bytes in UTF-8, more than "
                                  f"the string width of {width} bytes; import with a larger --string-width")
        if b"\0" in data:
            raise StringSlotError(f"string {_shown(data)} at {_at(index)} holds a NUL byte, which the scratchpad's "
                                  "NUL-padded string slots cannot keep")
        slots[index][: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return slots.view(np.int8)


def decode(slots: np.ndarray) -> np.ndarray:
    """The strings of `int8` (or `uint8`) slots of shape `S + (width,)`: an object array of
    shape `S`. `StringSlotError` naming the first slot that is no UTF-8 text (random bytes,
    e.g. `tela-run`'s random inputs: give string inputs with `--inputs`)."""
    raw = np.ascontiguousarray(slots).view(np.uint8)
    shape, width = raw.shape[:-1], raw.shape[-1]
    strings = np.empty(shape, dtype=object)
    for index in np.ndindex(shape):
        data = raw[index].tobytes().rstrip(b"\0")
        try:
            strings[index] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise StringSlotError(f"the {width}-byte string slot at {_at(index)} is not UTF-8 text; give string "
                                  "inputs as UTF-8 bytes, NUL-padded to the string width") from None
    return strings


def _at(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def _shown(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    return repr(text if len(text) <= 24 else text[:21] + "...")
