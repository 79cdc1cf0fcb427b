"""Scatter-adds by data indices, the lookup's transpose (docs/shrinking.md, "Scatter-adds by
data indices").

The embedding gradient `R[v] = Z[v] + sum_t [I_t = v] U_t` is a `stablehlo.scatter` whose
add body combines the updates of every token t into the row its index I_t names. Read as
the program `Z + onehot(I)^T U`, it is a sum over the tokens of a data predicate (rule k),
the vocabulary indexed by data as a gather's is, and the tokens' dims joined to the
indices' as a gather joins them to its result. This module only recognises the form;
`dim_rules._scatter` joins and marks the classes, `degree.py` gives the sum Newton's degree,
`counts.py` counts the predicate, and `constants.sites` pins indices made of positions,
floats or constants alone (as for a gather)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tv_mlir.ir import Block, Module, Op, ScatterDims

# The rule's switch: off, a scatter by data indices pins its addressed dim, its scatter
# dims and its indices (as before). On, it is read as a one-hot contraction.
DATA_SCATTER = True


@dataclass(frozen=True)
class DataScatter:
    """A scatter-add by one data index per update row: the operand dim the index addresses,
    and the indices' batch dims paired with the updates' scatter dims. `summed`: the pairs
    that are not batching dims (several tokens may hit one row: their updates are added),
    `batched`: (operand dim, indices dim, updates dim) triples of batching dims (each batch
    position scatters into its own slice: no sum)."""

    addressed: int
    summed: tuple[tuple[int, int], ...]  # (indices dim, updates dim)
    batched: tuple[tuple[int, int, int], ...]  # (operand dim, indices dim, updates dim)


def adds(op: Op) -> bool:
    """The combiner is `add` of its two arguments (in either order), returned."""
    if not op.regions:
        return False
    body = op.regions[0]
    if len(body.ops) != 1 or len(body.args) != 2:
        return False
    add = body.ops[0]
    return add.name == "stablehlo.add" and set(add.operands) == set(body.args) and \
        tuple(body.returns) == tuple(add.results)


def data_scatter(op: Op, shape: Callable[[str], tuple[int, ...]]) -> DataScatter | None:
    """The reading above when `op` is a single-operand scatter with an add combiner whose
    index vector has one entry, addressing one inserted window dim, and whose every other
    operand dim is a batching dim or a window dim taken whole, and that promises nothing of
    its indices (`unique_indices`, `indices_are_sorted` false); None otherwise. Where the
    indices come from (data, positions, constants) is not looked at here."""
    sd = op.attrs.get("scatter_dimension_numbers")
    if not DATA_SCATTER or op.name != "stablehlo.scatter" or len(op.operands) != 3 or not isinstance(sd, ScatterDims):
        return None
    if not adds(op) or len(sd.scatter_dims_to_operand_dims) != 1:
        return None
    if op.attrs.get("unique_indices") or op.attrs.get("indices_are_sorted"):
        # A promise about the ids (no duplicates, sorted) that a shrunk vocabulary makes
        # easier to break: what XLA does then is its own choice, no sum to argue about.
        return None
    operand, indices, updates = op.operands
    os, is_, us = shape(operand), shape(indices), shape(updates)
    d0 = sd.scatter_dims_to_operand_dims[0]
    if tuple(sd.inserted_window_dims) != (d0,):
        return None
    vec = sd.index_vector_dim
    if vec < len(is_) and is_[vec] != 1:
        return None
    windowed = [d for d in range(len(os)) if d != d0 and d not in sd.input_batching_dims]
    if len(windowed) != len(sd.update_window_dims):
        return None
    if any(os[d] != us[du] for d, du in zip(windowed, sd.update_window_dims)):
        return None  # a window narrower than its dim is addressed by the index too
    index_dims = [d for d in range(len(is_)) if d != vec]
    scatter_dims = [d for d in range(len(us)) if d not in sd.update_window_dims]
    if len(index_dims) != len(scatter_dims) or any(is_[a] != us[b] for a, b in zip(index_dims, scatter_dims)):
        return None
    pairs = dict(zip(index_dims, scatter_dims))
    batched = tuple((d, b, pairs[b]) for d, b in zip(sd.input_batching_dims, sd.scatter_indices_batching_dims))
    summed = tuple((a, b) for a, b in pairs.items() if a not in sd.scatter_indices_batching_dims)
    return DataScatter(d0, summed, batched)


def shapes(module: Module) -> dict[str, tuple[int, ...]]:
    """Every value's shape in the module (results, block and region arguments), for the
    passes that read a scatter without a dimension analysis at hand."""
    out: dict[str, tuple[int, ...]] = {}

    def block(b: Block) -> None:
        out.update((v, t.shape) for v, t in zip(b.args, b.arg_types))
        for op in b.walk():
            out.update((v, t.shape) for v, t in zip(op.results, op.result_types))
            for region in op.regions:
                out.update((v, t.shape) for v, t in zip(region.args, region.arg_types))

    for fn in module.funcs.values():
        block(fn.body)
    return out


__all__ = ["DATA_SCATTER", "DataScatter", "adds", "data_scatter", "shapes"]
