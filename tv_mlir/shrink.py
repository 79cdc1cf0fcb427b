"""Shape shrinking, the planning stage: from the dimension classes of a program pair
(`dims.py`) pick the smallest size of every class that keeps the shrinking argument of
docs/shrinking.md valid, and decide how every shape-valued constant is rewritten.

Sizes. Classes joined by scale relations (global = shards x local) form a component;
the component is divided by one common divisor D, so every relation still holds. D is
the largest divisor of the sizes that keeps every class of the component at or above
its lower bound:
  - 1 per shard for a free class;
  - the degree of the summand (at least 2) for a class summed over (Newton: a symmetric
    identity of degree d that holds at n >= d holds at every n), 2 for max/min;
  - 2 per shard for a class indexed by data (a vocabulary lookup);
  - 3, and 2|c| + 2 for every index constant c that is not a size, for a class an iota
    runs along (positions compared with a window constant keep the window visible).
Product relations (hidden = heads x head_dim) need the product's divisor to be the
factors' divisors multiplied; where that is impossible every class involved is pinned.

Constants. An integer constant (index arithmetic) or a float divisor whose value is the
size of a shrunk class, that size minus one, or the element count of a reduction, is
rewritten to the new value. A value that names two different sizes, or a small value
(< 8) that names a shrunk size, is not guessed at: the classes are pinned and the
reason recorded. Pinning changes sizes, so planning repeats until nothing changes."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dims import DimAnalysis, analyse
from .ir import Block, Module, Op

UNBOUNDED = 1 << 20
_TIE_MIN = 8  # constants below this are too common to be read as sizes
_SAME_DEGREE = frozenset({"stablehlo.convert", "stablehlo.negate", "stablehlo.reshape", "stablehlo.transpose",
                          "stablehlo.broadcast_in_dim", "mhlo.copy", "sdy.sharding_constraint", "sdy.reshard",
                          "stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter",
                          "stablehlo.all_to_all", "stablehlo.collective_permute", "stablehlo.collective_broadcast",
                          "stablehlo.slice", "stablehlo.dynamic_slice", "stablehlo.pad", "stablehlo.concatenate",
                          "stablehlo.optimization_barrier", "stablehlo.reduce_precision", "stablehlo.custom_call",
                          "stablehlo.real", "stablehlo.imag", "stablehlo.add", "stablehlo.subtract",
                          "stablehlo.dynamic_update_slice", "stablehlo.gather"})


@dataclass
class ClassEntry:
    """One line of the shrink map."""

    original: int
    verified: int
    where: str  # a member dim, for people
    role: str  # free / reduced (degree d) / indexed / positions / pinned
    reason: str = ""  # why it keeps its size, for pinned classes

    def to_dict(self) -> dict[str, Any]:
        d = {"original": self.original, "verified": self.verified, "where": self.where, "role": self.role}
        if self.reason:
            d["reason"] = self.reason
        return d


@dataclass
class ShrinkPlan:
    analysis: DimAnalysis
    sizes: list[int]  # per class
    constants: dict[tuple[str, str], float | int]  # (program, constant's value name) -> new value
    entries: list[ClassEntry] = field(default_factory=list)
    # class -> (original, shrunk) size of its finest shard block: position j of the shrunk
    # class is position (j // shrunk) * original + j % shrunk of the original one.
    blocks: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def shrinks(self) -> bool:
        return any(s != c.size for s, c in zip(self.sizes, self.analysis.classes))

    def new_shape(self, program: str, value: str) -> tuple[int, ...]:
        return tuple(self.sizes[c] for c in self.analysis.classes_of(program, value))

    def summary(self) -> dict[str, Any]:
        return {"shrunk": [e.to_dict() for e in self.entries if e.verified != e.original],
                "kept": [e.to_dict() for e in self.entries if e.verified == e.original]}


# ---------------------------------------------------------------------------
# Program facts the planner needs: definitions, uses, constants.

@dataclass
class _Facts:
    program: str
    module: Module
    defs: dict[str, tuple[Op, int]] = field(default_factory=dict)
    uses: dict[str, list[Op]] = field(default_factory=dict)
    region_arg: dict[str, tuple[Op, int, int]] = field(default_factory=dict)  # arg -> (owner, region, index)
    callers: dict[str, list[tuple[Op, int]]] = field(default_factory=dict)  # func arg -> (call, index)
    func_of_arg: dict[str, str] = field(default_factory=dict)
    entry_args: set[str] = field(default_factory=set)
    unreachable: set[str] = field(default_factory=set)  # values of functions nothing calls

    @classmethod
    def of(cls, program: str, module: Module) -> "_Facts":
        f = cls(program, module)
        f.entry_args = set(module.main.body.args)
        reachable, todo = set(), [module.entry]
        while todo:
            name = todo.pop()
            if name in reachable or name not in module.funcs:
                continue
            reachable.add(name)
            todo.extend(op.attrs.get("callee", "") for op in module.funcs[name].body.walk() if op.name == "func.call")
        for fn in module.funcs.values():
            if fn.name not in reachable:
                f.unreachable.update(fn.body.args)
                for op in fn.body.walk():
                    f.unreachable.update(op.results)
                    f.unreachable.update(a for r in op.regions for a in r.args)
        for fn in module.funcs.values():
            for a in fn.body.args:
                f.func_of_arg[a] = fn.name
            for op in fn.body.walk():
                for k, r in enumerate(op.results):
                    f.defs[r] = (op, k)
                for v in op.operands:
                    f.uses.setdefault(v, []).append(op)
                for ri, region in enumerate(op.regions):
                    for k, a in enumerate(region.args):
                        f.region_arg[a] = (op, ri, k)
                    for v in region.returns:
                        f.uses.setdefault(v, []).append(op)
                if op.name == "func.call":
                    callee = module.funcs.get(op.attrs.get("callee", ""))
                    if callee is not None:
                        for k, a in enumerate(callee.body.args):
                            f.callers.setdefault(a, []).append((op, k))
        return f

    def ops(self) -> list[Op]:
        return [op for fn in self.module.funcs.values() for op in fn.body.walk()]

    def device_derived(self, value: str, seen: set[str] | None = None) -> bool:
        """Computed from partition_id/replica_id by integer arithmetic (mesh coordinates)."""
        seen = seen if seen is not None else set()
        if value in seen or value not in self.defs:
            return False
        seen.add(value)
        op, _ = self.defs[value]
        if op.name in ("stablehlo.partition_id", "stablehlo.replica_id"):
            return True
        # Mesh-coordinate arithmetic only: a product with a size (shard * rows) is an
        # offset, whose constants are sizes.
        if op.name in ("stablehlo.convert", "stablehlo.divide", "stablehlo.remainder", "stablehlo.reshape",
                       "stablehlo.add", "stablehlo.subtract", "stablehlo.broadcast_in_dim"):
            return any(self.device_derived(o, seen) for o in op.operands)
        return False

    def mesh_arithmetic(self, use: Op, pos: int) -> bool:
        """A constant at operand `pos` of `use` that only steps through mesh coordinates
        ((axis_index + 4) % 4, pid / 1 % 4)."""
        if use.name not in ("stablehlo.divide", "stablehlo.remainder", "stablehlo.add", "stablehlo.subtract"):
            return False
        if use.name in ("stablehlo.divide", "stablehlo.remainder") and pos != 1:
            return False
        return any(self.device_derived(o) for k, o in enumerate(use.operands) if k != pos)


def _splat(op: Op) -> float | int | None:
    value = op.attrs.get("value")
    if value is None or not isinstance(value, np.ndarray) or value.size == 0:
        return None
    flat = value.reshape(-1)
    if value.size > 1 and not (flat == flat[0]).all():
        return None
    x = flat[0]
    if isinstance(x, (np.bool_, bool)):
        return None
    return int(x) if np.issubdtype(value.dtype, np.integer) else float(x)


@dataclass
class _Constant:
    program: str
    value_name: str
    value: float | int
    is_int: bool
    loc: str
    role: str  # index / divisor / reciprocal


def _constants(facts: _Facts) -> list[_Constant]:
    out = []
    for op in facts.ops():
        if op.name != "stablehlo.constant":
            continue
        v = _splat(op)
        if v is None:
            continue
        t = op.result_types[0]
        name = op.results[0]
        uses = _through_broadcasts(facts, name)
        if t.is_int:
            arithmetic = [u for u, pos in uses if not facts.mesh_arithmetic(u, pos)]
            if arithmetic:
                out.append(_Constant(facts.program, name, v, True, op.loc, "index"))
        elif t.is_float and v != 0:
            if any(u.name == "stablehlo.divide" and pos == 1 for u, pos in uses):
                out.append(_Constant(facts.program, name, v, False, op.loc, "divisor"))
            elif any(u.name == "stablehlo.multiply" for u, _ in uses):
                out.append(_Constant(facts.program, name, v, False, op.loc, "reciprocal"))
    return out


def _through_broadcasts(facts: _Facts, value: str) -> list[tuple[Op, int]]:
    """Uses of a value, looking through broadcasts/converts/reshapes: (op, operand position)."""
    out, todo, seen = [], [value], set()
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        for u in facts.uses.get(v, []):
            if u.name in ("stablehlo.broadcast_in_dim", "stablehlo.convert", "stablehlo.reshape"):
                todo.extend(u.results)
            else:
                out.extend((u, k) for k, o in enumerate(u.operands) if o == v)
    return out


def _int_cone_constants(facts: _Facts, value: str) -> list[str]:
    """Names of the constants in the integer computation of an index operand."""
    out, todo, seen = [], [value], set()
    while todo:
        v = todo.pop()
        if v in seen or v not in facts.defs:
            continue
        seen.add(v)
        op, _ = facts.defs[v]
        if op.name == "stablehlo.constant":
            out.append(v)
        elif op.result_types and not op.result_types[0].is_float:
            todo.extend(op.operands)
    return out


# ---------------------------------------------------------------------------
# Degrees of summands.

@dataclass
class _Degrees:
    """Degree, in the elements at one position of a class family, of every value: the
    bound a reduction over that family needs. Transcendental and comparison results are
    atoms (an uninterpreted function application is one variable); loop-carried values
    are iterated to a fixpoint, or unbounded."""

    facts: _Facts
    analysis: DimAnalysis
    family: set[int]
    bindings: dict[str, int] = field(default_factory=dict)  # a called function's arguments
    calls: dict[tuple[str, tuple[int, ...]], tuple[int, ...]] = field(default_factory=dict)
    memo: dict[str, int] = field(default_factory=dict)

    def has(self, value: str) -> bool:
        key = (self.facts.program, value)
        if key not in self.analysis.types:
            return False
        return any(c in self.family for c in self.analysis.classes_of(*key))

    def of(self, value: str) -> int:
        if value in self.memo:
            return self.memo[value]
        if not self.has(value):
            return 0
        self.memo[value] = UNBOUNDED  # cycles (loops) are unbounded unless resolved below
        d = self._compute(value)
        self.memo[value] = min(d, UNBOUNDED)
        return self.memo[value]

    def _compute(self, value: str) -> int:  # noqa: C901 - one dispatch over op kinds
        f = self.facts
        if value in self.bindings:
            return self.bindings[value]
        if value in f.entry_args:
            return 1
        if value in f.region_arg:
            owner, ri, k = f.region_arg[value]
            if owner.name == "sdy.manual_computation":
                return self.of(owner.operands[k])
            if owner.name == "stablehlo.while":
                self._loop(owner)
                return self.memo[value]
            return 1 if owner.name == "stablehlo.reduce" else UNBOUNDED
        if value in f.func_of_arg:
            return max((self.of(call.operands[k]) for call, k in f.callers.get(value, [])), default=1)
        if value not in f.defs:
            return UNBOUNDED
        op, idx = f.defs[value]
        ds = [self.of(o) for o in op.operands]
        n = op.name
        if n == "stablehlo.constant" or n == "stablehlo.iota":
            return 0 if n == "stablehlo.constant" else 1
        if n in ("stablehlo.multiply", "stablehlo.dot_general", "stablehlo.dot"):
            return sum(ds)
        if n == "stablehlo.select":
            return ds[0] + max(ds[1:])
        if n == "stablehlo.divide":
            return ds[0] + (1 if ds[1] else 0)
        if n == "stablehlo.power":
            return UNBOUNDED if ds[1] else ds[0] * 8  # a constant exponent: bounded by a small integer
        if n == "stablehlo.reduce":
            return max(ds[:len(ds) // 2], default=0)
        if n == "func.call":
            sub = self.callee(op, ds)
            return sub.of(sub.facts.module.funcs[op.attrs["callee"]].body.returns[idx]) if sub else UNBOUNDED
        if n == "sdy.manual_computation":
            return self.of(op.regions[0].returns[idx])
        if n == "stablehlo.while":
            return self.of(op.regions[1].args[idx])
        if n in ("stablehlo.case", "stablehlo.if"):
            return max(self.of(r.returns[idx]) for r in op.regions)
        if n in _SAME_DEGREE:
            return max(ds, default=0)
        # Everything else (exp, max, compare, ...) is an atom of its arguments.
        return 1 if any(ds) else 0

    def callee(self, op: Op, arg_degrees: list[int]) -> "_Degrees | None":
        """The called function's degrees with its arguments bound to this call's (calls
        are evaluated per distinct argument degrees, so a function called at several
        depths is not one summary)."""
        fn = self.facts.module.funcs.get(op.attrs.get("callee", ""))
        if fn is None:
            return None
        key = (fn.name, tuple(arg_degrees))
        sub = _Degrees(self.facts, self.analysis, self.family, dict(zip(fn.body.args, arg_degrees)), self.calls)
        if key not in self.calls:
            self.calls[key] = tuple(sub.of(r) for r in fn.body.returns)
        return sub

    def _loop(self, op: Op) -> None:
        """Degrees of a while's carried values: iterate the body to a fixpoint (a few
        rounds), else unbounded."""
        cond, body = op.regions
        inner = self._defined_in(body) + self._defined_in(cond)
        degs = [self.of(o) for o in op.operands]
        for _ in range(5):
            for r in inner:
                self.memo.pop(r, None)
            for region in (cond, body):
                for a, d in zip(region.args, degs):
                    self.memo[a] = d
            nxt = [max(d, self.of(ret)) for d, ret in zip(degs, body.returns)]
            if nxt == degs:
                return
            degs = nxt
        for r in inner:
            self.memo.pop(r, None)
        for region in (cond, body):
            for a in region.args:
                self.memo[a] = UNBOUNDED

    @staticmethod
    def _defined_in(block: Block) -> list[str]:
        return [r for op in block.walk() for r in op.results] + \
            [a for op in block.walk() for region in op.regions for a in region.args]


def _summand_degrees(facts: _Facts, analysis: DimAnalysis, families: dict[int, set[int]]) -> dict[int, int]:
    """class -> the largest summand degree of any sum over it in this program. Functions
    are entered at their call sites, with the call's argument degrees."""
    out: dict[int, int] = {}
    roots: dict[frozenset[int], _Degrees] = {}

    def root(c: int) -> _Degrees:
        key = frozenset(families[c])
        if key not in roots:
            d = roots[key] = _Degrees(facts, analysis, set(key))
            # In program order from the entry, so that a loop is resolved from outside
            # before any value inside it is asked for.
            for op in facts.module.main.body.walk():
                for r in op.results:
                    d.of(r)
        return roots[key]

    def visit(block: Block, context: dict[frozenset[int], _Degrees], depth: int) -> None:
        def degrees(c: int) -> _Degrees:
            return context.get(frozenset(families[c])) or root(c)

        for op in block.walk():
            if op.name in ("stablehlo.dot_general", "stablehlo.dot"):
                lhs, rhs = op.operands
                dn = op.attrs.get("dot_dimension_numbers")
                lt = analysis.types[(facts.program, lhs)]
                for a in (list(dn.lhs_contracting) if dn else [len(lt.shape) - 1]):
                    c = analysis.class_of[(facts.program, lhs, a)]
                    d = degrees(c)
                    out[c] = max(out.get(c, 0), d.of(lhs) + d.of(rhs))
            elif op.name == "stablehlo.reduce":
                body = op.regions[0].ops
                if len(body) != 1 or body[0].name != "stablehlo.add":
                    continue
                for v in op.operands[:len(op.operands) // 2]:
                    for a in op.attrs["dimensions"]:
                        c = analysis.class_of[(facts.program, v, a)]
                        out[c] = max(out.get(c, 0), degrees(c).of(v))
            elif op.name == "func.call" and depth < 16:
                fn = facts.module.funcs.get(op.attrs.get("callee", ""))
                if fn is None:
                    continue
                inner = {}
                for key in list(roots):
                    d = context.get(key) or roots[key]
                    sub = d.callee(op, [d.of(o) for o in op.operands])
                    if sub is not None:
                        inner[key] = sub
                visit(fn.body, inner, depth + 1)

    for c in range(len(analysis.classes)):
        if analysis.classes[c].reduced_by:
            root(c)
    visit(facts.module.main.body, {}, 0)
    return out


# ---------------------------------------------------------------------------
# Planning.

def plan(ref: Module, other: Module, analysis: DimAnalysis | None = None) -> ShrinkPlan:
    """Both modules as read (not inlined) and classified."""
    a = analysis or analyse(ref, other)
    facts = [_Facts.of("ref", ref), _Facts.of("other", other)]
    n = len(a.classes)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for g, loc, _ in a.scales:
        parent[find(g)] = find(loc)
    families_parent = parent[:]
    for p, fs in a.products:
        for f in fs:
            families_parent[_root(families_parent, f)] = _root(families_parent, p)
    family_sets: dict[int, set[int]] = {}
    for c in range(n):
        family_sets.setdefault(_root(families_parent, c), set()).add(c)
    families = {c: family_sets[_root(families_parent, c)] for c in range(n)}

    pins: dict[int, str] = {c: "; ".join(a.classes[c].pins[:2]) for c in range(n) if a.classes[c].pins}
    # A class no signature dim reaches (through equality, scale or product) has a size
    # only one program knows, like the length of a broadcast that is then summed: its
    # size is part of the function, not a free parameter.
    tied_to_signature = {families_parent_root for families_parent_root in
                         (_root(families_parent, c) for c in _signature_classes(a, ref, other))}
    dead = _dead_classes(a, facts)
    for c in range(n):
        if _root(families_parent, c) not in tied_to_signature and c not in dead:
            pins.setdefault(c, "not tied to the signature (a size only inside the program)")
    mins = [1] * n
    roles = ["free"] * n
    degree: dict[int, int] = {}
    for fa in facts:
        for c, d in _summand_degrees(fa, a, families).items():
            degree[c] = max(degree.get(c, 2), d)
    for c, d in degree.items():
        if d >= UNBOUNDED:
            pins.setdefault(c, "a sum over it whose summand degree is unbounded")
        mins[c] = max(mins[c], d)
        roles[c] = f"summed (degree {d})"
    for c, cls in enumerate(a.classes):
        if cls.reduced_by & {"stablehlo.maximum", "stablehlo.minimum"}:
            mins[c] = max(mins[c], 2)
            if roles[c] == "free":
                roles[c] = "max/min-reduced"
        if cls.reduced_by & {"stablehlo.multiply", "stablehlo.and", "stablehlo.or"}:
            pins.setdefault(c, "a product/and/or reduction over it")
        if cls.indexed:
            mins[c] = max(mins[c], 2)
            roles[c] = "indexed by data (gather)"
        if cls.iota:
            mins[c] = max(mins[c], 3)
            roles[c] = "positions (iota)"
    # Per-shard bounds: a local class's bound applies to every shard of its global.
    constants = [c for fa in facts for c in _constants(fa)]
    tied: dict[tuple[str, str], float | int] = {}
    for _ in range(4 * n + 8):
        sizes = _solve(a, find, mins, pins)
        tied, new_pins, bounds, tied_classes = _tie_constants(a, facts, constants, sizes)
        changed = False
        for c, why in new_pins.items():
            if c not in pins:
                pins[c] = why
                changed = True
        for c, b in bounds.items():
            if b > mins[c]:
                mins[c] = b
                changed = True
        for c in _collisions(a, facts, sizes, tied, tied_classes, degree):
            if sizes[c] < a.classes[c].size:
                mins[c] = max(mins[c], sizes[c] + 1)
                changed = True
        if not changed:
            break
    names = {("ref", v): n for v, n in zip(ref.main.body.args, ref.main.arg_names)}
    names.update({("ref", v): f"result {k}" for k, v in enumerate(ref.main.body.returns)})
    entries = []
    for c, cls in enumerate(a.classes):
        if cls.size <= 1 or c in dead:
            continue
        where = _where(cls.members, names, facts)
        role = "pinned" if c in pins else roles[c]
        reason = pins.get(c, "")
        if not reason and sizes[c] == cls.size and cls.size > 1:
            reason = "already at its smallest admissible size" if mins[c] >= cls.size else \
                "sizes of its relations leave no smaller divisor"
        entries.append(ClassEntry(cls.size, sizes[c], where, role, reason))
    blocks = {}
    comps: dict[int, list[int]] = {}
    for c in range(n):
        comps.setdefault(find(c), []).append(c)
    for members in comps.values():
        for c in members:
            inner = [m for m in members if a.classes[c].size % max(1, a.classes[m].size) == 0]
            finest = min(inner, key=lambda m: a.classes[m].size)
            blocks[c] = (a.classes[finest].size, sizes[finest])
    return ShrinkPlan(a, sizes, tied, entries, blocks)


def _signature_classes(a: DimAnalysis, ref: Module, other: Module) -> set[int]:
    out = set()
    for program, m in (("ref", ref), ("other", other)):
        names = list(m.main.body.args) + list(m.main.body.returns)
        if m.per_device:
            names += [f"global arg {k}" for k in range(len(m.main.body.args))]
            names += [f"global result {k}" for k in range(len(m.main.body.returns))]
        for v in names:
            if (program, v) in a.types:
                out.update(a.classes_of(program, v))
    return out


def _dead_classes(a: DimAnalysis, facts: list["_Facts"]) -> set[int]:
    """Classes whose every member is a value nothing uses (dead code DCE removes later)."""
    live: set[int] = set()
    by_program = {f.program: f for f in facts}
    for c, cls in enumerate(a.classes):
        for prog, value, _ in cls.members:
            f = by_program[prog]
            if value in f.unreachable:
                continue
            if value in f.uses or "~atom" in value or value.startswith("global ") or value in f.entry_args \
                    or value in f.func_of_arg or value in f.region_arg:
                live.add(c)
                break
    return set(range(len(a.classes))) - live


def _where(members: list[tuple[str, str, int]], names: dict[tuple[str, str], str],
           facts: list["_Facts"] | None = None) -> str:
    """A member dim people can find: a reference argument or result, else the result of
    an op with a source location (reference program first)."""
    for prog, value, axis in members:
        if (prog, value) in names:
            return f"{names[(prog, value)]} dim {axis}"
    by_program = {f.program: f for f in facts or ()}
    for want in ("ref", "other"):
        for prog, value, axis in members:
            f = by_program.get(prog)
            if prog != want or f is None or value not in f.defs:
                continue
            op, _ = f.defs[value]
            if op.loc and op.name not in ("stablehlo.constant", "stablehlo.broadcast_in_dim"):
                side = "" if prog == "ref" else "other: "
                return f"{side}{op.name.split('.')[-1]} @ {op.loc.split(' @ ')[-1]} dim {axis}"
    prog, value, axis = members[0]
    return f"{prog} {value} dim {axis}"


def _root(parent: list[int], x: int) -> int:
    while parent[x] != x:
        x = parent[x]
    return x


def _solve(a: DimAnalysis, find, mins: list[int], pins: dict[int, str]) -> list[int]:
    """A divisor per scale component. A product's divisor must be its factors' divisors
    multiplied: factors give up shrinking (minor factor first) until that product is
    admissible for the product's component; a class with two decompositions pins."""
    n = len(a.classes)
    comps: dict[int, list[int]] = {}
    for c in range(n):
        comps.setdefault(find(c), []).append(c)
    divisor = {root: _best_divisor(a, members, mins, pins) for root, members in comps.items()}
    for _ in range(4 * len(a.products) + 4):
        stable = True
        for p, fs in a.products:
            rp, rf = find(p), [find(f) for f in fs]
            want = math.prod(divisor[r] for r in rf)
            if want == divisor[rp]:
                continue
            stable = False
            if _decided(a, p, fs, find):
                for x in (p, *fs):
                    pins.setdefault(x, "reshaped in two different ways")
                    divisor[find(x)] = 1
                continue
            while want > 1 and not _admissible(a, comps[rp], mins, pins, want):
                for r in reversed(rf):
                    if divisor[r] > 1:
                        divisor[r] = max(d for d in _divisors(divisor[r]) if d < divisor[r])
                        break
                want = math.prod(divisor[r] for r in rf)
            divisor[rp] = want
        if stable:
            return [a.classes[c].size // divisor[find(c)] for c in range(n)]
    for p, fs in a.products:  # no fixpoint: keep every reshaped class whole
        for x in (p, *fs):
            pins.setdefault(x, "reshape relations without a consistent shrink")
            divisor[find(x)] = 1
    return [a.classes[c].size // divisor[find(c)] for c in range(n)]


def _decided(a: DimAnalysis, p: int, fs: tuple[int, ...], find) -> bool:
    """True when the product's component is also a factor elsewhere, or another product
    relation for it disagrees (two decompositions of one class)."""
    for q, gs in a.products:
        if find(q) == find(p) and tuple(find(g) for g in gs) != tuple(find(f) for f in fs):
            return True
    return False


def _best_divisor(a: DimAnalysis, members: list[int], mins: list[int], pins: dict[int, str]) -> int:
    if any(c in pins for c in members):
        return 1
    g = 0
    for c in members:
        g = math.gcd(g, a.classes[c].size)
    best = 1
    for d in _divisors(g):
        if _admissible(a, members, mins, pins, d):
            best = max(best, d)
    return best


def _admissible(a: DimAnalysis, members: list[int], mins: list[int], pins: dict[int, str], d: int) -> bool:
    if d == 1:
        return True
    if any(c in pins for c in members):
        return False
    return all(a.classes[c].size % d == 0 and a.classes[c].size // d >= mins[c] for c in members)


def _divisors(g: int) -> list[int]:
    out = []
    for k in range(1, int(math.isqrt(g)) + 1):
        if g % k == 0:
            out.extend({k, g // k})
    return sorted(out)


def _tie_constants(a: DimAnalysis, facts: list[_Facts], constants: list[_Constant], sizes: list[int]):
    """-> (constant rewrites, classes to pin with the reason, iota lower bounds)."""
    n = len(a.classes)
    exprs: list[tuple[float, float, tuple[int, ...], str]] = []  # (original, new, classes, kind)
    for c in range(n):
        o, s = a.classes[c].size, sizes[c]
        if o <= 1:
            continue
        exprs.append((o, s, (c,), "size"))
        exprs.append((o - 1, s - 1, (c,), "size - 1"))
    for fa in facts:
        for op in fa.ops():
            if op.name == "stablehlo.reduce" and len(op.attrs.get("dimensions", ())) > 1:
                cs = tuple(a.class_of[(fa.program, op.operands[0], d)] for d in op.attrs["dimensions"])
                exprs.append((math.prod(a.classes[c].size for c in cs), math.prod(sizes[c] for c in cs), cs,
                              "element count"))
    tied: dict[tuple[str, str], float | int] = {}
    tied_classes: dict[tuple[str, str], tuple[int, ...]] = {}
    pins: dict[int, str] = {}
    untied_index: dict[str, int] = {}
    for k in constants:
        hits = []
        for o, s, cs, kind in exprs:
            if k.role == "reciprocal":
                if o > 1 and abs(k.value - 1.0 / o) <= 1e-6 * abs(k.value):
                    hits.append((1.0 / s if s else None, 1.0 / o, cs))
            elif k.value == o and (k.is_int or kind != "size - 1" or k.role == "divisor"):
                hits.append((s, o, cs))
        shrunk = [h for h in hits if h[0] != h[1]]
        new_values = {h[0] for h in hits}
        if not shrunk:
            if k.is_int and k.role == "index":
                untied_index[k.program] = max(untied_index.get(k.program, 0), abs(int(k.value)))
            continue
        magnitude = abs(1.0 / k.value) if k.role == "reciprocal" else abs(k.value)
        if len(new_values) > 1 or magnitude < _TIE_MIN or None in new_values:
            why = (f"constant {_fmt(k.value)} at {k.loc} could be the size of more than one dimension"
                   if len(new_values) > 1 else f"constant {_fmt(k.value)} at {k.loc} may be its size (too small to tell)")
            for _, _, cs in shrunk:
                for c in cs:
                    pins.setdefault(c, why)
            continue
        v = new_values.pop()
        tied[(k.program, k.value_name)] = int(v) if k.is_int else float(v)
        tied_classes[(k.program, k.value_name)] = tuple(c for _, _, cs in shrunk for c in cs)
    for fa in facts:
        for v in _position_constants(fa):
            if (fa.program, v[0]) not in tied:
                untied_index[fa.program] = max(untied_index.get(fa.program, 0), v[1])
    bounds: dict[int, int] = {}
    for c, cls in enumerate(a.classes):
        if cls.iota:
            programs = {p for p, _, _ in cls.members}
            worst = max((untied_index.get(p, 0) for p in programs), default=0)
            bounds[c] = max(3, 2 * worst + 2)
    # Block-aligned dynamic slices: their start offsets must be made of tied constants.
    for fa in facts:
        for op in fa.ops():
            if op.name not in ("stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice"):
                continue
            starts = op.operands[1:] if op.name == "stablehlo.dynamic_slice" else op.operands[2:]
            big = op.operands[0]
            for d, s in enumerate(starts):
                c = a.class_of[(fa.program, big, d)]
                if sizes[c] == a.classes[c].size:
                    continue
                sources = _index_sources(fa, s)
                if sources & {"iota", "float", "input"}:
                    pins.setdefault(c, f"{op.name} at {op.loc}: start offset computed from "
                                       f"{' and '.join(sorted(sources & {'iota', 'float', 'input'}))} values")
                for name in _int_cone_constants(fa, s):
                    op_c, _ = fa.defs[name]
                    v = _splat(op_c)
                    if (fa.program, name) not in tied and v not in (0, 1) and not _only_device(fa, name):
                        pins.setdefault(c, f"{op.name} at {op.loc}: start offset uses constant {v}")
        for op in fa.ops():
            if op.name != "stablehlo.gather":
                continue
            g = op.attrs.get("dimension_numbers")
            sources = _index_sources(fa, op.operands[1])
            bad = sources & {"iota", "float"}
            for d in (g.start_index_map if g is not None else ()):
                c = a.class_of[(fa.program, op.operands[0], d)]
                if bad and sizes[c] != a.classes[c].size:
                    pins.setdefault(c, f"gather at {op.loc}: indices computed from "
                                       f"{' and '.join(sorted(bad))} values, not program inputs")
    return tied, pins, bounds, tied_classes


def _index_sources(fa: _Facts, value: str) -> set[str]:
    """What an index computation is made of: constant, device (ids), input (integer
    program inputs), iota, float (computed from float data)."""
    out: set[str] = set()
    todo, seen = [value], set()
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in fa.entry_args or v in fa.func_of_arg or v in fa.region_arg:
            out.add("input")
            continue
        if v not in fa.defs:
            continue
        op, _ = fa.defs[v]
        if op.name == "stablehlo.constant":
            out.add("constant")
        elif op.name in ("stablehlo.partition_id", "stablehlo.replica_id"):
            out.add("device")
        elif op.name == "stablehlo.iota":
            out.add("iota")
        elif any(fa.module and _is_float(fa, o) for o in op.operands):
            out.add("float")
        else:
            todo.extend(op.operands)
    return out


def _is_float(fa: _Facts, value: str) -> bool:
    if value in fa.defs:
        op, k = fa.defs[value]
        return op.result_types[k].is_float
    return False


_POSITION_FLOW = frozenset(f"stablehlo.{n}" for n in (
    "convert broadcast_in_dim reshape transpose add subtract multiply divide remainder negate abs maximum "
    "minimum clamp compare select and or not xor sign floor ceil round_nearest_even").split())
_POSITION_ARITH = frozenset(f"stablehlo.{n}" for n in (
    "add subtract multiply divide remainder maximum minimum clamp compare").split())


def _position_constants(fa: _Facts) -> list[tuple[str, int]]:
    """Constants (name, |value| rounded up) combined with values computed from an iota:
    window bounds, shifts. Non-integer floats and huge floats (mask fills) are not
    positions."""
    derived: set[str] = set()
    out = []
    for op in fa.ops():
        if op.name == "stablehlo.iota":
            derived.update(op.results)
            continue
        if op.name not in _POSITION_FLOW or not any(o in derived for o in op.operands):
            continue
        derived.update(op.results)
        if op.name == "stablehlo.select" and not any(o in derived for o in op.operands[1:]):
            continue
        if op.name not in _POSITION_ARITH and op.name != "stablehlo.select":
            continue
        for o in op.operands:
            found = _constant_behind(fa, o)
            if found is None:
                continue
            name, value = found
            if isinstance(value, float) and (not value.is_integer() or abs(value) > 1 << 16):
                continue
            out.append((name, int(abs(value))))
    return out


def _constant_behind(fa: _Facts, value: str) -> tuple[str, float | int] | None:
    while value in fa.defs:
        op, _ = fa.defs[value]
        if op.name == "stablehlo.constant":
            v = _splat(op)
            return None if v is None else (value, v)
        if op.name not in ("stablehlo.broadcast_in_dim", "stablehlo.convert", "stablehlo.reshape"):
            return None
        value = op.operands[0]
    return None


def _collisions(a: DimAnalysis, facts: list[_Facts], sizes: list[int], tied: dict[tuple[str, str], float | int],
                tied_classes: dict[tuple[str, str], tuple[int, ...]], degree: dict[int, int]) -> set[int]:
    """Classes whose shrunk size would coincide with a literal of either program: a count
    the reference sums implicitly (n * c) or a rewritten size constant must not become a
    number the other program writes down (a bug dividing by 2 where the reference divides
    by 4096 would be hidden at 2). Those classes must grow."""
    literals: set[float] = set()
    for fa in facts:
        for op in fa.ops():
            if op.name == "stablehlo.constant" and (fa.program, op.results[0]) not in tied:
                v = _splat(op)
                if v is not None and math.isfinite(v) and v != 0:
                    literals.add(float(abs(v)))

    def collides(v: float) -> bool:
        v = abs(float(v))
        return any(abs(v - u) <= 1e-9 * u or (v and abs(1.0 / v - u) <= 1e-9 * u) for u in literals)

    out: set[int] = set()
    for c in degree:
        if sizes[c] != a.classes[c].size and collides(sizes[c]):
            out.add(c)
    for key, v in tied.items():
        if collides(v):
            out.update(tied_classes.get(key, ()))
    return out


def _only_device(fa: _Facts, name: str) -> bool:
    uses = _through_broadcasts(fa, name)
    return bool(uses) and all(fa.mesh_arithmetic(u, pos) for u, pos in uses)


def _fmt(v: float | int) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


__all__ = ["ClassEntry", "ShrinkPlan", "plan"]
