"""Applies a shrink plan to a module's MLIR: every value gets the shape of its classes'
new sizes, and the attributes that spell sizes follow (splat constants, tied constants,
full-range slices, dynamic_slice and gather slice sizes, function types). The result is
checked by MLIR's verifier and printed with its locations, so that both the verifier
and XLA (counterexample replay) read the same shrunk program."""
from __future__ import annotations

from typing import Any

import numpy as np

from tv_mlir.errors import Unsupported
from tv_mlir.frontend.read import Loaded
from tv_mlir.shrink.dim_rules import anchor
from tv_mlir.shrink.plan import ShrinkPlan


def rewrite(loaded: Loaded, program: str, plan: ShrinkPlan) -> bytes:
    from jaxlib.mlir import ir

    old_shapes: dict[Any, tuple[int, ...]] = {}
    with loaded.context, ir.Location.unknown():
        for name, value in loaded.values.items():
            key = (program, name)
            if key not in plan.analysis.types:
                continue
            t = ir.RankedTensorType(value.type)
            new = plan.new_shape(program, name)
            old_shapes[name] = tuple(t.shape)
            if new != tuple(t.shape):
                value.set_type(ir.RankedTensorType.get(list(new), t.element_type, t.encoding))
        names = {v: n for n, v in loaded.values.items()}
        for op in _walk(loaded.mlir.body):
            _attrs(op, program, plan, names, old_shapes)
        try:
            loaded.mlir.operation.verify()
        except ir.MLIRError as exc:
            raise Unsupported(f"shrunk module does not verify: {' '.join(str(exc).split())[:300]}", None,
                              "shrink") from None
        return loaded.mlir.operation.get_asm(enable_debug_info=True).encode()


def _walk(block: Any):
    for op in block.operations:
        o = op.operation
        yield o
        for region in o.regions:
            for b in region.blocks:
                yield from _walk(b)


def _attrs(o: Any, program: str, plan: ShrinkPlan, names: dict[Any, str],
           old_shapes: dict[str, tuple[int, ...]]) -> None:
    from jaxlib.mlir import ir

    if o.name == "func.func":
        block = o.regions[0].blocks[0]
        ret = list(block.operations)[-1]
        ftype = ir.FunctionType.get([a.type for a in block.arguments], [v.type for v in ret.operands])
        o.attributes["function_type"] = ir.TypeAttr.get(ftype)
        return
    if not o.results:
        return
    if o.name == "stablehlo.constant":
        name = names.get(o.results[0])
        new_t = o.results[0].type
        old = ir.DenseElementsAttr(o.attributes["value"])
        tied = plan.constants.get((program, name)) if name is not None else None
        if isinstance(tied, tuple):
            # An offset table (constants.OFFSET_TABLES): every shard's block start q * B'.
            entries = np.array(ir.DenseIntElementsAttr(old))
            table = np.ascontiguousarray(np.array(tied, dtype=entries.dtype).reshape(entries.shape))
            # jaxlib's stubs name the buffer protocol type, which numpy's stubs do not claim.
            o.attributes["value"] = ir.DenseElementsAttr.get(table, type=new_t)  # type: ignore[call-overload]
        elif tied is not None:
            elt = ir.RankedTensorType(new_t).element_type
            scalar = (ir.IntegerAttr.get(elt, int(tied)) if isinstance(elt, ir.IntegerType)
                      else ir.FloatAttr.get(elt, float(tied)))
            o.attributes["value"] = ir.DenseElementsAttr.get_splat(new_t, scalar)
        elif old.type != new_t:
            if not old.is_splat:
                raise Unsupported("shrinking a non-splat constant", None, "shrink")
            o.attributes["value"] = ir.DenseElementsAttr.get_splat(new_t, old.get_splat_value())
        return
    if o.name == "stablehlo.slice":
        shapes = _operand_shapes(o, names, old_shapes)
        if shapes is None:
            return
        before, after = shapes
        starts = list(ir.DenseI64ArrayAttr(o.attributes["start_indices"]))
        limits = list(ir.DenseI64ArrayAttr(o.attributes["limit_indices"]))
        for d, (b, a) in enumerate(zip(before, after)):
            if b != a:
                # Each bound stays at its distance from the end it is counted from
                # (dim_rules.anchor): a full-range slice stays full, a halo stays a halo.
                for bounds in (starts, limits):
                    at = anchor(bounds[d], b)
                    if at is None and 2 * bounds[d] == b and a % 2 == 0:
                        # A half (dim_rules.HALVES: the dim is (2, b/2), shrunk as 2 x a/2).
                        bounds[d] = a // 2
                        continue
                    if at is None:
                        raise Unsupported("shrinking a slice with a bound in the middle", None, "shrink")
                    bounds[d] = at[1] if at[0] else a - at[1]
        o.attributes["start_indices"] = ir.DenseI64ArrayAttr.get(starts)
        o.attributes["limit_indices"] = ir.DenseI64ArrayAttr.get(limits)
        return
    if o.name == "stablehlo.pad":
        _pad_halves(o, names, old_shapes)
        return
    if o.name == "stablehlo.dynamic_slice":
        o.attributes["slice_sizes"] = ir.DenseI64ArrayAttr.get(list(ir.RankedTensorType(o.results[0].type).shape))
        return
    if o.name == "stablehlo.gather":
        shapes = _operand_shapes(o, names, old_shapes)
        sizes = list(ir.DenseI64ArrayAttr(o.attributes["slice_sizes"]))
        if shapes is not None:
            before, after = shapes
            sizes = [a if s == b else s for s, b, a in zip(sizes, before, after)]
            o.attributes["slice_sizes"] = ir.DenseI64ArrayAttr.get(sizes)


def _pad_halves(o: Any, names: dict[Any, str], old_shapes: dict[str, tuple[int, ...]]) -> None:
    """A pad by the operand's own size (dim_rules.PAD_HALVES, the dim read as (2, n)) pads
    by its shrunk size; every other pad keeps its constant amounts (halo widths)."""
    from jaxlib.mlir import ir

    shapes = _operand_shapes(o, names, old_shapes)
    if shapes is None:
        return
    before, after = shapes
    lo = list(ir.DenseI64ArrayAttr(o.attributes["edge_padding_low"]))
    hi = list(ir.DenseI64ArrayAttr(o.attributes["edge_padding_high"]))
    inner = list(ir.DenseI64ArrayAttr(o.attributes["interior_padding"]))
    for d, (b, a) in enumerate(zip(before, after)):
        if b != a and inner[d] == 0 and (lo[d], hi[d]) in ((b, 0), (0, b)):
            lo[d], hi[d] = (a, 0) if lo[d] else (0, a)
    o.attributes["edge_padding_low"] = ir.DenseI64ArrayAttr.get(lo)
    o.attributes["edge_padding_high"] = ir.DenseI64ArrayAttr.get(hi)


def _operand_shapes(o: Any, names: dict[Any, str], old_shapes: dict[str, tuple[int, ...]]
                    ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The first operand's shape as read and as shrunk, or None when shrinking left it as it
    was (or it has no shape of record): the ops whose attributes count positions of it."""
    from jaxlib.mlir import ir

    src = names.get(o.operands[0])
    before = old_shapes.get(src) if src is not None else None
    after = tuple(ir.RankedTensorType(o.operands[0].type).shape)
    return None if before is None or before == after else (before, after)


__all__ = ["rewrite"]
