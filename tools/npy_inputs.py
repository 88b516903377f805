"""`--inputs A.npy,B.npy`: one `.npy` file per input, read for `tela-run` and `tela-import`.

Each file must be what `numpy.save` writes: one array, no pickled Python objects. A file
that is not (empty, a `.npz` archive, another format, damaged, object dtype) is an
`InputFileError` naming the file and what to do, never a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from telamalloc.ir_text import one_line

NPY_MAGIC = b"\x93NUMPY"  # how every .npy file starts (numpy.lib.format)
ZIP_MAGIC = b"PK\x03\x04"  # a .npz archive is a zip file
SAVE_HINT = "save each input with numpy.save"


class InputFileError(Exception):
    """An `--inputs` file that cannot be read as one array; the message names the file."""


def load_inputs(specs: Sequence[str]) -> list[np.ndarray] | None:
    """The arrays of `--inputs` (each spec a comma-separated list of files), None without any."""
    if not specs:
        return None
    return [load_input(path) for spec in specs for path in spec.split(",") if path]


def load_input(path: str) -> np.ndarray:
    """One `--inputs` file as an array; an `InputFileError` naming the file and what is wrong."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(len(NPY_MAGIC))
    except OSError as error:
        raise InputFileError(f"cannot read input '{path}': {error.strerror or one_line(str(error))}") from None
    if not head:
        raise InputFileError(f"cannot read input '{path}': the file is empty; {SAVE_HINT}")
    if head.startswith(ZIP_MAGIC):
        raise InputFileError(
            f"cannot read input '{path}': it is a .npz archive of several arrays; pass one .npy file per "
            f"input ({SAVE_HINT})"
        )
    if head != NPY_MAGIC:
        raise InputFileError(
            f"cannot read input '{path}': not a .npy file (it does not start with numpy's magic bytes "
            f"'\\x93NUMPY'); {SAVE_HINT}"
        )
    try:
        return np.load(path, allow_pickle=False)
    except OSError as error:
        raise InputFileError(f"cannot read input '{path}': {error.strerror or one_line(str(error))}") from None
    except ValueError as error:
        if "allow_pickle" in str(error):
            raise InputFileError(
                f"cannot read input '{path}': it holds Python objects (dtype 'object'); save a numeric array"
            ) from None
        raise InputFileError(
            f"cannot read input '{path}': a damaged or truncated .npy file ({one_line(str(error))}); {SAVE_HINT}"
        ) from None
