"""dynamic_pad and real_dynamic_slice: pad and slice whose amounts are operands. In a
program with static shapes those amounts are fixed (jax's shape refinement leaves them as
constants); when they are not known values the result's size would depend on the data, so
the op is Unsupported rather than guessed."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tv_mlir.ir import Op
from tv_mlir.semantics.common import OpContext, Rule, unsupported
from tv_mlir.semantics.shape import _pad, _slice


def _known(ctx: OpContext, op: Op, a: np.ndarray, what: str) -> tuple[int, ...]:
    values = [ctx.alg.index_value(x) for x in a.reshape(-1)]
    if any(v is None for v in values):
        raise unsupported(op, f"{op.name} with data-dependent {what}")
    return tuple(int(v) for v in values if v is not None)


def _check_shape(op: Op, out: np.ndarray) -> np.ndarray:
    if tuple(out.shape) != tuple(op.result_types[0].shape):
        raise unsupported(op, f"{op.name}: the amounts give shape {out.shape}, the result type says "
                              f"{op.result_types[0].shape}")
    return out


def _dynamic_pad(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, value, lo, hi, interior = args
    attrs = {"edge_padding_low": _known(ctx, op, lo, "padding"), "edge_padding_high": _known(ctx, op, hi, "padding"),
             "interior_padding": _known(ctx, op, interior, "padding")}
    if any(i < 0 for i in attrs["interior_padding"]):
        raise unsupported(op, f"{op.name} with negative interior padding")
    return [_check_shape(op, _pad(ctx, replace(op, attrs=attrs), [x, value])[0])]


def _real_dynamic_slice(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    x, starts, limits, strides = args
    attrs = {"start_indices": _known(ctx, op, starts, "bounds"), "limit_indices": _known(ctx, op, limits, "bounds"),
             "strides": _known(ctx, op, strides, "strides")}
    for s, l, st, n in zip(attrs["start_indices"], attrs["limit_indices"], attrs["strides"], x.shape):
        if not (0 <= s <= l <= n and st > 0):
            raise unsupported(op, f"{op.name} with bounds {s}:{l}:{st} outside a dimension of {n}")
    return [_check_shape(op, _slice(ctx, replace(op, attrs=attrs), [x])[0])]


RULES: dict[str, Rule] = {
    "stablehlo.dynamic_pad": _dynamic_pad,
    "stablehlo.real_dynamic_slice": _real_dynamic_slice,
}
