"""chlo's special functions (what jax.scipy.special and gelu without the tanh approximation
lower to) and chlo.next_after. None is a polynomial: each is an uninterpreted function of
its operands in the symbolic algebras (equal arguments give equal results, listed as an
approximation in the verdict) and its real value in the numeric one
(`tv_mlir.algebra.special`)."""
from __future__ import annotations

import numpy as np

from tv_mlir.algebra import Kind
from tv_mlir.algebra.special import FLOAT_BITS
from tv_mlir.ir import Op
from tv_mlir.semantics.common import OpContext, Rule, unsupported


def _same_shape(args: list[np.ndarray]) -> list[np.ndarray]:
    from tv_mlir.semantics.elementwise import _same_shape as same  # elementwise adds these rules to its own

    return same(args)


def _special(name: str) -> Rule:
    def rule(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
        if any(ctx.kind(i) is not Kind.FLOAT for i in range(len(args))):
            raise unsupported(op, f"{op.name} on {ctx.operand_types[0].dtype}")
        return [ctx.alg.uf(name, _same_shape(args))]
    return rule


def _next_after(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    # The neighbour of x depends on x's type: one function per float type.
    dtype = ctx.operand_types[0].dtype
    if dtype not in FLOAT_BITS:
        raise unsupported(op, f"{op.name} on {dtype}")
    return [ctx.alg.uf(f"next_after_{dtype}", _same_shape(args))]


RULES: dict[str, Rule] = {
    "chlo.erfc": _special("erfc"),
    "chlo.erf_inv": _special("erf_inv"),
    "chlo.lgamma": _special("lgamma"),
    "chlo.digamma": _special("digamma"),
    "chlo.polygamma": _special("polygamma"),
    "chlo.zeta": _special("zeta"),
    "chlo.next_after": _next_after,
    # XLA's HLO has an erf instruction: its partitioned module, converted back, holds
    # mhlo.erf where the single-device lowering holds chlo.erf. The same function.
    "mhlo.erf": _special("erf"),
}
