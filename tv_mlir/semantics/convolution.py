"""stablehlo.convolution, written over the shape rules and the algebra's `dot`, so every
algebra has it and a convolution's output is the same flat sum of products as the
dot_general that computes it another way.

As the StableHLO spec defines it: the lhs is padded with zeros (edges from `padding`,
interior `lhs_dilation - 1`) in its spatial dimensions; result[n, o..., f] is the dot
product of the window starting at o * window_strides and stepping by rhs_dilation (over
the input feature and the kernel's spatial dimensions, reversed where `window_reversal`
says) with the kernel. feature_group_count splits the input features and the kernel's
output features into groups convolved separately; batch_group_count splits the batch and
the kernel's output features likewise; the groups' results are concatenated along the
output feature dimension."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tv_mlir.algebra import Kind
from tv_mlir.ir import ConvDims, Op
from tv_mlir.semantics.common import OpContext, Rule, unsupported
from tv_mlir.semantics.shape import _pad


def _ints(op: Op, name: str, n: int, default: int) -> tuple[int, ...]:
    v = op.attrs.get(name)
    return tuple(int(x) for x in v) if v is not None else (default,) * n


def _conv_std(ctx: OpContext, op: Op, lhs: np.ndarray, rhs: np.ndarray, kind: Kind) -> np.ndarray:
    """One group: lhs [N, C, spatial...], rhs [O, C, kernel spatial...] -> [N, out spatial..., O]."""
    k = lhs.ndim - 2
    strides = _ints(op, "window_strides", k, 1)
    lhs_dil = _ints(op, "lhs_dilation", k, 1)
    rhs_dil = _ints(op, "rhs_dilation", k, 1)
    reversal = tuple(bool(x) for x in op.attrs.get("window_reversal") or (False,) * k)
    pad = op.attrs.get("padding")
    padding = np.zeros((k, 2), dtype=np.int64) if pad is None else np.asarray(pad, dtype=np.int64).reshape(k, 2)
    zero = ctx.alg.full((), 0, kind)
    attrs = {"edge_padding_low": (0, 0) + tuple(int(v) for v in padding[:, 0]),
             "edge_padding_high": (0, 0) + tuple(int(v) for v in padding[:, 1]),
             "interior_padding": (0, 0) + tuple(d - 1 for d in lhs_dil)}
    padded = _pad(ctx, replace(op, attrs=attrs), [lhs, zero])[0]
    kernel = rhs.shape[2:]
    out_sp = tuple(max((p - ((w - 1) * d + 1)) // s + 1, 0)
                   for p, w, d, s in zip(padded.shape[2:], kernel, rhs_dil, strides))
    n, c = lhs.shape[0], lhs.shape[1]
    o = rhs.shape[0]
    out_count = int(np.prod(out_sp, dtype=np.int64))
    kprod = int(np.prod(kernel, dtype=np.int64))
    if c * kprod == 0:
        return ctx.alg.full((n,) + out_sp + (o,), 0, kind)
    if not ctx.alg.symbolic:
        return _conv_by_offsets(ctx, padded, rhs, out_sp, strides, rhs_dil, reversal, kind)
    # Window elements: padded[n, c, o * stride + w * dilation] -> [N, C, out..., kernel...].
    idx: list[np.ndarray | slice] = [slice(None), slice(None)]
    for d in range(k):
        shape = [1] * (2 * k)
        w = np.arange(kernel[d])
        if reversal[d]:
            w = w[::-1]  # the reversed window meets the kernel in reverse order
        shape[d], shape[k + d] = out_sp[d], kernel[d]
        idx.append((np.arange(out_sp[d])[:, None] * strides[d] + w[None, :] * rhs_dil[d]).reshape(shape))
    windows = padded[tuple(idx)]  # [N, C, out..., kernel...]
    # Contract over (C, kernel...) in one dot, so each output element is one flat sum of
    # products: a = [1, N * out, C * kernel], b = [1, O, C * kernel].
    a = np.moveaxis(windows, 1, 1 + k).reshape(1, n * out_count, c * kprod)
    b = rhs.reshape(1, o, c * kprod)
    return ctx.alg.dot(a, b, kind).reshape((n,) + out_sp + (o,))


def _conv_by_offsets(ctx: OpContext, padded: np.ndarray, rhs: np.ndarray, out_sp: tuple[int, ...],
                     strides: tuple[int, ...], rhs_dil: tuple[int, ...], reversal: tuple[bool, ...],
                     kind: Kind) -> np.ndarray:
    """The same convolution for the numeric algebra, one kernel offset at a time: memory of
    the result's size rather than of every window (the interpreter runs programs at their
    original sizes, where all windows of a large conv would not fit)."""
    n, c, o = padded.shape[0], padded.shape[1], rhs.shape[0]
    kernel = rhs.shape[2:]
    rows = n * int(np.prod(out_sp, dtype=np.int64))
    acc = ctx.alg.full((1, rows, o), 0, kind)
    for offset in np.ndindex(*kernel):
        # The window element at offset w meets kernel element w (K - 1 - w where reversed).
        pos = [np.arange(out_sp[d]) * strides[d] + ((kernel[d] - 1 - w) if reversal[d] else w) * rhs_dil[d]
               for d, w in enumerate(offset)]
        slab = padded[(slice(None), slice(None)) + np.ix_(*pos)]  # [N, C, out...]
        a = np.moveaxis(slab, 1, -1).reshape(1, rows, c)
        b = rhs[(slice(None), slice(None)) + offset].reshape(1, o, c)
        acc = ctx.alg.add(acc, ctx.alg.dot(a, b, kind), kind)
    return acc.reshape((n,) + out_sp + (o,))


def _groups(lhs: np.ndarray, rhs: np.ndarray, fgc: int, bgc: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (lhs, rhs) pairs convolved separately: the g-th slice of the input features
    (feature groups) or of the batch (batch groups) with the g-th slice of the kernel's
    output features, in standard layouts."""
    if fgc > 1:
        return list(zip(np.split(lhs, fgc, axis=1), np.split(rhs, fgc, axis=0)))
    if bgc > 1:
        return list(zip(np.split(lhs, bgc, axis=0), np.split(rhs, bgc, axis=0)))
    return [(lhs, rhs)]


def _convolution(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    lhs, rhs = args
    dn = op.attrs.get("dimension_numbers")
    if not isinstance(dn, ConvDims):
        raise unsupported(op, f"{op.name} without readable dimension numbers")
    kind = ctx.kind(0)
    out_t = op.result_types[0]
    if Kind.of(out_t) is not kind or ctx.kind(1) is not kind:
        # Mixed types (i8 x i8 -> i32) compute in the result type, as dot_general.
        lhs = ctx.alg.convert(lhs, ctx.operand_types[0], out_t)
        rhs = ctx.alg.convert(rhs, ctx.operand_types[1], out_t)
        kind = Kind.of(out_t)
    if kind is Kind.BOOL:
        raise unsupported(op, f"{op.name} on i1")
    # Standard layouts: lhs [N, C, spatial...], rhs [O, I, spatial...].
    lhs = np.transpose(lhs, (dn.input_batch, dn.input_feature) + tuple(dn.input_spatial))
    rhs = np.transpose(rhs, (dn.kernel_output_feature, dn.kernel_input_feature) + tuple(dn.kernel_spatial))
    fgc = int(op.attrs.get("feature_group_count", 1))
    bgc = int(op.attrs.get("batch_group_count", 1))
    groups = max(fgc, bgc)
    if rhs.shape[0] % groups or (lhs.shape[1] if fgc > 1 else lhs.shape[0]) % groups:
        raise unsupported(op, f"{op.name}: dimensions not divisible into {groups} groups")
    results = [_conv_std(ctx, op, lg, rg, kind) for lg, rg in _groups(lhs, rhs, fgc, bgc)]
    res = np.concatenate(results, axis=-1) if len(results) > 1 else results[0]
    # [N, out spatial..., O] -> the output layout.
    k = res.ndim - 2
    perm = [0] * res.ndim
    perm[dn.output_batch] = 0
    perm[dn.output_feature] = k + 1
    for i, d in enumerate(dn.output_spatial):
        perm[d] = 1 + i
    return [np.transpose(res, perm).copy()]


RULES: dict[str, Rule] = {"stablehlo.convolution": _convolution}
