"""IR dialects of telamalloc: the scratchpad dialect models on-chip memory allocation.

`make_context()` is the public way to get an xDSL `Context` that parses telamalloc's
programs: the scratchpad dialect with the upstream dialects its programs use (builtin,
func, arith, cf, memref, scf), the dialects the reference interpreter runs::

    from xdsl.parser import Parser
    from telamalloc.dialects import make_context

    module = Parser(make_context(), text).parse_module()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.ir import Dialect


def make_context(*dialects: Dialect) -> Context:
    """A new `Context` with builtin, func, arith, cf, math, memref, scf and scratchpad loaded,
    plus `dialects` (e.g. `xdsl.dialects.linalg.Linalg`) for a compiler that needs more."""
    from xdsl.context import Context
    from xdsl.dialects import arith, builtin, cf, func, math, memref, scf

    from telamalloc.dialects import scratchpad

    context = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, cf.Cf, math.Math, memref.MemRef, scf.Scf, scratchpad.Scratchpad, *dialects):
        if dialect.name not in context.registered_dialect_names:
            context.load_dialect(dialect)
    return context


__all__ = ["make_context"]
