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
arguments and results with the call's operands and results."""
from __future__ import annotations

from dataclasses import dataclass, field

from tv_mlir.ir import Block, Module, Op, Sharding, TensorType
from tv_mlir.shrink.dim_rules import PINNING, RULES
from tv_mlir.shrink.unionfind import UnionFind

Node = tuple[str, str, int]  # (program, SSA value, axis)


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


@dataclass
class NodeSets:
    """Dimension nodes joined by ops: a union-find whose roots carry the set's size, why it
    is pinned, and its marks (reduced / iota / indexed / blocked)."""

    sets: UnionFind[Node] = field(default_factory=UnionFind)
    size: dict[Node, int] = field(default_factory=dict)
    pins: dict[Node, list[str]] = field(default_factory=dict)
    marks: dict[Node, dict[str, list[str]]] = field(default_factory=dict)

    def add(self, n: Node, size: int) -> None:
        if n not in self.sets:
            self.sets.add(n)
            self.size[n] = size

    def find(self, n: Node) -> Node:
        return self.sets.find(n)

    def union(self, a: Node, b: Node, why: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self.size[ra] != self.size[rb]:
            # Ops never force dims of different sizes equal; a mismatch means the rule
            # misread the op: keep both apart, pinned.
            self.pin(ra, f"size {self.size[ra]} vs {self.size[rb]} at {why}")
            self.pin(rb, f"size {self.size[rb]} vs {self.size[ra]} at {why}")
            return
        self.sets.union(ra, rb)
        self.pins.setdefault(ra, []).extend(self.pins.pop(rb, []))
        mine = self.marks.setdefault(ra, {})
        for kind, items in self.marks.pop(rb, {}).items():
            mine.setdefault(kind, []).extend(items)

    def pin(self, n: Node, why: str) -> None:
        self.pins.setdefault(self.find(n), []).append(why)

    def mark(self, n: Node, kind: str, what: str) -> None:
        self.marks.setdefault(self.find(n), {}).setdefault(kind, []).append(what)


@dataclass
class Walker:
    """Walks one program, handing every op to its rule; the rules join, relate, mark and
    pin through these primitives."""

    uf: NodeSets
    program: str
    module: Module
    scales: list[tuple[Node, Node, int]]
    products: list[tuple[Node, tuple[Node, ...]]]
    types: dict[str, TensorType] = field(default_factory=dict)

    def node(self, value: str, axis: int) -> Node:
        n = (self.program, value, axis)
        self.uf.add(n, self.types[value].shape[axis])
        return n

    def bind(self, names: tuple[str, ...], types: tuple[TensorType, ...]) -> None:
        for name, t in zip(names, types):
            self.types[name] = t
            for axis in range(len(t.shape)):
                self.node(name, axis)

    def same(self, a: str, b: str, why: str, axes: list[tuple[int, int]] | None = None) -> None:
        ta, tb = self.types[a], self.types[b]
        pairs = axes if axes is not None else [(i, i) for i in range(min(len(ta.shape), len(tb.shape)))]
        for i, j in pairs:
            self.uf.union(self.node(a, i), self.node(b, j), why)

    def pin_all(self, name: str, why: str) -> None:
        for axis in range(len(self.types[name].shape)):
            self.uf.pin(self.node(name, axis), why)

    def scale(self, global_: Node, local: Node, k: int) -> None:
        self.scales.append((global_, local, k))

    def sharded(self, global_value: str, local_value: str, s: Sharding | None, why: str) -> None:
        for axis in range(len(self.types[global_value].shape)):
            k = s.shards(axis) if s is not None and axis < len(s.dims) else 1
            g, loc = self.node(global_value, axis), self.node(local_value, axis)
            if k == 1:
                self.uf.union(g, loc, why)
            else:
                self.scale(g, loc, k)

    def block(self, block: Block) -> None:
        self.bind(block.args, block.arg_types)
        self.ops(block)

    def ops(self, block: Block) -> None:
        for inner in block.ops:
            self.bind(inner.results, inner.result_types)
            self.op(inner)

    def op(self, op: Op) -> None:
        rule = RULES.get(op.name)
        if rule is not None:
            rule(self, op, f"{op.name} at {op.loc}")
            return
        reason = PINNING.get(op.name, "is not analysed")
        for v in op.operands + op.results:
            self.pin_all(v, f"{op.name} at {op.loc} {reason}")


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
        w = Walker(uf, program, module, scales, products)
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
    return DimAnalysis(classes, class_of, scale_ids, product_ids, types)


def _signature_value(module: Module, kind: str, k: int) -> str:
    if module.per_device:
        return f"global {kind} {k}"
    return module.main.body.args[k] if kind == "arg" else module.main.body.returns[k]


__all__ = ["DimAnalysis", "DimClass", "Node", "NodeSets", "Walker", "analyse"]
