"""The liveness and planning core over upstream MLIR's Python bindings: `MlirView`.

`MlirView(module)` walks an `mlir.ir.Module` once and keeps a light mirror of it: one
node per op, block, region and value, each holding its `mlir.ir` handle. The analyses
(`passes/analysis/liveness.py`, `passes/analysis/effects.py`, the collect step) run on these nodes through
the `IRView` interface (`passes/irview.py`), exactly as they run on xDSL's ops; the
planner (`telamalloc.interop.mlir_plan`) writes its answers back through the handles.
The mirror exists because the bindings hand out a new Python object at each access: the
nodes give the analyses the stable identities they key their tables by, and each op is
read through the bindings once.

What the bindings do not expose comes from the op knowledge our xDSL dialects carry:
which ops are terminators and which memory effects an op declares are read off the xDSL
op class of the same name (`IsTerminator`, `MemoryEffect` traits), so an op answers the
same in both front ends; an op xDSL does not know has unknown effects (it reads and
writes every memref it takes) and is no terminator, as an unregistered op in xDSL.
Types and attributes the collect step reads (memref shapes, `#scratchpad.target`,
`scratchpad.*` attributes) cross as xDSL attributes parsed from their text, once per
distinct text: the module itself never goes through text.

Limits: the mirror is a snapshot: an op created or erased through the bindings after
`MlirView(module)` is not seen (build a new view), but for the ops the view itself moves
(`move_before`, `move_after`) and the functions it puts in (`replace_function`,
`insert_function_after`), which it mirrors in their places. The lowering
(`passes/rewrite/lowering.py`) reads a function before it writes it, and never reads an op it
erased. Class-level effects: an xDSL trait whose
effects depend on the op instance (none in the memref, linalg, scf, vector and
bufferization dialects xDSL 0.74 defines) counts as unknown.
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from xdsl.dialects.builtin import ArrayAttr, FileLineColLoc, FunctionType, IntAttr, StringAttr, UnknownLoc
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Region
from xdsl.parser import Parser
from xdsl.traits import (
    IsTerminator,
    MemoryAllocEffect,
    MemoryEffect,
    MemoryFreeEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    NoMemoryEffect,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import ParseError, VerifyException

from telamalloc.interop.generic import MEMORY_SPACE_PREFIX, decode_memory_space, encode_memory_space, xdsl_context
from telamalloc.passes.analysis.written import WrittenArguments
from telamalloc.passes.irview import IRView

KNOWN_BY_NAME = frozenset({"scratchpad.alloc", "scratchpad.dealloc", "scratchpad.dma", "scratchpad.kernel",
                           "scratchpad.arena", "scratchpad.view", "memref.copy", "func.call"})
"""Ops `passes/analysis/effects.py` decides by name whatever xDSL knows of them."""


class MValue:
    """An SSA value: an op result or a block argument."""

    __slots__ = ("handle", "memref", "ranked", "uses", "index", "type", "owner")

    def __init__(self, handle: Any, memref: bool, ranked: bool, index: int, owner: MOp | MBlock | None = None):
        self.handle = handle
        self.memref = memref
        self.ranked = ranked
        self.uses: list[tuple[MOp, int]] = []
        self.index = index
        self.type: Attribute | None = None  # the xDSL type, once asked for
        self.owner = owner  # the op of a result, the block of an argument (None: outside the module)


class MOp:
    """An op; `results` is a list so that `Lifetime.value` reads it as xDSL's."""

    __slots__ = ("handle", "name", "operands", "results", "regions", "successors", "parent", "block")

    def __init__(self, handle: Any, name: str, parent: MOp | None, block: MBlock | None):
        self.handle = handle
        self.name = name
        self.operands: list[MValue] = []
        self.results: list[MValue] = []
        self.regions: list[MRegion] = []
        self.successors: list[MBlock] = []
        self.parent = parent
        self.block = block

    def __repr__(self) -> str:
        return f"MOp({self.name})"

    @property
    def location(self) -> Attribute:
        """The op's file position as an xDSL location (what `ir_text.source_location` and
        the outputs read), `UnknownLoc` when its MLIR location has none."""
        position = file_position(self.handle.location)
        if position is None:
            return UnknownLoc()
        name, line, column = position
        return FileLineColLoc(StringAttr(name), IntAttr(line), IntAttr(column))


class MBlock:
    __slots__ = ("handle", "ops", "args", "region")

    def __init__(self, handle: Any, region: MRegion):
        self.handle = handle
        self.ops: list[MOp] = []
        self.args: list[MValue] = []
        self.region = region


class MRegion:
    __slots__ = ("blocks", "owner")

    def __init__(self, owner: MOp):
        self.blocks: list[MBlock] = []
        self.owner = owner


_EFFECT_KINDS = {
    MemoryReadEffect: (True, False),
    MemoryWriteEffect: (False, True),
    MemoryAllocEffect: (False, False),
    MemoryFreeEffect: (False, False),
    NoMemoryEffect: (False, False),
}


class MlirView(IRView):
    """`IRView` over an `mlir.ir.Module` (see the module doc)."""

    def __init__(self, module: Any, scope: MlirView | None = None):
        operation = getattr(module, "operation", module)
        self.scope = scope  # the view whose functions a detached copy's calls call (spilling)
        self.package = bindings_package(operation)
        self.ir = importlib.import_module(f"{self.package}.ir")
        self._context = xdsl_context(allow_unregistered=True)  # reads types and attributes
        self._definitions = xdsl_context()  # the op classes xDSL defines (no stand-ins)
        self._types: dict[str, Attribute] = {}
        self._attributes: dict[str, Attribute] = {}
        self._integers: dict[int, Attribute] = {}  # the `i64` attributes, by value
        self._i64_type: Any = None
        self._classes: dict[str, Any] = {}
        self._terminators: dict[str, bool] = {}
        self._names: dict[MValue, str] | None = None
        self._signatures: dict[MOp, FuncOp] = {}
        self._written: dict[str, Any] = {}
        self.module = MOp(operation, operation.name, None, None)
        self._functions: list[MOp] = []
        self._symbols: dict[str, MOp] = {}
        self._build(self.module)
        self._call_writes = WrittenArguments(self).call_writes

    # -- the mirror --------------------------------------------------------------------
    def _build(self, root: MOp) -> None:
        """The mirror of `root`'s op and everything nested in it: one pre-order walk
        through the bindings (`Operation.walk` hands out plain operations, cheaper than
        iterating blocks, which builds an `OpView` per op)."""
        ir = self.ir
        memref_types = (ir.MemRefType, ir.UnrankedMemRefType)
        ranked_type = ir.MemRefType
        handles: list[Any] = []

        def visit(handle: Any) -> Any:
            handles.append(handle)
            return ir.WalkResult.ADVANCE

        root.handle.walk(visit, ir.WalkOrder.PRE_ORDER)
        values: dict[Any, MValue] = {}
        blocks: dict[Any, MBlock] = {}
        ops: list[MOp] = []
        pending_successors: list[tuple[MOp, list[Any]]] = []
        for position, handle in enumerate(handles):
            if position == 0:
                op = root
            else:
                block = blocks[handle.block]
                op = MOp(handle, handle.name, block.region.owner, block)
                block.ops.append(op)
            ops.append(op)
            for index, result in enumerate(handle.results):
                type_ = result.type
                value = MValue(result, isinstance(type_, memref_types), isinstance(type_, ranked_type), index, op)
                values[result] = value
                op.results.append(value)
            successors = handle.successors
            if len(successors):
                pending_successors.append((op, list(successors)))
            for region_handle in handle.regions:
                region = MRegion(op)
                op.regions.append(region)
                for block_handle in region_handle.blocks:
                    block = MBlock(block_handle, region)
                    blocks[block_handle] = block
                    region.blocks.append(block)
                    for index, argument in enumerate(block_handle.arguments):
                        type_ = argument.type
                        value = MValue(
                            argument, isinstance(type_, memref_types), isinstance(type_, ranked_type), index, block
                        )
                        values[argument] = value
                        block.args.append(value)
            if op.name == "func.func" and op.regions:
                self._functions.append(op)
                self._symbols.setdefault(self.symbol_name(op), op)
        # Operands once every value exists (a block argument or a result may be used
        # before its definition in the walk order: graph regions, branches).
        for op in ops:
            operands = op.operands
            for index, operand in enumerate(op.handle.operands):
                value = values.get(operand)
                if value is None:  # a value from outside the walked module
                    value = values[operand] = MValue(operand, False, False, 0)
                operands.append(value)
                value.uses.append((op, index))
        for op, successors in pending_successors:
            op.successors = [blocks[successor] for successor in successors]

    @staticmethod
    def _all_ops(root: MOp) -> Iterable[MOp]:
        stack = [root]
        while stack:
            op = stack.pop()
            yield op
            for region in reversed(op.regions):
                for block in reversed(region.blocks):
                    stack.extend(reversed(block.ops))

    def walk(self, op: MOp | None = None) -> Iterable[MOp]:
        """`op` (default: the module) and every op nested in it, in pre-order."""
        return self._all_ops(self.module if op is None else op)

    def functions(self, module: MOp | None = None) -> Sequence[MOp]:
        """The functions with a body of the module this view mirrors, in program order."""
        assert module is None or module is self.module, "a view answers for its own module"
        return [function for function in self._functions if function.regions[0].blocks]

    def dialect(self, name: str) -> Any:
        """The bindings' Python module of dialect `name` (`arith`, `memref`, `cf`), from the
        same package as the module's own `ir` (upstream's `mlir`, `iree.compiler`, ...)."""
        return importlib.import_module(f"{self.package}.dialects.{name}")

    def written_arguments(self) -> Any:
        return self._call_writes

    # -- structure ---------------------------------------------------------------------
    def name(self, op: MOp) -> str:
        return op.name

    def operands(self, op: MOp) -> Sequence[MValue]:
        return op.operands

    def results(self, op: MOp) -> Sequence[MValue]:
        return op.results

    def regions(self, op: MOp) -> Sequence[MRegion]:
        return op.regions

    def successors(self, op: MOp) -> Sequence[MBlock]:
        return op.successors

    def is_terminator(self, op: MOp) -> bool:
        known = self._terminators.get(op.name)
        if known is None:
            op_class = self._op_class(op.name)
            known = self._terminators[op.name] = op_class is not None and op_class.has_trait(IsTerminator)
        return known

    def parent_op(self, op: MOp) -> MOp | None:
        return op.parent

    def parent_block(self, op: MOp) -> MBlock | None:
        return op.block

    def blocks(self, region: MRegion) -> Sequence[MBlock]:
        return region.blocks

    def block_ops(self, block: MBlock) -> Sequence[MOp]:
        return block.ops

    def block_args(self, block: MBlock) -> Sequence[MValue]:
        return block.args

    def block_region(self, block: MBlock) -> MRegion | None:
        return block.region

    def block_owner(self, block: MBlock) -> MOp | None:
        return block.region.owner

    def region_owner(self, region: MRegion) -> MOp | None:
        return region.owner

    def uses(self, value: MValue) -> Iterable[tuple[MOp, int]]:
        return value.uses

    def has_uses(self, value: MValue) -> bool:
        return bool(value.uses)

    def is_memref(self, value: MValue) -> bool:
        return value.memref

    def is_ranked_memref(self, value: MValue) -> bool:
        return value.ranked

    def value_type(self, value: MValue) -> Attribute:
        if value.type is None:
            text = str(value.handle.type)
            found = self._types.get(text)
            if found is None:
                found = self._types[text] = self._parse(text, type_=True)
            value.type = found
        return value.type

    def attribute(self, op: MOp, name: str) -> Attribute | None:
        attributes = op.handle.attributes
        if name not in attributes:
            return None
        value = attributes[name]
        # Printing an attribute costs more than the rest of a read: the attributes planning
        # writes one of per buffer (its id, its offset) are read without their text.
        if isinstance(value, self.ir.StringAttr):
            with contextlib.suppress(UnicodeDecodeError):  # bytes that are no UTF-8: parsed below
                return StringAttr(value.value)
        if isinstance(value, self.ir.IntegerAttr) and value.type == self._i64(op):
            number = value.value
            found = self._integers.get(number)
            if found is None:
                found = self._integers[number] = self._parse(str(value), type_=False)
            return found
        text = str(value)
        found = self._attributes.get(text)
        if found is None:
            found = self._attributes[text] = self._parse(text, type_=False)
        return found

    def _i64(self, op: MOp) -> Any:
        """The module's `i64` type (its context's)."""
        if self._i64_type is None:
            self._i64_type = self.ir.IntegerType.get_signless(64, context=op.handle.context)
        return self._i64_type

    def name_hint(self, value: MValue) -> str | None:
        """MLIR keeps no SSA names from the text it parsed: the name its printer gives
        (`%alloc`, `%alloc_0`, ..., as `get_asm` would print the module)."""
        if self._names is None:
            state = self.ir.AsmState(self.module.handle)
            self._names = {}
            self._state = state
        name = self._names.get(value)
        if name is None:
            name = self._names[value] = value.handle.get_name(self._state).lstrip("%")
        return name

    def symbol_name(self, function: MOp) -> str:
        return self.ir.StringAttr(function.handle.attributes["sym_name"]).value

    def callee(self, call: MOp) -> MOp | None:
        if call.name != "func.call" or "callee" not in call.handle.attributes:
            return None
        symbol = self.ir.FlatSymbolRefAttr(call.handle.attributes["callee"]).value
        found = self._symbols.get(symbol)
        if found is None and self.scope is not None:
            return self.scope.callee(call)
        return found

    def declared_memrefs(self, function: MOp) -> frozenset[int]:
        function_type = self.ir.FunctionType(self.ir.TypeAttr(function.handle.attributes["function_type"]).value)
        return frozenset(i for i, type_ in enumerate(function_type.inputs) if isinstance(type_, self.ir.MemRefType))

    # -- values, for following sizes -------------------------------------------------------
    def defining_op(self, value: MValue) -> MOp | None:
        return value.owner if isinstance(value.owner, MOp) else None

    def argument_block(self, value: MValue) -> MBlock | None:
        return value.owner if isinstance(value.owner, MBlock) else None

    def value_index(self, value: MValue) -> int:
        return value.index

    def signature(self, function: MOp) -> FuncOp:
        """A body-less xDSL `func.func` with `function`'s name, type and argument attributes,
        parsed from their text once per function."""
        found = self._signatures.get(function)
        if found is None:
            ir = self.ir
            attributes = function.handle.attributes
            function_type = self._parse(str(ir.TypeAttr(attributes["function_type"]).value), type_=True)
            assert isinstance(function_type, FunctionType)
            arg_attrs = self.attribute(function, "arg_attrs")
            found = self._signatures[function] = FuncOp(
                self.symbol_name(function),
                function_type,
                Region(),
                arg_attrs=arg_attrs if isinstance(arg_attrs, ArrayAttr) else None,  # type: ignore[arg-type]
            )
        return found

    def set_attribute(self, op: MOp, name: str, value: Attribute) -> None:
        """Through the bindings: `value`'s text parsed by MLIR, once per distinct text."""
        text = str(value)
        parsed = self._written.get(text)
        if parsed is None:
            parsed = self._written[text] = self.ir.Attribute.parse(text, context=op.handle.context)
        op.handle.attributes[name] = parsed

    def set_property(self, op: MOp, name: str, value: Attribute) -> None:
        """MLIR keeps inherent and discardable attributes in one dictionary."""
        self.set_attribute(op, name, value)

    def remove_attribute(self, op: MOp, name: str) -> None:
        attributes = op.handle.attributes
        if name in attributes:
            del attributes[name]

    def move_before(self, op: MOp, anchor: MOp) -> None:
        """Through the bindings (`Operation.move_before`); the mirror's block takes the
        same order (`block_ops`, the walks and the liveness numbering read it)."""
        op.handle.move_before(anchor.handle)
        ops = self._detached(op, anchor)
        ops.insert(ops.index(anchor), op)

    def move_after(self, op: MOp, anchor: MOp) -> None:
        op.handle.move_after(anchor.handle)
        ops = self._detached(op, anchor)
        ops.insert(ops.index(anchor) + 1, op)

    @staticmethod
    def _detached(op: MOp, anchor: MOp) -> list[MOp]:
        """The mirror's ops of `anchor`'s block, `op` taken out of them (the same block)."""
        assert op.block is anchor.block and op.block is not None, "ops move within their block"
        ops = op.block.ops
        ops.remove(op)
        return ops

    def retype_allocation(self, op: MOp, type_: Attribute) -> Callable[[], None]:
        """Through the bindings (`Value.set_type`), our memory spaces spelled as MLIR reads
        them; the mirror's value takes the new type too."""
        old = self.value_type(op.results[0])
        self._set_result_type(op, type_)
        return lambda: self._set_result_type(op, old)

    def _set_result_type(self, op: MOp, type_: Attribute) -> None:
        handle = op.handle
        text = str(encode_memory_space(type_))
        handle.results[0].set_type(self.ir.Type.parse(text, context=handle.context))
        op.results[0].type = type_

    def replace_function(self, original: MOp, copy: Any) -> None:
        self.ir.InsertionPoint(original.handle).insert(copy)
        original.handle.erase()
        self._adopt(copy, original, replace=True)

    def insert_function_after(self, anchor: MOp, copy: Any) -> None:
        self.ir.InsertionPoint.after(anchor.handle).insert(copy)
        self._adopt(copy, anchor, replace=False)

    def _adopt(self, copy: Any, anchor: MOp, replace: bool) -> None:
        """The mirror learns a function put into the module after it was built (a view is a
        snapshot otherwise), read through a mirror of its own: its place among the
        functions and in `anchor`'s block (in `anchor`'s place, or after it), its parent
        (what the lowering reads a module's targets through) and its symbol."""
        function = MlirView(copy).module
        function.parent, function.block = anchor.parent, anchor.block
        siblings = anchor.block.ops if anchor.block is not None else []
        for listed in (siblings, self._functions):
            at = next((index for index, op in enumerate(listed) if op is anchor), None)
            if at is None:
                continue
            if replace:
                listed[at] = function
            else:
                listed.insert(at + 1, function)
        self._symbols[self.symbol_name(function)] = function

    def spill_rewriter(self) -> Any:
        from telamalloc.interop.mlir_spill import MlirSpillRewriter  # it reads IR through this module

        return MlirSpillRewriter(self)

    def builder(self) -> Any:
        from telamalloc.interop.mlir_lower import MlirBuilder  # it reads IR through this module

        return MlirBuilder(self)

    # -- memory effects ----------------------------------------------------------------
    def segment_sizes(self, op: MOp) -> Sequence[int] | None:
        attributes = op.handle.attributes
        if "operandSegmentSizes" not in attributes:
            return None
        return list(self.ir.DenseI32ArrayAttr(attributes["operandSegmentSizes"]))

    def declared_access(self, op: MOp, index: int) -> tuple[bool, bool] | None:
        return None  # our dialect's ops that declare them are decided by name (`effects`)

    def effects_access(self, op: MOp, index: int) -> tuple[bool, bool] | None:
        return self._effects(op)

    def _effects(self, op: MOp) -> tuple[bool, bool] | None:
        """(reads, writes) of `op` on every operand, from its xDSL class's traits."""
        op_class = self._op_class(op.name)
        if op_class is None:
            return None
        traits = [trait for trait in op_class.traits if isinstance(trait, MemoryEffect)]
        if not traits:
            return None
        reads = writes = False
        for trait in traits:
            if isinstance(trait, RecursiveMemoryEffect):
                for region in op.regions:
                    for block in region.blocks:
                        for nested in block.ops:
                            found = self._effects(nested)
                            if found is None:
                                return None
                            reads, writes = reads or found[0], writes or found[1]
                continue
            kinds = next((value for kind, value in _EFFECT_KINDS.items() if isinstance(trait, kind)), None)
            if kinds is None:
                return None  # effects that depend on the op instance: unknown here
            reads, writes = reads or kinds[0], writes or kinds[1]
        return reads, writes

    def unknown_effects(self, op: MOp) -> bool:
        """From the xDSL class of the same name, as `get_effects` answers for an xDSL op:
        an op xDSL does not know, or one without effect traits, has unknown effects; a
        class-level read or write (`MemoryReadEffect`, `MemoryWriteEffect`) names no value."""
        op_class = self._op_class(op.name)
        if op_class is None:
            return True
        if callable(getattr(op_class, "read_operands", None)):
            return False
        return self._unnamed_effects(op) is not False

    def _unnamed_effects(self, op: MOp) -> bool | None:
        """Whether `op` reads or writes memory of no value in particular; None when its
        effects are unknown (an instance-dependent trait counts as unknown here)."""
        op_class = self._op_class(op.name)
        if op_class is None:
            return None
        traits = [trait for trait in op_class.traits if isinstance(trait, MemoryEffect)]
        if not traits:
            return None
        unnamed = False
        for trait in traits:
            if isinstance(trait, RecursiveMemoryEffect):
                for nested in (inner for region in op.regions for block in region.blocks for inner in block.ops):
                    found = self._unnamed_effects(nested)
                    if found is None:
                        return None
                    unnamed = unnamed or found
                continue
            kinds = next((value for kind, value in _EFFECT_KINDS.items() if isinstance(trait, kind)), None)
            if kinds is None:
                return None
            unnamed = unnamed or kinds[0] or kinds[1]
        return unnamed

    def knows(self, name: str) -> bool:
        """Whether the planner knows what ops named `name` do to memory."""
        return self._op_class(name) is not None or name.startswith("linalg.") or name in KNOWN_BY_NAME

    def _op_class(self, name: str) -> Any:
        if name not in self._classes:
            self._classes[name] = self._definitions.get_optional_op(name)
        return self._classes[name]


    # -- text of types and attributes ----------------------------------------------------
    def _parse(self, text: str, *, type_: bool) -> Attribute:
        parser = Parser(self._context, text, "<mlir attribute>")
        try:
            parsed = parser.parse_type() if type_ else parser.parse_attribute()
        except ParseError as error:
            raise VerifyException(f"cannot read '{text}': {error.msg}") from None
        if MEMORY_SPACE_PREFIX in text:  # our memory space, written as a string for MLIR
            parsed = decode_memory_space(parsed, self._context)
        return parsed


def bindings_package(operation: Any) -> str:
    """The Python package of the MLIR bindings `operation` comes from: `mlir` for upstream's,
    `iree.compiler` for IREE's, ... (their native `ir` module lives at
    `<package>._mlir_libs._mlir.ir`). Two copies of the bindings cannot share one process,
    so the view takes the namespace from the objects it is given and imports no other."""
    module_name = type(operation).__module__
    for marker in ("._mlir_libs", ".ir", ".dialects"):
        if marker in module_name:
            return module_name.split(marker)[0]
    raise TypeError(f"'{type(operation).__name__}' is not an operation of MLIR's Python bindings")


def file_position(location: Any) -> tuple[str, int, int] | None:
    """(file, line, column) an MLIR location points at: a file location, the one inside
    a name or call-site location (the callee's), or the first of a fused one; None when
    it has none (as `telamalloc.locations.file_line_col`)."""
    pending = [location]
    while pending:
        current = pending.pop(0)
        kind = _location_kind(current)
        if kind == "file":
            return current.filename, current.start_line, current.start_col
        if kind == "name":
            pending.insert(0, current.child_loc)
        elif kind == "callsite":
            pending[:0] = [current.callee, current.caller]
        elif kind == "fused":
            pending[:0] = list(current.locations)
    return None


def _location_kind(location: Any) -> str | None:
    """'file', 'name', 'callsite', 'fused' or None. Bindings of MLIR 22 answer `is_a_file()`
    and so on on a plain `Location`; older ones (IREE 3.13's) hand out `FileLineColLoc`,
    `NameLoc`, `CallSiteLoc` and `FusedLoc` objects with the fields alone."""
    if location is None:
        return None
    if hasattr(location, "is_a_file"):
        for kind in ("file", "name", "callsite", "fused"):
            if getattr(location, f"is_a_{kind}")():
                return kind
        return None
    kinds = {"FileLineColLoc": "file", "NameLoc": "name", "CallSiteLoc": "callsite", "FusedLoc": "fused"}
    return kinds.get(type(location).__name__)


def mlir_location_text(location: Any, fallback: str) -> str:
    """`file:line:col` of an MLIR location; for one that names no file (a name, as
    importers give ops the names of their model's nodes), `loc("NAME")` as MLIR prints it;
    else `fallback`."""
    position = None if location is None else file_position(location)
    if position is not None:
        return f"{position[0]}:{position[1]}:{position[2]}"
    name = location_name(location)
    return fallback if name is None else f"loc({json.dumps(name)})"


def location_name(location: Any) -> str | None:
    """The first name inside an MLIR location (a name location, or one inside a fused or
    call-site location); None when it has none."""
    pending = [] if location is None else [location]
    while pending:
        current = pending.pop(0)
        kind = _location_kind(current)
        if kind == "name":
            return current.name_str
        if kind == "callsite":
            pending[:0] = [current.callee, current.caller]
        elif kind == "fused":
            pending[:0] = list(current.locations)
    return None
