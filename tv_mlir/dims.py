"""Dimension classes of a pair of programs: the first stage of shape shrinking
(docs/shrinking.md). Analysis only: nothing is rewritten yet, and `verify` does not use it.

Every dimension of every value of both programs is a node; union-find joins the nodes an
op forces equal, and the two programs are joined through their global signatures. A
sharded dimension's local class is related to its global class by a scale factor (the
number of shards). Classes an op makes position-dependent, or that an op the analysis does
not know touches, are pinned with the reason, as are classes reduced over (their bound is
the degree of the reduced summand, which is not computed yet)."""
from __future__ import annotations

from dataclasses import dataclass, field
from .ir import Block, Module, Op, Sharding, TensorType

Node = tuple[str, str, int]  # (program, SSA value, axis)

_ELEMENTWISE = frozenset(f"stablehlo.{n}" for n in (
    "add subtract multiply divide remainder negate abs maximum minimum power sign floor ceil "
    "round_nearest_even round_nearest_afz compare select clamp and or not xor convert reduce_precision "
    "is_finite exponential log log_plus_one exponential_minus_one tanh logistic sqrt rsqrt cbrt sine "
    "cosine tan atan2 optimization_barrier").split()) | {"chlo.erf", "chlo.tan", "chlo.square", "mhlo.copy",
                                                       "sdy.sharding_constraint", "sdy.reshard"}
_SAME_SHAPE_COLLECTIVES = frozenset({"stablehlo.all_reduce", "stablehlo.collective_permute",
                                     "stablehlo.collective_broadcast"})
# Ops whose semantics look at positions along these operand dims (bounds, offsets, order).
_POSITIONAL = frozenset({"stablehlo.slice", "stablehlo.pad", "stablehlo.dynamic_slice",
                         "stablehlo.dynamic_update_slice", "stablehlo.gather", "stablehlo.scatter",
                         "stablehlo.reverse", "stablehlo.sort", "chlo.top_k", "stablehlo.concatenate"})


@dataclass
class DimClass:
    size: int
    members: list[Node] = field(default_factory=list)
    pins: list[str] = field(default_factory=list)  # why it must keep its size
    reduced_by: set[str] = field(default_factory=set)  # ops that sum or compare across it


@dataclass
class DimAnalysis:
    classes: list[DimClass]
    class_of: dict[Node, int]
    scales: list[tuple[int, int, int]]  # (global class, local class, number of shards)

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
class _UnionFind:
    parent: dict[Node, Node] = field(default_factory=dict)
    size: dict[Node, int] = field(default_factory=dict)
    pins: dict[Node, list[str]] = field(default_factory=dict)
    reduced: dict[Node, set[str]] = field(default_factory=dict)

    def add(self, n: Node, size: int) -> None:
        if n not in self.parent:
            self.parent[n], self.size[n] = n, size

    def find(self, n: Node) -> Node:
        while self.parent[n] != n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

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
        self.parent[rb] = ra
        self.pins.setdefault(ra, []).extend(self.pins.pop(rb, []))
        self.reduced.setdefault(ra, set()).update(self.reduced.pop(rb, set()))

    def pin(self, n: Node, why: str) -> None:
        self.pins.setdefault(self.find(n), []).append(why)

    def reduce(self, n: Node, by: str) -> None:
        self.reduced.setdefault(self.find(n), set()).add(by)


@dataclass
class _Walker:
    uf: _UnionFind
    program: str
    scales: list[tuple[Node, Node, int]]
    num_devices: int = 1
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
        for op in block.ops:
            self.bind(op.results, op.result_types)
            self.op(op)

    def op(self, op: Op) -> None:  # noqa: C901 - one dispatch over op kinds
        name, why = op.name, f"{op.name} at {op.loc}"
        ins, outs = op.operands, op.results
        for r in op.regions:
            if name in ("stablehlo.while", "stablehlo.case", "stablehlo.if", "sdy.manual_computation"):
                continue
            self.bind(r.args, r.arg_types)  # scalar bodies: nothing to relate
        if name in _ELEMENTWISE:
            for o in outs:
                for i in ins:
                    if len(self.types[i].shape) == len(self.types[o].shape):
                        self.same(i, o, why)
        elif name == "stablehlo.constant":
            value = op.attrs.get("value")
            if value is not None and getattr(value, "size", 1) > 1 and len(set(value.reshape(-1).tolist())) > 1:
                self.pin_all(outs[0], f"non-splat constant at {op.loc}")
        elif name == "stablehlo.iota":
            self.uf.pin(self.node(outs[0], int(op.attrs.get("iota_dimension", 0))), f"iota at {op.loc}")
        elif name == "stablehlo.broadcast_in_dim":
            src = self.types[ins[0]]
            dims = list(op.attrs.get("broadcast_dimensions", ()))
            self.same(ins[0], outs[0], why, [(j, d) for j, d in enumerate(dims) if src.shape[j] != 1])
        elif name == "stablehlo.transpose":
            perm = list(op.attrs["permutation"])
            self.same(ins[0], outs[0], why, [(p, i) for i, p in enumerate(perm)])
        elif name == "stablehlo.reshape":
            self.reshape(ins[0], outs[0], why)
        elif name in ("stablehlo.dot_general", "stablehlo.dot"):
            self.dot(op, why)
        elif name == "stablehlo.reduce":
            n = len(ins) // 2
            dims = set(op.attrs["dimensions"])
            body = op.regions[0].ops
            by = body[0].name if len(body) == 1 else "a custom reducer"
            for i in ins[:n]:
                kept = [d for d in range(len(self.types[i].shape)) if d not in dims]
                for o in outs:
                    self.same(i, o, why, list(zip(kept, range(len(kept)))))
                for d in dims:
                    self.uf.reduce(self.node(i, d), by)
                    if by not in ("stablehlo.add", "stablehlo.multiply", "stablehlo.maximum", "stablehlo.minimum",
                                  "stablehlo.and", "stablehlo.or"):
                        self.uf.pin(self.node(i, d), f"reduce with {by} at {op.loc}")
        elif name in _SAME_SHAPE_COLLECTIVES:
            # all_reduce sums across devices, not along a dimension: shapes are kept.
            for i, o in zip(ins, outs):
                self.same(i, o, why)
        elif name in ("stablehlo.all_gather", "stablehlo.reduce_scatter"):
            dim = int(op.attrs["all_gather_dim" if name.endswith("gather") else "scatter_dimension"])
            i, o = ins[0], outs[0]
            self.same(i, o, why, [(d, d) for d in range(len(self.types[i].shape)) if d != dim])
            big, small = (o, i) if name.endswith("gather") else (i, o)
            k = max(1, self.types[big].shape[dim] // max(1, self.types[small].shape[dim]))
            self.scale(self.node(big, dim), self.node(small, dim), k)
        elif name == "stablehlo.all_to_all":
            sd, cd, k = int(op.attrs["split_dimension"]), int(op.attrs["concat_dimension"]), int(op.attrs["split_count"])
            i, o = ins[0], outs[0]
            self.same(i, o, why, [(d, d) for d in range(len(self.types[i].shape)) if d not in (sd, cd)])
            if sd != cd:
                self.scale(self.node(i, sd), self.node(o, sd), k)
                self.scale(self.node(o, cd), self.node(i, cd), k)
            else:
                self.same(i, o, why, [(sd, sd)])
        elif name in ("stablehlo.partition_id", "stablehlo.replica_id"):
            pass
        elif name == "stablehlo.custom_call":
            target = op.attrs.get("call_target_name")
            if target == "Sharding" and ins and outs:
                self.same(ins[0], outs[0], why)
            elif target in ("SPMDFullToShardShape", "SPMDShardToFullShape"):
                from .spmd import parse_gspmd

                text = op.attrs.get("tv.full_sharding" if target == "SPMDFullToShardShape" else "mhlo.sharding")
                g, loc = (ins[0], outs[0]) if target == "SPMDFullToShardShape" else (outs[0], ins[0])
                s = parse_gspmd(text, len(self.types[g].shape), self.num_devices, op.loc) if text else None
                self.sharded(g, loc, s if isinstance(s, Sharding) else None, why)
            else:
                for v in ins + outs:
                    self.pin_all(v, f"custom_call @{target} at {op.loc}")
        elif name == "sdy.manual_computation":
            body = op.regions[0]
            self.bind(body.args, body.arg_types)
            for g, loc, s in zip(ins, body.args, op.attrs.get("in_shardings", ())):
                self.sharded(g, loc, s, why)
            for inner in body.ops:
                self.bind(inner.results, inner.result_types)
                self.op(inner)
            for g, loc, s in zip(outs, body.returns, op.attrs.get("out_shardings", ())):
                self.sharded(g, loc, s, why)
        elif name in ("stablehlo.while", "stablehlo.case", "stablehlo.if"):
            if name == "stablehlo.while":
                cond, body = op.regions
                for r in (cond, body):
                    self.bind(r.args, r.arg_types)
                    for a, i in zip(r.args, ins):
                        self.same(a, i, why)
                self._ops(cond)
                self._ops(body)
                for ret, o in zip(body.returns, outs):
                    self.same(ret, o, why)
            else:
                for r in op.regions:
                    self._ops(r)
                    for ret, o in zip(r.returns, outs):
                        self.same(ret, o, why)
            for i, o in zip(ins if name == "stablehlo.while" else (), outs):
                self.same(i, o, why)
        elif name in _POSITIONAL:
            for v in ins + outs:
                self.pin_all(v, f"{name} at {op.loc} reads positions")
        else:
            for v in ins + outs:
                self.pin_all(v, f"{name} at {op.loc} is not analysed")

    def _ops(self, block: Block) -> None:
        for inner in block.ops:
            self.bind(inner.results, inner.result_types)
            self.op(inner)

    def dot(self, op: Op, why: str) -> None:
        lhs, rhs = op.operands
        out = op.results[0]
        dn = op.attrs.get("dot_dimension_numbers")
        rl, rr = len(self.types[lhs].shape), len(self.types[rhs].shape)
        lb, rb = (list(dn.lhs_batch), list(dn.rhs_batch)) if dn else ([], [])
        lc, rc = (list(dn.lhs_contracting), list(dn.rhs_contracting)) if dn else ([rl - 1], [0])
        for a, b in zip(lb, rb):
            self.uf.union(self.node(lhs, a), self.node(rhs, b), why)
        for a, b in zip(lc, rc):
            self.uf.union(self.node(lhs, a), self.node(rhs, b), why)
            self.uf.reduce(self.node(lhs, a), "stablehlo.dot_general")
        lf = [d for d in range(rl) if d not in lb and d not in lc]
        rf = [d for d in range(rr) if d not in rb and d not in rc]
        result_axes = [(lhs, d) for d in lb] + [(lhs, d) for d in lf] + [(rhs, d) for d in rf]
        for k, (v, d) in enumerate(result_axes):
            self.uf.union(self.node(v, d), self.node(out, k), why)

    def reshape(self, src: str, dst: str, why: str) -> None:
        """Dims that map one to one (the same size at the same place in the running
        products) are joined; split and merged dims are pinned for now (a product
        relation, hidden = heads x head_dim, is the next step)."""
        a, b = self.types[src].shape, self.types[dst].shape
        i = j = 0
        while i < len(a) or j < len(b):
            if i < len(a) and a[i] == 1 and (j >= len(b) or b[j] != 1):
                i += 1
                continue
            if j < len(b) and b[j] == 1 and (i >= len(a) or a[i] != 1):
                j += 1
                continue
            if i < len(a) and j < len(b) and a[i] == b[j]:
                self.uf.union(self.node(src, i), self.node(dst, j), why)
                i, j = i + 1, j + 1
                continue
            # A group whose products meet: split or merge.
            gi, gj = [i], [j]
            pa, pb = a[i], b[j]
            while pa != pb:
                if pa < pb:
                    i += 1
                    gi.append(i)
                    pa *= a[i]
                else:
                    j += 1
                    gj.append(j)
                    pb *= b[j]
            for d in gi:
                self.uf.pin(self.node(src, d), f"reshape factorization at {why}")
            for d in gj:
                self.uf.pin(self.node(dst, d), f"reshape factorization at {why}")
            i, j = i + 1, j + 1


def analyse(ref: Module, other: Module) -> DimAnalysis:
    """Dimension classes of both programs, joined through the global signature."""
    uf = _UnionFind()
    scales: list[tuple[Node, Node, int]] = []
    walkers = {}
    for program, module in (("ref", ref), ("other", other)):
        w = _Walker(uf, program, scales, module.num_devices)
        w.block(module.main.body)
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
    for k in range(len(ref.main.body.args)):
        a, b = _signature_value(ref, "arg", k), _signature_value(other, "arg", k)
        for axis in range(len(walkers["ref"].types[a].shape)):
            uf.union(walkers["ref"].node(a, axis), walkers["other"].node(b, axis), f"argument {k}")
    for k in range(len(ref.main.body.returns)):
        a, b = _signature_value(ref, "result", k), _signature_value(other, "result", k)
        for axis in range(len(walkers["ref"].types[a].shape)):
            uf.union(walkers["ref"].node(a, axis), walkers["other"].node(b, axis), f"result {k}")
    roots: dict[Node, int] = {}
    classes: list[DimClass] = []
    class_of: dict[Node, int] = {}
    for n in uf.parent:
        r = uf.find(n)
        if r not in roots:
            roots[r] = len(classes)
            classes.append(DimClass(uf.size[r], pins=list(uf.pins.get(r, [])), reduced_by=set(uf.reduced.get(r, set()))))
        classes[roots[r]].members.append(n)
        class_of[n] = roots[r]
    scale_ids = sorted({(class_of[g], class_of[loc], k) for g, loc, k in scales})
    return DimAnalysis(classes, class_of, scale_ids)


def _signature_value(module: Module, kind: str, k: int) -> str:
    if module.per_device:
        return f"global {kind} {k}"
    return module.main.body.args[k] if kind == "arg" else module.main.body.returns[k]


__all__ = ["DimAnalysis", "DimClass", "analyse"]
