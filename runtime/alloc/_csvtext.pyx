# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The rows of a solution CSV as bytes, formatted in C (csv_io._solution_bytes): numbers in
decimal and text ids copied, cells joined by commas, each row ended by a newline. The loop
writes each byte once, where numpy's vectorised formatting spends most of its time in
strided byte writes and a boolean compaction (figures: docs/decisions.md)."""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

import numpy as np


cdef inline int _digit_count(int64_t value) noexcept nogil:
    cdef int count = 1
    while value >= 10:
        value //= 10
        count += 1
    return count


def format_rows(cells, Py_ssize_t count):
    """The text of ``count`` rows. ``cells``: one entry per column, either a 1-D int64 array
    of ``count`` non-negative numbers or a tuple (ASCII bytes of every row's text joined,
    a 1-D int64 array of ``count`` lengths). Raises ValueError on a negative number or on
    lengths that do not match."""
    cdef Py_ssize_t columns = len(cells), column, row, k
    cdef const int64_t** numbers = <const int64_t**>malloc(max(columns, 1) * sizeof(int64_t*))
    cdef const int64_t** lengths = <const int64_t**>malloc(max(columns, 1) * sizeof(int64_t*))
    cdef const unsigned char** texts = <const unsigned char**>malloc(max(columns, 1) * sizeof(unsigned char*))
    cdef int64_t* read_at = <int64_t*>malloc(max(columns, 1) * sizeof(int64_t))
    if numbers == NULL or lengths == NULL or texts == NULL or read_at == NULL:
        free(numbers); free(lengths); free(texts); free(read_at)
        raise MemoryError("out of memory formatting the solution's rows")
    cdef int64_t total = 0, value
    cdef const int64_t[::1] view
    cdef const unsigned char[::1] text_view
    cdef unsigned char* out
    cdef unsigned char digits[24]
    cdef int length
    keep = []  # the arrays the pointers point into
    try:
        for column in range(columns):
            cell = cells[column]
            read_at[column] = 0
            if isinstance(cell, tuple):
                text, sizes = cell
                sizes = np.ascontiguousarray(sizes, dtype=np.int64)
                if sizes.shape[0] != count or (count and (sizes.min() < 0 or int(sizes.sum()) != len(text))):
                    raise ValueError("text lengths do not match the rows")
                keep.extend((text, sizes))
                view = sizes
                lengths[column] = &view[0] if count else NULL
                numbers[column] = NULL
                if len(text):
                    text_view = text
                    texts[column] = &text_view[0]
                else:
                    texts[column] = NULL
                total += len(text)
            else:
                values = np.ascontiguousarray(cell, dtype=np.int64)
                if values.shape[0] != count or (count and values.min() < 0):
                    raise ValueError("numbers must be non-negative, one per row")
                keep.append(values)
                view = values
                numbers[column] = &view[0] if count else NULL
                lengths[column] = NULL
                texts[column] = NULL
                with nogil:
                    for row in range(count):
                        total += _digit_count(numbers[column][row])
        total += count * columns  # a comma after every cell but the last, a newline after it
        result = bytearray(total)
        if total == 0:
            return bytes(result)
        out = result
        k = 0
        with nogil:
            for row in range(count):
                for column in range(columns):
                    if numbers[column] != NULL:
                        value = numbers[column][row]
                        length = 0
                        while True:
                            digits[length] = 48 + value % 10
                            length += 1
                            value //= 10
                            if value == 0:
                                break
                        while length > 0:
                            length -= 1
                            out[k] = digits[length]
                            k += 1
                    else:
                        length = <int>lengths[column][row]
                        if length:
                            memcpy(&out[k], &texts[column][read_at[column]], length)
                        read_at[column] += length
                        k += length
                    out[k] = 10 if column == columns - 1 else 44  # newline or comma
                    k += 1
        return bytes(result)
    finally:
        free(numbers)
        free(lengths)
        free(texts)
        free(read_at)
