# Shared by runtime/alloc/exact/_search.pyx and runtime/alloc/large/_large.pyx (textual `include`): the
# range-maximum query of a bottom-up segment tree. The validator (_sweep.pyx) shares no code
# with the solvers on purpose.
# Needs: from libc.stdint cimport int64_t.


cdef inline int64_t _range_max(const int64_t* tree, int64_t width, int64_t lo, int64_t hi,
                               int64_t floor) noexcept nogil:
    """The largest of ``floor`` and the leaves ``lo .. hi - 1`` of a segment tree whose
    leaf ``s`` is ``tree[width + s]`` and whose inner node ``v`` holds (at least) the maximum
    of its children ``2v`` and ``2v + 1``: O(log width)."""
    cdef int64_t left = lo + width
    cdef int64_t right = hi + width
    cdef int64_t best = floor
    while left < right:
        if left & 1:
            if tree[left] > best:
                best = tree[left]
            left += 1
        if right & 1:
            right -= 1
            if tree[right] > best:
                best = tree[right]
        left >>= 1
        right >>= 1
    return best
