"""An estimate, per candidate plan, of the measure staged proofs refuse a pair by
(`stages.run.too_large_to_cut`: the tensor elements of the reference, and of the other
program flattened over its devices, after the pass pipeline), made from the modules as
read, so the planner can choose a grown plan that the cut takes before any MLIR is
rewritten, read again and prepared (docs/shrinking.md, "The second witness's budget").

The plan's own measure (`plan.elements`) counts every value of both programs once, as
read. The cut's differs in three ways, which the weights here follow:
  - a value inside a manual computation (or a per-device entry) is one device's: the
    flattened program holds it once per device;
  - a function is inlined at every call site (rule s leaves a helper called from more
    than `dims.MAX_SPLIT_SITES` sites as one body: 126 layers of the 405B stack);
  - the other program flattened is its manual computation's body only.
It stays an estimate (the pipeline rewrites ops); the caller still checks the pair it
materialises, so the estimate decides only how far the second witness grows."""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from tv_mlir.ir import Block, Module, Op
from tv_mlir.shrink.dims import DimAnalysis

_MANUAL = "sdy.manual_computation"


@dataclass(frozen=True)
class CutWeights:
    """Per program, (a value's classes, weight) for every op result the cut counts; a
    value's elements at the planned sizes times its weight, summed, is that program's
    measure."""

    programs: tuple[tuple[tuple[tuple[int, ...], int], ...], ...]

    @staticmethod
    def of(a: DimAnalysis, ref: Module, other: Module) -> CutWeights:
        return CutWeights(tuple(tuple((tuple(a.classes_of(p, v)), w) for v, w in _weights(a, p, m, p == "other"))
                                for p, m in (("ref", ref), ("other", other))))

    def measure(self, sizes: list[int]) -> int:
        """The larger program's estimated elements at `sizes` (as `too_large_to_cut` takes the max)."""
        return max((sum(w * math.prod(sizes[c] for c in cl) for cl, w in weighted) for weighted in self.programs),
                   default=0)


def _weights(a: DimAnalysis, program: str, m: Module, flattened: bool) -> tuple[tuple[str, int], ...]:
    devices = max(1, m.num_devices)
    top = m.main.body.ops
    # The flattened other program is the body of a manual computation that is the entry's
    # only op (stages/flat.py); anything else stays a global program, counted as it is.
    body_only = flattened and not m.per_device and len(top) == 1 and top[0].name == _MANUAL
    weight: dict[str, int] = {}
    entry = 1 if not m.per_device else devices
    # (block, weight of its values, whether the values are counted): callees get their
    # call site's weight, once per call site.
    stack: list[tuple[Block, int, bool]] = [(m.main.body, entry, not body_only)]
    visits = 0
    while stack:
        block, w, counted = stack.pop()
        visits += 1
        if visits > 1_000_000:  # a pathological call graph: the estimate gives up (counts once)
            break
        for op, inner_w, inner_counted in _ops(block, w, counted, devices):
            if op.name == "func.call" or op.name == "call":
                callee = m.funcs.get(str(op.attrs.get("callee", "")).lstrip("@"))
                if callee is not None:
                    stack.append((callee.body, inner_w, inner_counted))
                    continue
            if inner_counted:
                for r, t in zip(op.results, op.result_types):
                    if t.shape and (program, r) in a.types:
                        weight[r] = weight.get(r, 0) + inner_w
    return tuple(weight.items())


def _ops(block: Block, w: int, counted: bool, devices: int) -> Iterator[tuple[Op, int, bool]]:
    """Every op nested in `block` with its weight: a manual computation's region holds one
    device's values (counted from there on when the entry's body is not)."""
    stack: list[tuple[Iterator[Op], int, bool]] = [(iter(block.ops), w, counted)]
    while stack:
        it, cw, cc = stack[-1]
        op = next(it, None)
        if op is None:
            stack.pop()
            continue
        yield op, cw, cc
        inner_w, inner_c = (cw * devices, True) if op.name == _MANUAL else (cw, cc)
        stack.extend((iter(region.ops), inner_w, inner_c) for region in reversed(op.regions))
