"""The walk of one program for the dimension analysis: dimension nodes, the union-find that
joins them (with sizes, pins and marks), and the primitives the per-op rules of
`dim_rules` use to join, relate and pin them."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tv_mlir.ir import Block, Module, Op, Sharding, TensorType
from tv_mlir.shrink.unionfind import UnionFind

Node = tuple[str, str, int]  # (program, SSA value, axis)


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
    # The rule table (`dim_rules`), handed in so that rules and walker do not import
    # each other: op name -> rule, and the ops pinned on purpose with the reason.
    rules: Mapping[str, Callable[[Walker, Op, str], None]]
    pinning: Mapping[str, str]
    types: dict[str, TensorType] = field(default_factory=dict)
    # Offset relations (slice, pad, concatenate by constant amounts): size(derived) =
    # size(base) + c, as (base, derived, c); and the halo amounts met along a dim: the
    # largest distance of a constant slice bound, pad or concatenated piece from the end
    # it is counted from (docs/shrinking.md, "Halos and tiles").
    offsets: list[tuple[Node, Node, int]] = field(default_factory=list)
    # (dim, width, where, op result, what the op adds to the result's front and back zones)
    halos: list[tuple[Node, int, str, str, int, int]] = field(default_factory=list)
    # value -> the op that makes it (built on first use: rules that read a constant operand)
    _defs: dict[str, Op] | None = field(default=None, repr=False)

    def producer(self, value: str) -> Op | None:
        if self._defs is None:
            self._defs = {r: op for f in self.module.funcs.values() for op in f.body.walk() for r in op.results}
        return self._defs.get(value)

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

    def offset(self, base: Node, derived: Node, c: int, front: int, back: int, where: str, result: str) -> None:
        """size(derived) = size(base) + c = size(base) + front + back: the op adds `front`
        positions before the base's (a pad, a concatenated halo; negative: a slice cuts
        them) and `back` after."""
        self.offsets.append((base, derived, c))
        self.halos.append((base, max(abs(front), abs(back)), where, result, front, back))

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
        rule = self.rules.get(op.name)
        if rule is not None:
            rule(self, op, f"{op.name} at {op.loc}")
            return
        reason = self.pinning.get(op.name, "is not analysed")
        for v in op.operands + op.results:
            self.pin_all(v, f"{op.name} at {op.loc} {reason}")


