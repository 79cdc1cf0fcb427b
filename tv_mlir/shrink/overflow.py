"""Rule (a), integer overflow: integer arithmetic that can leave its type at the original
sizes. Two's-complement wraparound is part of what a program computes (DESIGN.md: an
index computation that overflows int32 is a real difference), and it depends on the
sizes: `(t * V + label) // V` over t < 131072 tokens and V = 32768 words wraps from
t = 65536 on, and at any shrunk size it never does, so a twin that computes the row
without the flattened index (`t + label // V`) is equal there and different at the
original sizes (`testdata/shrink_rules/gen_holes.py`, `int_overflow`).

An interval per integer value at the original sizes (`iota` along a dim of n: [0, n - 1];
splat constants; clamps, max/min, sums, products, quotients and remainders by constants;
layout ops; called functions entered with their arguments' intervals; booleans, which are
0 or 1 whatever they were computed from). An add, subtract or multiply whose interval leaves
its type is an *overflow site*, with the constants and iota classes its operands were
computed from; past it the value is unknown (wrapped). Sums are sites too (`SUMS`): a
reduce, reduce_window, all_reduce or reduce_scatter with an add body, an integer
dot_general and a scatter-add add up as many terms as their summed dims hold at the
original sizes (a count of 256 tokens in int8 wraps, at 16 tokens it does not), so their
interval is that many times the terms', and the summed dims' classes are among the site's.
`constants.tie_constants` pins the shrunk classes of every site: the site must keep the
sizes at which it overflows. Values of unknown range (program inputs, loop-carried
values) overflow at every size alike (the solver picks the input), so they are no site."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tv_mlir.ir import Block, DotDims, Func, Op, ScatterDims, TensorType
from tv_mlir.semantics.ops import SPLAT_PRESERVING, VALUE_IDENTITIES
from tv_mlir.shrink.dims import DimAnalysis
from tv_mlir.shrink.facts import ProgramFacts, splat
from tv_mlir.shrink.scatters import adds

Interval = tuple[int, int]
# Narrowing converts: an integer convert whose operand's interval at the original sizes
# leaves the result type wraps there (positions stored as int8 wrap from 128 on, token ids
# as int16 from 32768 on) and at a shrunk size it does not, so it is a site like an
# overflowing add. Device ids are bounded by the mesh (partition_id in [0, partitions)),
# and an input the user bounds (`--assume ids=0:40000`, whose bound follows its class down
# when it shrinks) has that interval. Off: converts and device ids are of unknown range.
CONVERTS = True
# Sums as sites (reduce, reduce_window, all_reduce, reduce_scatter, integer dot_general,
# scatter-add; red-team batch 3 in docs/shrinking.md). Off: a sum's result is of unknown
# range, as before, and a count that wraps only at the original sizes shrinks away.
SUMS = True
# Floats made integers (red-team batch 9, wrap_count_convert): the tokens' count, a float
# sum of ones, times 2^27 made int32 leaves int32 at 16 tokens (2^31) and not at 2; the walk
# knew integers only, so the convert was no site and the tokens shrank to 2, where the bug
# `int32(T * 2^27) >> 27` is T. Now float values computed from sizes have intervals too
# (constants, converts from integers, sums of n terms, sums, differences and products,
# a product with the constant 0 whatever the other factor), and a convert of one into an
# integer type it leaves is a site. Off: floats are of unknown range.
FLOATS = True
# Iotas past their type (red-team batch 10, iota_int8): an int8 iota along 200 tokens wraps
# from position 128 on, and along the 4 they shrank to it does not, so `sum_t x_t * t` with
# t an int8 iota was equal there to the int32 reference. Now an iota whose last position
# leaves its type is a site (its class kept), its value unknown past it. Off: an iota's
# interval is [0, n - 1] whatever its type, as before.
IOTAS = True
# Counted loops (red-team batch 10, loop_int8_count): a loop `while i < N` whose counter
# starts at a constant and steps by 1 runs N - i0 trips, N a constant the sizes may rewrite;
# an int8 count carried through 200 trips wraps and through the 2 they shrank to does not.
# The walk read loop-carried values as unknown (no site). Now the body is walked trip by
# trip from the initial values' intervals (every trip up to LOOP_TRIPS, stopping at a
# fixpoint; past it, an affine growth is extrapolated to N trips and the body walked once
# more on that hull, an integer that grew otherwise is a site), the bound's
# constant among what every carried value after a trip was computed from: an add that
# leaves its type within the N trips is a site that keeps the bound's classes. Off:
# carried values are of unknown range, as before.
LOOPS = True
LOOP_TRIPS = 1024
# Trips walked in one program in all (nested counted loops multiply): past it, every loop
# takes the affine extrapolation after its first trips.
LOOP_BUDGET = 1 << 14
# Functions of sizes the verifier folds (red-team batch 10, rsqrt_count): `x * rsqrt(T)` with
# T the tokens' count is rsqrt(4) = 0.5 exactly at T' = 4, which the verifier folds, so a bug
# writing the literal 0.5 (1 / sqrt(16) = 0.25 at the original sizes) was equal there. The
# walk records every sqrt, rsqrt, cbrt, log, log_plus_one, exponential or
# exponential_minus_one of a value computed from sizes and constants (a point interval) as
# a fold site; `constants.order` keeps the literals' preimages under the function on the
# side of the operand they are on at the original sizes. Off: no fold sites.
FOLDS = True


@dataclass(frozen=True)
class Known:
    lo: float  # an integer's are integers; a float's (FLOATS) reals
    hi: float
    constants: frozenset[str] = frozenset()  # the splat constants it was computed from
    classes: frozenset[int] = frozenset()  # the iota classes it was computed from
    # Computed from a value of unknown range (an input) and not clamped since: its
    # interval is an outer bound that says nothing about the sizes.
    free: bool = False


@dataclass(frozen=True)
class OverflowSite:
    program: str
    constants: frozenset[str]
    classes: frozenset[int]
    where: str


@dataclass(frozen=True)
class FoldSite:
    """A monotone function the verifier evaluates (at exact points) of a value computed from
    sizes and constants only: `operand` its value at the original sizes (FOLDS)."""
    program: str
    fn: str
    operand: float
    constants: frozenset[str]
    classes: frozenset[int]
    where: str


# The functions of FOLDS (monotone on their domain, so a literal's preimage orders them).
_FOLDED = frozenset({"stablehlo.sqrt", "stablehlo.rsqrt", "stablehlo.cbrt", "stablehlo.log",
                     "stablehlo.log_plus_one", "stablehlo.exponential", "stablehlo.exponential_minus_one"})


def _arith(name: str, a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """The interval of an add, subtract or multiply (any other name) of two intervals."""
    if name == "stablehlo.add":
        return a[0] + b[0], a[1] + b[1]
    if name == "stablehlo.subtract":
        return a[0] - b[1], a[1] - b[0]
    ends = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    return min(ends), max(ends)


def _range(t: TensorType) -> Interval:
    w = t.bit_width
    return (0, (1 << w) - 1) if t.is_unsigned else (-(1 << (w - 1)), (1 << (w - 1)) - 1)


_LAYOUT = SPLAT_PRESERVING | VALUE_IDENTITIES | {"stablehlo.transpose", "stablehlo.slice", "stablehlo.reverse"}
# Sums read by `_Walk.sum`.
_SUMS = frozenset({"stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.all_reduce", "stablehlo.reduce_scatter",
                   "stablehlo.dot_general", "stablehlo.scatter"})
_ARITH = frozenset({"stablehlo.add", "stablehlo.subtract", "stablehlo.multiply", "stablehlo.maximum",
                    "stablehlo.minimum", "stablehlo.clamp", "stablehlo.divide", "stablehlo.remainder",
                    "stablehlo.negate", "stablehlo.abs"})


@dataclass
class _Walk:
    fa: ProgramFacts
    a: DimAnalysis
    out: list[OverflowSite] = field(default_factory=list)
    folds: list[FoldSite] = field(default_factory=list)
    walked: int = 0  # trips of counted loops walked (LOOP_BUDGET)
    done: dict[tuple[str, tuple[Known | None, ...]], list[Known | None]] = field(default_factory=dict)

    def func(self, fn: Func, args: tuple[Known | None, ...]) -> list[Known | None]:
        known: dict[str, Known] = {a: k for a, k in zip(fn.body.args, args) if k is not None}
        self.block(fn.body, known)
        return [known.get(r) for r in fn.body.returns]

    def block(self, block: Block, known: dict[str, Known]) -> None:
        for op in block.ops:
            self.op(op, known)
            if LOOPS and op.name == "stablehlo.while" and len(op.regions) == 2 and self.loop(op, known):
                continue
            for region in op.regions:
                self.block(region, known)  # region arguments: unknown

    def loop(self, op: Op, known: dict[str, Known]) -> bool:
        """A counted loop's carried values trip by trip (LOOPS); False when the loop is not
        counted (its regions are then walked with unknown arguments)."""
        counted = _counted(op, known)
        if counted is None:
            return False
        trips, bound = counted
        cond, body = op.regions
        self.block(cond, dict(known))
        history: list[list[Known | None]] = [[known.get(o) for o in op.operands]]
        done = 0
        while done < min(trips, LOOP_TRIPS) and (done < 2 or self.walked < LOOP_BUDGET):
            history.append(self._trip(body, known, history[-1], bound))
            done += 1
            self.walked += 1
            if history[-1] == history[-2]:
                done = trips  # a fixpoint: every further trip is the same
        carried = history[-1]
        if done < trips:
            # Values that grew by the same step on the last two trips grow by it on every
            # further trip (an affine step: a counter, a count): the hull of the remaining
            # trips is walked once. Any other growth (c = c + i, c = 2 c) is not
            # extrapolated: an integer of it is a site (its bound's classes kept), a float
            # of it unknown (floats do not wrap).
            hull: list[Known | None] = []
            k = trips - done
            for i, c in enumerate(carried):
                p = history[-2][i]
                q = history[-3][i] if len(history) > 2 else None
                if c is None or p is None:
                    hull.append(None)
                elif q is not None and (c.lo - p.lo, c.hi - p.hi) == (p.lo - q.lo, p.hi - q.hi) and \
                        all(abs(x) < float("inf") for x in (c.lo, c.hi, p.lo, p.hi)):
                    hull.append(Known(min(c.lo, c.lo + k * (c.lo - p.lo)), max(c.hi, c.hi + k * (c.hi - p.hi)),
                                      c.constants, c.classes, c.free))
                else:
                    if i < len(op.result_types) and op.result_types[i].is_int and not c.free:
                        self.out.append(OverflowSite(self.fa.program, c.constants, c.classes,
                                                     f"a value carried through {trips} trips of {op.name} at {op.loc}"))
                    hull.append(None)
            last = self._trip(body, known, hull, bound)
            carried = [c if c is None or h is None else
                       Known(min(c.lo, h.lo), max(c.hi, h.hi), c.constants, c.classes, c.free)
                       for c, h in zip(last, hull)]
        for res, c in zip(op.results, carried):
            if c is not None:
                known[res] = c
        return True

    def _trip(self, body: Block, known: dict[str, Known], carried: list[Known | None],
              bound: frozenset[str]) -> list[Known | None]:
        inner = dict(known)
        for arg, c in zip(body.args, carried):
            if c is not None:
                inner[arg] = c
            else:
                inner.pop(arg, None)
        self.block(body, inner)
        out: list[Known | None] = []
        for r in body.returns:
            k = inner.get(r)
            out.append(None if k is None else Known(k.lo, k.hi, k.constants | bound, k.classes, k.free))
        return out

    def op(self, op: Op, known: dict[str, Known]) -> None:
        if SUMS and op.results and op.result_types and op.result_types[0].is_bool:
            # A boolean is 0 or 1 whatever it was computed from (a compare of inputs
            # included): a count of them is bounded by how many are counted.
            known[op.results[0]] = Known(0, 1)
            return
        if FLOATS and op.results and op.result_types and op.result_types[0].is_float:
            self.float_op(op, known)
            return
        if not op.results or not op.result_types or not op.result_types[0].is_int:
            return
        t, r, name = op.result_types[0], op.results[0], op.name
        ins = [known.get(o) for o in op.operands]
        if name == "stablehlo.constant":
            v = splat(op)
            if isinstance(v, int):
                known[r] = Known(v, v, frozenset({r}))
        elif CONVERTS and name in ("stablehlo.partition_id", "stablehlo.replica_id"):
            n = self.fa.module.num_partitions if name == "stablehlo.partition_id" else self.fa.module.num_replicas
            known[r] = Known(0, max(n - 1, 0))
        elif CONVERTS and name == "stablehlo.convert" and ins and ins[0] is not None:
            # (an integer, or with FLOATS a float whose truncation is what the convert takes)
            a = ins[0]
            if not (isinstance(a.lo, int) and isinstance(a.hi, int)):
                a = Known(_trunc(a.lo), _trunc(a.hi), a.constants, a.classes, a.free)
            lo_t, hi_t = _range(t)
            if a.lo < lo_t or a.hi > hi_t:
                if not a.free:
                    self.out.append(OverflowSite(self.fa.program, a.constants, a.classes, f"{name} at {op.loc}"))
                return  # wrapped: unknown from here on
            known[r] = a
        elif name == "stablehlo.iota":
            d = int(op.attrs.get("iota_dimension", 0))
            cls = self.a.class_of.get((self.fa.program, r, d))
            classes = frozenset({cls}) if cls is not None else frozenset()
            if IOTAS and t.shape[d] - 1 > _range(t)[1]:
                self.out.append(OverflowSite(self.fa.program, frozenset(), classes, f"{name} at {op.loc}"))
                return  # wrapped: unknown from here on
            known[r] = Known(0, max(t.shape[d] - 1, 0), frozenset(), classes)
        elif name == "func.call":
            callee = self.fa.module.funcs.get(op.attrs.get("callee", ""))
            if callee is None:
                return
            key = (callee.name, tuple(ins))
            if key not in self.done:
                self.done[key] = []  # no recursion in StableHLO; a guard all the same
                self.done[key] = self.func(callee, tuple(ins))
            for res, k in zip(op.results, self.done[key]):
                if k is not None:
                    known[res] = k
        elif name in _LAYOUT and ins and ins[0] is not None:
            known[r] = ins[0]
        elif SUMS and name in _SUMS:
            self.sum(op, ins, t, known)
        elif name == "stablehlo.select" and len(ins) == 3 and ins[1] is not None and ins[2] is not None:
            a, b = ins[1], ins[2]  # the predicate is i1: any value
            known[r] = Known(min(a.lo, b.lo), max(a.hi, b.hi), a.constants | b.constants, a.classes | b.classes,
                             a.free or b.free)
        elif ins and name in _ARITH:
            # An operand of unknown range has its type's (an input, a loop-carried value).
            full = Known(*_range(t), free=True)
            self.arith(op, [k if k is not None else full for k in ins], t, known)

    def float_op(self, op: Op, known: dict[str, Known]) -> None:
        """A float value's interval (FLOATS), where it is computed from sizes and constants:
        no site (floats do not wrap), but a convert of it into an integer can be one."""
        r, name = op.results[0], op.name
        ins = [known.get(o) for o in op.operands]
        if name == "stablehlo.constant":
            v = splat(op)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(float(v)) < float("inf"):
                known[r] = Known(float(v), float(v), frozenset({r}))
        elif name == "stablehlo.convert" and ins and ins[0] is not None:
            known[r] = ins[0]
        elif name in _LAYOUT and ins and ins[0] is not None:
            known[r] = ins[0]
        elif FOLDS and name in _FOLDED and len(ins) == 1 and ins[0] is not None:
            k = ins[0]
            if k.lo == k.hi and not k.free and (k.constants or k.classes):
                self.folds.append(FoldSite(self.fa.program, name, float(k.lo), k.constants, k.classes,
                                           f"{name} at {op.loc}"))
        elif name == "stablehlo.multiply" and len(ins) == 2 and any(k is not None and k.lo == k.hi == 0 for k in ins):
            z = next(k for k in ins if k is not None and k.lo == k.hi == 0)
            known[r] = Known(0.0, 0.0, z.constants, z.classes)  # x * 0 is 0 whatever x is
        elif name in ("stablehlo.add", "stablehlo.subtract", "stablehlo.multiply") and len(ins) == 2 and \
                ins[0] is not None and ins[1] is not None:
            a, b = ins[0], ins[1]
            lo, hi = _arith(name, (a.lo, a.hi), (b.lo, b.hi))
            known[r] = Known(lo, hi, a.constants | b.constants, a.classes | b.classes, a.free or b.free)
        elif SUMS and name == "stablehlo.reduce" and len(op.operands) == 2 and adds(op) and \
                ins[0] is not None and ins[1] is not None:
            n, classes = self._dims(op.operands[0], list(op.attrs.get("dimensions", ())))
            k, base = ins[0], ins[1]
            if FOLDS and k.lo == k.hi and base.lo == base.hi:
                # A reduce adds every one of its n terms: of one value, exactly n of it; of
                # zeros, 0 whatever n is (no class of the sum's dims made it).
                lo = hi = base.lo + n * k.lo
                if k.lo == 0:
                    classes = frozenset()
            else:
                lo, hi = base.lo + n * min(k.lo, 0.0), base.hi + n * max(k.hi, 0.0)
            known[r] = Known(lo, hi, k.constants | base.constants, k.classes | base.classes | classes,
                             k.free or base.free)

    def _dims(self, value: str, dims: Sequence[int]) -> tuple[int, frozenset[int]]:
        """How many positions `dims` of `value` hold at the original sizes, and their classes."""
        t = self.a.types.get((self.fa.program, value))
        if t is None:
            return 0, frozenset()
        n, classes = 1, set()
        for d in dims:
            n *= t.shape[d]
            c = self.a.class_of.get((self.fa.program, value, d))
            if c is not None:
                classes.add(c)
        return n, frozenset(classes)

    def _group(self, op: Op) -> int:
        """The largest process group of a collective (every device when its groups are not
        read: an outer bound)."""
        from tv_mlir.execute.spmd import process_groups

        m = self.fa.module
        try:
            return max((len(g) for g in process_groups(op, m.num_replicas, m.num_partitions)), default=1)
        except Exception:  # noqa: BLE001 - an unread group form: every device bounds it
            return m.num_replicas * m.num_partitions

    def sum(self, op: Op, ins: list[Known | None], t: TensorType, known: dict[str, Known]) -> None:
        """A sum of n terms at the original sizes: n times the terms' interval (plus an
        initial value's). n, and the classes it depends on, by the op (see `_SUMS`)."""
        name = op.name
        terms: list[Known | None]
        base: Known | None = Known(0, 0)
        if name in ("stablehlo.reduce", "stablehlo.reduce_window"):
            if len(op.operands) != 2 or not adds(op):
                return
            terms, base = [ins[0]], ins[1]
            if name == "stablehlo.reduce":
                n, classes = self._dims(op.operands[0], list(op.attrs.get("dimensions", ())))
            else:
                window = [int(w) for w in op.attrs.get("window_dimensions", ())]
                n = 1
                for w in window:
                    n *= w
                _, classes = self._dims(op.operands[0], [d for d, w in enumerate(window) if w > 1])
        elif name in ("stablehlo.all_reduce", "stablehlo.reduce_scatter"):
            if len(op.operands) != 1 or not adds(op):
                return
            terms, n, classes = [ins[0]], self._group(op), frozenset()
        elif name == "stablehlo.dot_general":
            dn = op.attrs.get("dot_dimension_numbers")
            if len(ins) != 2 or not isinstance(dn, DotDims):
                return
            a, b = ins
            if a is None or b is None:
                return
            ends = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
            n, classes = self._dims(op.operands[0], dn.lhs_contracting)
            _, more = self._dims(op.operands[1], dn.rhs_contracting)
            terms = [Known(min(ends), max(ends), a.constants | b.constants, a.classes | b.classes)]
            classes |= more
        elif name == "stablehlo.scatter":
            sd = op.attrs.get("scatter_dimension_numbers")
            if len(op.operands) != 3 or not isinstance(sd, ScatterDims) or not adds(op):
                return
            # Every update may land on one position: as many terms as the updates hold
            # outside their window dims.
            ut = self.a.types.get((self.fa.program, op.operands[2]))
            if ut is None:
                return
            n, classes = self._dims(op.operands[2], [d for d in range(len(ut.shape)) if d not in sd.update_window_dims])
            terms, base = [ins[2]], ins[0]
        else:
            return
        k = terms[0]
        if k is None or base is None or n <= 0:
            return
        # Up to n terms (a padded window or a scatter may add fewer): an outer bound.
        lo, hi = base.lo + n * min(k.lo, 0), base.hi + n * max(k.hi, 0)
        consts, cls = k.constants | base.constants, k.classes | base.classes | classes
        lo_t, hi_t = _range(t)
        if lo < lo_t or hi > hi_t:
            if not (k.free or base.free):
                self.out.append(OverflowSite(self.fa.program, consts, cls, f"{name} at {op.loc}"))
            return  # wrapped: unknown from here on
        known[op.results[0]] = Known(lo, hi, consts, cls, k.free or base.free)

    def arith(self, op: Op, ins: list[Known], t: TensorType, known: dict[str, Known]) -> None:
        name, r = op.name, op.results[0]
        consts = frozenset().union(*(k.constants for k in ins))
        classes = frozenset().union(*(k.classes for k in ins))
        free = any(k.free for k in ins)
        lo_t, hi_t = _range(t)
        if name in ("stablehlo.add", "stablehlo.subtract", "stablehlo.multiply") and len(ins) == 2:
            a, b = ins
            lo, hi = _arith(name, (a.lo, a.hi), (b.lo, b.hi))
            if lo < lo_t or hi > hi_t:
                if not free:
                    # Only bounded operands: the sizes it was computed from make it wrap.
                    self.out.append(OverflowSite(self.fa.program, consts, classes, f"{name} at {op.loc}"))
                return  # wrapped: unknown from here on
            known[r] = Known(lo, hi, consts, classes, free)
        elif name in ("stablehlo.maximum", "stablehlo.minimum") and len(ins) == 2:
            f = max if name == "stablehlo.maximum" else min
            lo, hi = f(ins[0].lo, ins[1].lo), f(ins[0].hi, ins[1].hi)
            # Clamped on both sides by bounded values, an input is bounded.
            known[r] = Known(lo, hi, consts, classes, free and (lo <= lo_t or hi >= hi_t))
        elif name == "stablehlo.clamp" and len(ins) == 3:
            lo_c, x, hi_c = ins
            lo, hi = min(max(x.lo, lo_c.lo), hi_c.hi), max(min(x.hi, hi_c.hi), lo_c.lo)
            known[r] = Known(lo, hi, consts, classes, (lo_c.free or hi_c.free) or (free and (lo <= lo_t or hi >= hi_t)))
        elif name in ("stablehlo.divide", "stablehlo.remainder") and len(ins) == 2 and ins[1].lo > 0:
            a, c = ins[0], ins[1].lo
            if name == "stablehlo.divide":  # truncates towards 0: within the floor's bounds
                known[r] = Known(min(a.lo // c, 0), max(a.hi // c, 0), consts, classes, free)
            else:
                # A remainder is bounded by its divisor whatever the dividend.
                known[r] = Known(-(c - 1) if a.lo < 0 else 0, c - 1 if a.hi > 0 else 0, consts, classes, ins[1].free)
        elif name in ("stablehlo.negate", "stablehlo.abs") and len(ins) == 1:
            a = ins[0]
            lo, hi = (-a.hi, -a.lo) if name == "stablehlo.negate" else \
                (0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi)), max(abs(a.lo), abs(a.hi)))
            if lo < lo_t or hi > hi_t:
                if not free:
                    self.out.append(OverflowSite(self.fa.program, consts, classes, f"{name} at {op.loc}"))
                return
            known[r] = Known(lo, hi, consts, classes, free)


def _counted(op: Op, known: dict[str, Known]) -> tuple[int, frozenset[str]] | None:
    """A while loop's trips and the constant that bounds them, when its condition is
    `arg_j < N` (N a splat integer constant of the condition, the counter's initial value a
    known constant i0, its next value `arg_j + 1` in the body): (N - i0, {N's name})."""
    cond, body = op.regions
    defs = {r: o for o in cond.ops for r in o.results}
    test = defs.get(cond.returns[0]) if len(cond.returns) == 1 else None
    if test is None or test.name != "stablehlo.compare" or len(test.operands) != 2:
        return None
    direction = str(test.attrs.get("comparison_direction", "")).upper()
    lhs, rhs = test.operands
    if direction.endswith("GT"):
        lhs, rhs, direction = rhs, lhs, "LT"
    if not direction.endswith("LT") or lhs not in cond.args:
        return None
    c = defs.get(rhs)
    n = splat(c) if c is not None and c.name == "stablehlo.constant" else None
    j = cond.args.index(lhs)
    init = known.get(op.operands[j]) if j < len(op.operands) else None
    if not isinstance(n, int) or isinstance(n, bool) or init is None or init.lo != init.hi or j >= len(body.returns):
        return None
    bdefs = {r: o for o in body.ops for r in o.results}
    step = bdefs.get(body.returns[j])
    if step is None or step.name != "stablehlo.add" or body.args[j] not in step.operands:
        return None
    other = next((o for o in step.operands if o != body.args[j]), body.args[j])
    one = bdefs.get(other)
    if one is None or one.name != "stablehlo.constant" or splat(one) != 1:
        return None
    return max(int(n - init.lo), 0), frozenset({rhs})


def _trunc(x: float) -> int | float:
    """A float made integer: truncated towards 0 (an infinite end stays infinite)."""
    return int(x) if abs(x) < float("inf") else x


def preimages(fn: str, v: float) -> list[float]:
    """The operands x > 0 at which a function of FOLDS takes the value v or -v (literals are
    read by their magnitude)."""
    import math

    out: list[float] = []
    for y in (v, -v):
        if fn == "stablehlo.sqrt" and y > 0:
            out.append(y * y)
        elif fn == "stablehlo.rsqrt" and y > 0:
            out.append(1.0 / (y * y))
        elif fn == "stablehlo.cbrt" and y > 0:
            out.append(y ** 3)
        elif fn == "stablehlo.log" and abs(y) < 700:
            out.append(math.exp(y))
        elif fn == "stablehlo.log_plus_one" and abs(y) < 700:
            out.append(math.expm1(y))
        elif fn == "stablehlo.exponential" and y > 0:
            out.append(math.log(y))
        elif fn == "stablehlo.exponential_minus_one" and y > -1:
            out.append(math.log1p(y))
    return [x for x in out if x > 0]


def fold_sites(fa: ProgramFacts, a: DimAnalysis,
               ranges: Sequence[tuple[int, int] | None] | None = None) -> list[FoldSite]:
    """Every FOLDS site of the program (see FoldSite): the walk `overflow_sites` makes."""
    return list(dict.fromkeys(_walk(fa, a, ranges).folds)) if FOLDS else []


def _walk(fa: ProgramFacts, a: DimAnalysis, ranges: Sequence[tuple[int, int] | None] | None) -> _Walk:
    w = _Walk(fa, a)
    main = fa.module.funcs.get(fa.module.entry)
    if main is not None:
        args: list[Known | None] = [None] * len(main.body.args)
        if CONVERTS:
            for i, b in enumerate(list(ranges or [])[:len(args)]):
                if b is not None and all(isinstance(x, int) for x in b):
                    classes = frozenset(c for c, cls in enumerate(a.classes) if cls.size == b[1] + 1)
                    args[i] = Known(b[0], b[1], frozenset(), classes)
        w.func(main, tuple(args))
    return w


def overflow_sites(fa: ProgramFacts, a: DimAnalysis,
                   ranges: Sequence[tuple[int, int] | None] | None = None) -> list[OverflowSite]:
    """Every integer add, subtract, multiply, negate or abs (and, with CONVERTS, narrowing
    convert) whose interval at the original sizes leaves its type (see the module
    docstring). `ranges`: the closed bounds the user assumes per program input; a bound
    whose end is a class's size (hi + 1) moves with that class, which is its class here."""
    return list(dict.fromkeys(_walk(fa, a, ranges).out))


__all__ = ["FLOATS", "FOLDS", "IOTAS", "LOOPS", "LOOP_BUDGET", "LOOP_TRIPS", "FoldSite", "Known", "OverflowSite",
           "fold_sites", "overflow_sites", "preimages"]
