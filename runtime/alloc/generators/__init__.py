"""Generated allocation problems: deep-network traces (`tracegen`) for benchmarks, and
problems built to defeat exact search (`puzzles`) for tests of time limits and cancellation.
Imports only the allocator's vocabulary (no xDSL).
"""
