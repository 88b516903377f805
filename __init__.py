"""telamalloc: a static scratchpad allocator for machine-learning accelerators."""
