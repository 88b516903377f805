"""The rewrites: the only code that adds, moves or removes ops, each written once over the
view and the front end's own small writer: the lowering to arenas and views
(`lowering.py`, through a `Builder`), its run-time form for symbolic sizes
(`parametric_lower.py`), the arena's deallocs (`arena.py`) and spilling (`spill.py`,
through a `SpillRewriter`)."""
