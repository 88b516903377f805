"""IR dialects of telamalloc: the scratchpad dialect models on-chip memory allocation."""
