"""Op semantics, written once over an element algebra. `TABLE` maps an op name to a rule
`rule(ctx, op, args) -> list of arrays`; `interp.Interpreter` drives it."""
from __future__ import annotations

from tv_mlir.semantics.common import OpContext, Rule
from tv_mlir.semantics import control
from tv_mlir.semantics import elementwise
from tv_mlir.semantics import reduction
from tv_mlir.semantics import shape

TABLE: dict[str, Rule] = {}
for _mod in (elementwise, shape, reduction, control):
    TABLE.update(_mod.RULES)

__all__ = ["TABLE", "OpContext", "Rule"]
