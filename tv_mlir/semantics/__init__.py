"""Op semantics, written once over an element algebra. `TABLE` maps an op name to a rule
`rule(ctx, op, args) -> list of arrays`; `interp.Interpreter` drives it."""
from __future__ import annotations

from tv_mlir.semantics import bits, control, convolution, dynamic, elementwise, linalg, random, reduction, shape, window
from tv_mlir.semantics.common import OpContext, Rule

TABLE: dict[str, Rule] = {}
for _mod in (elementwise, shape, reduction, control, bits, window, convolution, dynamic, linalg, random):
    TABLE.update(_mod.RULES)

__all__ = ["TABLE", "OpContext", "Rule"]
