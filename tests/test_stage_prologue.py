"""Prologue values held by their arguments' layouts (tv_mlir/stages/prologue.py;
docs/stages.md, "Prologue slices"): a slice of an argument made alike on both sides is not
proved again. Each adversarial case is a claim that is false (checked numerically on the
mesh's blocks) and must not be taken as held; the accepted case's claim is checked true."""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import TESTDATA
from tv_mlir.api import verify
from tv_mlir.frontend.read import load_module_mlir
from tv_mlir.ir import Mesh, Sharding
from tv_mlir.stages import prologue
from tv_mlir.stages.lineage import Link
from tv_mlir.stages.plan import Side

MESH = Mesh((("tp", 2),))
SPLIT_1 = Sharding(MESH, ((), ("tp",)))  # [4, 8] split along dim 1: blocks [4, 4]
SPLIT_0 = Sharding(MESH, (("tp",), ()))  # split along dim 0: blocks [2, 8]
ROW = Sharding(MESH, (("tp",),))  # a [8] row split: blocks [4]


def _side(arg: str, start: tuple[int, int], limit: tuple[int, int], out: int, reshape: bool = True) -> Side:
    rows = limit[0] - start[0]
    sliced = f"tensor<{rows}x{limit[1] - start[1]}xf32>"
    body = (f"%0 = stablehlo.slice %arg0 [{start[0]}:{limit[0]}, {start[1]}:{limit[1]}] : "
            f"(tensor<{arg}xf32>) -> {sliced}\n")
    result = sliced
    if reshape:
        result = f"tensor<{out}xf32>"
        body += f"    %1 = stablehlo.reshape %0 : ({sliced}) -> {result}\n"
    last = "%1" if reshape else "%0"
    text = (f"func.func @main(%arg0: tensor<{arg}xf32>) -> {result} {{\n    {body}"
            f"    %2 = stablehlo.add {last}, {last} : {result}\n    return %2 : {result}\n}}\n")
    return Side.of(load_module_mlir(text.encode(), "t.mlir").module)


def _names(side: Side) -> tuple[str, str]:
    """(the argument, the value the last op reads: the prologue output) as read."""
    body = side.module.main.body
    return body.args[0], body.ops[-1].operands[0]


def _holds(other: Side, arg: Sharding | None, out: Sharding | None) -> bool:
    (o_arg, o_v), (r_arg, r_v) = _names(other), _names(REF)
    return prologue.holds_by_layout(o_v, Link(r_v, out), other, REF, {o_arg: Link(r_arg, arg)})


REF = _side("4x8", (1, 0), (2, 8), 8)  # reference: row 1 of a [4, 8] argument


def _claim(lo: tuple[int, int], hi: tuple[int, int], arg: Sharding, out: Sharding | None) -> bool:
    """Numerically: on each device, the other's slice of its block of w equals the
    output layout's block of the reference's row 1 of w."""
    w = np.arange(32.0).reshape(4, 8)
    want = w[1]
    for d in range(2):
        block = np.split(w, 2, axis=[k for k in range(2) if arg.dims[k]][0])[d]
        got = block[lo[0]:hi[0], lo[1]:hi[1]].reshape(-1)
        expect = np.split(want, 2)[d] if out is not None else want
        if got.shape != expect.shape or not np.array_equal(got, expect):
            return False
    return True


def test_a_slice_along_an_unsplit_dim_holds_by_layout() -> None:
    other = _side("4x4", (1, 0), (2, 4), 4)
    assert _claim((1, 0), (2, 4), SPLIT_1, ROW)
    assert _holds(other, SPLIT_1, ROW)


@pytest.mark.parametrize("case", ["other row", "sliced split dim", "output whole", "output split otherwise"])
def test_a_slice_whose_claim_is_false_is_proved(case: str) -> None:
    if case == "other row":  # the other slices row 2 where the reference takes row 1
        lo, hi, arg, out, other = (2, 0), (3, 4), SPLIT_1, ROW, _side("4x4", (2, 0), (3, 4), 4)
    elif case == "sliced split dim":  # row 1 of each device's [2, 8] block: rows 1 and 3
        lo, hi, arg, out, other = (1, 0), (2, 8), SPLIT_0, None, _side("2x8", (1, 0), (2, 8), 8)
    elif case == "output whole":  # the block claimed to be the whole row
        lo, hi, arg, out, other = (1, 0), (2, 4), SPLIT_1, None, _side("4x4", (1, 0), (2, 4), 4)
    else:  # the argument split along dim 0, the output claimed split along its row
        lo, hi, arg, out, other = (1, 0), (2, 8), SPLIT_0, ROW, _side("2x8", (1, 0), (2, 8), 8)
    assert not _claim(lo, hi, arg, out)
    assert not _holds(other, arg, out)


def test_the_switch_turns_the_rule_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prologue, "BY_LAYOUT", False)
    assert not _holds(_side("4x4", (1, 0), (2, 4), 4), SPLIT_1, ROW)


def test_a_reshape_on_one_side_only_is_proved() -> None:
    assert not _holds(_side("4x4", (1, 0), (2, 4), 4, reshape=False), SPLIT_1, ROW)


@pytest.mark.parametrize("on", [True, False])
def test_a_stack_prologue_is_held_by_layout(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """testdata/stages/grad_L4 (4 layers, fwd + bwd, tp x dp): every prologue value is a
    layer's slice of a stacked weight, held by layout; no prologue stage is proved, and the
    verdict is the same with the rule off (the prologue stage proves them)."""
    monkeypatch.setattr(prologue, "BY_LAYOUT", on)
    d = TESTDATA / "stages"
    v = verify(d / "grad_L4.ref.mlir", d / "grad_L4.shardy.mlir", cache=False, second_witness=False,
               full_size_check="off")
    assert v.verdict == "equivalent", v.reason
    assert v.stages is not None
    names = [r["name"] for r in v.stages["list"]]
    assert ("prologue" in names) != on, names[:3]
    assert bool(v.stages.get("prologue_by_layout")) == on
