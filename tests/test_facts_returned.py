"""`ProgramFacts.returned_by` (value -> the function other than the entry that returns it,
and its first position among the returns) and `ProgramFacts.ops` are indexed once per
program: rule k's walk (`shrink/counts._follow`) scanned every function's returns for
each value it visited, a quarter of the flax train step's shrink planning."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import TESTDATA
from tv_mlir.frontend.read import load_module_mlir
from tv_mlir.ir import Module
from tv_mlir.shrink.facts import ProgramFacts

FILES = ["core/llama_train_step.ref.mlir", "flax/fwdbwd.ref.mlir", "flax/fwdbwd.shardy.mlir",
         "shrink_rules/accum_skip.small.ref.mlir"]

# @g returns its argument twice (positions 0 and 2) and its product once; @main returns
# values of its own, which the index leaves out (the entry's results are no call's).
HAND = """
module @m {
  func.func public @main(%arg0: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
    %0 = call @f(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
    %1:3 = call @g(%0) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
    return %0, %1#1 : tensor<2xf32>, tensor<2xf32>
  }
  func.func private @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func private @g(%arg0: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<2xf32>
    return %arg0, %0, %arg0 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
"""


def _scanned(m: Module, v: str) -> tuple[str, int] | None:
    """What `counts._returning` and `returns.index` found: the first function in module
    order, the entry left out, whose returns hold `v`, and its first position there."""
    for name, fn in m.funcs.items():
        if v in fn.body.returns and name != m.entry:
            return name, list(fn.body.returns).index(v)
    return None


def _values(m: Module) -> set[str]:
    out: set[str] = set()
    for fn in m.funcs.values():
        out.update(fn.body.args)
        for op in fn.body.walk():
            out.update(op.results)
            out.update(a for r in op.regions for a in r.args)
    return out


@pytest.mark.parametrize("name", FILES)
def test_the_index_is_the_scan(name: str) -> None:
    m = load_module_mlir(str(TESTDATA / name)).module
    fa = ProgramFacts.of("ref", m)
    returned = 0
    for v in sorted(_values(m)):
        got = fa.returned_by(v)
        assert got == _scanned(m, v), v
        returned += got is not None
    assert returned, "a program whose functions other than the entry return values"


def test_first_position_and_not_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "hand.mlir"
    path.write_text(HAND)
    m = load_module_mlir(str(path)).module
    fa = ProgramFacts.of("ref", m)
    g, f, main = m.funcs["g"], m.funcs["f"], m.funcs["main"]
    arg, product = g.body.args[0], g.body.ops[0].results[0]
    assert fa.returned_by(arg) == ("g", 0)  # returned at 0 and 2: the first
    assert fa.returned_by(product) == ("g", 1)
    assert fa.returned_by(f.body.returns[0]) == ("f", 0)
    for v in main.body.returns:  # the entry's results: no call returns them
        assert fa.returned_by(v) is None
    assert fa.returned_by(f.body.args[0]) is None  # an argument @f does not return


@pytest.mark.parametrize("name", FILES[:2])
def test_ops_are_the_walk_listed_once(name: str) -> None:
    m = load_module_mlir(str(TESTDATA / name)).module
    fa = ProgramFacts.of("ref", m)
    walked = [op for fn in m.funcs.values() for op in fn.body.walk()]
    assert [id(o) for o in fa.ops()] == [id(o) for o in walked]
    assert fa.ops() is fa.ops()
