"""Lower bounds from the shapes of computations that are neither sums nor positions
(docs/shrinking.md, "Rules"): order statistics over a class (rule c) and classes that a
transpose exchanges (rule d). Each returns class -> the smallest size it may take, with
the reason, or the classes to pin."""
from __future__ import annotations

from dataclasses import dataclass, field

from tv_mlir.semantics.ops import SELECTING_REDUCERS
from tv_mlir.shrink.dims import DimAnalysis
from tv_mlir.shrink.facts import ProgramFacts


@dataclass
class Bounds:
    mins: dict[int, int] = field(default_factory=dict)
    why: dict[int, str] = field(default_factory=dict)
    pins: dict[int, str] = field(default_factory=dict)
    # Pairs of classes of different original sizes that must keep different sizes.
    distinct: list[tuple[int, int]] = field(default_factory=list)

    def at_least(self, c: int, n: int, why: str) -> None:
        if n > self.mins.get(c, 0):
            self.mins[c] = n
            self.why[c] = why


def order_statistics(fa: ProgramFacts, a: DimAnalysis, family: list[int], out: Bounds) -> None:
    """Rule (c). A max/min reduction over a class whose operand is computed from another
    max/min over the same class (a top-2 mask: the max, then the max of what is not the
    max) reads the k-th largest element, k = the nesting depth: the class keeps k + 1
    elements, so that the k-th statistic is not the smallest one (at 2 experts top-2
    keeps everything). A selecting reduction inside a loop reads a statistic of unknown
    rank: the class is pinned. `family`: class -> its scale component (a local expert
    class and its global count are one family)."""
    depth: dict[str, dict[int, int]] = {}  # value -> family -> order statistics in its cone
    loops: set[str] = set()  # values defined inside a while
    ops = fa.ops()
    for op in ops:
        if op.name == "stablehlo.while":
            for region in op.regions:
                loops.update(x for inner in region.walk() for x in inner.results)

    def of(v: str) -> dict[int, int]:
        if v in depth:
            return depth[v]
        if v in fa.region_arg:
            owner, _, k = fa.region_arg[v]
            return depth.get(owner.operands[k], {}) if k < len(owner.operands) else {}
        merged: dict[int, int] = {}
        for call, k in fa.callers.get(v, []):
            _merge(merged, depth.get(call.operands[k], {}))
        return merged

    # Program order, repeated: a region's returns and a callee's body come after the op
    # that uses them, and the depths only grow (bounded by the nesting of reductions).
    for _ in range(6):
        changed = False
        for op in ops:
            seen: dict[int, int] = {}
            for v in op.operands:
                _merge(seen, of(v))
            for region in op.regions:
                for v in region.returns:
                    _merge(seen, of(v))
            if op.name == "func.call":
                callee = fa.module.funcs.get(op.attrs.get("callee", ""))
                for v in callee.body.returns if callee is not None else ():
                    _merge(seen, of(v))
            if op.name == "stablehlo.reduce":
                body = op.regions[0].ops
                by = body[0].name if len(body) == 1 else ""
                if by in SELECTING_REDUCERS:
                    inner = dict(seen)
                    for v in op.operands[:len(op.operands) // 2]:
                        for d in op.attrs["dimensions"]:
                            c = a.class_of[(fa.program, v, d)]
                            k = inner.get(family[c], 0) + 1
                            seen[family[c]] = max(seen.get(family[c], 0), k)
                            what = by.split(".")[-1]
                            if op.results[0] in loops:
                                out.pins.setdefault(c, f"a {what} reduction inside a loop at {op.loc} "
                                                       "(an order statistic of unknown rank)")
                            out.at_least(c, k + 1, f"order statistic {k} ({what} of {what}s, {k} deep at {op.loc})")
            for r in op.results:
                if depth.get(r) != seen:
                    depth[r] = seen
                    changed = True
        if not changed:
            break


def _merge(into: dict[int, int], other: dict[int, int]) -> None:
    for f, k in other.items():
        if k > into.get(f, 0):
            into[f] = k


def exchanged(fa: ProgramFacts, a: DimAnalysis, out: Bounds) -> None:
    """Rule (d). A transpose that changes the relative order of two dims of one class (a
    square weight transposed), or of two classes that a reshape then joins into one dim
    (an untiled all_gather's shard dim moved behind the local dim and flattened:
    interleaved shards), is the identity when one of them has a single element. Both
    keep at least 2, and two such classes of different original sizes keep different
    sizes (see `distinct`)."""
    joined: dict[int, set[int]] = {}
    for _, fs in a.products:
        for f in fs:
            joined.setdefault(f, set()).update(x for x in fs if x != f)
        for i, f in enumerate(fs):
            if f in fs[i + 1:] and a.classes[f].size > 1:
                out.at_least(f, 2, "a reshape joins it with itself")
    for op in fa.ops():
        if op.name != "stablehlo.transpose":
            continue
        src = op.operands[0]
        cls = a.classes_of(fa.program, src)
        perm = list(op.attrs["permutation"])
        where = {p: i for i, p in enumerate(perm)}  # operand dim -> result position
        for i in range(len(cls)):
            for j in range(i + 1, len(cls)):
                if where[i] < where[j]:
                    continue
                ci, cj = cls[i], cls[j]
                if a.classes[ci].size <= 1 or a.classes[cj].size <= 1:
                    continue
                if ci == cj or cj in joined.get(ci, set()):
                    why = f"transpose at {op.loc} exchanges it with " + \
                        ("itself" if ci == cj else "a dim it is reshaped together with")
                    out.at_least(ci, 2, why)
                    out.at_least(cj, 2, why)
                    if ci != cj:
                        out.distinct.append((ci, cj))


__all__ = ["Bounds", "exchanged", "order_statistics"]
