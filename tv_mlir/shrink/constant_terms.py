"""Newton's argument and constant terms (docs/shrinking.md, "Red-team batch 5").

Newton's identities carry a symmetric identity over a class from n' to n when both sides
are polynomials in the power sums p_1..p_d of the elements along it. A summand with a
constant term is not such a polynomial: sum_i (x_i + 1) is p_1 + n, and n, the class's
size, is what no shrunk size keeps (`sum(x + 1)` against `sum(x) + 2.0` agree at n = 2
only). A summand of degree 0 (`sum(1)`) already makes its class *counted* (rule a: n is a
size value, kept in order with every literal); this reads the constant parts of summands
of higher degree the same way.

`may_have_constant(v)`: whether v, as a polynomial in the family's elements (atoms such as
exp(x) counted as fresh variables, as the verifier does), may have a non-zero constant
term. A value of degree 0 along the family has one unless it is the constant 0; an input
along the family has none; a product has none when one factor has none; a sum, difference,
select, max/min, move or copy has none when none of its data operands has one; a quotient
when its numerator has none; an atom of an argument with no constant term (exp(x)) is the
verifier's fresh variable and has none, but an atom of an argument that is constant as a
function (exp(x * 0), exp(square(x * 0)), cos of a loop's carried x * 0) is the same at every
position: its argument is read by `Same` (red-team batch 7). A compare is rule k's data
predicate (its sum is a type count, which rule k bounds), unless its operands are the same at
every position (then it is one outcome everywhere, a constant). Anything not read here may
have one (counted: a size value too many keeps a class larger, never hides a bug)."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from tv_mlir.semantics.ops import (
    BRANCHES,
    DEGREE_ADDING,
    DEGREE_PRESERVING,
    NOOP_CUSTOM_CALLS,
    SHARD_CALLS,
    TRANSCENDENTAL_OPS,
)
from tv_mlir.shrink.degree import PIECEWISE, Degrees
from tv_mlir.shrink.facts import ProgramFacts, moved_operands, splat
from tv_mlir.shrink.zero_types import Normal, normal_form, read_compare

# Off: only degree-0 summands count their class (the const_term hole).
CONSTANT_TERMS = True
# An atom of an argument whose affine normal form cancels to a constant (exp(x - x)) is
# that constant at every position (`_cancels`). Off: only products with 0 were seen, and
# sum(exp(x - x)) = n was a summand without constant term (red-team batch 6, exp_cancel).
ATOM_CANCELS = True

# Ops whose data operands are all of their operands and whose result has a constant term
# only where one of them has (sums, differences, moves, copies, collectives).
_ADDITIVE = (DEGREE_PRESERVING | PIECEWISE | {"stablehlo.select"}) - {"stablehlo.gather", "stablehlo.dynamic_slice",
                                                                     "stablehlo.dynamic_update_slice", "stablehlo.pad",
                                                                     "stablehlo.custom_call"}
# A compare the verifier's normal form decides (zero_types.read_compare) is a constant, 1 or
# 0, wherever it is read: a select by it takes that branch. Off: a compare had no constant
# term and a select by a predicate varying along the family none either (red-team batch 6,
# taut_positions: sum(where(iota >= 0, 1, 0)) is the size).
DECIDED = True
# An atom's argument, a compare's operands, a select's predicate and a lookup's indices are
# read as the same number at every position when they are a function of constants only,
# through any op (`Same`: elementwise ops, squares, moves, converts, reductions, loops,
# calls, selects, products with 0, differences that cancel, decided predicates). Off: the
# listed shapes of batch 6 only (`_fixed_value`: products with 0, cancels, selects by a
# decided predicate, multiplies, atoms, additive ops), and `exp(square(x * 0))` was a fresh
# variable (red-team batch 7, fixed_square).
SAME_VALUES = True
# A function argument read in the callee's own degrees (summand_degrees enters a call with
# the call's argument degrees) has its callers' constant terms, and GSPMD's sharding custom
# calls (a shard_map body's arguments come through them) move their operand's. Off: none
# (red-team batch 7, call_const: sum(x + 1) inside a called function was p_1), and a
# sharding custom call "may".
CALLEE_ARGS = True
# An atom's argument chosen position by position among values the same everywhere (a
# select by positions) is a constant at each position (`Same.pieces`). Off: a select by a
# varying predicate varies (red-team batch 7, fixed_positions).
PIECES = True
# A power with the constant exponent 0 is 1 at every position (`Same`): the verifier
# multiplies integer exponents out, so exp(x ** 0 - 1) is 1. Off: x ** 0 varied with x, and
# a sum of exp(x ** 0 - 1) had no constant term (red-team batch 8, fixed_pow0).
POWER_ZERO = True
# custom_call targets that move their operand's values (no new numbers).
_MOVING_CALLS = NOOP_CUSTOM_CALLS | SHARD_CALLS
# Ops whose result is a truth value read by `_truth`.
_BOOLEAN = frozenset({"stablehlo.compare", "stablehlo.not", "stablehlo.and", "stablehlo.or", "stablehlo.convert",
                      "stablehlo.broadcast_in_dim", "stablehlo.reshape"})
# Atoms the verifier treats as fresh variables per position (`exp(x)`).
_ATOMS = TRANSCENDENTAL_OPS


class _Worklist(Protocol):
    memo: dict[str, bool]
    _open: set[str]
    _missing: list[str]

    def _compute(self, value: str) -> bool: ...


def _settle(a: _Worklist, value: str) -> bool:
    """a's answer for value, computed without recursion (programs nest deeper than Python's
    stack): a value whose compute named operands not yet known (`_missing`) waits on the
    stack under them and is computed again once they are; one already open (a cycle) is
    read by the analysis' own assumption."""
    stack = [value]
    while stack:
        v = stack[-1]
        if v in a.memo:
            stack.pop()
            a._open.discard(v)
            continue
        a._open.add(v)
        a._missing = []
        found = a._compute(v)
        missing = [m for m in a._missing if m not in a.memo and m not in a._open]
        if missing:
            stack.extend(dict.fromkeys(missing))
            continue
        a.memo[v] = found
        stack.pop()
        a._open.discard(v)
    return a.memo[value]


@dataclass
class ConstantTerms:
    """`may_have_constant` over one family, memoised. Computed without recursion (a 126-layer
    stack is a chain of ~12,000 values): a value whose operands are not known yet pushes
    them and is computed again. A value read while it is being computed (a loop's carried
    value, through its body) is read as "none" (induction over the trips); where it turns
    out "may", it is forced to "may" and everything is computed again (only ever more
    values forced, so this ends)."""

    degrees: Degrees
    # Rule (k), zero types (zero_types.py): compare results read at one type, as their
    # Boolean outcome there (true: the constant 1).
    outcomes: dict[str, bool] = field(default_factory=dict)
    memo: dict[str, bool] = field(default_factory=dict)
    forced: set[str] = field(default_factory=set)  # read as "none" while open, found "may"
    _open: set[str] = field(default_factory=set)
    _missing: list[str] = field(default_factory=list)
    _assumed: set[str] = field(default_factory=set)
    _fixed_memo: dict[str, bool] = field(default_factory=dict)
    _same: dict[bool, Same] = field(default_factory=dict)

    def may_have_constant(self, value: str) -> bool:
        if value in self.memo:
            return self.memo[value]
        while True:
            self._assumed = set()
            found = self._run(value)
            wrong = {v for v in self._assumed if self.memo.get(v) and v not in self.forced}
            if not wrong:
                return found
            self.forced |= wrong
            self.memo.clear()

    def _run(self, value: str) -> bool:
        return _settle(self, value)

    def _get(self, value: str) -> bool:
        """An operand's answer: known, assumed (being computed: a cycle), or missing."""
        if value in self.memo:
            return self.memo[value]
        if value in self._open:
            self._assumed.add(value)
            return value in self.forced
        self._missing.append(value)
        return False

    def _compute(self, value: str) -> bool:  # noqa: C901 - one dispatch over op kinds
        d, f = self.degrees, self.degrees.facts
        if not d.has(value) or d.of(value) == 0:
            return not self._zero(value)
        if value in f.entry_args or value in d.bindings and not CALLEE_ARGS:
            return False
        # A called function's argument (in a callee's degrees, `bindings`, too) has a
        # constant term when a caller passes one: sum(v) in a function called with x + 1 is
        # p_1 + n (red-team batch 7, call_const). Read below with the function arguments.
        if value in f.region_arg:
            sources = _region_sources(f, value)
            return sources is None or any(self._get(v) for v in sources)
        if value in f.func_of_arg:
            callers = f.callers.get(value, [])
            return not callers or any(self._get(call.operands[k]) for call, k in callers)
        if value not in f.defs:
            return True
        op, idx = f.defs[value]
        n = op.name
        truth = self._truth(value) if value in self.outcomes or n in _BOOLEAN else None
        if truth is not None:
            return truth  # a predicate at a fixed type, or decided: the constant 1 or 0
        if n == "stablehlo.iota":
            return False  # positions: rule b's, not Newton's
        if n == "stablehlo.compare":
            # A data predicate: rule k's. Its sum is a type count k_t, which rule k's
            # argument bounds with the counts (degree D + T d), not a size value. A compare
            # of values the same at every position (cos(x * 0) > 0.5) is no data predicate:
            # one outcome everywhere, so its count is n or 0 (red-team batch 7, fixed_compare).
            return SAME_VALUES and self.same(value)
        if n in DEGREE_ADDING:
            return all(self._get(o) for o in op.operands)
        if n == "stablehlo.divide":
            return self._get(op.operands[0])
        if n == "stablehlo.select":
            chosen = self._truth(op.operands[0])
            if chosen is not None:
                return self._get(op.operands[1 if chosen else 2])
            if d.of(op.operands[0]) and not (SAME_VALUES and self.same(op.operands[0])):
                # A data predicate along the family chooses: rule k's sum (its constant
                # parts per type are the type counts k_t, which rule k bounds). One the same
                # at every position chooses one branch everywhere, either of them.
                return False
            return any(self._get(o) for o in op.operands[1:] if not self._infinite(o))
        if n in PIECEWISE:
            # max(x, -inf) is x: the reduction's identity is no piece that can win.
            return any(self._get(o) for o in op.operands if not self._infinite(o))
        if n in ("stablehlo.gather", "stablehlo.dynamic_slice", "stablehlo.pad", "stablehlo.dynamic_update_slice"):
            moved = moved_operands(op)
            if n != "stablehlo.pad" and any(d.of(o) and not (SAME_VALUES and self.same(o))
                                            for k, o in enumerate(op.operands) if k not in moved):
                # Rows picked at data indices along the family (emb[ids_t]): a lookup, an
                # atom of the index as the verifier reads it (rule "indexed by data"). At
                # indices the same at every position (emb[ids * 0]) one row everywhere: the
                # table's constant term (red-team batch 7).
                return False
            return any(self._get(op.operands[k]) for k in moved)
        if n in _ADDITIVE:
            return any(self._get(o) for o in op.operands)
        if n == "stablehlo.reduce" and op.regions and len(op.regions[0].ops) == 1:
            # A sum (or max, min) of values with none, from 0 (or its identity), has none.
            reducer = op.regions[0].ops[0].name
            half = len(op.operands) // 2
            inits_ok = all(self._zero(i) if reducer == "stablehlo.add" else self._infinite(i) or self._zero(i)
                           for i in op.operands[half:])
            if reducer in ("stablehlo.add", "stablehlo.maximum", "stablehlo.minimum") and inits_ok:
                return any(self._get(o) for o in op.operands[:half])
            return True
        if n in _ATOMS:
            return any(self._fixed(o) for o in op.operands)
        if n == "stablehlo.while" and len(op.regions) == 2:
            loop = op.regions[1]
            return self._get(op.operands[idx]) or (idx < len(loop.returns) and self._get(loop.returns[idx]))
        if n == "sdy.manual_computation" and op.regions:
            return self._get(op.regions[0].returns[idx])
        if n == "func.call" and op.attrs.get("callee", "") in f.module.funcs:
            return self._get(f.module.funcs[op.attrs["callee"]].body.returns[idx])
        if n == "stablehlo.custom_call" and op.attrs.get("call_target_name") in _MOVING_CALLS and CALLEE_ARGS:
            # GSPMD's sharding annotations and shard/full reshapes move their operand: a
            # shard_map body's arguments are the entry's inputs (CALLEE_ARGS reads them).
            return any(self._get(o) for o in op.operands)
        return True


    def _truth(self, value: str, depth: int = 0) -> bool | None:
        """A Boolean value's outcome at the type `outcomes` fixes, through converts,
        broadcasts, reshapes, not, and, or; None when it is not fixed."""
        if value in self.outcomes:
            return self.outcomes[value]
        f = self.degrees.facts
        if value in f.defs and f.defs[value][0].name == "stablehlo.compare" and DECIDED:
            # A compare the verifier's normal form decides (x <= x, iota >= 0, exp(x) > 0)
            # is that constant at every position, a data predicate or not.
            op = f.defs[value][0]
            return read_compare(self._normal_form(), op, self._normal_form().dtype(op.operands[0])).decided()
        if value in f.func_of_arg and depth <= 16:
            # jnp.where's private function takes the predicate as an argument: fixed when
            # every call passes one fixed the same way.
            ts = {self._truth(call.operands[k], depth + 1) for call, k in f.callers.get(value, [])}
            return ts.pop() if len(ts) == 1 else None
        d = f.defs.get(value)
        if d is None or depth > 16:
            return None
        op = d[0]
        if op.name in ("stablehlo.convert", "stablehlo.broadcast_in_dim", "stablehlo.reshape"):
            return self._truth(op.operands[0], depth + 1)
        if op.name == "stablehlo.not" and op.result_types and op.result_types[0].dtype == "i1":
            t = self._truth(op.operands[0], depth + 1)
            return None if t is None else not t
        if op.name in ("stablehlo.and", "stablehlo.or") and op.result_types and op.result_types[0].dtype == "i1":
            outs = [self._truth(o, depth + 1) for o in op.operands]
            if op.name == "stablehlo.and":
                return False if False in outs else (None if None in outs else True)
            return True if True in outs else (None if None in outs else False)
        return None

    def _zero(self, value: str, depth: int = 0) -> bool:
        """The constant 0, through broadcasts, converts, reshapes and the arguments of a
        function every call passes 0 (jnp.where's private function gets its 0.0 so)."""
        f = self.degrees.facts
        v = value
        while v in f.defs and f.defs[v][0].name in ("stablehlo.broadcast_in_dim", "stablehlo.convert",
                                                    "stablehlo.reshape"):
            v = f.defs[v][0].operands[0]
        if v in f.func_of_arg and depth < 8:
            callers = f.callers.get(v, [])
            return bool(callers) and all(self._zero(call.operands[k], depth + 1) for call, k in callers)
        op = f.defs.get(v)
        return op is not None and op[0].name == "stablehlo.constant" and splat(op[0]) == 0

    def _infinite(self, value: str) -> bool:
        """An infinite or NaN constant: a fill or an identity, no real constant term (a sum
        that takes it is that value at every size)."""
        f = self.degrees.facts
        v = value
        while v in f.defs and f.defs[v][0].name in ("stablehlo.broadcast_in_dim", "stablehlo.convert"):
            v = f.defs[v][0].operands[0]
        op = f.defs.get(v)
        c = splat(op[0]) if op is not None and op[0].name == "stablehlo.constant" else None
        return isinstance(c, float) and not math.isfinite(c)

    def _fixed(self, value: str, depth: int = 0) -> bool:
        """Whether an atom's argument may be the same at every position (so the atom is a
        constant there, exp(x * 0), exp(x - x), exp(where(p, 0, x - x))): a product with
        the constant 0, a difference whose normal form cancels (`_cancels`), a decided or
        fixed predicate, a select by a fixed predicate of its chosen branch, a function's
        return, an elementwise op of such values. Off `ATOM_CANCELS`: products with 0 only."""
        if not ATOM_CANCELS:
            return self._constant_function(value)
        if SAME_VALUES:
            return self.same(value, pieces=True)
        if value not in self._fixed_memo:
            self._fixed_memo[value] = False  # a cycle (a loop's carried value): not fixed
            self._fixed_memo[value] = self._fixed_value(value, depth)
        return self._fixed_memo[value]

    def same(self, value: str, pieces: bool = False) -> bool:
        """Whether `value` may be the same number at every position (`Same`); `pieces`:
        or one of a few such numbers, chosen position by position (an atom's argument)."""
        if pieces not in self._same:
            self._same[pieces] = Same(self, pieces=pieces)
        return self._same[pieces](value)

    def _fixed_value(self, value: str, depth: int) -> bool:
        d, f = self.degrees, self.degrees.facts
        if depth > 32 or not d.has(value) or d.of(value) == 0:
            return True  # constant along the family (or unknown: read as may)
        if value in f.func_of_arg:
            callers = f.callers.get(value, [])
            return bool(callers) and all(self._fixed(call.operands[k], depth + 1) for call, k in callers)
        if value not in f.defs:
            return False
        op, idx = f.defs[value]
        n = op.name
        if n in _BOOLEAN and self._truth(value) is not None or self._cancels(value):
            return True
        if n == "stablehlo.select":
            chosen = self._truth(op.operands[0])
            return chosen is not None and self._fixed(op.operands[1 if chosen else 2], depth + 1)
        if n in DEGREE_ADDING and any(self._zero(o) for o in op.operands):
            return True
        if n == "func.call" and op.attrs.get("callee", "") in f.module.funcs:
            return self._fixed(f.module.funcs[op.attrs["callee"]].body.returns[idx], depth + 1)
        if n in DEGREE_ADDING or n in _ATOMS or n == "stablehlo.divide" or n in _ADDITIVE and not op.regions:
            return all(self._fixed(o, depth + 1) for o in op.operands)
        return False

    def _cancels(self, value: str) -> bool:
        """Whether `value`'s affine normal form has no atom: a difference that cancels
        (x - x, (x + 1) - x) is the same at every position, though its degree is not 0,
        and the verifier folds it so (exp(x - x) is 1). `ATOM_CANCELS` off: not read."""
        if not ATOM_CANCELS:
            return False
        form = self._normal_form().form(value)
        return form is not None and not form[0]

    def _normal_form(self) -> Normal:
        return normal_form(self.degrees.facts)

    def _constant_function(self, value: str) -> bool:
        """Whether `value` may be the same at every position though it has a degree: a
        product with the constant 0 on the way (x * 0), seen through additive ops."""
        d, f = self.degrees, self.degrees.facts
        seen: set[str] = set()
        stack = [value]
        while stack:
            v = stack.pop()
            if v in seen or v not in f.defs or not d.has(v) or d.of(v) == 0:
                continue
            seen.add(v)
            op, _ = f.defs[v]
            if op.name in DEGREE_ADDING and any(self._zero(o) for o in op.operands):
                return True
            if op.name in DEGREE_ADDING or op.name in _ADDITIVE or op.name == "stablehlo.divide":
                stack.extend(op.operands)
        return False


@dataclass
class Same:
    """Whether a value may be the same number at every position of the family though its
    degree is not 0 (x * 0, square(x * 0), cos(x * 0), x - x, a reduce of x * 0 over
    another class, a loop that carries x * 0): the verifier folds such a value to one term,
    so an atom of it is a constant there, not a fresh variable per position.

    Positions enter a value only through the family's inputs and iotas along it, so the
    reading is structural: a value of degree 0 is the same everywhere; an input or an iota
    along the family is not; a product with the constant 0, a form whose affine normal
    form has no atom (`_cancels`), a decided predicate, and a select by a decided predicate
    of its chosen branch are; any other op is when all its operands are (an elementwise
    op, a square, an atom, a move, a convert, a reduction or sort of such values, a lookup
    at such indices, a branch whose operands and returns are), a loop's carried value when
    its start and the body's return are (induction: a value read while open is assumed
    the same), a call's result when the callee's return is with its arguments bound to the
    operands' answers (`bound`; a function argument read outside a call: when any caller
    passes such a value), a manual computation's when its body's return is.

    Over-reading is the safe side (a value read as the same everywhere that is not only
    counts its class, ConstantTerms' "may"), so every unknown is "the same". What this
    misses is a cancellation the affine normal form does not see ((x + 1)^2 - x^2 - 2x:
    docs/shrinking.md, "Red-team batch 7", what is still open). Computed without recursion
    (a deep stack's chains), memoised per calling context."""

    terms: ConstantTerms
    # A select by a predicate that varies is read as its (finite) branches: the value is one
    # of them at each position. For an atom's argument: exp(where(iota < 5, 0, x * 0)) is 1
    # at every position, a constant term rule k never sees (no data predicate; red-team
    # batch 7, fixed_positions). Not for a compare's operands or a select's predicate,
    # where the choice itself is the data (rule k's).
    pieces: bool = False
    bound: dict[str, bool] = field(default_factory=dict)
    calls: dict[tuple[str, tuple[bool, ...]], Same] = field(default_factory=dict)
    depth: int = 0
    memo: dict[str, bool] = field(default_factory=dict)
    _open: set[str] = field(default_factory=set)
    _missing: list[str] = field(default_factory=list)

    def __call__(self, value: str) -> bool:
        return _settle(self, value)

    def _look(self, value: str) -> bool:
        if value in self.memo:
            return self.memo[value]
        if value not in self._open:
            self._missing.append(value)
        return True  # open: the induction hypothesis; missing: computed again once known

    def _all(self, values: list[str]) -> bool:
        return all([self._look(v) for v in values])  # every operand looked at (a list, not a generator)

    def _compute(self, value: str) -> bool:  # noqa: C901 - one dispatch over op kinds
        t = self.terms
        d, f = t.degrees, t.degrees.facts
        if not d.has(value) or d.of(value) == 0:
            return True
        if value in self.bound:
            return self.bound[value]
        if value in f.entry_args:
            return False
        if value in f.region_arg:
            sources = _region_sources(f, value)
            return sources is None or self._all(sources)
        if value in f.func_of_arg:
            callers = f.callers.get(value, [])
            return not callers or any([self._look(call.operands[k]) for call, k in callers])
        if value not in f.defs:
            return True
        op, idx = f.defs[value]
        n = op.name
        if (n in _BOOLEAN or value in t.outcomes) and t._truth(value) is not None:
            return True
        if n == "stablehlo.iota":
            return False  # positions along the family
        if n in DEGREE_ADDING and any(t._zero(o) for o in op.operands):
            return True
        if n == "stablehlo.power" and POWER_ZERO and t._zero(op.operands[1]):
            return True  # x ** 0 is 1 (the verifier multiplies constant exponents out)
        if t._cancels(value):
            return True
        if n == "stablehlo.select":
            chosen = t._truth(op.operands[0])
            if chosen is not None:
                return self._look(op.operands[1 if chosen else 2])
            if self.pieces and PIECES:
                return self._all([o for o in op.operands[1:] if not t._infinite(o)])
        if n == "stablehlo.while" and len(op.regions) == 2:
            loop = op.regions[1]
            return self._all([op.operands[idx]] + ([loop.returns[idx]] if idx < len(loop.returns) else []))
        if n == "sdy.manual_computation" and op.regions:
            return self._look(op.regions[0].returns[idx])
        if n == "func.call" and op.attrs.get("callee", "") in f.module.funcs:
            args = tuple(self._all([o]) for o in op.operands)
            if self._missing or self.depth >= 16:
                return True
            fn = f.module.funcs[op.attrs["callee"]]
            key = (fn.name, args)
            if key not in self.calls:
                self.calls[key] = Same(t, self.pieces, dict(zip(fn.body.args, args)), self.calls, self.depth + 1)
            return self.calls[key](fn.body.returns[idx])
        if n in BRANCHES:
            return self._all(list(op.operands) + [r.returns[idx] for r in op.regions if idx < len(r.returns)])
        return self._all(list(op.operands))


# Numbers an atom of a known constant is (the scale of `sum(exp(x * 0 + 0.5))` is e^0.5).
_NUMERIC: dict[str, Callable[[float], float]] = {
    "stablehlo.exponential": math.exp, "stablehlo.cosine": math.cos, "stablehlo.sine": math.sin,
    "stablehlo.tanh": math.tanh, "stablehlo.logistic": lambda x: 1.0 / (1.0 + math.exp(-x)),
    "stablehlo.log": math.log, "stablehlo.sqrt": math.sqrt, "stablehlo.rsqrt": lambda x: 1.0 / math.sqrt(x),
    "stablehlo.exponential_minus_one": math.expm1, "stablehlo.log_plus_one": math.log1p,
    "chlo.erf": math.erf, "chlo.tan": math.tan}
# Ops that move or copy values: a scale passes through.
_SCALE_MOVES = frozenset({"stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim",
                          "stablehlo.slice", "stablehlo.concatenate", "stablehlo.pad", "stablehlo.gather",
                          "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice", "stablehlo.reduce_precision",
                          "stablehlo.all_gather", "stablehlo.all_to_all", "stablehlo.collective_permute",
                          "stablehlo.collective_broadcast", "stablehlo.optimization_barrier", "mhlo.copy",
                          "sdy.sharding_constraint", "sdy.reshard", "stablehlo.real", "stablehlo.maximum",
                          "stablehlo.minimum", "stablehlo.clamp", "stablehlo.abs", "stablehlo.select"})
# More candidates than this: unknown (the class is pinned).
MAX_SCALES = 32
# The largest integer exponent a power's constant term is multiplied out for (`Scales`).
MAX_POWER = 64
Scale = frozenset[float] | None


def _region_sources(f: ProgramFacts, value: str) -> list[str] | None:
    """What a region's argument is fed from: a manual computation's operand; a loop's
    carried value's start and what the body returns for it (read by induction); None for a
    reducer's or comparator's argument, which its op reads."""
    owner, _, k = f.region_arg[value]
    if owner.name == "sdy.manual_computation":
        return [owner.operands[k]]
    if owner.name == "stablehlo.while":
        loop = owner.regions[1]
        return [owner.operands[k]] + ([loop.returns[k]] if k < len(loop.returns) else [])
    return None


def _splat_through_moves(f: ProgramFacts, value: str) -> float | int | None:
    """A splat constant through broadcasts, converts and reshapes, or None."""
    v = value
    while v in f.defs and f.defs[v][0].name in ("stablehlo.broadcast_in_dim", "stablehlo.convert",
                                                "stablehlo.reshape"):
        v = f.defs[v][0].operands[0]
    d = f.defs.get(v)
    return splat(d[0]) if d is not None and d[0].name == "stablehlo.constant" else None


@dataclass
class Scales:
    """Rule (a), scaled counts (docs/shrinking.md, "Red-team batch 8"): the numbers a sum's
    count may be a multiple of. A counted class's number in the program is c x n, c the
    summand's constant term (`sum(0.75 + x * 0)` is 0.75 n), so rule a orders n with every
    literal divided by c, not with the literal itself: at n' = 2, 0.75 n' is the bug's
    1.5. `of(v)`: a superset of the coefficients of v's constant term as a polynomial in
    the family's elements whose own coefficients are numbers or symbols (inputs not along
    the family, atoms of them): a constant k is {k}; a symbol is {1} (its coefficient); a
    sum's are its operands' and their pairwise sums (the constant monomials add), a
    product's the pairwise products, a quotient's the pairwise quotients, a choice's (a
    select, max, min, clamp) or a move's its operands', a compare's 1; an atom of a
    constant is that number (and 1, as the symbol it is otherwise). A value with no
    constant term (`ConstantTerms`) has none. Anything else, or too many, is unknown
    (None: the caller pins)."""

    terms: ConstantTerms
    # Rule k's counted sums (a count at a type, `sum(where(x > 0, 0.75, 0))` +
    # `sum(where(x <= 0, 0.75, 0))` is 0.75 n): a select by a data predicate is read as its
    # branches and a compare as 1, where Newton's reading gives them no constant term.
    typed: bool = False
    memo: dict[str, Scale] = field(default_factory=dict)

    def of(self, value: str, depth: int = 0) -> Scale:
        if value not in self.memo:
            self.memo[value] = None  # a cycle (a loop's carried value): unknown
            found = self._compute(value, depth)
            self.memo[value] = found if found is None or len(found) <= MAX_SCALES else None
        return self.memo[value]

    def _compute(self, value: str, depth: int) -> Scale:  # noqa: C901 - one dispatch over op kinds
        t = self.terms
        d, f = t.degrees, t.degrees.facts
        varies = d.has(value) and d.of(value) > 0
        typed = self.typed and value in f.defs and f.defs[value][0].name in ("stablehlo.select", "stablehlo.compare")
        if varies and not typed and not t.may_have_constant(value):
            return frozenset()
        if depth > 64:
            return None
        if value in f.entry_args:
            return frozenset() if varies else frozenset({1.0})  # a symbol (along the family: none)
        if value in f.func_of_arg:
            callers = f.callers.get(value, [])
            return self._union([call.operands[k] for call, k in callers], depth) if callers else None
        if value not in f.defs:
            # An input not along the family is a symbol; a carried value or a region's
            # argument along it is not read here.
            return None if varies or value in f.region_arg else frozenset({1.0})
        op, idx = f.defs[value]
        n = op.name
        if n == "stablehlo.constant":
            k = splat(op)
            return None if k is None else frozenset({float(k)} if k else ())
        if n in ("stablehlo.compare", "stablehlo.and", "stablehlo.or", "stablehlo.not", "stablehlo.iota"):
            return frozenset({1.0})
        if n in ("stablehlo.partition_id", "stablehlo.replica_id"):
            # A device's number: any of the mesh's (0 adds nothing).
            count = f.module.num_partitions if n == "stablehlo.partition_id" else f.module.num_replicas
            return frozenset(float(k) for k in range(1, count)) if count <= MAX_SCALES else None
        if n == "chlo.square":
            inner = self.of(op.operands[0], depth + 1)
            return self._pairs(inner, inner, lambda x, y: x * y)
        if n in ("stablehlo.remainder",) and len(op.operands) == 2:
            return self._pairs(self.of(op.operands[0], depth + 1), self.of(op.operands[1], depth + 1),
                               lambda x, y: math.fmod(x, y) if y else math.nan)
        if n == "stablehlo.select":
            chosen = t._truth(op.operands[0])
            if chosen is not None:
                return self.of(op.operands[1 if chosen else 2], depth + 1)
            return self._union(list(op.operands[1:]), depth)
        if n in _SCALE_MOVES:
            return self._union(list(op.operands), depth)
        if n == "stablehlo.negate":
            return self._pairs(frozenset({-1.0}), self.of(op.operands[0], depth + 1), lambda x, y: x * y)
        if n == "stablehlo.convert":
            inner = self.of(op.operands[0], depth + 1)
            dtype = op.result_types[0].dtype if op.result_types else ""
            if inner is None or dtype.startswith(("f", "bf")):
                return inner
            return inner | {float(math.trunc(x)) for x in inner if math.isfinite(x)}
        if n in ("stablehlo.add", "stablehlo.subtract"):
            a, b = self.of(op.operands[0], depth + 1), self.of(op.operands[1], depth + 1)
            sign = 1.0 if n == "stablehlo.add" else -1.0
            if a is None or b is None:
                return None
            return a | {sign * y for y in b} | {x + sign * y for x in a for y in b}
        if n == "stablehlo.multiply":
            return self._pairs(self.of(op.operands[0], depth + 1), self.of(op.operands[1], depth + 1),
                               lambda x, y: x * y)
        if n == "stablehlo.divide":
            q = self._pairs(self.of(op.operands[0], depth + 1), self.of(op.operands[1], depth + 1),
                            lambda x, y: x / y if y else math.nan)
            dtype = op.result_types[0].dtype if op.result_types else ""
            # An integer quotient truncates (mesh coordinates: pid / 1 % 4).
            return q if q is None or dtype.startswith(("f", "bf")) else q | {float(math.trunc(x)) for x in q}
        if n == "stablehlo.power":
            # x ** e: 1 at e = 0; at a positive integer e the product of e copies of x
            # (the verifier multiplies constant exponents out), so its constant term's
            # coefficients are among the e-fold products, as a multiply's are the pairwise
            # ones (none when x has no constant term: sum(x ** 9) counts nothing). Other
            # exponents: unknown.
            e = _splat_through_moves(f, op.operands[1])
            if e == 0:
                return frozenset({1.0})
            if e is None or e < 0 or e != int(e) or e > MAX_POWER:
                return None
            base = self.of(op.operands[0], depth + 1)
            acc = base
            for _ in range(int(e) - 1):
                if not acc:
                    break
                acc = self._pairs(acc, base, lambda x, y: x * y)
            return acc
        if n in _NUMERIC:
            inner = self.of(op.operands[0], depth + 1)
            if inner is None:
                return None
            out = {1.0}
            for x in inner:
                try:
                    out.add(float(_NUMERIC[n](x)))
                except (ValueError, OverflowError, ZeroDivisionError):
                    continue
            return frozenset(out)
        if n == "func.call" and op.attrs.get("callee", "") in f.module.funcs:
            return self.of(f.module.funcs[op.attrs["callee"]].body.returns[idx], depth + 1)
        if n == "stablehlo.custom_call" and op.attrs.get("call_target_name") in _MOVING_CALLS:
            return self._union(list(op.operands), depth)
        if n == "sdy.manual_computation" and op.regions:
            return self.of(op.regions[0].returns[idx], depth + 1)
        return None

    def _union(self, values: list[str], depth: int) -> Scale:
        out: set[float] = set()
        for v in values:
            s = self.of(v, depth + 1)
            if s is None:
                return None
            out |= s
        return frozenset(out)

    @staticmethod
    def _pairs(a: Scale, b: Scale, fn: Callable[[float, float], float]) -> Scale:
        if a is None or b is None or len(a) * len(b) > MAX_SCALES * MAX_SCALES:
            return None
        return frozenset(x for x in (fn(p, q) for p in a for q in b) if math.isfinite(x) and x != 0)


__all__ = ["ATOM_CANCELS", "CALLEE_ARGS", "CONSTANT_TERMS", "DECIDED", "MAX_SCALES", "PIECES", "POWER_ZERO",
           "SAME_VALUES", "ConstantTerms", "Same", "Scales"]
