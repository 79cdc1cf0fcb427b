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

from tv_mlir.ir import Module
from tv_mlir.shrink.plan import ShrinkPlan

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

    def fits(self, budget: int = MAX_ELEMENTS) -> bool:
        return sum(int(np.prod([d.original for d in dims])) for dims in self.args) <= budget

    def array(self, k: int, small: np.ndarray, layout: str = "start") -> np.ndarray:
        dims = self.args[k]
        out = np.zeros(tuple(d.original for d in dims), dtype=small.dtype)
        index = np.ix_(*[np.array([d.position(j, layout) for j in range(n)], dtype=np.int64)
                         for d, n in zip(dims, small.shape)]) if dims else ()
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
    else:
        args, results = list(ref.main.body.args), list(ref.main.body.returns)
    return Embedding(tuple(dims(a) for a in args), tuple(dims(r) for r in results))


LAYOUTS = ("start", "ends")


def embed_inputs(e: Embedding, arrays: Sequence[np.ndarray], layout: str = "start") -> list[np.ndarray]:
    return [e.array(k, np.asarray(a), layout) for k, a in enumerate(arrays)]


__all__ = ["LAYOUTS", "DimMap", "Embedding", "embed_inputs", "embedding"]


