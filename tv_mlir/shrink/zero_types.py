"""Rule (k), zero types: which outcomes of a family's predicates the verifier can rule out
(docs/shrinking.md, "Red-team batch 6", `count_tautology`).

Rule (k)'s argument reads the programs, type by type, as polynomials in the type counts
k_u (u: the outcomes of the m predicates at a position), and carries an identity from
n' positions to n when it holds on every count vector with sum n'. That step needs one
more thing: the counts must not sum to n. If every *reachable* type u has a summand with
a constant term there, the sums can add up to n itself (`sum(ids == ids)` is k_true = n,
`count(x > 0) + count(x <= 0)` is n, `sum(where(x > 0, 1, 1))` is n), and n is a size
value rule (a) never ordered: the count and a bug's literal 4 agree at n' = 4. Written
with a slack type u0 (k_u0 = n minus the others), the sums are polynomials in the other
counts and in n, and n appears exactly when some sum has a constant term at u0. So the
argument holds when a reachable type exists at which no predicated summand has a constant
term (a relu mask's `where(h > 0, g, 0)`: its false type); otherwise the summed classes are
*counted* (rule a orders n with every literal, as for a sum of a constant).

Reachable means: not ruled out by the verifier, which folds `x <= x`, `ids + 1 > ids`,
`x * x >= 0`, `max(x, 0) >= 0`, `x * x - 2 x + 1 >= 0` and `ids >= 0` on an assumed range,
and proves `x > 0 or x <= 0`. This module reads each compare in a small normal form of its
own: both operands as affine forms over atoms numbered by structure (two `x[:, 0]` slices
are one atom; a layout chain is numbered by the elements it reads, so `x.T[0]` is that atom
too), each atom with an interval (`Normal.range`). A form with no atom, or whose interval
fixes the outcome, is decided; predicates that share atoms are evaluated together on points
of the atoms' domains (exact for one atom; for several independent ones only outcomes
that occur); atoms computed from each other (x and x * x) allow no outcome; compares of
one input with an assumed range take the outcomes of `lookups.index_predicates`.
Predicates on disjoint atoms are read as independent. This is a rule and not a theorem:
the verifier's solver can rule out outcomes this normal form does not see (docs/shrinking.md,
"Red-team batch 6", what is still open)."""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from tv_mlir.ir import DotDims, Op, TensorType
from tv_mlir.semantics.ops import NOOP_CUSTOM_CALLS, SHARD_CALLS, TRANSCENDENTAL_OPS, VALUE_IDENTITIES
from tv_mlir.shrink.facts import ProgramFacts, splat

# Off: rule (k) takes every type as reachable and every sum of predicates as free of n
# (the count_tautology hole).
ZERO_TYPES = True
# A commutative op's operands are numbered as a set: x * y and y * x are one atom, as the
# verifier's normal form has them (x * y - y * x cancels). Off: by position, and
# exp(x * y - y * x) was a fresh variable per position (red-team batch 7, fixed_commute).
COMMUTATIVE_KEYS = True
_COMMUTATIVE = frozenset({"stablehlo.add", "stablehlo.multiply", "stablehlo.maximum", "stablehlo.minimum",
                          "stablehlo.and", "stablehlo.or", "stablehlo.xor"})
# An op's operands are numbered by their affine forms (`Normal._operand_key`): exp(x + y * 0)
# is exp(x). Off: by their own ops, and exp(x) - exp(x + y * 0) did not cancel.
CANONICAL_ARGS = True
# Forms follow a call into its callee, and a function argument with one caller is its
# caller's operand (`Normal._form`). Off: a call's result is an opaque atom, independent of
# its arguments (red-team batch 7, taut_call: count(x > 0) + count(id(x) <= 0)).
CALL_FORMS = True
# A select of two branches with one form, or a max, min or clamp of operands with one form,
# is that form. Off: an atom (red-team batch 7, taut_select_same: where(x > 0, 2, 2) > 1 read
# as a data predicate; fixed_max_self: exp(max(x, x) - x) a fresh variable).
CHOICES_ALIKE = True
_CHOICES = frozenset({"stablehlo.select", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.clamp"})
# More predicates than this in one family: no enumeration (rule k pins past 4 data ones).
MAX_ENUMERATED = 10
# A compare of integers whose affine forms read through an op that can wrap (an add, a
# product, a negation or a narrowing convert whose exact result can leave its type) is not
# read: the verifier computes it modulo 2^bits, the forms over unbounded integers, so the
# forms can decide an outcome that never occurs (`int8(ids + 256) == int8(ids)` is true at
# every input, the forms say never) or take one as reachable that never occurs
# (`ids * 2^16 * 2^16 == 0`). Such a predicate allows no outcome (`Predicate.unknown`): its
# family is counted, as for atoms computed from each other. Off: forms read as exact
# (red-team batch 9, the wrap_* pairs: `equivalent` with the rules alone).
WRAPS = True
# A compare with an atom the verifier interprets but the normal form reads as a free value
# with an interval (a select of two constants, sign, rem, bit operations, shifts, floor, a
# float made integer, a loop's carried value: each takes values, or keeps relations, the
# interval does not show) is not read either: `sign(x) <= 1`, `rem(ids, 2) < 2`, `ids & 1 <= 1`
# are true at every input, the normal form took both outcomes as reachable. Trusted atoms
# (`Normal.trusted`) are what the verifier itself reads as free or as the normal form does:
# program inputs and the elements picked from them, iotas, device ids, uninterpreted
# functions, and sums, products, quotients, moves, max/min/clamp/abs/sqrt and collectives of
# trusted values. Off: every atom read as free (red-team batch 9, the bound_* pairs:
# `equivalent` with the rules alone).
INTERPRETED = True
# A float sum's or dot's sign from its summands' (`Normal._sum_sign`): `sum_h x^2 >= 0` and
# `x . x >= 0` are true at every input, and the verifier's own normal form folds them; read
# as atoms of no range they took both outcomes (red-team batch 9, bound_sumsq, bound_dot).
SIGNS = True
# Atoms are independent only when they read disjoint program inputs (`Normal.related`): two
# atoms computed from one input element (x0 * x0, x0 * x1 and x1 * x1 in a square written
# out; x0 and x0 * x0 in two predicates) are related, and predicates over related atoms are
# one component, which allows no outcome unless its atoms are one (exact). Off: only an atom
# computed from another relates them (`Normal.inside`), and a quadratic form the verifier
# folds (`x0^2 - 2 x0 x1 + x1^2 >= 0`) took both outcomes (red-team batch 9, bound_sos).
RELATED = True

# Ops whose values are never negative (exp never 0 either: `_POSITIVE`).
_NONNEG = frozenset({"stablehlo.abs", "stablehlo.sqrt", "stablehlo.exponential", "chlo.square"})
_POSITIVE = frozenset({"stablehlo.exponential"})
_DIRECTIONS = {"EQ": lambda d: d == 0, "NE": lambda d: d != 0, "LT": lambda d: d < 0, "LE": lambda d: d <= 0,
               "GT": lambda d: d > 0, "GE": lambda d: d >= 0}

Key = Hashable  # a value's structural number (`Normal.key`: an int)
Affine = tuple[dict[Key, float], float]  # atom -> coefficient, constant


@dataclass
class Domain:
    """The values an atom can take: bounds (closed) and whether it is an integer."""

    lo: float = -math.inf
    hi: float = math.inf
    integer: bool = False

    def holds(self, x: float) -> bool:
        return self.lo <= x <= self.hi and (not self.integer or float(x).is_integer())


@dataclass
class Normal:
    """Structural numbers, affine forms and value ranges of one program's values."""

    facts: ProgramFacts
    dtype: Callable[[str], str]  # a value's element type ("" when unknown)
    shape: Callable[[str], tuple[int, ...] | None] = lambda v: None  # a value's shape when known
    keys: dict[str, int] = field(default_factory=dict)
    ids: dict[tuple, int] = field(default_factory=dict)  # hash-consed op shapes -> key
    children: dict[int, tuple] = field(default_factory=dict)  # key -> its operands' keys
    forms: dict[str, Affine | None] = field(default_factory=dict)
    atom_values: dict[Key, str] = field(default_factory=dict)  # an atom's key -> a value it numbers
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    exacts: dict[str, bool] = field(default_factory=dict)  # `exact`, memoised
    trusts: dict[str, bool] = field(default_factory=dict)  # `trusted`, memoised
    shapes: dict[int, tuple] = field(default_factory=dict)  # key -> its hash-consed shape
    supports: dict[int, dict[object, frozenset[int] | None]] = field(default_factory=dict)  # `support`

    def key(self, v: str, depth: int = 0) -> int:
        """Two values computed by the same ops from the same arguments have one key (jax
        slices `x[:, 0]` anew for every use); arguments and region values are themselves.
        A chain of layout ops (slices, reshapes, transposes, broadcasts, reverses) on a
        value of at most MAX_LAYOUT elements is numbered by the elements it reads and where
        it puts them, so `x[:, 0]` and `x.T[0]` are one value (`_layout`). Keys are small
        integers (hash-consed shapes of ops over their operands' keys), computed without
        recursion (a 126-layer stack is a chain of ~12,000 values)."""
        stack = [v]
        while stack:
            u = stack[-1]
            if u in self.keys:
                stack.pop()
                continue
            d = self.facts.defs.get(u)
            if d is None or d[0].regions or d[0].name in _OPAQUE:
                self.keys[u] = self._intern(("value", u), ())
                stack.pop()
                continue
            root, chain = self._chain(u)
            needs = list(d[0].operands) + ([root] if chain else [])  # a chain too large falls back to its op
            missing = [o for o in needs if o not in self.keys]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            layout = self._layout(root, chain) if chain else None
            if layout is not None:
                self.keys[u] = layout
                continue
            op, idx = d
            attrs = tuple(sorted((n, _attr(x)) for n, x in op.attrs.items()))
            operands = tuple(self._operand_key(o) for o in op.operands)
            if op.name in _COMMUTATIVE and COMMUTATIVE_KEYS:
                operands = tuple(sorted(operands))  # y * x is x * y (red-team batch 7, fixed_commute)
            self.keys[u] = self._intern((op.name, idx, attrs, operands,
                                         tuple((t.shape, t.dtype) for t in op.result_types)), operands)
        return self.keys[v]

    def _operand_key(self, o: str) -> int:
        """An operand's number as an op's argument: its affine form's when that is not the
        operand itself (x + y * 0 is x, exp(x + y * 0) is exp(x): the verifier's terms are
        functions of their normalised arguments), else its key. Off `CANONICAL_ARGS`: its key
        (red-team batch 7, fixed_congruent and taut_congruent)."""
        k = self.keys[o]
        if not CANONICAL_ARGS:
            return k
        f = self.form(o)
        if f is None or f == ({k: 1.0}, 0.0):
            return k
        atoms, c = f
        if len(atoms) == 1 and c == 0.0 and next(iter(atoms.values())) == 1.0:
            (a,) = atoms
            v = self.atom_values.get(a)
            if isinstance(a, int) and v is not None and self.dtype(v) == self.dtype(o):
                return a
        items = tuple(sorted(atoms.items()))
        return self._intern(("affine", items, c, self.dtype(o)), tuple(a for a, _ in items))

    def _intern(self, shape: tuple, operands: tuple) -> int:
        if shape not in self.ids:
            self.ids[shape] = len(self.ids)
            self.children[self.ids[shape]] = operands
            self.shapes[self.ids[shape]] = shape
        return self.ids[shape]

    def related(self, a: Key, b: Key) -> bool:
        """Whether atoms a and b may depend on one program input element (RELATED; off,
        counts.py passes `inside`): their supports overlap. Independent atoms read disjoint inputs, so each
        takes its values whatever the other's; related ones need not."""
        if a == b:
            return True
        sa, sb = self.support(a), self.support(b)
        if not sa or not sb:
            return False  # a constant, iota or device id alone: no input element read
        if ANY_INPUT in sa or ANY_INPUT in sb:
            return True
        for root, xs in sa.items():
            if root in sb:
                ys = sb[root]
                if xs is None or ys is None or xs & ys:
                    return True
        return False

    def support(self, k: Key) -> dict[object, frozenset[int] | None]:
        """The program input elements key k reads: per input (an entry argument's key), the
        flat indices read (layout chains numbered by their elements) or None for all of it;
        ANY_INPUT when unknown (a loop's or a region's argument, a function argument of
        several callers). Constants, iotas and device ids read none. Iterative (a deep
        stack's chains)."""
        if not isinstance(k, int):
            return {ANY_INPUT: None}
        stack = [k]
        while stack:
            u = stack[-1]
            if u in self.supports:
                stack.pop()
                continue
            deps = self._support_deps(u)
            missing = [d for d in deps if d not in self.supports]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            self.supports[u] = self._support_of(u, deps)
        return self.supports[k]

    def _support_deps(self, u: int) -> list[int]:
        shape = self.shapes.get(u)
        if shape is None:
            return []
        if shape[0] == "value":
            v = shape[1]
            d = self.facts.defs.get(v)
            if d is None:
                callers = self.facts.callers.get(v, [])
                if v in self.facts.func_of_arg and len(callers) == 1:
                    return [self.key(callers[0][0].operands[callers[0][1]])]
                return []
            if d[0].regions:
                return []
            return [self.key(o) for o in d[0].operands]
        if shape[0] == "elements":
            return [shape[1]]
        return [c for c in self.children.get(u, ()) if isinstance(c, int)]

    def _support_of(self, u: int, deps: list[int]) -> dict[object, frozenset[int] | None]:
        shape = self.shapes.get(u)
        if shape is None:
            return {ANY_INPUT: None}
        if shape[0] == "value":
            v = shape[1]
            d = self.facts.defs.get(v)
            if d is None:
                if v in self.facts.entry_args:
                    return {u: None}
                if not deps:
                    return {ANY_INPUT: None}  # a region's argument, an argument of several callers
            elif d[0].regions:
                return {ANY_INPUT: None}  # a loop, a branch, a reduction with a body: not read
        if shape[0] == "elements":
            base = self.supports[shape[1]]
            root = shape[1]
            if set(base) == {root} and base[root] is None:  # elements of an input itself
                return {root: frozenset(int(i) for i in np.frombuffer(shape[3], dtype=np.int64))}
            return base
        out: dict[object, frozenset[int] | None] = {}
        for dkey in deps:
            for root, xs in self.supports[dkey].items():
                if root in out:
                    ys = out[root]
                    out[root] = None if xs is None or ys is None else xs | ys
                else:
                    out[root] = xs
        return out

    def _chain(self, v: str) -> tuple[str, list[Op]]:
        chain: list[Op] = []
        u = v
        while u in self.facts.defs and self.facts.defs[u][0].name in _LAYOUT and len(chain) < 64:
            chain.append(self.facts.defs[u][0])
            u = self.facts.defs[u][0].operands[0]
        return u, chain

    def _layout(self, root: str, chain: list[Op]) -> int | None:
        shape = self.shape(root)
        if shape is None or math.prod(shape) > MAX_LAYOUT or \
                any(math.prod(op.result_types[0].shape) > MAX_LAYOUT for op in chain if op.result_types):
            return None  # a broadcast to a large value: numbered by its ops
        idx: np.ndarray | None = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
        for op in reversed(chain):
            idx = _move(op, idx) if idx is not None else None
        if idx is None:
            return None
        r = self.keys[root]
        return self._intern(("elements", r, idx.shape, idx.tobytes()), (r,))

    def inside(self, a: Key, b: Key) -> bool:
        """Whether atom a is atom b or one b is computed from."""
        todo: list[Key] = [b]
        seen: set[Key] = set()
        while todo:
            k = todo.pop()
            if k == a:
                return True
            if k in seen or len(seen) > 10000:
                continue
            seen.add(k)
            todo.extend(self.children.get(k, ()) if isinstance(k, int) else ())
        return False

    def form(self, v: str, depth: int = 0) -> Affine | None:
        if v not in self.forms:
            self.forms[v] = self._form(v, depth)
        return self.forms[v]

    def _read_through(self, v: str) -> str | None:
        """The value whose form v has across a call boundary (CALL_FORMS), else None: a
        function argument with one caller is that caller's operand (rule s gives every further
        call site its own copy); a call whose callee's arguments each have this one caller is
        its callee's return, read with the arguments as this call's operands (jnp.where's
        `_where`). `_form` and `_exact` both read through here."""
        if not CALL_FORMS:
            return None
        d = self.facts.defs.get(v)
        if d is None:
            callers = self.facts.callers.get(v, [])
            if v in self.facts.func_of_arg and len(callers) == 1:
                call, k = callers[0]
                return call.operands[k]
            return None
        op = d[0]
        if op.name == "func.call":
            fn = self.facts.module.funcs.get(op.attrs.get("callee", ""))
            if fn is not None and all(len(self.facts.callers.get(a, [])) == 1 for a in fn.body.args):
                return fn.body.returns[d[1]]
        return None

    def _atom(self, v: str) -> Affine:
        k = self.key(v)
        self.atom_values.setdefault(k, v)
        return {k: 1.0}, 0.0

    def _form(self, v: str, depth: int) -> Affine | None:  # noqa: C901 - one dispatch over op kinds
        d = self.facts.defs.get(v)
        if depth > 64:
            return self._atom(v)
        through = self._read_through(v)
        if through is not None:
            return self.form(through, depth + 1)
        if d is None:
            return self._atom(v)
        op = d[0]
        n = op.name
        if n in _CHOICES and CHOICES_ALIKE:
            # where(p, a, a), max(a, a), min(a, a), clamp(a, a, a) are a (the verifier folds
            # them so).
            first = 1 if n == "stablehlo.select" else 0
            forms = [self.form(o, depth + 1) for o in op.operands[first:]]
            if forms[0] is not None and all(f == forms[0] for f in forms[1:]):
                return forms[0]
        if n == "stablehlo.constant":
            c = splat(op)
            return ({}, float(c)) if c is not None and math.isfinite(float(c)) else None
        if n in _LAYOUT:
            # A constant moved is that constant; anything else moved is an atom numbered
            # by the elements it reads (`key`).
            f = self.form(op.operands[0], depth + 1)
            return f if f is not None and not f[0] else self._atom(v)
        if n == "stablehlo.convert" and _widens(self.dtype(op.operands[0]), self.dtype(v)):
            return self.form(op.operands[0], depth + 1)
        if n == "stablehlo.negate":
            f = self.form(op.operands[0], depth + 1)
            return None if f is None else ({a: -c for a, c in f[0].items()}, -f[1])
        if n in ("stablehlo.add", "stablehlo.subtract"):
            x, y = (self.form(o, depth + 1) for o in op.operands)
            if x is not None and y is not None:
                return _plus(x, y, 1.0 if n == "stablehlo.add" else -1.0)
        if n == "stablehlo.multiply":
            x, y = (self.form(o, depth + 1) for o in op.operands)
            for f, g in ((x, y), (y, x)):
                if f is not None and g is not None and not g[0]:
                    return {a: c * g[1] for a, c in f[0].items() if c * g[1]}, f[1] * g[1]
        return self._atom(v)

    def range(self, v: str, depth: int = 0) -> tuple[float, float]:
        """Bounds of v's values, by interval arithmetic over what the verifier folds:
        constants, iotas, sums, negations, products by constants, squares, abs, exp,
        sqrt, max/min/clamp; anything else is unbounded."""
        if v in self.ranges:
            return self.ranges[v]
        self.ranges[v] = (-math.inf, math.inf)
        d = self.facts.defs.get(v)
        out = (-math.inf, math.inf)
        if d is not None and depth < 64:
            op = d[0]
            n = op.name
            rs = [self.range(o, depth + 1) for o in op.operands] if n in _RANGED else []
            if n == "stablehlo.constant":
                c = splat(op)
                if c is not None and not math.isnan(float(c)):
                    out = (float(c), float(c))
            elif n == "stablehlo.iota":
                t = op.result_types[0]
                out = (0.0, float(t.shape[int(op.attrs.get("iota_dimension", 0))] - 1))
            elif n in _NONNEG:
                out = (5e-324 if n in _POSITIVE else 0.0, math.inf)
            elif n == "stablehlo.multiply" and self.key(op.operands[0]) == self.key(op.operands[1]):
                out = (0.0, math.inf)
            elif n == "stablehlo.convert" and self.dtype(v).startswith(("i", "ui")) and self.dtype(v) != "i1":
                # a float made integer is truncated: the range widens to the integers around it
                lo, hi = rs[0]
                out = (math.floor(lo) if math.isfinite(lo) else lo, math.ceil(hi) if math.isfinite(hi) else hi)
            elif n == "stablehlo.convert" and self.dtype(v) == "i1":
                out = (0.0, 1.0)
            elif n in _RANGED:
                out = _RANGED[n](rs)
            elif SIGNS and self.dtype(v).startswith(("f", "bf")) and (
                    n == "stablehlo.dot_general" or op.regions and _sum_like(op) and
                    op.regions[0].ops[0].name == "stablehlo.add"):
                out = self._sum_sign(op)
        bounds = _int_bounds(self.dtype(v)) if WRAPS else None
        if bounds is None and self.dtype(v).startswith("ui"):
            out = (max(out[0], 0.0), out[1])
        if bounds is not None:
            # An integer is inside its type: an unknown end is the type's end (max(ids, 5) is
            # at most 2^31 - 1), and an exact result that leaves the type wraps (or saturates)
            # anywhere in it (ids + 1 from ids in the whole type).
            out = (float(bounds[0]) if out[0] == -math.inf else out[0],
                   float(bounds[1]) if out[1] == math.inf else out[1])
            if not bounds[0] <= out[0] <= out[1] <= bounds[1]:
                out = (float(bounds[0]), float(bounds[1]))
        self.ranges[v] = out
        return out

    def _sum_sign(self, op: Op) -> tuple[float, float]:
        """A float sum's sign (SIGNS): of summands never negative (or never positive) the sum
        is so, whatever the number of summands; a dot of a value with itself along the same
        dims is a sum of squares. Only signs: a finite end would depend on how many elements
        are summed, which shrinking changes."""
        if op.name == "stablehlo.dot_general":
            a, b = op.operands[:2]
            g = op.attrs.get("dot_dimension_numbers")
            shape = self.shape(a)
            # a sum of squares: the same value on both sides, read along the same dims, and no
            # free dim (x @ x.T's off-diagonal x_t . x_s is no square)
            same = isinstance(g, DotDims) and self.key(a) == self.key(b) and shape is not None and \
                g.lhs_contracting == g.rhs_contracting and g.lhs_batch == g.rhs_batch and \
                len(g.lhs_contracting) + len(g.lhs_batch) == len(shape)
            parts = [(0.0, math.inf)] if same else [_times([self.range(a), self.range(b)])]
        else:
            parts = [self.range(o) for o in op.operands]
        return (0.0 if all(lo >= 0 for lo, _ in parts) else -math.inf,
                0.0 if all(hi <= 0 for _, hi in parts) else math.inf)

    def exact(self, v: str, depth: int = 0) -> bool:
        """Whether v's affine form is its value: every integer op the form reads through (an
        add, subtract, negate, product, integer convert) has its exact result inside its type
        on the operands' ranges, so nothing on the way wraps. The form is over unbounded
        integers; the verifier's integers are two's complement (DESIGN), and a wrap makes the
        two differ (`int8(ids + 256)` is int8(ids), the form ids + 256). Mirrors `_form`."""
        if v not in self.exacts:
            self.exacts[v] = False  # a cycle: not known exact
            self.exacts[v] = self._exact(v, depth)
        return self.exacts[v]

    def _exact(self, v: str, depth: int) -> bool:  # noqa: C901 - mirrors _form's dispatch
        f = self.form(v)
        if f is None or depth > 64 or f == ({self.key(v): 1.0}, 0.0):
            return True  # no form, or v as an atom: its own value
        through = self._read_through(v)
        if through is not None:
            return self.exact(through, depth + 1)
        d = self.facts.defs.get(v)
        if d is None:
            return True
        op = d[0]
        n = op.name
        if n in _CHOICES and CHOICES_ALIKE:
            first = 1 if n == "stablehlo.select" else 0
            forms = [self.form(o) for o in op.operands[first:]]
            if forms[0] is not None and all(g == forms[0] for g in forms[1:]):
                return all(self.exact(o, depth + 1) for o in op.operands[first:])
        if n == "stablehlo.constant":
            return True
        if n in _LAYOUT:
            return self.exact(op.operands[0], depth + 1)
        if n in ("stablehlo.convert", "stablehlo.negate", "stablehlo.add", "stablehlo.subtract",
                 "stablehlo.multiply"):
            return all(self.exact(o, depth + 1) for o in op.operands) and self._fits(v, op)
        return True

    def trusted(self, atom: Key) -> bool:
        """Whether an atom of a form takes, for the verifier, the values its interval says
        and no fewer (INTERPRETED): computed from program inputs, iotas and device ids by
        ops the verifier reads as free (uninterpreted functions), as polynomials or
        quotients of reals, as moves or picks of elements, or as max/min/clamp/abs/sqrt,
        whose intervals the normal form reads. Anything else (a select of values that
        differ, sign, rem, bit operations, shifts, rounding, integer division, a convert
        to an integer or from a Boolean, a loop's carried value, a custom call) is not."""
        v = self.atom_values.get(atom)
        return v is not None and self._trusted(v)

    def _trusted(self, v: str, depth: int = 0) -> bool:
        if v in self.trusts:
            return self.trusts[v]
        self.trusts[v] = False  # a cycle: not trusted
        out = False
        f = self.facts
        d = f.defs.get(v)
        if depth > 200:
            out = False
        elif d is None:
            callers = f.callers.get(v, [])
            owner = f.region_arg.get(v)
            if owner is not None and owner[0].name == "sdy.manual_computation" and owner[2] < len(owner[0].operands):
                # a device's block of the computation's operand: free data as its operand is
                out = self._trusted(owner[0].operands[owner[2]], depth + 1)
            else:  # an entry's argument, or a function's with its callers' operands (not a loop's)
                out = v in f.entry_args or (v in f.func_of_arg and bool(callers) and
                                            all(self._trusted(call.operands[k], depth + 1) for call, k in callers))
        else:
            op, idx = d
            n = op.name
            if n in _TRUSTED_LEAVES or n in TRANSCENDENTAL_OPS:
                out = True
            elif n == "stablehlo.custom_call" and op.attrs.get("call_target_name") in _MOVING_CALLS:
                out = all(self._trusted(o, depth + 1) for o in op.operands)  # sharding hints, shard reshapes
            elif n == "sdy.manual_computation" and op.regions and idx < len(op.regions[0].returns):
                out = self._trusted(op.regions[0].returns[idx], depth + 1)
            elif n == "func.call":
                fn = f.module.funcs.get(op.attrs.get("callee", ""))
                out = fn is not None and idx < len(fn.body.returns) and self._trusted(fn.body.returns[idx], depth + 1)
            elif n == "stablehlo.divide" and not self.dtype(v).startswith(("f", "bf")):
                out = False  # integer division: a quotient rounded
            elif n == "stablehlo.convert" and not (_int_bounds(self.dtype(op.operands[0])) is not None and
                                                   _int_bounds(self.dtype(v)) is not None or
                                                   self.dtype(v).startswith(("f", "bf")) and
                                                   self.dtype(op.operands[0]) != "i1"):
                out = False  # a float made integer (rounded), a Boolean as a number (0 or 1)
            elif n in _TRUSTED_OPS or (op.regions and _sum_like(op)):
                out = all(self._trusted(o, depth + 1) for o in op.operands)
        self.trusts[v] = out
        return out

    def _fits(self, v: str, op: Op) -> bool:
        """Whether an integer op's exact result stays inside v's type on its operands' ranges
        (a float's is a real: always)."""
        bounds = _int_bounds(self.dtype(v))
        if bounds is None:
            return True
        rs = [self.range(o) for o in op.operands]
        lo, hi = rs[0] if op.name == "stablehlo.convert" else _RANGED[op.name](rs)
        return bounds[0] <= lo <= hi <= bounds[1]

    def domain(self, atom: Key, dtype: str) -> Domain:
        """What the verifier knows of an atom's values: its type's integers, its range."""
        dom = Domain(integer=dtype.startswith(("i", "ui")) and dtype != "i1")
        v = self.atom_values.get(atom)
        if v is not None:
            dom.lo, dom.hi = self.range(v)
        return dom


def _add(rs: list[tuple[float, float]], sign: float = 1.0) -> tuple[float, float]:
    (a, b), (c, d) = rs[0], rs[1]
    lo, hi = (a + c, b + d) if sign > 0 else (a - d, b - c)
    return (lo if not math.isnan(lo) else -math.inf, hi if not math.isnan(hi) else math.inf)


def _times(rs: list[tuple[float, float]]) -> tuple[float, float]:
    (a, b), (c, d) = rs[0], rs[1]
    ps = [x * y for x in (a, b) for y in (c, d)]
    if any(math.isnan(p) for p in ps):
        return -math.inf, math.inf
    return min(ps), max(ps)


_RANGED: dict[str, Callable[[list[tuple[float, float]]], tuple[float, float]]] = {
    "stablehlo.add": _add,
    "stablehlo.subtract": lambda rs: _add(rs, -1.0),
    "stablehlo.negate": lambda rs: (-rs[0][1], -rs[0][0]),
    "stablehlo.multiply": _times,
    "stablehlo.maximum": lambda rs: (max(rs[0][0], rs[1][0]), max(rs[0][1], rs[1][1])),
    "stablehlo.minimum": lambda rs: (min(rs[0][0], rs[1][0]), min(rs[0][1], rs[1][1])),
    "stablehlo.clamp": lambda rs: (max(rs[0][0], min(rs[1][0], rs[2][0])), min(rs[2][1], max(rs[1][1], rs[0][1]))),
    "stablehlo.broadcast_in_dim": lambda rs: rs[0], "stablehlo.reshape": lambda rs: rs[0],
    "stablehlo.transpose": lambda rs: rs[0], "stablehlo.slice": lambda rs: rs[0],
    "stablehlo.convert": lambda rs: rs[0], "stablehlo.reverse": lambda rs: rs[0],
}
_LAYOUT = frozenset({"stablehlo.slice", "stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim",
                     "stablehlo.reverse"})
# A layout chain whose root has more elements than this is numbered by its ops instead.
MAX_LAYOUT = 1 << 12
_OPAQUE = frozenset({"func.call", "stablehlo.rng", "stablehlo.custom_call"})


def _move(op: Op, idx: np.ndarray) -> np.ndarray | None:
    """The element numbers `idx` moved by one layout op, as the op moves elements."""
    try:
        if op.name == "stablehlo.reshape":
            return idx.reshape(op.result_types[0].shape)
        if op.name == "stablehlo.transpose":
            return np.transpose(idx, tuple(op.attrs["permutation"]))
        if op.name == "stablehlo.reverse":
            return np.flip(idx, axis=tuple(op.attrs["dimensions"]))
        if op.name == "stablehlo.slice":
            starts, limits = op.attrs["start_indices"], op.attrs["limit_indices"]
            strides = op.attrs.get("strides") or (1,) * len(starts)
            return idx[tuple(slice(s, e, st) for s, e, st in zip(starts, limits, strides))]
        if op.name == "stablehlo.broadcast_in_dim":
            dims = list(op.attrs["broadcast_dimensions"])
            out = op.result_types[0].shape
            x = np.transpose(idx, np.argsort(dims)) if idx.ndim > 1 else idx
            shape = [1] * len(out)
            for src, dim in enumerate(sorted(dims)):
                shape[dim] = x.shape[src]
            return np.broadcast_to(x.reshape(shape), out)
    except (KeyError, ValueError, TypeError):
        return None
    return None


def normal_form(facts: ProgramFacts) -> Normal:
    """The program's one `Normal` (made on first use, kept on its facts: every family's
    constant terms and rule k's zero types read the same numbering)."""
    if facts._normal is None:
        types = value_types(facts)
        facts._normal = Normal(facts, lambda v: types[v].dtype if v in types else "",
                               lambda v: types[v].shape if v in types else None)
    assert isinstance(facts._normal, Normal)
    return facts._normal


def value_types(facts: ProgramFacts) -> dict[str, TensorType]:
    """Every value's type: op results and block arguments."""
    out: dict[str, TensorType] = {}
    for fn in facts.module.funcs.values():
        out.update(zip(fn.body.args, fn.body.arg_types))
        for op in fn.body.walk():
            out.update(zip(op.results, op.result_types))
            for r in op.regions:
                out.update(zip(r.args, r.arg_types))
    return out


# GSPMD's sharding annotations and shard/full reshapes: they move their operand.
_MOVING_CALLS = NOOP_CUSTOM_CALLS | SHARD_CALLS
# Values the verifier reads as free or as known constants (INTERPRETED).
_TRUSTED_LEAVES = frozenset({"stablehlo.iota", "stablehlo.constant", "stablehlo.partition_id",
                             "stablehlo.replica_id"})
# Ops whose results are trusted when their operands are: sums, products, quotients and moves
# of reals and integers (wraps: `exact`), picks of elements, and the pieces whose intervals
# `Normal.range` reads.
_TRUSTED_OPS = _LAYOUT | VALUE_IDENTITIES | frozenset({
    "stablehlo.add", "stablehlo.subtract", "stablehlo.negate", "stablehlo.multiply", "stablehlo.divide",
    "stablehlo.dot_general", "stablehlo.dot", "stablehlo.convert", "stablehlo.gather", "stablehlo.dynamic_slice",
    "stablehlo.concatenate", "stablehlo.abs", "stablehlo.sqrt", "stablehlo.maximum", "stablehlo.minimum",
    "stablehlo.clamp", "chlo.square", "stablehlo.all_gather", "stablehlo.all_to_all",
    "stablehlo.collective_permute", "stablehlo.collective_broadcast"})


def _sum_like(op: Op) -> bool:
    """A reduction or collective whose body is one add, max or min of its two arguments."""
    return len(op.regions) == 1 and len(op.regions[0].ops) == 1 and op.name in (
        "stablehlo.reduce", "stablehlo.all_reduce", "stablehlo.reduce_scatter") and \
        op.regions[0].ops[0].name in ("stablehlo.add", "stablehlo.maximum", "stablehlo.minimum")


ANY_INPUT = "*"  # a support that may read any input (`Normal.support`)


def _int_bounds(dtype: str) -> tuple[int, int] | None:
    """An integer type's values (None for floats, Booleans and unknown types)."""
    for sign, lo in (("ui", 0), ("i", 1)):
        if dtype.startswith(sign) and dtype[len(sign):].isdigit() and dtype != "i1":
            bits = int(dtype[len(sign):])
            return (0, 2 ** bits - 1) if lo == 0 else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return None


def _widens(src: str, dst: str) -> bool:
    """A convert whose form is its operand's: integer to integer or float, float to float (a
    Boolean or a float made integer is no affine map). Integer to a narrower integer keeps
    the number only while it fits: `Normal.exact` checks that (WRAPS)."""
    ints = ("i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64")
    return src in ints and (dst in ints or dst.startswith(("f", "bf"))) or \
        src.startswith(("f", "bf")) and dst.startswith(("f", "bf"))


def _attr(x: object) -> object:
    if isinstance(x, np.ndarray):
        return "ndarray", x.shape, str(x.dtype), x.tobytes()  # a repr would elide a large one
    try:
        hash(x)
        return x
    except TypeError:
        return repr(x)


def _plus(x: Affine, y: Affine, sign: float) -> Affine:
    out = dict(x[0])
    for a, c in y[0].items():
        out[a] = out.get(a, 0.0) + sign * c
    return {a: c for a, c in out.items() if c}, x[1] + sign * y[1]


@dataclass(frozen=True)
class Predicate:
    """A compare read as `sum(coefficient * atom) + offset <direction> 0` over `atoms`
    (none: decided by the offset alone; `free`: not read, both outcomes taken as
    independent of every other predicate's), with each atom's domain."""

    value: str
    direction: str
    atoms: tuple[tuple[Key, float], ...]
    offset: float
    domains: tuple[Domain, ...] = ()
    free: bool = False
    unknown: bool = False  # not read, and no outcome trusted (`WRAPS`): its family is counted

    def at(self, point: dict[Key, float]) -> bool:
        return bool(_DIRECTIONS[self.direction](sum(c * point[a] for a, c in self.atoms) + self.offset))

    def bounds(self) -> tuple[float, float]:
        """The form's range over its atoms' domains (interval arithmetic)."""
        lo = hi = self.offset
        for (_, c), dom in zip(self.atoms, self.domains):
            ends = (c * dom.lo if math.isfinite(dom.lo) else -math.inf * c,
                    c * dom.hi if math.isfinite(dom.hi) else math.inf * c)
            lo, hi = lo + min(ends), hi + max(ends)
        return lo, hi

    def decided(self) -> bool | None:
        """The outcome when the form's range fixes it (x <= x, x * x + y * y >= 0,
        exp(x) > 0), else None."""
        if self.free or self.unknown:
            return None
        lo, hi = self.bounds() if self.atoms else (self.offset, self.offset)
        if math.isnan(lo) or math.isnan(hi):
            return None
        table = {"GT": (lo > 0, hi <= 0), "GE": (lo >= 0, hi < 0), "LT": (hi < 0, lo >= 0),
                 "LE": (hi <= 0, lo > 0), "EQ": (lo == hi == 0, lo > 0 or hi < 0),
                 "NE": (lo > 0 or hi < 0, lo == hi == 0)}
        always, never = table[self.direction]
        return True if always else (False if never else None)


def read_compare(normal: Normal, op: Op, dtype: str) -> Predicate:
    v = op.results[0]
    direction = str(op.attrs.get("comparison_direction", ""))
    lhs, rhs = op.operands[:2]
    if direction not in _DIRECTIONS:
        return Predicate(v, direction, (), 0.0, free=True)
    x, y = normal.form(lhs), normal.form(rhs)
    if x is None or y is None:
        if normal.key(lhs) == normal.key(rhs):
            return Predicate(v, direction, (), 0.0)
        return Predicate(v, direction, (), 0.0, free=True)
    if WRAPS and normal.key(lhs) != normal.key(rhs) and not (normal.exact(lhs) and normal.exact(rhs)):
        return Predicate(v, direction, (), 0.0, unknown=True)
    atoms, offset = _plus(x, y, -1.0)
    if INTERPRETED and not all(normal.trusted(a) for a in atoms):
        return Predicate(v, direction, (), 0.0, unknown=True)
    items = tuple(sorted(atoms.items(), key=repr))
    return Predicate(v, direction, items, offset, tuple(normal.domain(a, dtype) for a, _ in items))


def _points(preds: list[Predicate], atom: Key, dom: Domain) -> list[float]:
    """Values of one atom's domain at which predicates of that atom alone take every joint
    outcome they can: each threshold, points either side of it, and beyond the ends (and,
    for predicates of several atoms, a spread of values around their offsets)."""
    ts: set[float] = set()
    spread = 1.0
    for p in preds:
        cs = dict(p.atoms)
        if len(cs) == 1 and atom in cs:
            ts.add(-p.offset / cs[atom])
        elif atom in cs:
            spread = max(spread, 2.0 * abs(p.offset) / abs(cs[atom]))
    ts.update({0.0, spread, -spread, spread / 2, -spread / 2})
    ordered = sorted(ts)
    gap = min((b - a for a, b in zip(ordered, ordered[1:])), default=1.0)
    eps = min(0.25, gap / 4) if gap > 0 else 0.25
    cands: set[float] = {ordered[0] - 1.0, ordered[-1] + 1.0}
    for t in ordered:
        if dom.integer:
            cands.update({math.floor(t) - 1.0, float(math.floor(t)), float(math.ceil(t)), math.ceil(t) + 1.0})
        else:
            cands.update({t - eps, t, t + eps})
    if math.isfinite(dom.lo):
        cands.update({dom.lo, dom.lo + (1.0 if dom.integer else eps)})
    if math.isfinite(dom.hi):
        cands.update({dom.hi, dom.hi - 1.0})
    return sorted(x for x in cands if dom.holds(x))


def _component(preds: list[Predicate], inside: Callable[[Key, Key], bool]) -> list[dict[str, bool]]:
    """The joint outcomes of predicates that share atoms: each atom's values taken from
    `_points`, every combination evaluated (an outcome seen at a point of the atoms'
    domains is reachable). Exact for one atom; for several it finds outcomes, never
    invents one, provided the atoms vary independently: when one atom is computed from
    another (x and x * x), no point is trusted and the component allows no outcome
    (its family is then counted)."""
    atoms: dict[Key, Domain] = {}
    for p in preds:
        for (a, _), dom in zip(p.atoms, p.domains):
            atoms.setdefault(a, dom)
    if len(atoms) > 1 and any(inside(a, b) for a in atoms for b in atoms if a != b):
        return []
    values = [_points(preds, a, dom) for a, dom in atoms.items()]
    if math.prod(len(v) for v in values) > 20000:
        return []
    seen: set[tuple[bool, ...]] = set()
    for combo in itertools.product(*values):
        point = dict(zip(atoms, combo))
        seen.add(tuple(p.at(point) for p in preds))
    return [dict(zip((p.value for p in preds), row)) for row in sorted(seen)]


def reachable(preds: list[Predicate], ranged: Mapping[str, tuple[int, np.ndarray]],
              inside: Callable[[Key, Key], bool] = lambda a, b: a == b) -> list[dict[str, bool]]:
    """The joint outcomes of the predicates the normal form sees (every one for predicates
    it does not read). `ranged`: compares evaluated on an assumed input range (value ->
    (input, outcomes[values, devices])), exact per input. `inside`: whether one atom is
    computed from another (`Normal.inside`). Predicates of disjoint atoms and different
    inputs are independent."""
    groups: list[list[dict[str, bool]]] = []
    by_input: dict[int, list[str]] = {}
    read: list[Predicate] = []
    for p in preds:
        if p.value in ranged:
            by_input.setdefault(ranged[p.value][0], []).append(p.value)
        elif p.unknown:
            groups.append([])  # no outcome trusted: no type is reachable, the family is counted
        elif p.free:
            groups.append([{p.value: True}, {p.value: False}])
        elif p.decided() is not None:
            groups.append([{p.value: bool(p.decided())}])
        else:
            read.append(p)
    # Components of predicates that share an atom (or, with `inside` reading related
    # atoms, that read one input element).
    parts: list[tuple[set[Key], list[Predicate]]] = []
    for p in read:
        keys = {a for a, _ in p.atoms}
        joined = [c for c in parts if c[0] & keys or RELATED and any(inside(a, b) for a in keys for b in c[0])]
        for c in joined:
            parts.remove(c)
            keys |= c[0]
        parts.append((keys, [q for c in joined for q in c[1]] + [p]))
    for _, ps in parts:
        atoms = [a for p in ps for a, _ in p.atoms]
        if len(ps) == 1 and len(atoms) > 1 and not any(inside(a, b) for a in atoms for b in atoms if a != b):
            groups.append([{ps[0].value: True}, {ps[0].value: False}])  # one form of free atoms: both signs
        else:
            groups.append(_component(ps, inside))
    for names in by_input.values():
        arrs = [ranged[n][1] for n in names]
        rows: set[tuple[bool, ...]] = set()
        for cols in zip(*(a.reshape(a.shape[0], -1) for a in arrs)):
            for row in zip(*cols):
                rows.add(tuple(bool(b) for b in row))
        groups.append([dict(zip(names, r)) for r in sorted(rows)])
    out: list[dict[str, bool]] = []
    for combo in itertools.product(*groups):
        merged: dict[str, bool] = {}
        for part in combo:
            merged.update(part)
        out.append(merged)
    return out


def summands(sums: Iterable[Op]) -> list[list[str]]:
    """What each sum adds up: a reduce's inputs, a dot's or a convolution's two operands
    (a product: it has a constant term only where both have one)."""
    out: list[list[str]] = []
    for op in sums:
        if op.name == "stablehlo.reduce":
            out.extend([v] for v in op.operands[:len(op.operands) // 2])
        elif op.name in ("stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution"):
            out.append(list(op.operands[:2]))
        else:
            out.append(["?"])  # a scatter's one-hot: not read here
    return out


__all__ = ["ANY_INPUT", "CALL_FORMS", "CANONICAL_ARGS", "COMMUTATIVE_KEYS", "MAX_ENUMERATED", "MAX_LAYOUT",
           "CHOICES_ALIKE", "INTERPRETED", "RELATED", "SIGNS", "WRAPS", "ZERO_TYPES", "Domain", "Normal", "Predicate",
           "normal_form", "read_compare", "reachable", "summands", "value_types"]
