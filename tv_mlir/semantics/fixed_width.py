"""XLA's integers are fixed-width two's complement: every integer result is its
mathematical value reduced into its type's range (wrap-around on add, subtract, multiply,
negate, abs, convert, iota, sums and products; INT_MIN / -1 == INT_MIN; x / 0 == -1, all
bits set, which is 2**w - 1 for an unsigned type). The rules compute over the
mathematical integers and the interpreter reduces the results of every op here, so no
rule can forget it; the algebras make the reduction free where a value cannot leave the
range (`tv_mlir.algebra.intervals`)."""
from __future__ import annotations

import functools
import re

import numpy as np

from tv_mlir.algebra import Algebra
from tv_mlir.ir import Op, TensorType

_INT_DTYPE = re.compile(r"u?i(\d+)$")

# Ops whose integer results are elements of their integer operands, or constants of the
# type, or made by ops inside their regions (which are reduced themselves): nothing to do.
# Every other op's integer results are reduced, including ops added to the table later.
_KEEPS_RANGE = frozenset({
    "stablehlo.constant", "stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim",
    "stablehlo.broadcast", "stablehlo.slice", "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice",
    "stablehlo.gather", "stablehlo.concatenate", "stablehlo.pad", "stablehlo.select", "stablehlo.maximum",
    "stablehlo.minimum", "stablehlo.clamp", "stablehlo.reverse", "stablehlo.sort", "stablehlo.compare",
    "stablehlo.get_tuple_element", "stablehlo.tuple", "stablehlo.optimization_barrier",
    "stablehlo.all_gather", "stablehlo.all_to_all", "stablehlo.collective_permute",
    "stablehlo.collective_broadcast", "stablehlo.and", "stablehlo.or", "stablehlo.xor", "stablehlo.not",
    "stablehlo.sign", "stablehlo.remainder", "stablehlo.partition_id", "stablehlo.replica_id",
    "stablehlo.while", "stablehlo.case", "stablehlo.if", "func.call", "func.return", "stablehlo.return",
    "stablehlo.composite", "stablehlo.custom_call", "stablehlo.floor", "stablehlo.ceil",
    "stablehlo.round_nearest_even", "stablehlo.round_nearest_afz", "chlo.broadcast_maximum",
    "chlo.broadcast_minimum", "sdy.sharding_constraint", "sdy.manual_computation", "sdy.reshard", "mhlo.copy",
})


def int_width(t: TensorType) -> int | None:
    """The width of a fixed-width integer type (not i1, which is Boolean), else None."""
    return _dtype_width(t.dtype)


@functools.cache
def _dtype_width(dtype: str) -> int | None:
    # Asked for every result of every op the interpreter runs: a dozen dtypes in all.
    m = _INT_DTYPE.match(dtype)
    if m is None or dtype == "i1":
        return None
    return int(m.group(1))


def reduces(op: Op) -> bool:
    """Whether the op's integer results may leave their type's range."""
    return op.name not in _KEEPS_RANGE and any(int_width(t) is not None for t in op.result_types)


def reduce_results(alg: Algebra, op: Op, results: list[np.ndarray]) -> list[np.ndarray]:
    """The op's integer results reduced into their types' ranges (the others as they are)."""
    return [alg.wrap(r, t) if int_width(t) is not None else r for r, t in zip(results, op.result_types)]
