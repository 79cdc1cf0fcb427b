"""What a rule sees: the algebra, the operand types, and a way to run nested regions."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tv_mlir.algebra import Algebra, Kind
from tv_mlir.errors import Unsupported
from tv_mlir.ir import Block, Func, Op, TensorType


class RegionRunner(Protocol):
    def run_block(self, block: Block, args: Sequence[np.ndarray], batched: bool = False) -> list[np.ndarray]: ...
    def func(self, name: str, loc: str) -> Func: ...


@dataclass
class OpContext:
    alg: Algebra
    operand_types: tuple[TensorType, ...]
    runner: RegionRunner
    max_unroll: int = 100_000

    def kind(self, i: int = 0) -> Kind:
        return Kind.of(self.operand_types[i])


Rule = Callable[[OpContext, Op, list[np.ndarray]], list[np.ndarray]]


def unsupported(op: Op, what: str | None = None) -> Unsupported:
    return Unsupported(what or f"op {op.name} has no semantics", op.loc, op.name)


def concrete_bool(alg: Algebra, x: Any) -> bool | None:
    """A scalar predicate as a Python bool, or None when it is symbolic."""
    v = alg.constant_value(x, Kind.BOOL)
    return None if v is None else bool(v)


def scalar(a: np.ndarray) -> Any:
    return a.reshape(()).item() if a.dtype != object else a.reshape(())[()]
