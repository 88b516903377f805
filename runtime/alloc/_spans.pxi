# Shared by runtime/alloc/_greedy.pyx and runtime/alloc/large/_large.pyx (textual `include`): byte ranges of
# placed neighbours and the best-fit / first-fit choice of an offset among them.
# Needs: from libc.stdint cimport int64_t; INT64_MAX_C defined by the including module.

ctypedef struct Span:
    int64_t lo
    int64_t hi


cdef void _sort_spans(Span* spans, int64_t left, int64_t right) noexcept nogil:
    """Sort spans[left..right] by ``lo``: quicksort (median of three, recursing into the
    smaller half) with insertion sort for short ranges: inlined comparisons, where libc's
    qsort makes a function call per comparison."""
    cdef int64_t i, j, middle, pivot
    cdef Span item
    while right - left > 16:
        middle = left + (right - left) // 2
        if spans[middle].lo < spans[left].lo:
            spans[middle], spans[left] = spans[left], spans[middle]
        if spans[right].lo < spans[left].lo:
            spans[right], spans[left] = spans[left], spans[right]
        if spans[right].lo < spans[middle].lo:
            spans[right], spans[middle] = spans[middle], spans[right]
        pivot = spans[middle].lo
        i = left
        j = right
        while i <= j:
            while spans[i].lo < pivot:
                i += 1
            while spans[j].lo > pivot:
                j -= 1
            if i <= j:
                spans[i], spans[j] = spans[j], spans[i]
                i += 1
                j -= 1
        if j - left < right - i:
            _sort_spans(spans, left, j)
            left = i
        else:
            _sort_spans(spans, i, right)
            right = j
    for i in range(left + 1, right + 1):
        item = spans[i]
        j = i - 1
        while j >= left and spans[j].lo > item.lo:
            spans[j + 1] = spans[j]
            j -= 1
        spans[j + 1] = item


cdef inline int64_t _align_up(int64_t value, int64_t alignment) noexcept nogil:
    cdef int64_t remainder = value % alignment
    if remainder == 0:
        return value
    return value + (alignment - remainder)


cdef int64_t _choose_offset(Span* spans, int64_t span_count, int64_t size,
                            int64_t alignment, int first_fit) noexcept nogil:
    """The offset for one buffer, given the byte spans of its placed neighbours."""
    cdef int64_t floor = 0, candidate, gap
    cdef int64_t best_offset = -1, best_gap = INT64_MAX_C
    cdef int64_t s
    _sort_spans(spans, 0, span_count - 1)
    for s in range(span_count):
        if spans[s].lo > floor:
            candidate = _align_up(floor, alignment)
            if candidate + size <= spans[s].lo:
                if first_fit:
                    return candidate
                gap = spans[s].lo - floor
                if gap < best_gap:
                    best_gap = gap
                    best_offset = candidate
        if spans[s].hi > floor:
            floor = spans[s].hi
    if best_offset >= 0:
        return best_offset
    return _align_up(floor, alignment)
