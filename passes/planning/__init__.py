"""The planning driver's steps between analysis and rewriting: a function's plan and its
diagnostics (`plans.py`), the memory of unassigned buffers (`memories.py`), the parametric
plan of symbolic sizes and its attributes (`parametric.py`), and the output files
(`outputs.py`). The driver itself is `passes/driver.py`."""
