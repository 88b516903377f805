"""Command-line tools: tela-opt, tela-alloc (and the benchmark scripts beside them)."""
