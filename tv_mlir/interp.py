"""Runs a function of the plain-data IR with an element algebra."""
from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .algebra import Algebra
from .errors import ShapeError, TvError, Unsupported
from .ir import Block, Func, Module, Op
from .semantics import TABLE, OpContext

# Sees every top-level op and its results; may return replacement results.
Observer = Callable[[Op, list[np.ndarray]], "list[np.ndarray] | None"]


@dataclass
class SharedValues:
    """Structural sharing across the two programs: an op applied to the very same argument
    arrays with the same attributes computes the same value, so the second program reuses
    the first one's result instead of building (and later proving) it again."""

    table: dict[tuple, list[np.ndarray]] = field(default_factory=dict)
    hits: int = 0
    _keep: list = field(default_factory=list)

    @staticmethod
    def key(op: Op, args: list[np.ndarray]) -> tuple | None:
        if op.regions and not _commutative_body(op):
            return None
        return (op.name, tuple(id(a) for a in args), repr(sorted(op.attrs.items(), key=lambda kv: kv[0])),
                op.result_types)

    def remember(self, key: tuple, args: list[np.ndarray], results: list[np.ndarray]) -> None:
        self._keep.append(args)  # the ids in the key must not be reused
        self.table[key] = results


def _commutative_body(op: Op) -> bool:
    from .semantics.reduction import _simple_reducer

    return op.name == "stablehlo.reduce" and len(op.regions) == 1 and _simple_reducer(op.regions[0]) is not None


@dataclass
class Interpreter:
    module: Module
    alg: Algebra
    max_unroll: int = 100_000
    observer: Observer | None = None  # sees every top-level op's results (for divergence reports)
    shared: SharedValues | None = None
    _env: ChainMap = field(default_factory=ChainMap)
    _types: ChainMap = field(default_factory=ChainMap)
    _depth: int = 0
    _batched: int = 0

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return self.run_func(self.module.main, inputs)

    def run_func(self, func: Func, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        # IEEE overflow, 0/0 and friends are values here, not warnings.
        with np.errstate(all="ignore"):
            return self.run_block(func.body, inputs)

    def func(self, name: str, loc: str) -> Func:
        if name not in self.module.funcs:
            raise Unsupported(f"call to unknown function @{name}", loc, "func.call")
        return self.module.funcs[name]

    def run_block(self, block: Block, args: Sequence[np.ndarray], batched: bool = False) -> list[np.ndarray]:
        """batched: the block is a scalar body (reducer, comparator) run on arrays of
        independent elements at once, so result shapes are those of the arguments."""
        self._env = self._env.new_child()
        self._types = self._types.new_child()
        self._depth += 1
        self._batched += batched
        try:
            for name, t, value in zip(block.args, block.arg_types, args):
                self._env[name] = value
                self._types[name] = t
            for op in block.ops:
                self._step(op)
            return [self._env[r] for r in block.returns]
        finally:
            self._depth -= 1
            self._batched -= batched
            self._env = self._env.parents
            self._types = self._types.parents

    def _step(self, op: Op) -> None:
        rule = TABLE.get(op.name)
        if rule is None:
            raise Unsupported(f"op {op.name} has no semantics", op.loc, op.name)
        try:
            args = [self._env[o] for o in op.operands]
            types = tuple(self._types[o] for o in op.operands)
        except KeyError as exc:
            raise ShapeError(f"{op.name} uses an undefined value {exc.args[0]}", op.loc) from None
        key = SharedValues.key(op, args) if self.shared is not None and self._depth == 1 else None
        if key is not None and key in self.shared.table:
            self.shared.hits += 1
            for name, t, value in zip(op.results, op.result_types, self.shared.table[key]):
                self._env[name] = value
                self._types[name] = t
            return
        ctx = OpContext(self.alg, types, self, self.max_unroll)
        try:
            results = [self.alg.canonical(r) for r in rule(ctx, op, args)]
        except TvError:
            raise
        except (ValueError, IndexError, KeyError, TypeError) as exc:
            raise ShapeError(f"{op.name}: {' '.join(str(exc).split())}", op.loc) from None
        for value, t in zip(results, op.result_types):
            if value.shape != t.shape and not self._batched:
                raise ShapeError(f"{op.name} produced shape {value.shape}, its type says {t}", op.loc)
        if self.observer is not None and self._depth == 1:
            results = self.observer(op, results) or results
        if key is not None:
            self.shared.remember(key, args, results)
        for name, t, value in zip(op.results, op.result_types, results):
            self._env[name] = value
            self._types[name] = t
