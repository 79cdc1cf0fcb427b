"""Which reference values are finite whenever the program's float inputs are: a stage's
inputs are free variables, and a proof over finite stage inputs says nothing about a cut
value that is +-inf or NaN (x / 0, rsqrt(0), log(0)). Such inputs range over every IEEE
value in the stage proof (`Options.ieee_inputs`), which costs the proof a class per element.

A small lattice over the reals, per value: finite or not, and its sign (positive,
non-negative, any). Every rule is a fact of real arithmetic (x * x >= 0, exp(x) > 0, a sum
of squares plus a positive constant is positive, rsqrt of a positive value is finite), so
"finite" here is true of the program's real semantics whatever the solver can show.

A select whose condition is decided (`decided`: i1 values every element of which is one
truth value for every program input within its bounds, stages/ranges.py) is its chosen
branch: flax's embedding lookup select(ok, gather(E, idx), NaN) with the ids bounded is
as finite as E."""
from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tv_mlir.algebra.base import FINITE_UFS
from tv_mlir.ir import Block, Module, Op, TensorType
from tv_mlir.passes.unroll import Counted, counted
from tv_mlir.semantics.ops import VALUE_IDENTITIES

ANY, NONNEG, POS = 0, 1, 2


@dataclass(frozen=True)
class Fact:
    finite: bool
    sign: int = ANY
    below: bool = False  # finite or -inf (never +inf or NaN): a max with a finite value is finite
    above: bool = False  # finite or +inf (never -inf or NaN): a min with a finite value is finite


UNKNOWN = Fact(False)
MOVES = frozenset(f"stablehlo.{n}" for n in (
    "slice", "dynamic_slice", "reshape", "transpose", "broadcast_in_dim", "convert", "concatenate", "reverse",
    "copy", "gather", "all_gather", "all_to_all", "collective_permute", "optimization_barrier", "pad",
    "dynamic_update_slice")) | VALUE_IDENTITIES
# Finite (over the reals) on finite arguments; the sign they give.
FINITE_FUNCS = {"stablehlo.exponential": POS, "stablehlo.logistic": POS, "stablehlo.tanh": ANY,
                "stablehlo.sine": ANY, "stablehlo.cosine": ANY, "stablehlo.floor": ANY, "stablehlo.ceil": ANY,
                "stablehlo.round_nearest_even": ANY, "stablehlo.round_nearest_afz": ANY, "stablehlo.sign": ANY,
                "stablehlo.cbrt": ANY, "stablehlo.atan2": ANY, "chlo.erf": ANY, "stablehlo.exponential_minus_one": ANY,
                **{f"chlo.{n}": ANY for n in FINITE_UFS}}
# Moves whose result holds elements of more than one operand (the others take the first's).
_JOINS = frozenset({"stablehlo.concatenate", "stablehlo.pad", "stablehlo.dynamic_update_slice"})
# Trips a loop may have for `_rewritten` to count the rows it writes.
_MAX_COUNTED_TRIPS = 1 << 16
NO_FLOAT = frozenset(f"stablehlo.{n}" for n in (
    "compare", "is_finite", "and", "or", "not", "xor", "iota", "partition_id", "replica_id", "shift_left",
    "shift_right_logical", "shift_right_arithmetic", "popcnt", "count_leading_zeros"))


def _constant(op: Op) -> Fact:
    arr = op.attrs.get("value")
    if arr is None:
        return UNKNOWN
    a = np.asarray(arr)
    if a.dtype == object or a.dtype.kind not in "fc":
        return Fact(True)
    if a.dtype.kind == "c" or np.any(np.isnan(a)):
        return UNKNOWN
    if not np.all(np.isfinite(a)):
        return Fact(False, ANY, below=not np.any(a == np.inf), above=not np.any(a == -np.inf))
    return Fact(True, POS if np.all(a > 0) else NONNEG if np.all(a >= 0) else ANY)


def _reducer(block: Block) -> str:
    """"add", "max", "min", "mul" for a one-op reduction body, else ""."""
    if len(block.ops) != 1:
        return ""
    return {"stablehlo.add": "add", "stablehlo.maximum": "max", "stablehlo.minimum": "min",
            "stablehlo.multiply": "mul"}.get(block.ops[0].name, "")


def _fact(op: Op, f: list[Fact], nonempty: bool = True, decided: Mapping[str, bool] | None = None) -> Fact:
    name = op.name
    fin = all(x.finite for x in f)
    if name == "stablehlo.constant":
        return _constant(op)
    if name == "stablehlo.select" and decided and op.operands[0] in decided:
        # The other branch is never taken (its NaN fill included): only the chosen one counts.
        return f[1] if decided[op.operands[0]] else f[2]
    if name in NO_FLOAT:
        return Fact(True)
    if name in _JOINS:
        # Every element is one of the data operands' (a concatenation's parts, a pad's
        # padding value, a written update): the fact all of them have.
        data = f if name == "stablehlo.concatenate" else f[:2]
        return functools.reduce(_meet, data) if data else UNKNOWN
    if name in MOVES:
        return f[0] if f else UNKNOWN
    if name == "stablehlo.maximum" and any(x.finite for x in f) and all(x.finite or x.below for x in f):
        return Fact(True, max(x.sign for x in f if x.finite))
    if name in FINITE_FUNCS:
        return Fact(fin, FINITE_FUNCS[name]) if fin else UNKNOWN
    if not fin and name not in ("stablehlo.reduce", "stablehlo.all_reduce", "stablehlo.reduce_scatter"):
        return UNKNOWN
    signs = [x.sign for x in f]
    if name == "stablehlo.multiply":
        same = op.operands[0] == op.operands[1]
        return Fact(True, POS if min(signs) == POS else NONNEG if same or min(signs) >= NONNEG else ANY)
    if name == "stablehlo.add":
        return Fact(True, POS if min(signs) >= NONNEG and max(signs) == POS else min(signs))
    if name in ("stablehlo.subtract", "stablehlo.negate", "stablehlo.dot_general", "stablehlo.dot"):
        return Fact(True, NONNEG if name.endswith("dot_general") and min(signs) >= NONNEG else ANY)
    if name in ("stablehlo.abs", "chlo.square"):  # flax's RMSNorm squares by chlo.square
        # |s| of a positive s is positive: log(|sum exp|) in jax's logsumexp.
        return Fact(True, POS if signs[0] == POS else NONNEG)
    if name == "stablehlo.maximum":
        return Fact(True, max(signs))
    if name in ("stablehlo.minimum",):
        return Fact(True, min(signs))
    if name == "stablehlo.select":
        return Fact(True, min(signs[1:]))
    if name == "stablehlo.clamp":
        return Fact(True, ANY)
    if name == "stablehlo.divide":
        return Fact(True, min(signs)) if signs[1] == POS else UNKNOWN
    if name == "stablehlo.rsqrt":
        return Fact(True, POS) if signs[0] == POS else UNKNOWN
    if name == "stablehlo.sqrt":
        return Fact(True, NONNEG) if signs[0] >= NONNEG else UNKNOWN
    if name == "stablehlo.power":  # b ** e = exp(e * log b) for b > 0 (RoPE's frequencies)
        return Fact(True, POS) if signs[0] == POS else UNKNOWN
    if name == "stablehlo.log":
        return Fact(True, ANY) if signs[0] == POS else UNKNOWN
    if name in ("stablehlo.reduce", "stablehlo.all_reduce", "stablehlo.reduce_scatter"):
        return _reduce(op, f, nonempty)
    if name == "stablehlo.scatter" and len(op.regions) == 1:
        # Each element is the operand's, combined with finite updates by one op or replaced
        # by one (an embedding's gradient: a scatter-add of the rows' cotangents).
        body = op.regions[0]
        keeps = not body.ops and all(r in body.args for r in body.returns)
        combines = bool(_reducer(body)) and all(v in body.args for v in body.ops[0].operands)
        return Fact(True) if keeps or combines else UNKNOWN
    return UNKNOWN


def _reduce(op: Op, f: list[Fact], nonempty: bool) -> Fact:
    kinds = {_reducer(r) for r in op.regions}
    if len(kinds) != 1 or "" in kinds:
        return UNKNOWN
    kind = kinds.pop()
    n = len(f) // 2 if op.name == "stablehlo.reduce" else len(f)
    vals, inits = f[:n], f[n:]
    if not all(x.finite for x in vals):
        return UNKNOWN
    sign = min(x.sign for x in vals)
    if kind == "max":
        # The init is absorbed by any element when it is finite or -inf (a finite one only
        # raises the result, so the elements' sign still bounds it); +inf or NaN is not.
        ok = all(x.finite or x.below for x in inits)
        return Fact(True, sign) if nonempty and ok else UNKNOWN
    if kind == "min":
        # Mirrored: +inf is absorbed, and a finite init can lower the result below the
        # elements' sign (jnp.min(exp(x), initial=p) with p < 0), so its sign counts.
        ok = all(x.finite or x.above for x in inits)
        sign = min([sign] + [x.sign for x in inits if x.finite])
        return Fact(True, sign) if nonempty and ok else UNKNOWN
    if not all(x.finite for x in inits):
        return UNKNOWN
    init_sign = min((x.sign for x in inits), default=POS)
    if kind == "add":
        return Fact(True, sign if init_sign >= NONNEG and sign >= NONNEG else ANY)
    return Fact(True, POS if sign == POS and init_sign == POS else ANY)


def _meet(a: Fact, b: Fact) -> Fact:
    return Fact(a.finite and b.finite, min(a.sign, b.sign), (a.finite or a.below) and (b.finite or b.below),
                (a.finite or a.above) and (b.finite or b.above))


def block_facts(block: Block, args: list[Fact], outer: dict[str, Fact], sizes: dict[str, int],
                decided: Mapping[str, bool] | None = None) -> dict[str, Fact]:
    """Facts of every value of `block` given its arguments' (values from outside: `outer`;
    decided select conditions: `decided`)."""
    facts = dict(outer)
    facts.update(zip(block.args, args))
    sizes = dict(sizes)
    sizes.update((a, t.size) for a, t in zip(block.args, block.arg_types))
    # Positive constants, and values that are a positive constant times another (`base`):
    # `((1 - b2) * g) * g`, Adam's square written as two multiplies, is >= 0.
    positive_constants: set[str] = set()
    base: dict[str, str] = {}
    defs: dict[str, Op] = {}
    for op in block.ops:
        # A reduction over no element is its init (-inf for max): every operand must have one.
        nonempty = all(sizes.get(v, 0) > 0 for v in op.operands)
        if op.name == "stablehlo.while":
            carried = _loop(op, [facts.get(v, UNKNOWN) for v in op.operands], facts, sizes, decided)
            out = _rewritten(op, carried, facts, sizes, decided, defs)
        else:
            fact = _fact(op, [facts.get(v, UNKNOWN) for v in op.operands], nonempty, decided)
            if _scaled(op, fact, positive_constants, base) and fact.finite and fact.sign == ANY:
                fact = Fact(True, NONNEG)
            out = [fact] * len(op.results)
        facts.update(zip(op.results, out))
        sizes.update((r, t.size) for r, t in zip(op.results, op.result_types))
        defs.update((r, op) for r in op.results)
    return facts


def _scaled(op: Op, fact: Fact, positive_constants: set[str], base: dict[str, str]) -> bool:
    """Note what op makes of positive constants and scaled values (see `block_facts`);
    True for a multiply of two values with one base: c1 * x * c2 * x >= 0."""
    name, r = op.name, op.results[0] if op.results else ""
    if name == "stablehlo.constant" or (name == "stablehlo.broadcast_in_dim" and op.operands[0] in positive_constants):
        if fact.finite and fact.sign == POS:
            positive_constants.add(r)
        return False
    if name != "stablehlo.multiply" or len(op.operands) != 2:
        return False
    a, b = op.operands
    if a in positive_constants or b in positive_constants:
        other = b if a in positive_constants else a
        base[r] = base.get(other, other)
        return False
    return base.get(a, a) == base.get(b, b)


def _loop(op: Op, init: list[Fact], outer: dict[str, Fact], sizes: dict[str, int],
          decided: Mapping[str, bool] | None = None) -> list[Fact]:
    """Induction over the reals: a fact of the carried values that holds initially and that
    the body keeps holds after every trip. Start from the initial facts and weaken them
    until the body keeps them (the lattice is finite, so this ends)."""
    body = op.regions[1]
    carried = list(init)
    for _ in range(4 * len(carried) + 2):
        facts = block_facts(body, carried, outer, sizes, decided)
        nxt = [_meet(c, facts.get(r, UNKNOWN)) for c, r in zip(carried, body.returns)]
        if nxt == carried:
            return carried
        carried = nxt
    return [UNKNOWN] * len(init)


def _rewritten(op: Op, carried: list[Fact], outer: dict[str, Fact], sizes: dict[str, int],
               decided: Mapping[str, bool] | None, defs: Mapping[str, Op]) -> list[Fact]:
    """The loop's result facts: `carried` (what holds on every trip), except for a stack
    whose every row the loop overwrites. A scan saves each layer's residuals into a stack
    that starts as zeros: `dynamic_update_slice(stack, update, i, ...)` with the counter i.
    On every trip the stack is its zeros and the rows written so far (`carried`: the meet,
    non-negative for positive rows), but once the counter has visited every row, each row
    is the update of the last trip that wrote it, so the stack has the update's fact (a
    positive softmax denominator, divided by in the backward loop). Required: the loop's
    trip count is fixed by its text (`passes.unroll.counted`: a constant start and step, a
    condition on the counter alone), the stack is carried back only as that write of
    itself at the counter itself, the update spans every other dim whole (its other starts
    clamp to 0), and the rows [clamp(i), clamp(i) + u) over the counter's values cover
    dim 0. The update's fact is the body's under the carried facts, true on every trip."""
    loop = counted(op, defs, _MAX_COUNTED_TRIPS)
    if loop is None or len(op.regions) != 2:
        return carried
    body = op.regions[1]
    counter = body.args[loop.index]
    local = {r: o for o in body.ops for r in o.results}
    facts: dict[str, Fact] | None = None
    out = list(carried)
    for k, (arg, ret, t) in enumerate(zip(body.args, body.returns, body.arg_types)):
        w = local.get(ret)
        if (w is None or w.name != "stablehlo.dynamic_update_slice" or len(w.operands) != 2 + len(t.shape)
                or w.operands[0] != arg or w.operands[2] != counter or not t.shape):
            continue
        u = _type_in(body, local, w.operands[1])
        if u is None or u.shape[1:] != t.shape[1:] or not _covers(loop, t.shape[0], u.shape[0]):
            continue
        if facts is None:
            facts = block_facts(body, carried, outer, sizes, decided)
        out[k] = facts.get(w.operands[1], UNKNOWN)
    return out


def _type_in(body: Block, local: Mapping[str, Op], v: str) -> TensorType | None:
    """The type of a value of `body` (an op's result or an argument; None from outside)."""
    if v in local:
        o = local[v]
        return o.result_types[o.results.index(v)]
    return body.arg_types[body.args.index(v)] if v in body.args else None


def _covers(loop: Counted, n: int, u: int) -> bool:
    """Whether writes of u rows at the counter's values (clamped as dynamic_update_slice
    clamps its start, to [0, n - u]) cover all n rows."""
    if u <= 0 or u > n:
        return u == n == 0
    seen = np.zeros(n, dtype=bool)
    for trip in range(loop.trips):
        i = min(max(loop.start + trip * loop.step, 0), n - u)
        seen[i:i + u] = True
    return bool(seen.all())


def finite_and_signed(module: Module, finite_inputs: bool, decided: Mapping[str, bool] | None = None,
                      input_signs: Sequence[int] = ()) -> tuple[set[str], dict[str, int]]:
    """`finite_values` and `signed_values` from one walk of the lattice. `input_signs`:
    per program input, NONNEG for a finite float input assumed >= 0 (--assume NAME=0:inf),
    else ANY."""
    facts = value_facts(module, finite_inputs, decided, input_signs)
    return ({v for v, f in facts.items() if f.finite},
            {v: f.sign for v, f in facts.items() if f.finite and f.sign != ANY})


def finite_values(module: Module, finite_inputs: bool, decided: Mapping[str, bool] | None = None) -> set[str]:
    """The values of `module` (a global program) finite for every finite input: top-level
    values, and the carried values of top-level loops as their body's arguments see them.
    `decided`: top-level i1 values of one truth value (stages/ranges.py)."""
    return finite_and_signed(module, finite_inputs, decided)[0]


def signed_values(module: Module, finite_inputs: bool, decided: Mapping[str, bool] | None = None) -> dict[str, int]:
    """The finite values of `value_facts` known > 0 (POS) or >= 0 (NONNEG)."""
    return finite_and_signed(module, finite_inputs, decided)[1]


def value_facts(module: Module, finite_inputs: bool, decided: Mapping[str, bool] | None = None,
                input_signs: Sequence[int] = ()) -> dict[str, Fact]:
    """The lattice's fact of every value `finite_values` looks at."""
    body = module.main.body
    args = [Fact(finite_inputs or not t.is_float,
                 input_signs[k] if finite_inputs and t.is_float and k < len(input_signs) else ANY)
            for k, t in enumerate(body.arg_types)]
    facts = block_facts(body, args, {}, {}, decided)
    for op in body.ops:
        if op.name == "stablehlo.while":
            carried = _loop(op, [facts.get(v, UNKNOWN) for v in op.operands], facts, {}, decided)
            for region in op.regions:
                facts.update(zip(region.args, carried))
                inner = block_facts(region, carried, facts, {}, decided)
                facts.update((k, v) for k, v in inner.items() if k not in facts)
    return facts
