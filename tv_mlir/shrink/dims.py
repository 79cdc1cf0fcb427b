"""Dimension classes of a pair of programs: the analysis stage of shape shrinking
(docs/shrinking.md).

Every dimension of every value of both programs is a node; union-find joins the nodes an
op forces equal, and the two programs are joined through their global signatures. Two
more relations tie classes of different sizes:
  - scale: a global class is a local class times a number of shards (shardings,
    all_gather/reduce_scatter/all_to_all, block-aligned dynamic slices);
  - product: a reshape that splits or merges dims (hidden = heads x head_dim).
Classes an op makes position-dependent in a way the shrinking argument does not cover,
or that an op the analysis does not know touches, are pinned with the reason. Classes
reduced over, indexed by data, or carrying an iota are marked: their lower bounds are
decided in `shrink.py`.

The analysis runs on modules as the frontend read them (before inlining), so that its
value names are those of the MLIR module the rewrite edits; calls join the callee's
arguments and results with the call's operands and results."""
from __future__ import annotations

from dataclasses import dataclass, field
from tv_mlir.ir import Block, Module, Op, Sharding, TensorType
from tv_mlir.semantics.elementwise import RULES as ELEMENTWISE_RULES

Node = tuple[str, str, int]  # (program, SSA value, axis)

# Every op the semantics table treats elementwise (chlo.broadcast_* broadcasts its
# operands: not analysed), plus the identities that keep shapes.
_ELEMENTWISE = frozenset(n for n in ELEMENTWISE_RULES if not n.startswith("chlo.broadcast_")) | frozenset(
    {"mhlo.copy", "sdy.sharding_constraint", "sdy.reshard", "stablehlo.optimization_barrier"})
_SAME_SHAPE_COLLECTIVES = frozenset({"stablehlo.all_reduce", "stablehlo.collective_permute",
                                     "stablehlo.collective_broadcast"})
_ORDER_DEPENDENT = frozenset({"stablehlo.reverse", "stablehlo.sort", "chlo.top_k", "stablehlo.scatter",
                              "stablehlo.reduce_window", "stablehlo.select_and_scatter", "stablehlo.fft",
                              "stablehlo.convolution", "stablehlo.rng", "stablehlo.rng_bit_generator"})
ASSOCIATIVE_REDUCERS = frozenset({"stablehlo.add", "stablehlo.multiply", "stablehlo.maximum", "stablehlo.minimum",
                                  "stablehlo.and", "stablehlo.or"})


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
class _UnionFind:
    parent: dict[Node, Node] = field(default_factory=dict)
    size: dict[Node, int] = field(default_factory=dict)
    pins: dict[Node, list[str]] = field(default_factory=dict)
    marks: dict[Node, dict[str, list[str]]] = field(default_factory=dict)

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
        mine = self.marks.setdefault(ra, {})
        for kind, items in self.marks.pop(rb, {}).items():
            mine.setdefault(kind, []).extend(items)

    def pin(self, n: Node, why: str) -> None:
        self.pins.setdefault(self.find(n), []).append(why)

    def mark(self, n: Node, kind: str, what: str) -> None:
        self.marks.setdefault(self.find(n), {}).setdefault(kind, []).append(what)


@dataclass
class _Walker:
    uf: _UnionFind
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

    def op(self, op: Op) -> None:  # noqa: C901 - one dispatch over op kinds
        name, why = op.name, f"{op.name} at {op.loc}"
        ins, outs = op.operands, op.results
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
            self.uf.mark(self.node(outs[0], int(op.attrs.get("iota_dimension", 0))), "iota", op.loc)
        elif name == "stablehlo.broadcast_in_dim":
            src = self.types[ins[0]]
            dims = list(op.attrs.get("broadcast_dimensions", ()))
            self.same(ins[0], outs[0], why, [(j, d) for j, d in enumerate(dims)
                                             if src.shape[j] != 1 or self.types[outs[0]].shape[d] == 1])
        elif name == "stablehlo.transpose":
            perm = list(op.attrs["permutation"])
            self.same(ins[0], outs[0], why, [(p, i) for i, p in enumerate(perm)])
        elif name == "stablehlo.reshape":
            self.reshape(ins[0], outs[0], why)
        elif name in ("stablehlo.dot_general", "stablehlo.dot"):
            self.dot(op, why)
        elif name == "stablehlo.reduce":
            self.reduce(op, why)
        elif name in _SAME_SHAPE_COLLECTIVES:
            # all_reduce sums across devices, not along a dimension: shapes are kept.
            for i, o in zip(ins, outs):
                self.same(i, o, why)
        elif name in ("stablehlo.all_gather", "stablehlo.reduce_scatter"):
            dim = int(op.attrs["all_gather_dim" if name.endswith("gather") else "scatter_dimension"])
            for i, o in zip(ins, outs):
                self.same(i, o, why, [(d, d) for d in range(len(self.types[i].shape)) if d != dim])
                big, small = (o, i) if name.endswith("gather") else (i, o)
                k = max(1, self.types[big].shape[dim] // max(1, self.types[small].shape[dim]))
                self.scale(self.node(big, dim), self.node(small, dim), k)
        elif name == "stablehlo.all_to_all":
            sd, cd, k = int(op.attrs["split_dimension"]), int(op.attrs["concat_dimension"]), int(op.attrs["split_count"])
            for i, o in zip(ins, outs):
                self.same(i, o, why, [(d, d) for d in range(len(self.types[i].shape)) if d not in (sd, cd)])
                if sd != cd:
                    self.scale(self.node(i, sd), self.node(o, sd), k)
                    self.scale(self.node(o, cd), self.node(i, cd), k)
                else:
                    self.same(i, o, why, [(sd, sd)])
        elif name in ("stablehlo.partition_id", "stablehlo.replica_id"):
            pass
        elif name == "stablehlo.slice":
            self.slice(op, why)
        elif name == "stablehlo.pad":
            lo, hi, inner = (op.attrs.get(k, ()) for k in ("edge_padding_low", "edge_padding_high", "interior_padding"))
            for d in range(len(self.types[ins[0]].shape)):
                if lo[d] == hi[d] == inner[d] == 0:
                    self.same(ins[0], outs[0], why, [(d, d)])
                else:
                    self.uf.pin(self.node(ins[0], d), f"pad at {op.loc}")
                    self.uf.pin(self.node(outs[0], d), f"pad at {op.loc}")
        elif name == "stablehlo.concatenate":
            dim = int(op.attrs["dimension"])
            for i in ins:
                self.same(i, outs[0], why, [(d, d) for d in range(len(self.types[i].shape)) if d != dim])
                self.uf.pin(self.node(i, dim), f"concatenate at {op.loc}")
            self.uf.pin(self.node(outs[0], dim), f"concatenate at {op.loc}")
        elif name in ("stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice"):
            self.dynamic_slice(op, why)
        elif name == "stablehlo.gather":
            self.gather(op, why)
        elif name == "stablehlo.custom_call":
            self.custom_call(op, why)
        elif name == "sdy.manual_computation":
            body = op.regions[0]
            self.bind(body.args, body.arg_types)
            for g, loc, s in zip(ins, body.args, op.attrs.get("in_shardings", ())):
                self.sharded(g, loc, s, why)
            self.ops(body)
            for g, loc, s in zip(outs, body.returns, op.attrs.get("out_shardings", ())):
                self.sharded(g, loc, s, why)
        elif name == "stablehlo.while":
            for r in op.regions:
                self.bind(r.args, r.arg_types)
                for a, i in zip(r.args, ins):
                    self.same(a, i, why)
                self.ops(r)
            for ret, i, o in zip(op.regions[1].returns, ins, outs):
                self.same(ret, o, why)
                self.same(i, o, why)
        elif name in ("stablehlo.case", "stablehlo.if"):
            for r in op.regions:
                self.ops(r)
                for ret, o in zip(r.returns, outs):
                    self.same(ret, o, why)
        elif name == "func.call":
            callee = self.module.funcs.get(op.attrs.get("callee", ""))
            if callee is None:
                for v in ins + outs:
                    self.pin_all(v, f"call to an unknown function at {op.loc}")
                return
            for a, i in zip(callee.body.args, ins):
                self.same(a, i, why)
            for ret, o in zip(callee.body.returns, outs):
                self.same(ret, o, why)
        elif name in _ORDER_DEPENDENT:
            for v in ins + outs:
                self.pin_all(v, f"{name} at {op.loc} reads positions")
        else:
            for v in ins + outs:
                self.pin_all(v, f"{name} at {op.loc} is not analysed")

    def custom_call(self, op: Op, why: str) -> None:
        target = op.attrs.get("call_target_name")
        ins, outs = op.operands, op.results
        if target == "Sharding" and ins and outs:
            self.same(ins[0], outs[0], why)
        elif target in ("SPMDFullToShardShape", "SPMDShardToFullShape"):
            from tv_mlir.frontend.classify import parse_gspmd

            text = op.attrs.get("tv.full_sharding" if target == "SPMDFullToShardShape" else "mhlo.sharding")
            g, loc = (ins[0], outs[0]) if target == "SPMDFullToShardShape" else (outs[0], ins[0])
            s = parse_gspmd(text, len(self.types[g].shape), self.module.num_devices, op.loc) if text else None
            self.sharded(g, loc, s if isinstance(s, Sharding) else None, why)
        else:
            for v in ins + outs:
                self.pin_all(v, f"custom_call @{target} at {op.loc}")

    def reduce(self, op: Op, why: str) -> None:
        ins, outs = op.operands, op.results
        n = len(ins) // 2
        dims = set(op.attrs["dimensions"])
        body = op.regions[0].ops
        by = body[0].name if len(body) == 1 else "a custom reducer"
        for i in ins[:n]:
            kept = [d for d in range(len(self.types[i].shape)) if d not in dims]
            for o in outs:
                self.same(i, o, why, list(zip(kept, range(len(kept)))))
            for d in dims:
                self.uf.mark(self.node(i, d), "reduced", by)
                if by not in ASSOCIATIVE_REDUCERS:
                    self.uf.pin(self.node(i, d), f"reduce with {by} at {op.loc}")

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
            self.uf.mark(self.node(lhs, a), "reduced", "stablehlo.dot_general")
        lf = [d for d in range(rl) if d not in lb and d not in lc]
        rf = [d for d in range(rr) if d not in rb and d not in rc]
        result_axes = [(lhs, d) for d in lb] + [(lhs, d) for d in lf] + [(rhs, d) for d in rf]
        for k, (v, d) in enumerate(result_axes):
            self.uf.union(self.node(v, d), self.node(out, k), why)

    def slice(self, op: Op, why: str) -> None:
        src, dst = op.operands[0], op.results[0]
        starts, limits = op.attrs["start_indices"], op.attrs["limit_indices"]
        strides = op.attrs.get("strides") or (1,) * len(starts)
        for d, n in enumerate(self.types[src].shape):
            if starts[d] == 0 and limits[d] == n and strides[d] == 1:
                self.same(src, dst, why, [(d, d)])
            else:
                self.uf.pin(self.node(src, d), f"slice [{starts[d]}:{limits[d]}] at {op.loc}")
                self.uf.pin(self.node(dst, d), f"slice [{starts[d]}:{limits[d]}] at {op.loc}")

    def dynamic_slice(self, op: Op, why: str) -> None:
        """Full-size dims keep their class; a block of a dim that the block size divides is
        a scale relation, with the start offsets tied to the block size (shrink.py checks
        them); anything else pins."""
        if op.name == "stablehlo.dynamic_slice":
            big, small, also = op.operands[0], op.results[0], None
        else:
            big, small, also = op.operands[0], op.operands[1], op.results[0]
        if also is not None:
            self.same(big, also, why)
        for d, n in enumerate(self.types[big].shape):
            m = self.types[small].shape[d]
            if m == n:
                self.same(big, small, why, [(d, d)])
            elif m > 0 and n % m == 0:
                self.scale(self.node(big, d), self.node(small, d), n // m)
                self.uf.mark(self.node(big, d), "blocked", op.loc)
            else:
                self.uf.pin(self.node(big, d), f"{op.name} at {op.loc}")
                self.uf.pin(self.node(small, d), f"{op.name} at {op.loc}")

    def gather(self, op: Op, why: str) -> None:
        """The data-indexed take (take_along_axis, an embedding lookup): collapsed dims of
        slice size 1 are indexed by data; dims taken whole keep their class; batching
        dims pair with the indices'. Other gathers pin."""
        operand, indices = op.operands[:2]
        out = op.results[0]
        g = op.attrs.get("dimension_numbers")
        sizes = tuple(op.attrs.get("slice_sizes", ()))
        ot, it = self.types[operand], self.types[indices]
        if g is None or len(sizes) != len(ot.shape):
            for v in (operand, indices, out):
                self.pin_all(v, f"gather at {op.loc}")
            return
        index_dims = [d for d in range(len(it.shape)) if d != g.index_vector_dim]
        batch_out = [d for d in range(len(self.types[out].shape)) if d not in g.offset_dims]
        for d_in, d_out in zip(index_dims, batch_out):
            self.same(indices, out, why, [(d_in, d_out)])
        for a, b in zip(g.operand_batching_dims, g.start_indices_batching_dims):
            self.same(operand, indices, why, [(a, b)])
        window = [d for d in range(len(ot.shape)) if d not in g.collapsed_slice_dims and d not in g.operand_batching_dims]
        for d, d_out in zip(window, g.offset_dims):
            if sizes[d] == ot.shape[d] and d not in g.start_index_map:
                self.same(operand, out, why, [(d, d_out)])
            else:
                self.uf.pin(self.node(operand, d), f"gather window at {op.loc}")
                self.uf.pin(self.node(out, d_out), f"gather window at {op.loc}")
        for d in g.start_index_map:
            if d in g.collapsed_slice_dims and sizes[d] == 1:
                self.uf.mark(self.node(operand, d), "indexed", op.loc)
            elif sizes[d] != ot.shape[d]:
                self.uf.pin(self.node(operand, d), f"gather at {op.loc}")

    def reshape(self, src: str, dst: str, why: str) -> None:
        """Both shapes are cut at the union of their running products into atoms (row-major
        order makes every dim a product of consecutive atoms): a dim of one atom joins the
        atom's class, a dim of several is a product relation (hidden = heads x head_dim).
        When the cuts do not nest into whole atoms the dims involved are pinned."""
        a, b = self.types[src].shape, self.types[dst].shape
        if 0 in a or 0 in b:
            return
        cuts = sorted(set(_prefix_products(a)) | set(_prefix_products(b)))
        sizes, prev = [], 1
        for c in cuts:
            if c % prev:
                for v in (src, dst):
                    self.pin_all(v, f"reshape regroups dims at {why}")
                return
            sizes.append(c // prev)
            prev = c
        atoms = [f"{dst}~atom{k}" for k in range(len(sizes))]
        for name, size in zip(atoms, sizes):
            self.bind((name,), (TensorType((size,), "atom"),))
        for value, shape in ((src, a), (dst, b)):
            lo = 0
            for d, n in enumerate(shape):
                if n == 1:
                    continue
                hi, p = lo, 1
                while p < n:
                    p *= sizes[hi]
                    hi += 1
                parts = [self.node(atoms[k], 0) for k in range(lo, hi)]
                if len(parts) == 1:
                    self.uf.union(self.node(value, d), parts[0], why)
                else:
                    self.products.append((self.node(value, d), tuple(parts)))
                lo = hi


def _prefix_products(shape: tuple[int, ...]) -> list[int]:
    out, p = [], 1
    for n in shape:
        p *= n
        if n != 1:
            out.append(p)
    return out


def _propagate_shards(uf: _UnionFind, scales: list[tuple[Node, Node, int]],
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
    uf = _UnionFind()
    scales: list[tuple[Node, Node, int]] = []
    products: list[tuple[Node, tuple[Node, ...]]] = []
    walkers = {}
    for program, module in (("ref", ref), ("other", other)):
        w = _Walker(uf, program, module, scales, products)
        for f in module.funcs.values():
            w.bind(f.body.args, f.body.arg_types)
            for inner in f.body.walk():
                w.bind(inner.results, inner.result_types)
                for r in inner.regions:
                    w.bind(r.args, r.arg_types)
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
    for n in uf.parent:
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


__all__ = ["ASSOCIATIVE_REDUCERS", "DimAnalysis", "DimClass", "Node", "analyse"]
