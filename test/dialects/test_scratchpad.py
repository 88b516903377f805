"""Python-level tests of the scratchpad dialect: byte sizes, builders, helpers, effects."""

import pytest
from xdsl.context import Context
from xdsl.dialects import func, test
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    Builtin,
    ComplexType,
    Float16Type,
    Float64Type,
    Float80Type,
    FloatAttr,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    VectorType,
    f32,
    i8,
    i32,
)
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.traits import MemoryEffectKind, get_effects
from xdsl.utils.exceptions import VerifyException

from telamalloc.dialects.scratchpad import AllocOp, ArenaOp, DeallocOp, DmaOp, KernelOp, Scratchpad, ViewOp
from telamalloc.dialects.scratchpad_types import (
    TARGET_ATTR_KEY,
    ScratchpadSpaceAttr,
    TargetAttr,
    element_byte_width,
    find_target,
    is_main_memory_memref,
    is_scratchpad_memref,
    memref_byte_size,
)
from telamalloc.passes.diagnostics import PassFailedAtOp

SPACE = ScratchpadSpaceAttr()


def scratch(shape, element=f32, space=SPACE):
    return MemRefType(element, shape, NoneAttr(), space)


@pytest.mark.parametrize(
    ("element", "width"),
    [
        (IntegerType(1), 1),  # sub-byte: a whole byte, no bit packing
        (IntegerType(4), 1),
        (i8, 1),
        (IntegerType(16), 2),
        (IntegerType(24), 4),  # 3 bytes rounded up to a power of two
        (i32, 4),
        (IntegerType(64), 8),
        (IntegerType(128), 16),
        (IndexType(), 8),
        (Float16Type(), 2),
        (BFloat16Type(), 2),
        (f32, 4),
        (Float64Type(), 8),
        (Float80Type(), 16),
        (ComplexType(f32), 8),
        (VectorType(f32, [4]), 16),
        (VectorType(f32, [3]), 16),  # 12 bytes rounded up to 16
        (VectorType(i8, [2, 3]), 8),
    ],
)
def test_element_byte_width(element, width):
    assert element_byte_width(element) == width


def test_element_byte_width_rejects_unknown_types():
    with pytest.raises(VerifyException, match="has no known byte width"):
        element_byte_width(StringAttr("x"))


def test_memref_byte_size():
    assert memref_byte_size(scratch([16, 16])) == 1024
    assert memref_byte_size(scratch([], i8)) == 1  # a 0-D memref holds one element
    assert memref_byte_size(scratch([0, 7])) == 0
    assert memref_byte_size(MemRefType(IntegerType(1), [10])) == 10
    with pytest.raises(VerifyException, match="dynamic shape"):
        memref_byte_size(scratch([DYNAMIC_INDEX, 4]))


def test_memory_space_predicates():
    assert is_scratchpad_memref(scratch([4]))
    assert is_scratchpad_memref(scratch([4], space=ScratchpadSpaceAttr("l2")))
    assert not is_scratchpad_memref(MemRefType(f32, [4]))
    assert is_main_memory_memref(MemRefType(f32, [4]))
    assert not is_main_memory_memref(scratch([4]))
    assert not is_main_memory_memref(f32)


def test_target_attr_builder_and_verifier():
    target = TargetAttr("l1", 1024, 64)
    assert (target.target_name.data, target.capacity.data, target.alignment.data) == (
        "l1",
        1024,
        64,
    )
    assert TargetAttr("l1", 8).alignment.data == 1
    with pytest.raises(VerifyException, match="capacity '0' must be positive"):
        TargetAttr("l1", 0)
    with pytest.raises(VerifyException, match="alignment '48' must be a power of two"):
        TargetAttr("l1", 1024, 48)
    with pytest.raises(VerifyException, match="target name must not be empty"):
        TargetAttr("", 1024)


def _function_with(ops, attributes=None):
    block = Block(ops)
    function = func.FuncOp("f", ((), ()), Region(block))
    if attributes:
        function.attributes.update(attributes)
    return function


def test_builders_produce_verified_ops():
    dynamic_size = test.TestOp(result_types=[IndexType()])
    main = test.TestOp(result_types=[MemRefType(f32, [16])])
    static = AllocOp(scratch([16]), alignment=64, offset=128)
    dynamic = AllocOp(scratch([DYNAMIC_INDEX, 4]), [dynamic_size], bound=256)
    copy_in = DmaOp(main, static)
    kernel = KernelOp("fill", [], [static], {"value": FloatAttr(0.0, f32)})
    matmul = KernelOp("matmul", [static, static], [static])
    free = DeallocOp(static)
    arena = ArenaOp(4096, alignment=64)
    view = ViewOp(arena, 1024, scratch([16, 16]))
    ops = [dynamic_size, main, static, dynamic, copy_in, kernel, matmul, free, arena, view]
    module = ModuleOp([_function_with([*ops, func.ReturnOp()])])
    module.verify()

    assert static.byte_size() == 64
    assert dynamic.byte_size() == 256
    assert dynamic.is_dynamic() and not static.is_dynamic()
    assert kernel.kernel_name == "fill"
    assert arena.byte_size == 4096
    assert view.byte_offset == 1024


def test_effective_alignment():
    assert AllocOp(scratch([4])).effective_alignment() == 4  # the f32 width
    assert AllocOp(scratch([4])).effective_alignment(default_alignment=64) == 64
    assert AllocOp(scratch([4], i8)).effective_alignment(default_alignment=2) == 2
    assert AllocOp(scratch([4]), alignment=2).effective_alignment(64) == 2  # declared wins


def test_builder_rejects_bad_offset_on_verify():
    alloc = AllocOp(scratch([16]), alignment=64, offset=32)
    with pytest.raises(VerifyException, match="offset '32' must be a multiple of the alignment '64'"):
        alloc.verify()


def test_memory_effects_name_the_values():
    main = test.TestOp(result_types=[MemRefType(f32, [16])])
    alloc = AllocOp(scratch([16]))
    other = AllocOp(scratch([16]))
    dma = DmaOp(main, alloc)
    kernel = KernelOp("add", [alloc, alloc], [other])
    free = DeallocOp(alloc)
    arena = ArenaOp(64)
    view = ViewOp(arena, 0, scratch([4]))

    def effects(op):
        return {(effect.kind, effect.value) for effect in get_effects(op)}

    assert effects(alloc) == {(MemoryEffectKind.ALLOC, alloc.memref)}
    assert effects(arena) == {(MemoryEffectKind.ALLOC, arena.arena)}
    assert effects(free) == {(MemoryEffectKind.FREE, alloc.memref)}
    assert effects(dma) == {
        (MemoryEffectKind.READ, main.results[0]),
        (MemoryEffectKind.WRITE, alloc.memref),
    }
    assert effects(kernel) == {
        (MemoryEffectKind.READ, alloc.memref),
        (MemoryEffectKind.WRITE, other.memref),
    }
    assert effects(view) == set()


def test_find_target_walks_up_to_the_closest_carrier():
    inner = AllocOp(scratch([4]))
    function = _function_with([inner, func.ReturnOp()], {TARGET_ATTR_KEY: TargetAttr("f", 64)})
    module = ModuleOp([function])
    module.attributes[TARGET_ATTR_KEY] = TargetAttr("m", 128)
    assert find_target(inner).target_name.data == "f"
    assert find_target(module).target_name.data == "m"
    del function.attributes[TARGET_ATTR_KEY]
    assert find_target(inner).target_name.data == "m"
    del module.attributes[TARGET_ATTR_KEY]
    assert find_target(inner) is None


def test_find_target_rejects_a_foreign_attribute():
    function = _function_with([func.ReturnOp()], {TARGET_ATTR_KEY: StringAttr("l1")})
    with pytest.raises(VerifyException, match="must be a '#scratchpad.target<...>' attribute"):
        find_target(function)


def test_pass_failed_at_op_carries_the_op():
    alloc = AllocOp(scratch([4]))
    error = PassFailedAtOp(alloc, "buffers need 1536 bytes at op #7 but capacity is 1024")
    assert error.op is alloc
    assert str(error) == "buffers need 1536 bytes at op #7 but capacity is 1024"


def test_dialect_registers_every_op_and_attribute():
    assert {op.name for op in Scratchpad.operations} == {
        "scratchpad.alloc",
        "scratchpad.dealloc",
        "scratchpad.dma",
        "scratchpad.kernel",
        "scratchpad.arena",
        "scratchpad.view",
    }
    assert {attr.name for attr in Scratchpad.attributes} == {
        "scratchpad.space",
        "scratchpad.target",
    }


def test_parse_print_round_trip_in_python():
    text = """
    func.func @f(%x: memref<8xf32>) attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 64, alignment = 8>} {
      %a = scratchpad.alloc() align 8 offset 32 : memref<8xf32, #scratchpad.space>
      scratchpad.dma %x -> %a : memref<8xf32> -> memref<8xf32, #scratchpad.space>
      func.return
    }
    """
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(func.Func)
    ctx.load_dialect(Scratchpad)
    module = Parser(ctx, text).parse_module()
    module.verify()
    printed = str(module)
    reparsed = Parser(ctx, printed).parse_module()
    assert str(reparsed) == printed
    alloc = next(op for op in module.walk() if isinstance(op, AllocOp))
    assert alloc.offset is not None and alloc.offset.value.data == 32
    assert find_target(alloc) == TargetAttr("l1", 64, 8)
