"""The analyses: they read the IR through its front end's view (`passes/irview.py`) and
never change it. Liveness (`liveness.py`), which operands an op reads and writes
(`effects.py`), which arguments a function writes (`written.py`), use points for spilling
(`uses.py`), the scheduling graph of a block (`dependences.py`), symbolic sizes
(`sizes.py`) and each function's allocation problem (`collect.py`)."""
