"""stages/finite.py on loops that write stacks (issue 13, the 405B scan). A scan's forward
loop saves each layer's softmax denominator into a stack that starts as zeros, and its
backward loop divides by rows of it: the stack is positive only once every row has been
written (`_rewritten`), and a written update's own fact counts (`_JOINS`: the lattice took
a dynamic_update_slice's, a pad's and a concatenation's first operand's fact alone, so a
zeros stack of rows of any sign was 'non-negative', and a non-finite update 'finite')."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tv_mlir.api import prepare
from tv_mlir.frontend.read import load_module
from tv_mlir.options import Options
from tv_mlir.stages import finite
from tv_mlir.stages.finite import ANY, NONNEG, POS, Fact, value_facts

SCAN = Path(__file__).resolve().parents[1] / "testdata" / "scan_stacks"


def _scan(bound: int = 4, start: str = "%i", row: str = "%e", step: int = 1, init: int = 0) -> str:
    """x / S, S the stack of exp(x[i]) rows the loop writes at the counter i (zeros first)."""
    return f"""func.func @main(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {{
  %z = stablehlo.constant dense<0.0> : tensor<4x3xf32>
  %c0 = stablehlo.constant dense<{init}> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %s = %z) : tensor<i32>, tensor<4x3xf32>
    cond {{
      %n = stablehlo.constant dense<{bound}> : tensor<i32>
      %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %one = stablehlo.constant dense<{step}> : tensor<i32>
      %zero = stablehlo.constant dense<0> : tensor<i32>
      %row = stablehlo.dynamic_slice %x, %i, %zero, sizes = [1, 3] : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>
      %e = stablehlo.exponential %row : tensor<1x3xf32>
      %s2 = stablehlo.dynamic_update_slice %s, {row}, {start}, %zero : (tensor<4x3xf32>, tensor<1x3xf32>, tensor<i32>, tensor<i32>) -> tensor<4x3xf32>
      %i2 = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %i2, %s2 : tensor<i32>, tensor<4x3xf32>
    }}
  %q = stablehlo.divide %x, %r#1 : tensor<4x3xf32>
  return %q : tensor<4x3xf32>
}}"""


def _stack_and_quotient(text: str) -> tuple[Fact, Fact]:
    m = load_module(text)
    facts = value_facts(m, True)
    loop = next(op for op in m.main.body.ops if op.name == "stablehlo.while")
    return facts[loop.results[1]], facts[m.main.body.returns[0]]


def test_a_stack_written_whole_has_its_rows_fact() -> None:
    stack, quotient = _stack_and_quotient(_scan())
    assert stack.finite and stack.sign == POS
    assert quotient.finite  # the division the backward loop does is by a positive value


@pytest.mark.parametrize("kw", [
    {"bound": 3},  # the last row stays zero
    {"start": "%zero"},  # every trip writes row 0
    {"step": 2},  # rows 0 and 2 only
    {"init": 1},  # row 0 stays zero
])
def test_a_stack_with_a_row_never_written_keeps_its_zeros(kw: dict) -> None:
    stack, quotient = _stack_and_quotient(_scan(**kw))
    assert stack.finite and stack.sign == NONNEG
    assert not quotient.finite


def test_loosened_coverage_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The twins above can fail: count every loop as covering its stack and the one that
    leaves its last row zero is called positive."""
    monkeypatch.setattr(finite, "_covers", lambda *_: True)
    stack, quotient = _stack_and_quotient(_scan(bound=3))
    assert stack.sign == POS and quotient.finite


def test_a_start_past_the_end_is_clamped() -> None:
    """Counter values past the last row write the last row (the start is clamped): 0..5
    over 4 rows covers them."""
    stack, _ = _stack_and_quotient(_scan(bound=6))
    assert stack.sign == POS


def _joins(op: str) -> str:
    """A finite x joined with 1/0 (not finite) or with rows of any sign."""
    body = {
        "dus": "%r = stablehlo.dynamic_update_slice %z, %u, %c0, %c0 : "
               "(tensor<4x3xf32>, tensor<1x3xf32>, tensor<i32>, tensor<i32>) -> tensor<4x3xf32>",
        "concatenate": "%r = stablehlo.concatenate %z3, %u, dim = 0 : (tensor<3x3xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>",
        "pad": "%r = stablehlo.pad %z3, %s, low = [0, 0], high = [1, 0], interior = [0, 0] : "
               "(tensor<3x3xf32>, tensor<f32>) -> tensor<4x3xf32>",
    }[op]
    return f"""func.func @main(%x: tensor<1x3xf32>, %y: tensor<1x3xf32>) -> tensor<4x3xf32> {{
  %z = stablehlo.constant dense<0.0> : tensor<4x3xf32>
  %z3 = stablehlo.constant dense<0.0> : tensor<3x3xf32>
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %u = stablehlo.divide %x, %y : tensor<1x3xf32>
  %s1 = stablehlo.slice %x [0:1, 0:1] : (tensor<1x3xf32>) -> tensor<1x1xf32>
  %s = stablehlo.reshape %s1 : (tensor<1x1xf32>) -> tensor<f32>
  {body}
  return %r : tensor<4x3xf32>
}}"""


@pytest.mark.parametrize("op", ["dus", "concatenate", "pad"])
def test_what_is_joined_in_counts(op: str) -> None:
    m = load_module(_joins(op))
    fact = value_facts(m, True)[m.main.body.returns[0]]
    if op == "pad":  # zeros padded with x[0, 0], finite of any sign
        assert fact.finite and fact.sign == ANY
    else:
        assert not fact.finite  # x / y may be inf or NaN


def test_loosened_joins_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the first operand's fact alone (as before), the zeros' fact wins."""
    monkeypatch.setattr(finite, "_JOINS", frozenset())
    m = load_module(_joins("dus"))
    fact = value_facts(m, True)[m.main.body.returns[0]]
    assert fact.finite and fact.sign == NONNEG


def _backward_ieee_args(ref: Any) -> list[str]:
    """The backward loop's float carried values (as its body sees them) not known finite."""
    facts = value_facts(ref, True)
    backward = [op for op in ref.main.body.ops if op.name == "stablehlo.while"][-1]
    body = backward.regions[1]
    return [a for a, t in zip(body.args, body.arg_types) if t.is_float and not facts[a].finite]


def test_the_scan_backward_loop_carries_finite_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """testdata/scan_stacks (the 405B-family scan at small dims): the backward loop's
    carried gradient dx and its weight-gradient stacks are finite, so its body's stages
    take them as reals; with the coverage rule off they are IEEE inputs (what timed out in
    the 405B scan's weight-gradient stages)."""
    ref = prepare(str(SCAN / "grad_scan_L3.ref.mlir"), Options())
    assert _backward_ieee_args(ref) == []
    monkeypatch.setattr(finite, "_covers", lambda *_: False)
    assert len(_backward_ieee_args(ref)) >= 2


def _reduce(kind: str, init: str) -> str:
    """reduce `kind` over exp(x) (positive elements) along dim 1, from the init `init`: a
    literal, or `%p` (an input, finite of any sign)."""
    op = {"max": "maximum", "min": "minimum"}[kind]
    lit = init != "%p"
    return f"""func.func @main(%x: tensor<4x3xf32>, %p: tensor<f32>) -> tensor<4xf32> {{
  %e = stablehlo.exponential %x : tensor<4x3xf32>
  {f"%c = stablehlo.constant dense<{init}> : tensor<f32>" if lit else ""}
  %r = stablehlo.reduce(%e init: {"%c" if lit else "%p"}) across dimensions = [1] : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    reducer(%a: tensor<f32>, %b: tensor<f32>) {{
      %m = stablehlo.{op} %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }}
  return %r : tensor<4xf32>
}}"""


@pytest.mark.parametrize("kind, init, finite_, sign", [
    ("max", "0xFF800000", True, POS),  # -inf: absorbed by any element
    ("max", "-5.0", True, POS),  # a finite init only raises the maximum
    ("max", "0x7F800000", False, ANY),  # +inf wins over every element
    ("max", "0x7FC00000", False, ANY),  # NaN
    ("min", "0x7F800000", True, POS),  # +inf: absorbed (jnp.min's init)
    ("min", "-5.0", True, ANY),  # a finite init can be the minimum
    ("min", "%p", True, ANY),  # jnp.min(exp(x), initial=p): p < 0 is the result
    ("min", "0xFF800000", False, ANY),  # -inf wins
])
def test_a_reduction_counts_its_init(kind: str, init: str, finite_: bool, sign: int) -> None:
    """A max or min reduction's init is part of its result: the lattice called a max from
    +inf (or NaN) finite, and a min of positive elements from a negative init positive."""
    m = load_module(_reduce(kind, init))
    fact = value_facts(m, True)[m.main.body.returns[0]]
    assert fact.finite == finite_
    if finite_:
        assert fact.sign == sign


def test_an_init_ignored_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parametrized cases can fail: with every init taken as absorbed (the rule before),
    the min from a negative input is called positive and the max from +inf finite."""
    def ignores_inits(op: Any, f: list[Fact], nonempty: bool) -> Fact:
        n = len(f) // 2
        return Fact(True, min(x.sign for x in f[:n])) if all(x.finite for x in f[:n]) else finite.UNKNOWN

    monkeypatch.setattr(finite, "_reduce", ignores_inits)
    m = load_module(_reduce("min", "%p"))
    assert value_facts(m, True)[m.main.body.returns[0]].sign == POS
    m = load_module(_reduce("max", "0x7F800000"))
    assert value_facts(m, True)[m.main.body.returns[0]].finite
