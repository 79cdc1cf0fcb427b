"""What a rule sees: the algebra, the operand types, a way to run nested regions, and the
budget of the run."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from tv_mlir.algebra import Algebra, Kind
from tv_mlir.errors import Unsupported
from tv_mlir.ir import Block, Func, Op, TensorType
from tv_mlir.options import DEFAULT_MAX_UNROLL, MAX_EXECUTED_ELEMENTS, MAX_OPS


class RegionRunner(Protocol):
    def run_block(self, block: Block, args: Sequence[np.ndarray], batched: bool = False) -> list[np.ndarray]: ...
    def func(self, name: str, loc: str) -> Func: ...
    def run_call(self, op: Op, callee: str, args: Sequence[np.ndarray]) -> list[np.ndarray]: ...


@dataclass
class Budget:
    """What one run of one program may spend (`tv_mlir.options`): loop iterations, op
    executions and computed elements, counted over the whole run, so that a loop nested in
    a loop multiplies against one total instead of getting a budget per loop. Every
    per-device view of an SPMD run shares its run's budget."""

    max_iterations: int = DEFAULT_MAX_UNROLL
    max_ops: int = MAX_OPS
    max_elements: int = MAX_EXECUTED_ELEMENTS
    iterations: int = 0
    ops: int = 0
    elements: int = 0
    calls: list[str] = field(default_factory=list)  # the functions being run, outermost first
    blocks: int = 0  # blocks being run: regions in regions and function bodies in calls

    def iteration(self, op: Op) -> None:
        """One more trip through a while loop's body."""
        self.iterations += 1
        if self.iterations > self.max_iterations:
            raise Unsupported(f"while loops run over {self.max_iterations} iterations in all (the loop budget, "
                              "Options.max_unroll; nested loops multiply)", op.loc, "budget.unroll")

    def executed(self, op: Op) -> None:
        """One more op is about to run."""
        self.ops += 1
        if self.ops > self.max_ops:
            raise Unsupported(f"the program executes over {self.max_ops} ops (the op budget; a loop body "
                              "counts once per iteration)", op.loc, "budget.ops")

    def computed(self, op: Op, elements: int) -> None:
        """An op computed `elements` tensor elements."""
        self.elements += elements
        if self.elements > self.max_elements:
            raise Unsupported(f"the program computes over {self.max_elements} tensor elements (the element "
                              "budget; a loop body counts once per iteration)", op.loc, "budget.elements")


@dataclass
class OpContext:
    alg: Algebra
    operand_types: tuple[TensorType, ...]
    runner: RegionRunner
    budget: Budget = field(default_factory=Budget)
    # The operands are computed from literals alone (the interpreter tracks it): where a
    # symbolic rule folds constant elements, the numeric rule does the same here, or the
    # two programs' numeric runs differ where their terms do not (`_sqrt`).
    fixed_operands: bool = False

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
