"""cf ops xDSL's interpreter lacks: `cf.assert`.

`cf.assert %ok, "message"` faults (an `InterpreterError` at the op, with the message)
when `%ok` is false; the lowered code of a parametric plan checks its arena against the
capacity this way (`passes/rewrite/parametric_lower.py`).
"""

from __future__ import annotations

from xdsl.dialects import cf
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from telamalloc.errors import ErrorKind
from telamalloc.runtime.interp.machine import InterpreterError


@register_impls
class CfExtraFunctions(InterpreterFunctions):
    @impl(cf.AssertOp)
    def run_assert(self, interpreter: Interpreter, op: cf.AssertOp, args: PythonValues) -> PythonValues:
        if not args[0]:
            raise InterpreterError(f"'cf.assert' failed: {op.msg.data}", op, ErrorKind.NO)
        return ()
