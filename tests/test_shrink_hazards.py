"""Facts the shape-shrinking pass (docs/shrinking.md) must respect, checked with the
verifier itself: a pair of symmetric, sum-only programs equal at size 2 and different at
size 3 (Newton's identity), so "reduced dimensions at least 2" is not a sound bound."""
from __future__ import annotations

import pytest

import tv_mlir
from tests.newton import newton_lines


def newton_pair(n: int) -> tuple[str, str]:
    t = f"tensor<{n}xf32>"
    head = "module {\n func.func public @main(%x: " + t + ") -> tensor<f32> {\n"
    zero = "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"

    def s(name: str, arg: str) -> str:
        return (f"  {name} = stablehlo.reduce({arg} init: %z) applies stablehlo.add across dimensions = [0]"
                f" : ({t}, tensor<f32>) -> tensor<f32>\n")

    p = (head + zero + f"  %x2 = stablehlo.multiply %x, %x : {t}\n  %x3 = stablehlo.multiply %x2, %x : {t}\n"
         + s("%p3", "%x3") + "  return %p3 : tensor<f32>\n }\n}\n")
    q = (head + zero + f"  %x2 = stablehlo.multiply %x, %x : {t}\n" + s("%p1", "%x") + s("%p2", "%x2")
         + newton_lines("%p1", "%p2", "%r") + "  return %r : tensor<f32>\n }\n}\n")
    return p, q


@pytest.mark.parametrize("n,expect", [(2, "equivalent"), (3, "not-equivalent"), (4, "not-equivalent")])
def test_newton_pair_needs_the_degree_not_two(n: int, expect: str) -> None:
    p, q = newton_pair(n)
    assert tv_mlir.verify(p, q).verdict == expect
