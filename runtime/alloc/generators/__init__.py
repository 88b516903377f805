"""Generated allocation problems: the seeded trace families of the large planner's tuning
suite (`families`, whose shapes live in `tracegen`, `pipelines` and `workloads`, built with
`builder`), and problems built to defeat exact search (`puzzles`) for tests of time limits
and cancellation. Imports only the allocator's vocabulary (no xDSL).
"""
