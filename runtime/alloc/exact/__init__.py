"""The exact path: TelaMalloc's search combined with canonical placements, per-section
inference, dominance, decomposition and restarts (the Cython kernel ``_search``), raced with
OR-Tools CP-SAT (``cpsat``) on the groups the kernel does not settle at once."""
