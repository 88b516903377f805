"""Source locations: the file position inside any location attribute, and the location of
an op made from several."""

from xdsl.dialects import test
from xdsl.dialects.builtin import CallSiteLoc, FileLineColLoc, FusedLoc, IntAttr, NameLoc, NoneAttr, StringAttr, UnknownLoc

from telamalloc.locations import file_line_col, fused_location, location_text


def position(line: int, column: int = 3, file: str = "a.mlir") -> FileLineColLoc:
    return FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(column))


def op_at(location) -> test.TestOp:
    op = test.TestOp()
    op.location = location
    return op


def test_the_file_position_is_found_inside_every_kind_of_location():
    assert file_line_col(position(4)) == position(4)
    assert file_line_col(NameLoc(StringAttr("conv"), position(5))) == position(5)
    assert file_line_col(CallSiteLoc(position(6), position(7))) == position(6)  # the callee: where the op is
    assert file_line_col(FusedLoc([UnknownLoc(), position(8), position(9)], NoneAttr())) == position(8)
    assert file_line_col(FusedLoc([NameLoc(StringAttr("x"), UnknownLoc())], NoneAttr())) is None
    assert file_line_col(UnknownLoc()) is None and file_line_col(None) is None
    assert location_text(op_at(FusedLoc([position(2, 5)], NoneAttr())), "fallback") == "a.mlir:2:5"
    assert location_text(op_at(UnknownLoc()), "fallback") == "fallback"
    assert location_text(None, "fallback") == "fallback"


def test_an_op_made_from_several_fuses_their_known_locations_once_each():
    ops = [op_at(position(1)), op_at(UnknownLoc()), op_at(position(2)), op_at(position(1))]
    assert fused_location(ops) == FusedLoc([position(1), position(2)], NoneAttr())
    assert fused_location(ops[:2]) == position(1)
    assert fused_location([op_at(UnknownLoc())]) == UnknownLoc()
    assert fused_location([]) == UnknownLoc()
