"""Compiler passes: liveness analysis, planning and lowering of scratchpad allocations."""
