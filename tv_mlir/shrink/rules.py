"""Lower bounds from the shapes of computations that are neither sums nor positions
(docs/shrinking.md, "Rules"): order statistics over a class (rule c) and classes that a
transpose exchanges (rule d). Each returns class -> the smallest size it may take, with
the reason, or the classes to pin."""
from __future__ import annotations

from dataclasses import dataclass, field

from tv_mlir.ir import Op
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


# Ops through which an order statistic becomes a mask: a comparison with it, or a
# piecewise choice against it (x == max, min(x, max - d), |x - max|). A smooth use of
# the max (softmax's exp(x - max), a later layer's scores) reads no further statistic.
MASKING = frozenset({"stablehlo.compare", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.clamp",
                     "stablehlo.abs", "stablehlo.sign", "stablehlo.floor", "stablehlo.ceil",
                     "stablehlo.round_nearest_even", "stablehlo.round_nearest_afz", "stablehlo.remainder"})


def order_statistics(fa: ProgramFacts, a: DimAnalysis, family: list[int], out: Bounds) -> None:
    """Rule (c). A max/min reduction over a class whose operand is masked by another
    max/min over the same class (a top-2 mask: the max, then the max of what is not equal
    to the max) reads the k-th largest element, k = the nesting depth of such masks: the
    class keeps k + 1 elements, so that the k-th statistic is not the smallest one (at 2
    experts top-2 keeps everything). A statistic reaches a later reduction as a mask only
    through `MASKING` ops (a compare, a piecewise choice); a smooth use (softmax's
    exp(x - max) feeding the next layer) does not count. A selecting reduction inside a
    loop whose carried values are masked by a statistic over its class reads a statistic
    of unknown rank: the class is pinned. `family`: class -> its scale component (a local
    expert class and its global count are one family)."""
    raw: dict[str, dict[int, int]] = {}  # value -> family -> deepest statistic in its cone
    masked: dict[str, dict[int, int]] = {}  # ... that reached it through a mask
    in_loop: dict[str, Op] = {}  # value defined inside a while -> the outermost while
    ops = fa.ops()
    for op in ops:
        if op.name == "stablehlo.while":
            # The loop's own ops and those of every function it calls (jax's closed_call).
            todo = [inner for region in op.regions for inner in region.walk()]
            called: set[str] = set()
            while todo:
                inner = todo.pop()
                for x in inner.results:
                    in_loop.setdefault(x, op)
                callee = inner.attrs.get("callee", "") if inner.name == "func.call" else ""
                if callee in fa.module.funcs and callee not in called:
                    called.add(callee)
                    todo.extend(fa.module.funcs[callee].body.walk())

    def of(table: dict[str, dict[int, int]], v: str) -> dict[int, int]:
        if v in table:
            return table[v]
        if v in fa.region_arg:
            owner, _, k = fa.region_arg[v]
            return table.get(owner.operands[k], {}) if k < len(owner.operands) else {}
        merged: dict[int, int] = {}
        for call, k in fa.callers.get(v, []):
            _merge(merged, table.get(call.operands[k], {}))
        return merged

    looped: list[tuple[Op, int, str]] = []  # (while, class, reduction's location)
    # Program order, repeated: a region's returns and a callee's body come after the op
    # that uses them, and the depths only grow (bounded by the nesting of reductions).
    for _ in range(6):
        changed = False
        for op in ops:
            sources = list(op.operands) + [v for region in op.regions for v in region.returns]
            if op.name == "func.call":
                callee = fa.module.funcs.get(op.attrs.get("callee", ""))
                sources += list(callee.body.returns) if callee is not None else []
            seen: dict[int, int] = {}
            mask: dict[int, int] = {}
            for v in sources:
                _merge(seen, of(raw, v))
                _merge(mask, of(masked, v))
            if op.name in MASKING:
                _merge(mask, seen)
            if op.name == "stablehlo.reduce":
                body = op.regions[0].ops
                by = body[0].name if len(body) == 1 else ""
                if by in SELECTING_REDUCERS:
                    what = by.split(".")[-1]
                    for v in op.operands[:len(op.operands) // 2]:
                        for d in op.attrs["dimensions"]:
                            c = a.class_of[(fa.program, v, d)]
                            k = of(masked, v).get(family[c], 0) + 1
                            seen[family[c]] = max(seen.get(family[c], 0), k)
                            if op.results[0] in in_loop:
                                looped.append((in_loop[op.results[0]], c, op.loc))
                            out.at_least(c, k + 1, f"order statistic {k} ({what} of what is masked by a {what}, "
                                                   f"{k} deep at {op.loc})" if k > 1 else
                                         f"order statistic 1 ({what} at {op.loc})")
            for r in op.results:
                if raw.get(r) != seen or masked.get(r) != mask:
                    raw[r], masked[r] = seen, mask
                    changed = True
        if not changed:
            break
    for loop, c, loc in looped:
        carried: dict[int, int] = {}
        for v in loop.regions[1].returns:
            _merge(carried, of(masked, v))
        if carried.get(family[c], 0):
            out.pins.setdefault(c, f"a max/min reduction at {loc} inside a loop that carries values masked by it "
                                   "(an order statistic of unknown rank)")


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
