"""Counterexamples found at shrunk sizes, embedded back into the original sizes: every
shrunk dim's positions are placed block by block (shard j's first element stays shard
j's first element) and everything else is zero. Whether the embedded input still
separates the programs is not a theorem (a mean's divisor grows, a RoPE position moves
with its shard), so it is replayed on XLA at the original sizes and reported as
confirmed only then."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tv_mlir.assume import FloatRange
from tv_mlir.ir import Module
from tv_mlir.shrink.facts import ProgramFacts
from tv_mlir.shrink.plan import ShrinkPlan
from tv_mlir.shrink.scatters import data_scatter

# Inputs larger than this are not materialised at their original sizes (a 16384 x 4096
# activation is 268 MB of float32 per copy).
MAX_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class DimMap:
    original: int
    block: int  # original block size
    shrunk_block: int

    def position(self, j: int, layout: str = "start") -> int:
        """`start`: a shrunk block is the start of the original block. `ends`: its first
        half is the block's start and its second half the block's end, so that an index
        counted from the end (-1, a wrap-around) keeps its element."""
        b, o = divmod(j, self.shrunk_block)
        if layout == "ends" and o >= (self.shrunk_block + 1) // 2:
            o = self.block - (self.shrunk_block - o)
        return b * self.block + o


@dataclass(frozen=True)
class Embedding:
    args: tuple[tuple[DimMap, ...], ...]
    results: tuple[tuple[DimMap, ...], ...]
    # Per argument: the class its integer *values* index (a token id into the vocabulary),
    # as a DimMap: an index value moves with the element it names (index V' - 1 of a
    # shrunk vocabulary is V - 1 in the `ends` layout), so that a clamp at V - 2 that
    # differs from V - 1 at the shrunk size still differs when embedded.
    values: tuple[DimMap | None, ...] = ()

    def fits(self, budget: int = MAX_ELEMENTS) -> bool:
        return sum(int(np.prod([d.original for d in dims])) for dims in self.args) <= budget

    def array(self, k: int, small: np.ndarray, layout: str = "start", fill: int | float = 0) -> np.ndarray:
        """`fill`: the value of the elements the witness does not set (0, or for an input
        assumed away from 0 a value inside its assumption: the embedded witness must stay an
        input the verdict is about)."""
        dims = self.args[k]
        out = np.full(tuple(d.original for d in dims), fill, dtype=small.dtype)
        index = np.ix_(*[np.array([d.position(j, layout) for j in range(n)], dtype=np.int64)
                         for d, n in zip(dims, small.shape)]) if dims else ()
        vm = self.values[k] if k < len(self.values) else None
        if vm is not None and np.issubdtype(small.dtype, np.integer):
            inside = (small >= 0) & (small < vm.shrunk_block * (vm.original // max(1, vm.block)))
            moved = np.array([vm.position(int(v), layout) if ok else int(v)
                              for v, ok in zip(small.reshape(-1), inside.reshape(-1))], dtype=small.dtype)
            small = moved.reshape(small.shape)
        out[index] = small
        return out

    def index(self, result: int, index: Sequence[int], layout: str = "start") -> list[int]:
        return [d.position(j, layout) for d, j in zip(self.results[result], index)]


def embedding(plan: ShrinkPlan, ref: Module) -> Embedding:
    """`ref`: the reference module as the plan read it (its signature names)."""
    def dims(name: str) -> tuple[DimMap, ...]:
        out = []
        for c in plan.analysis.classes_of("ref", name):
            block, small = plan.blocks.get(c, (plan.analysis.classes[c].size, plan.sizes[c]))
            out.append(DimMap(plan.analysis.classes[c].size, block, small))
        return tuple(out)

    if ref.per_device:
        args = [f"global arg {k}" for k in range(len(ref.main.body.args))]
        results = [f"global result {k}" for k in range(len(ref.main.body.returns))]
        values: tuple[DimMap | None, ...] = ()
    else:
        args, results = list(ref.main.body.args), list(ref.main.body.returns)
        facts = ProgramFacts.of("ref", ref)
        lookups = _lookups(plan, facts)
        values = tuple(_value_map(plan, facts, lookups, a) for a in args) if lookups else ()
    return Embedding(tuple(dims(a) for a in args), tuple(dims(r) for r in results), values)


def _lookups(plan: ShrinkPlan, facts: ProgramFacts) -> list[tuple[str, str, tuple[int, ...]]]:
    """(indices, indexed operand, its dims the indices select) of the reference's gathers
    and of its scatter-adds by data indices (the lookup's transpose, shrink/scatters.py)."""
    out = []
    for op in facts.ops():
        if op.name == "stablehlo.gather" and op.attrs.get("dimension_numbers"):
            out.append((op.operands[1], op.operands[0], tuple(op.attrs["dimension_numbers"].start_index_map)))
        elif op.name == "stablehlo.scatter" and all(("ref", v) in plan.analysis.types for v in op.operands):
            reading = data_scatter(op, lambda v: plan.analysis.types[("ref", v)].shape)
            if reading is not None:
                out.append((op.operands[1], op.operands[0], (reading.addressed,)))
    return out


def _value_map(plan: ShrinkPlan, facts: ProgramFacts, lookups: list[tuple[str, str, tuple[int, ...]]],
               arg: str) -> DimMap | None:
    """The one shrunk class whose positions the argument's values select in a gather or a
    scatter-add of the reference (its indices computed from the argument), if exactly one."""
    found: set[int] = set()
    for indices, operand, dims in lookups:
        if arg not in _int_cone(facts, indices):
            continue
        for d in dims:
            key = ("ref", operand, d)
            if key in plan.analysis.class_of:
                found.add(plan.analysis.class_of[key])
    if len(found) > 1:
        # take_along_axis gathers with an iota over the argument's own dims beside its
        # values (the row of each target): those classes are positions, not what the
        # values select. Only a candidate: the embedded input is replayed on XLA.
        found -= set(plan.analysis.classes_of("ref", arg))
    if len(found) != 1:
        return None
    c = found.pop()
    if plan.sizes[c] == plan.analysis.classes[c].size:
        return None
    block, small = plan.blocks.get(c, (plan.analysis.classes[c].size, plan.sizes[c]))
    return DimMap(plan.analysis.classes[c].size, block, small)


def _int_cone(facts: ProgramFacts, value: str) -> set[str]:
    """The values an integer index is computed from (not through float data), into the
    callers of the functions it is computed in."""
    seen: set[str] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in facts.defs:
            op, k = facts.defs[v]
            if not op.result_types[k].is_float:
                todo.extend(op.operands)
        else:
            # A function's argument (jnp's take_along_axis is a private function): what
            # its callers pass.
            todo.extend(call.operands[k] for call, k in facts.callers.get(v, ()))
    return seen


LAYOUTS = ("start", "ends")


def embed_inputs(e: Embedding, arrays: Sequence[np.ndarray], layout: str = "start",
                 fills: Sequence[int | float] = ()) -> list[np.ndarray]:
    return [e.array(k, np.asarray(a), layout, fills[k] if k < len(fills) else 0) for k, a in enumerate(arrays)]


def fills_for(bounds: Sequence[tuple[int, int] | None]) -> list[int | float]:
    """Per input, the fill of an embedded witness (`Embedding.array`): 0, or the nearest end
    of an input's assumed closed range (`assume.resolve`) that leaves 0 out."""
    out: list[int | float] = []
    for b in bounds:
        if b is None or not isinstance(b, tuple) or b[0] <= 0 <= b[1]:
            out.append(0)
        elif isinstance(b, FloatRange):  # a float range's end nearest 0, as it is (0.5, not 0)
            out.append(b.lo if b.lo > 0 else b.hi)
        else:
            out.append(int(b[0]) if b[0] > 0 else int(b[1]))
    return out


__all__ = ["LAYOUTS", "DimMap", "Embedding", "embed_inputs", "embedding", "fills_for"]


