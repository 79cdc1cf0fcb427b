"""Elementwise results kept by their operands' elements, across the two programs of a proof.

Why: a sharded program recomputes the reference's elementwise work on its shards. Once the
sweep has merged a shard's operands with the reference's (a gradient after its all-reduce,
a parameter, an optimizer moment), the shard's add, multiply, divide or select builds the
very terms the reference built already: hash-consing makes them the same objects, but only
after the algebra has done the work per element (an IEEE class case split per divide, the
polynomial normal form per product). An optimizer update is one such chain per parameter
element, on every shard.

Terms are hash-consed, so operand elements with equal keys (`Algebra.element_keys`: value
id and class per element) are equal terms, and a pure elementwise op applied to equal
operands with the same attributes and types computes the same result: taking the earlier
result is exact, not an approximation. Results are kept only when an op's every element is
computed, and taken only when every element is found (the reference's array against a
shard's block of it): a partial hit recomputes the whole array, which keeps the rules
themselves unchanged (they see whole arrays of the op's own shape)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tv_mlir.ir import Op
from tv_mlir.semantics.ops import ELEMENTWISE

# Ops whose result element is a function of the operand elements at the same position alone
# (and of the attributes and types, which the key holds): the project's elementwise ops
# (`semantics.ops.ELEMENTWISE`; the chlo.broadcast_* forms are left out there). Region ops,
# reductions, shape and index ops and the random generators are not among them.
MEMO_OPS = ELEMENTWISE
# Ops whose two operands commute (so do their IEEE classes and their NaN and signed-zero
# rules): keyed by the unordered pair, so the reference's a * b serves the shard's b * a,
# which XLA's partitioner writes as often as not.
COMMUTATIVE = frozenset({
    "stablehlo.add", "stablehlo.multiply", "stablehlo.maximum", "stablehlo.minimum",
    "stablehlo.and", "stablehlo.or", "stablehlo.xor",
})
MEMO = True  # the switch the tests flip
MIN_ELEMENTS = 16  # smaller results are cheaper to recompute than to key
# Entries kept in all (a few hundred bytes each: key, result element): past it results are
# still looked up but no more are recorded, so a large plan's memo stays well under its terms.
MAX_ENTRIES = 2_000_000


@dataclass
class ElementMemo:
    """Per op signature (name, attributes, operand and result types, literal-only
    operands): operand element keys -> result element."""

    tables: dict[Any, dict[Any, Any]] = field(default_factory=dict)
    hits: int = 0  # result elements taken from the memo
    entries: int = 0

    def apply(self, alg: Any, op: Op, sig: Any, args: Sequence[np.ndarray],
              compute: Callable[[], list[np.ndarray]]) -> list[np.ndarray]:
        """The op's results: from the memo when it holds every element, else `compute()`'s,
        recorded."""
        shape = op.result_types[0].shape
        size = math.prod(shape)  # of Python ints: np.prod costs microseconds per op
        if size < MIN_ELEMENTS or any(a.shape != shape for a in args):
            return compute()
        cols = []
        for a in args:
            k = alg.element_keys(a)
            if k is None:
                return compute()
            cols.append(k)
        if len(cols) == 1:
            keys = cols[0]
        elif len(cols) == 2 and _commutes(op):
            # A one-element set is a pair of equal operands (x * x): the set is the pair.
            keys = [frozenset(k) for k in zip(*cols)]
        else:
            keys = list(zip(*cols))
        table = self.tables.get(sig)
        if table is not None:
            get = table.get
            found = [get(k) for k in keys]
            if None not in found:
                out = np.empty(size, dtype=object)
                out[:] = found
                self.hits += size
                return [out.reshape(shape)]
        results = compute()
        if self.entries + size > MAX_ENTRIES:
            return results
        if table is None:
            table = self.tables[sig] = {}
        before = len(table)
        table.update(zip(keys, results[0].reshape(-1).tolist()))
        self.entries += len(table) - before
        return results


def _commutes(op: Op) -> bool:
    if op.name in COMMUTATIVE:
        return True
    return op.name == "stablehlo.compare" and op.attrs.get("comparison_direction") in ("EQ", "NE")


__all__ = ["COMMUTATIVE", "MEMO", "MEMO_OPS", "ElementMemo"]
