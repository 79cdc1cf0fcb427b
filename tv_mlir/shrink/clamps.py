"""Rule (a), implicit clamps (docs/shrinking.md, rule a "implicit clamps"): a gather or a
dynamic slice clamps its start indices into [0, |C| - slice] of each dim it indexes, and a
scatter drops the updates whose index leaves that range, with no constant written for it.
`jnp.take(emb, ids, mode="clip")` is such a gather, and a bug that clamps the ids at a
literal cap first (`take(emb, minimum(ids, 40))`) differs from it only for ids past the
cap: at a vocabulary shrunk below the cap the two clamps agree. So where program data
picks the elements (the index is computed from a program input), the clamp is a size value
|C| - 1 of the indexed class, met by what its index meets, and rule (a) keeps it in order
with the literals and size values that meet it, as it does a written clamp at V - 1. Only
single positions are read this way (a slice of one element along the dim); a block slice
along a dim is a scale relation's or a halo's, which other rules bound."""
from __future__ import annotations

from dataclasses import dataclass

from tv_mlir.ir import ScatterDims
from tv_mlir.shrink.dims import DimAnalysis
from tv_mlir.shrink.facts import ProgramFacts, index_sources

# Off: a gather's and a dynamic slice's own clamps are no size values (the gather_cap hole).
CLAMPS = True


@dataclass(frozen=True)
class Clamp:
    """One dim's implicit clamp: its index operands, the indexed operand, the dim's class
    (a slice of one element along it, so the clamp is |C| - 1)."""

    program: str
    index: tuple[str, ...]
    operand: str
    cls: int
    where: str


def implicit_clamps(fa: ProgramFacts, a: DimAnalysis) -> list[Clamp]:
    """The implicit clamps (and scatters' bounds checks) of every gather, dynamic slice,
    dynamic update slice and scatter whose
    index is computed from a program input (`index_sources`: through function and loop
    arguments to what they are called with), one per dim indexed with one element."""
    if not CLAMPS:
        return []
    out: list[Clamp] = []
    for op in fa.ops():
        if op.name == "stablehlo.gather":
            g = op.attrs.get("dimension_numbers")
            sizes = tuple(op.attrs.get("slice_sizes") or ())
            if g is None or "input" not in index_sources(fa, op.operands[1], through_calls=True):
                continue
            picks = [((op.operands[1],), d) for d in g.start_index_map if d < len(sizes) and sizes[d] == 1]
        elif op.name in ("stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice"):
            first = 1 if op.name == "stablehlo.dynamic_slice" else 2
            small = op.results[0] if op.name == "stablehlo.dynamic_slice" else op.operands[1]
            if (fa.program, small) not in a.types:
                continue
            shape = a.types[(fa.program, small)].shape
            picks = [((start,), d) for d, start in enumerate(op.operands[first:])
                     if d < len(shape) and shape[d] == 1
                     and "input" in index_sources(fa, start, through_calls=True)]
        elif op.name == "stablehlo.scatter" and len(op.operands) % 2 == 1:
            # A scatter drops an update whose index leaves [0, |C| - 1] (no clamp, a bounds
            # check): the same number, decided the same way at every size.
            sd = op.attrs.get("scatter_dimension_numbers")
            where = op.operands[(len(op.operands) - 1) // 2]
            if not isinstance(sd, ScatterDims) or "input" not in index_sources(fa, where, through_calls=True):
                continue
            picks = [((where,), d) for d in sd.scatter_dims_to_operand_dims if d in sd.inserted_window_dims]
        else:
            continue
        for index, d in picks:
            key = (fa.program, op.operands[0], d)
            if key in a.class_of and a.classes[a.class_of[key]].size > 2:
                out.append(Clamp(fa.program, index, op.operands[0], a.class_of[key], f"{op.name} at {op.loc}"))
    return list(dict.fromkeys(out))


__all__ = ["CLAMPS", "Clamp", "implicit_clamps"]
