"""Dimension classes of a pair of programs: the analysis stage of shape shrinking
(docs/shrinking.md).

Every dimension of every value of both programs is a node; union-find joins the nodes an
op forces equal (one rule per op, in `dim_rules`), and the two programs are joined through
their global signatures. Two
more relations tie classes of different sizes:
  - scale: a global class is a local class times a number of shards (shardings,
    all_gather/reduce_scatter/all_to_all, block-aligned dynamic slices);
  - product: a reshape that splits or merges dims (hidden = heads x head_dim).
Classes an op makes position-dependent in a way the shrinking argument does not cover,
or that an op the analysis does not know touches, are pinned with the reason. Classes
reduced over, indexed by data, or carrying an iota are marked: their lower bounds are
decided in `plan.py`.

The analysis runs on modules as the frontend read them (before inlining), so that its
value names are those of the MLIR module the rewrite edits; calls join the callee's
arguments and results with the call's operands and results. Before it, `split_call_sites`
gives every call site its own copy of the function it calls (rule s), so that a helper
used for differently shaped operands (jax's `dynamic_index_in_dim` slicing wq and wo)
does not join their dims into one class."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tv_mlir.frontend.read import Loaded, load_module_mlir
from tv_mlir.ir import Module, TensorType
from tv_mlir.shrink.dim_rules import PINNING, RULES
from tv_mlir.shrink.walker import Node, NodeSets, Walker

# Rule (h): the base of an offset group is its sharded or reshaped class when it has one
# (docs/shrinking.md, "Halos and tiles"); off: the smallest class, as before.
SHARDED_BASE = True

# Rule (s): a function called from several sites is copied, one copy per call site, before
# the analysis (docs/stages.md, "Call sites"); off: every call site of a function joins
# the same nodes, as before.
SPLIT_CALL_SITES = True
# The copies may add at most this many ops, and at most as many as the module has: beyond
# that the remaining call sites keep sharing their function (their dims joined, as before).
MAX_SPLIT_OPS = 50_000
# A function called from more sites than this keeps one body: a per-layer helper of an
# unrolled stack (jnp.where's `_where`, 126 sites in the 405B stack) is called alike in
# every layer, whose dims the residual stream joins anyway, and 126 copies only add to
# the analysis (the unrolled 405B shrink: 25 -> 33 s CPU, plan elements counted per copy
# 87 M -> 116 M, the same sizes).
MAX_SPLIT_SITES = 16


@dataclass
class DimClass:
    size: int
    members: list[Node] = field(default_factory=list)
    pins: list[str] = field(default_factory=list)  # why it must keep its size
    reduced_by: set[str] = field(default_factory=set)  # reducer ops that combine positions along it
    iota: list[str] = field(default_factory=list)  # locations of iotas running along it
    indexed: list[str] = field(default_factory=list)  # gathers indexing it by data

    def pin(self, why: str) -> None:
        if why not in self.pins:
            self.pins.append(why)


@dataclass
class DimAnalysis:
    classes: list[DimClass]
    class_of: dict[Node, int]
    scales: list[tuple[int, int, int]]  # (global class, local class, number of shards)
    products: list[tuple[int, tuple[int, ...]]]  # (class, its factors major to minor)
    types: dict[tuple[str, str], TensorType]  # (program, value) -> type as read
    # Offset relations (slice, pad, concatenate by constants): (derived class, base class,
    # c) with size(derived) = size(base) + c; the base is the smallest class of its group.
    offsets: list[tuple[int, int, int]] = field(default_factory=list)
    # class -> (the largest halo width met along it, where): docs/shrinking.md "Halos".
    halos: dict[int, tuple[int, str]] = field(default_factory=dict)

    def classes_of(self, program: str, value: str) -> list[int]:
        t = self.types[(program, value)]
        return [self.class_of[(program, value, a)] for a in range(len(t.shape))]

    def describe(self) -> list[str]:
        out = []
        for k, c in enumerate(self.classes):
            where = ", ".join(f"{p}:{v}[{a}]" for p, v, a in c.members[:3])
            more = f" (+{len(c.members) - 3})" if len(c.members) > 3 else ""
            state = "pinned: " + "; ".join(sorted(set(c.pins))[:2]) if c.pins else \
                ("reduced by " + ", ".join(sorted(c.reduced_by)) if c.reduced_by else "free")
            out.append(f"class {k}: size {c.size}, {state}; {where}{more}")
        return out


def split_call_sites(loaded: Loaded) -> Loaded:
    """The module with one function per call site (rule s), read again; `loaded` itself
    when no function is called twice (or the switch is off). A copy has the same body,
    so each call computes what it computed before: the program is the same function of
    its inputs, and every rule of the analysis reads it as a program like any other. What
    changes is only that the copies' values are separate nodes, so two call sites are
    joined only by what the program itself relates (a value both receive, results both
    feed to one op), not by sharing the function's body. The copies are appended after
    the module's functions; copies of a function that calls others make new call sites
    of those, which are split in the next round. The MLIR of `loaded` is edited (as the
    rewrite edits it)."""
    if not SPLIT_CALL_SITES:
        return loaded
    from jaxlib.mlir import ir

    added = 0
    with loaded.context, ir.Location.unknown():
        body = loaded.mlir.body
        funcs = {ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation
                 for op in body.operations if op.operation.name == "func.func"}
        sizes = {name: sum(1 for _ in _mlir_ops(f)) for name, f in funcs.items()}
        budget = min(MAX_SPLIT_OPS, sum(sizes.values()))
        taken = set(funcs)
        for _ in range(16):  # nesting depth of calls; recursion (not in StableHLO) stops here
            sites: dict[str, list] = {}
            for f in list(funcs.values()):
                for o in _mlir_ops(f):
                    if o.name == "func.call":
                        callee = ir.FlatSymbolRefAttr(o.attributes["callee"]).value
                        if callee in funcs:
                            sites.setdefault(callee, []).append(o)
            split = False
            for callee, calls in sites.items():
                if len(calls) > MAX_SPLIT_SITES:
                    continue
                for k, call in enumerate(calls[1:], 1):
                    if added + sizes[callee] > budget:
                        break
                    name = f"{callee}__site{k}"
                    while name in taken:
                        name += "_"
                    copy = funcs[callee].clone(ip=ir.InsertionPoint(body))
                    copy.attributes["sym_name"] = ir.StringAttr.get(name)
                    copy.attributes["sym_visibility"] = ir.StringAttr.get("private")
                    call.attributes["callee"] = ir.FlatSymbolRefAttr.get(name)
                    funcs[name], sizes[name] = copy, sizes[callee]
                    taken.add(name)
                    added += sizes[callee]
                    split = True
            if not split:
                break
        if not added:
            return loaded
        text = loaded.mlir.operation.get_asm(enable_debug_info=True).encode()
    m = loaded.module
    again = load_module_mlir(text, m.source)
    again.module.per_device, again.module.arg_shardings, again.module.result_shardings = \
        m.per_device, m.arg_shardings, m.result_shardings
    return again


def _mlir_ops(op: Any) -> Iterator[Any]:
    """Every op nested in `op` (MLIR objects), outermost first."""
    for region in op.regions:
        for block in region:
            for inner in block.operations:
                yield inner.operation
                yield from _mlir_ops(inner.operation)


def _propagate_shards(uf: NodeSets, scales: list[tuple[Node, Node, int]],
                      products: list[tuple[Node, tuple[Node, ...]]]) -> None:
    """A sharded product splits its major factor: global (a, b) over k shards is local
    (a/k, b), so b joins b and a scales to a/k. Other splits pin. Two splits of one dim
    into factors of the same sizes are the same split."""
    for _ in range(len(scales) + len(products) + 1):
        by_whole: dict[Node, tuple[Node, ...]] = {}
        changed = False
        for whole, parts in products:
            seen = by_whole.setdefault(uf.find(whole), parts)
            # One dim split twice into factors of the same sizes is the same row-major
            # split: the factors are the same classes.
            if seen is not parts and len(seen) == len(parts) and \
                    all(uf.size[uf.find(x)] == uf.size[uf.find(y)] for x, y in zip(seen, parts)):
                for x, y in zip(seen, parts):
                    if uf.find(x) != uf.find(y):
                        uf.union(x, y, "the same reshape split twice")
                        changed = True
        for g, loc, k in list(scales):
            pg, pl = by_whole.get(uf.find(g)), by_whole.get(uf.find(loc))
            if pg is None or pl is None:
                continue
            fits = len(pg) == len(pl) and uf.size[uf.find(pg[0])] == k * uf.size[uf.find(pl[0])] and \
                all(uf.size[uf.find(x)] == uf.size[uf.find(y)] for x, y in zip(pg[1:], pl[1:]))
            if not fits:
                for n in (g, loc, *pg, *pl):
                    uf.pin(n, "a sharded reshape splits more than its major factor")
                continue
            for x, y in zip(pg[1:], pl[1:]):
                if uf.find(x) != uf.find(y):
                    uf.union(x, y, "sharded reshape")
                    changed = True
            if (pg[0], pl[0], k) not in scales:
                scales.append((pg[0], pl[0], k))
                changed = True
        if not changed:
            return


def analyse(ref: Module, other: Module) -> DimAnalysis:
    """Dimension classes of both programs, joined through the global signature. Both
    modules must already be classified (`frontend.classify.check_signatures`)."""
    uf = NodeSets()
    scales: list[tuple[Node, Node, int]] = []
    products: list[tuple[Node, tuple[Node, ...]]] = []
    walkers = {}
    for program, module in (("ref", ref), ("other", other)):
        w = Walker(uf, program, module, scales, products, RULES, PINNING)
        for f in module.funcs.values():
            w.bind(f.body.args, f.body.arg_types)
            for inner in f.body.walk():
                w.bind(inner.results, inner.result_types)
                for region in inner.regions:
                    w.bind(region.args, region.arg_types)
        for f in module.funcs.values():
            w.ops(f.body)
        walkers[program] = w
        if module.per_device:
            # The entry's arguments are shards: their global dims are their own nodes.
            for k, (name, s) in enumerate(zip(module.main.body.args, module.arg_shardings)):
                g = f"global arg {k}"
                w.types[g] = s.global_type(w.types[name]) if s is not None else w.types[name]
                w.sharded(g, name, s, "per-device entry")
            for k, (name, s) in enumerate(zip(module.main.body.returns, module.result_shardings)):
                g = f"global result {k}"
                w.types[g] = s.global_type(w.types[name]) if s is not None else w.types[name]
                w.sharded(g, name, s, "per-device entry")
    for kind, count in (("arg", len(ref.main.body.args)), ("result", len(ref.main.body.returns))):
        for k in range(count):
            a, b = _signature_value(ref, kind, k), _signature_value(other, kind, k)
            ta, tb = walkers["ref"].types[a], walkers["other"].types[b]
            for axis in range(min(len(ta.shape), len(tb.shape))):
                uf.union(walkers["ref"].node(a, axis), walkers["other"].node(b, axis), f"{kind} {k}")
    _propagate_shards(uf, scales, products)
    offsets = [o for w in walkers.values() for o in w.offsets]
    potential = _resolve_offsets(uf, offsets)
    roots: dict[Node, int] = {}
    classes: list[DimClass] = []
    class_of: dict[Node, int] = {}
    for n in uf.sets:
        r = uf.find(n)
        if r not in roots:
            roots[r] = len(classes)
            marks = uf.marks.get(r, {})
            classes.append(DimClass(uf.size[r], pins=list(dict.fromkeys(uf.pins.get(r, []))),
                                    reduced_by=set(marks.get("reduced", [])), iota=marks.get("iota", []),
                                    indexed=marks.get("indexed", [])))
        classes[roots[r]].members.append(n)
        class_of[n] = roots[r]
    scale_ids = sorted({(class_of[g], class_of[loc], k) for g, loc, k in scales})
    product_ids = sorted({(class_of[p], tuple(class_of[f] for f in fs)) for p, fs in products})
    types = {(p, v): t for p, w in walkers.items() for v, t in w.types.items()}
    offset_ids: list[tuple[int, int, int]] = []
    relayed = {class_of[n] for g, loc, _ in scales for n in (g, loc)} | \
        {class_of[n] for p, fs in products for n in (p, *fs)}
    for group in potential:
        base = min(group, key=lambda r: group[r])
        if SHARDED_BASE:
            # A class that is sharded or reshaped has its size from the divisor of its
            # scale component, so it must be the base the others are offsets of (a slice
            # [1:n] of a shard is the shard minus one, not the shard the slice plus one);
            # with two such classes in one group plan._halos pins it as before.
            scaled = [r for r in group if class_of[r] in relayed]
            if len(scaled) == 1:
                base = scaled[0]
        offset_ids.extend((class_of[r], class_of[base], group[r] - group[base]) for r in group if r != base)
    halos: dict[int, tuple[int, str]] = {}
    for w in walkers.values():
        shifts = {result: (df, db) for _, _, _, result, df, db in w.halos}
        zones = _zones(w.module, shifts) if shifts else {}
        for n, amount, where, result, _, _ in w.halos:
            c = class_of[n]
            if zones is None:
                classes[c].pin(f"a halo inside a loop that carries it ({where}): its zones grow with the trips")
                continue
            width = max(amount, *zones.get(result, (0, 0)))
            if width > halos.get(c, (-1, ""))[0]:
                halos[c] = (width, where)
    return DimAnalysis(classes, class_of, scale_ids, product_ids, types, sorted(set(offset_ids)), halos)


def _zones(module: Module, shifts: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]] | None:
    """Per value, its end zones (front, back): how many positions at each end of a dim
    can differ from an interior position in what they read (rule h). Inputs have none; a
    pad or a concatenated piece adds its width to the zone at its end, a slice that cuts
    c positions off an end takes c off that zone (`shifts`: result -> what its op adds
    at the front and at the back); every other op's result has the largest zones of its
    operands (conservative: zones are not told apart by dim). Values flow into regions
    and functions and back; None when a loop carries a zone round and it keeps growing."""
    ops = [op for f in module.funcs.values() for op in f.body.walk()]
    zones: dict[str, tuple[int, int]] = {}

    def raise_to(v: str, z: tuple[int, int]) -> bool:
        old = zones.get(v, (0, 0))
        new = (max(old[0], z[0]), max(old[1], z[1]))
        if new != old:
            zones[v] = new
            return True
        return False

    def widest(vs: list[str]) -> tuple[int, int]:
        zs = [zones.get(v, (0, 0)) for v in vs]
        return max([z[0] for z in zs] + [0]), max([z[1] for z in zs] + [0])

    for _ in range(8):
        changed = False
        for op in ops:
            into = widest(list(op.operands))
            back = widest([v for region in op.regions for v in region.returns])
            both = (max(into[0], back[0]), max(into[1], back[1]))
            for region in op.regions:
                for a in region.args:
                    # a loop's body returns come round to its arguments; other regions'
                    # arguments are the op's operands (or their elements)
                    changed |= raise_to(a, both if op.name == "stablehlo.while" else into)
            came = both
            if op.name == "func.call" and op.attrs.get("callee", "") in module.funcs:
                callee = module.funcs[op.attrs["callee"]].body
                for a, v in zip(callee.args, op.operands):
                    changed |= raise_to(a, zones.get(v, (0, 0)))
                out = widest(list(callee.returns))
                came = (max(came[0], out[0]), max(came[1], out[1]))
            for r in op.results:
                df, db = shifts.get(r, (0, 0))
                changed |= raise_to(r, (max(came[0] + df, 0), max(came[1] + db, 0)))
        if not changed:
            return zones
    return None


def _resolve_offsets(uf: NodeSets, offsets: list[tuple[Node, Node, int]]) -> list[dict[Node, int]]:
    """Groups of classes related by offsets, each class with its potential (its size minus
    the group's first class's): classes of one group with the same potential have the same
    size and are the same dim (a pad by k then a slice back to the operand's length): they
    are joined. A class reached with two different potentials pins its group. -> per
    group, root -> potential."""
    groups: list[dict[Node, int]] = []
    for _ in range(4):
        edges: dict[Node, list[tuple[Node, int]]] = {}
        for b, d, c in offsets:
            rb, rd = uf.find(b), uf.find(d)
            if rb == rd:
                if c:
                    uf.pin(rb, f"related to itself by an offset of {c}")
                continue
            edges.setdefault(rb, []).append((rd, c))
            edges.setdefault(rd, []).append((rb, -c))
        seen: set[Node] = set()
        groups, joined = [], False
        for start in edges:
            if start in seen:
                continue
            pot, todo, clash = {start: 0}, [start], False
            while todo:
                x = todo.pop()
                for y, c in edges[x]:
                    if y not in pot:
                        pot[y] = pot[x] + c
                        todo.append(y)
                    elif pot[y] != pot[x] + c:
                        clash = True
            seen.update(pot)
            if clash:
                for x in pot:
                    uf.pin(x, "sizes related by two different offsets")
            by_value: dict[int, Node] = {}
            for x, v in pot.items():
                if v in by_value and uf.find(by_value[v]) != uf.find(x):
                    uf.union(by_value[v], x, "an offset of 0 (sliced back to its length)")
                    joined = True
                by_value.setdefault(v, x)
            groups.append(pot)
        if not joined:
            break
    return [{uf.find(x): v for x, v in g.items()} for g in groups]


def _signature_value(module: Module, kind: str, k: int) -> str:
    if module.per_device:
        return f"global {kind} {k}"
    return module.main.body.args[k] if kind == "arg" else module.main.body.returns[k]


__all__ = ["DimAnalysis", "DimClass", "Node", "NodeSets", "Walker", "analyse", "split_call_sites"]
