"""Lower bounds from the shapes of computations that are neither sums nor positions
(docs/shrinking.md, "Rules"): order statistics over a class (rule c) and classes that a
transpose exchanges (rule d). Each returns class -> the smallest size it may take, with
the reason, or the classes to pin."""
from __future__ import annotations

from collections.abc import Callable
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
            sources = fa.sources(op)
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
        for src, where in _moves(op, lambda v: len(a.classes_of(fa.program, v))):
            cls = a.classes_of(fa.program, src)
            for i in range(len(cls)):
                for j in range(i + 1, len(cls)):
                    if i not in where or j not in where or where[i] < where[j]:
                        continue
                    ci, cj = cls[i], cls[j]
                    if a.classes[ci].size <= 1 or a.classes[cj].size <= 1:
                        continue
                    if ci == cj or cj in joined.get(ci, set()):
                        why = f"{op.name.split('.')[-1]} at {op.loc} exchanges it with " + \
                            ("itself" if ci == cj else "a dim it is reshaped together with")
                        out.at_least(ci, 2, why)
                        out.at_least(cj, 2, why)
                        if ci != cj:
                            out.distinct.append((ci, cj))
    if INTERLEAVED:
        _interleaved(a, out)
    if REORDERED:
        _reordered(a, out)
    _spanning(fa, a, out)


# Rule (d), blocks laid out against their sharding: off, a reshape may put a shard's local
# class before the factors that follow it (an untiled all_to_all reshaped without moving its
# source axis in front) and the class shrinks to 1, where that order is invisible.
INTERLEAVED = True


def _interleaved(a: DimAnalysis, out: Bounds) -> None:
    """A dim sharded into blocks is (shard index, local position): its local class is the
    minor part (`a.scales`). A reshape that reads the same dim as factors (`a.products`)
    with that local class before other factors lays the blocks out in another order (the
    rows of an untiled all_to_all flattened source-minor: interleaved shards). At one
    element of the local class, or of the factors after it, the two layouts are the same
    vector: the local class and every later factor keep at least 2, so that an element of
    one block sits next to an element of another. No transpose op is involved, so the
    exchange rule above does not see it."""
    for whole, local, _ in a.scales:
        for dim, factors in a.products:
            if dim != whole or local not in factors[:-1] or a.classes[local].size <= 1:
                continue
            later = [f for f in factors[factors.index(local) + 1:] if a.classes[f].size > 1]
            if not later:
                continue
            why = "a reshape lays its sharded dim out with the local positions before other factors " \
                  "(blocks interleaved against the sharding)"
            for c in (local, *later):
                out.at_least(c, 2, why)


def _moves(op: Op, rank: Callable[[str], int]) -> list[tuple[str, dict[int, int]]]:
    """(operand, operand dim -> result position) for the ops that reorder dims: a
    transpose, and a dot_general, whose result is the batch dims in the order the
    batching dims list them, then each operand's free dims in order: batching dims listed
    out of order (lhs_batching_dimensions = [1, 0]) are a transpose written as a dot.
    Contracted dims have no result position."""
    if op.name == "stablehlo.transpose":
        return [(op.operands[0], {p: i for i, p in enumerate(op.attrs["permutation"])})]
    dn = op.attrs.get("dot_dimension_numbers")
    if op.name != "stablehlo.dot_general" or dn is None:
        return []
    out: list[tuple[str, dict[int, int]]] = []
    free_at = len(dn.lhs_batch)
    for operand, batch, contracting in ((op.operands[0], dn.lhs_batch, dn.lhs_contracting),
                                        (op.operands[1], dn.rhs_batch, dn.rhs_contracting)):
        where = {d: k for k, d in enumerate(batch)}
        free = [d for d in range(rank(operand)) if d not in batch and d not in contracting]
        where.update({d: free_at + k for k, d in enumerate(free)})
        free_at += len(free)
        out.append((operand, where))
    return out


# Rule (d), one dim split into factors in two orders: off, `jnp.tile` where `jnp.repeat`
# is right (kv heads for grouped-query attention: heads read as (rep, kv) against (kv, rep))
# shrinks both factors to 1, where the two orders are one layout.
REORDERED = True


def _reordered(a: DimAnalysis, out: Bounds) -> None:
    """A dim that reshapes read as factors of different sizes in different orders (heads as
    (kv heads, rep) by a repeat and (rep, kv heads) by a tile, in one program or across the
    pair): the element at a position is a different pair of factor indices in each reading,
    and the two readings agree as layouts when all but one factor has one element (the
    transpose of a 1 x n matrix is the identity). Every factor of more than one element
    keeps 2 and factors of different original sizes keep different sizes, as for a
    transpose. Splits with the same factor sizes are one split (`dims._propagate_shards`
    joins their factors); a factor joined with itself keeps 2 by the rule above."""
    splits: dict[int, list[tuple[int, ...]]] = {}
    for whole, factors in a.products:
        splits.setdefault(whole, []).append(factors)
    for ways in splits.values():
        shapes = {tuple(a.classes[f].size for f in fs if a.classes[f].size > 1) for fs in ways}
        if len(shapes) < 2:
            continue
        kept = sorted({f for fs in ways for f in fs if a.classes[f].size > 1})
        why = "a dim it is a factor of is split in two orders (a repeat against a tile)"
        for f in kept:
            out.at_least(f, 2, why)
        for i, x in enumerate(factors):
            for y in factors[i + 1:]:
                if a.classes[x].size != a.classes[y].size:
                    out.distinct.append((x, y))


def _spanning(fa: ProgramFacts, a: DimAnalysis, out: Bounds) -> None:
    """Rule (d), a class spanning k dims of one value (a square weight w - lr * g, and a
    bug's g^T from dot_general(dy, x) where dot_general(x, dy) was right: the update joins
    in with out). The renaming argument for a free class holds per *equality pattern* of
    the k indices along it: the element at (i, j) is the element at (j, i) under the
    renaming that swaps i and j only when i = j, so both patterns (i = j, i != j), and for
    k indices every partition of them, must be present at the shrunk size: k elements
    (at 1 element every pattern is the diagonal, where a transpose is the identity)."""
    for (program, value), t in a.types.items():
        if program != fa.program or len(t.shape) < 2:
            continue
        counts: dict[int, int] = {}
        for c in a.classes_of(program, value):
            if a.classes[c].size > 1:
                counts[c] = counts.get(c, 0) + 1
        for c, k in counts.items():
            if k > 1 and k > out.mins.get(c, 0):
                out.at_least(c, k, f"it spans {k} dims of one value ({_member(fa, value)}): "
                                   f"every equality pattern of {k} indices along it")



def _member(fa: ProgramFacts, value: str) -> str:
    """The op that makes the value, with its location, for the shrink map."""
    if value in fa.defs:
        op, _ = fa.defs[value]
        return f"{op.name.split('.')[-1]} at {op.loc}" if op.loc else op.name.split('.')[-1]
    return f"{fa.program} {value}"


__all__ = ["Bounds", "exchanged", "order_statistics"]
