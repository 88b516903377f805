"""The large-problem planner: best-fit and first-fit placement over a portfolio of named
orderings without lists of overlapping pairs (the Cython kernel ``_large``), then steps
that improve the best layout."""
