"""Rule (a), ratios: what data is multiplied by. Every value is read as a *linear form*, a
sum over atoms (values that are not constant multiples or sums of others: inputs, sums,
products of data) of a coefficient times the atom, the coefficient a sum of *terms*, each a
sign times a product of splat constants and their reciprocals. `s / 4096 + s / 4096` is s
times (1/4096 + 1/4096); `x * c` with `c = 1/4096 + 1/4096` built by traced constant
arithmetic is the same; `divide(s, 8.0)` in a called function is s times 1/8 with the
caller's constant. A coefficient is a *multiplier* (`constants.ratios` keeps them
injective); a sum of terms is evaluated at the original and at the rewritten constants,
so two multipliers that collide only as sums are seen (docs/shrinking.md, rule a).

Integers: a sum is exact, a division truncates. An integer quotient is recorded as a
multiplier of its numerator (its value is compared, as before) but starts a new atom: a
floor is no factor, and `x // 512 * 512 - x` is no cancellation."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tv_mlir.ir import Block, Func, Op
from tv_mlir.shrink.facts import ProgramFacts, device_count, only_device, splat

Factor = tuple[str, float, int]  # (constant's value name, value, +1 a factor | -1 a divisor)
Term = tuple[int, tuple[Factor, ...]]  # sign, factors: sign * prod(value ** e)
Coefficient = tuple[Term, ...]  # a sum of terms
Form = dict[str, Coefficient]  # atom -> coefficient; UNIT: the constant part
Multiplier = tuple[str, Coefficient, str]  # (program, coefficient, where)

UNIT = ""  # the atom of a constant expression's value
ONE: Coefficient = ((1, ()),)
# A coefficient of more terms than this, or a product of more factors, is left alone (its
# value becomes an atom): sums of multipliers in programs are short, and a long one
# would only be compared with others of its own length.
MAX_TERMS = 8
MAX_FACTORS = 8
# Ops a form passes through unchanged: the value is the same number times the same
# coefficients (a broadcast of a scaled mean, a layout change).
_MOVES = frozenset({"stablehlo.broadcast_in_dim", "stablehlo.convert", "stablehlo.reshape",
                    "stablehlo.transpose"})


def value(c: Coefficient, values: dict[str, float] | None = None) -> float | None:
    """The coefficient's number with the constants at their values (or at `values`,
    by name, when given and listed there); None when a divisor is 0."""
    total = 0.0
    for sign, factors in c:
        t = float(sign)
        for name, v, e in factors:
            x = float(values.get(name, v)) if values is not None else v
            if e < 0 and not x:
                return None
            t *= x ** e
        total += t
    return total


def _times(a: Coefficient, b: Coefficient) -> Coefficient | None:
    out = tuple((sa * sb, fa + fb) for sa, fa in a for sb, fb in b)
    if len(out) > MAX_TERMS or any(len(f) > MAX_FACTORS for _, f in out):
        return None
    return out


def _inverse(c: Coefficient) -> Coefficient | None:
    if len(c) != 1:
        return None  # 1 / (a + b) is no sum of products
    sign, factors = c[0]
    return ((sign, tuple((n, v, -e) for n, v, e in factors)),)


def _scale(form: Form, c: Coefficient) -> Form | None:
    out: Form = {}
    for atom, coef in form.items():
        p = _times(coef, c)
        if p is None:
            return None
        out[atom] = p
    return out


def _plus(a: Form, b: Form, sign: int) -> Form | None:
    out = dict(a)
    for atom, coef in b.items():
        terms = out.get(atom, ()) + tuple((s * sign, f) for s, f in coef)
        if len(terms) > MAX_TERMS:
            return None
        out[atom] = terms
    return out


def _interesting(form: Form) -> bool:
    """Worth keeping: some coefficient involves a constant or sums terms (every other
    value is its own atom, which costs nothing to leave implicit)."""
    return any(len(c) > 1 or c[0][1] for c in form.values())


# Ops that are never numbered as equal to another with the same operands: draws, calls
# and control flow (their regions are not compared), custom calls.
_UNNUMBERED = frozenset({"stablehlo.rng", "stablehlo.rng_bit_generator", "stablehlo.custom_call", "func.call",
                         "stablehlo.while", "stablehlo.case", "stablehlo.if"})


def _region_key(block: Block, canon: dict[str, str]) -> tuple:
    """A region for value numbering, up to renaming its values: per op (in order) its
    name, attributes and operands (a region argument or an earlier result of the region by
    its number, a value from above by its numbered name), and what it returns."""
    local: dict[str, int] = {a: k for k, a in enumerate(block.args)}
    ops = []
    for op in block.walk():
        ops.append((op.name, tuple(sorted((k, _attr_key(v)) for k, v in op.attrs.items())),
                    tuple(local[o] if o in local else canon.get(o, o) for o in op.operands)))
        for r in op.results:
            local[r] = len(local)
    return tuple(ops) + (tuple(local.get(r, -1) for r in block.returns),)


def _attr_key(v: object) -> object:
    if isinstance(v, np.ndarray):
        # Small arrays by content (splat constants, dims); a large one only equals itself.
        return (v.shape, str(v.dtype), v.tobytes() if v.size <= 64 else id(v))
    if isinstance(v, (list, tuple)):
        return tuple(_attr_key(x) for x in v)
    return repr(v)


@dataclass
class _Walk:
    fa: ProgramFacts
    out: list[Multiplier] = field(default_factory=list)
    # Value numbering: two ops of one name, attributes and (numbered) operands compute the
    # same value, so `mean(x) + mean(x)` written with two reduces is one atom twice.
    canon: dict[str, str] = field(default_factory=dict)
    numbers: dict[tuple, tuple[str, ...]] = field(default_factory=dict)
    seen: set[tuple[Coefficient, str]] = field(default_factory=set)
    # (callee, its constant arguments) -> the forms of its returns, in its own atoms
    calls: dict[tuple[str, tuple[tuple[int, Coefficient], ...]], list[Form]] = field(default_factory=dict)

    def record(self, form: Form, op: Op) -> None:
        where = f"{op.name} at {op.loc}"
        for atom, coef in form.items():
            if atom == UNIT or (len(coef) == 1 and not coef[0][1]):
                continue  # the constant part, or an atom times 1: no multiplier
            key = (coef, where)
            if key not in self.seen:
                self.seen.add(key)
                self.out.append((self.fa.program, coef, where))

    def func(self, fn: Func, env: dict[str, Form]) -> list[Form]:
        forms: dict[str, Form] = dict(env)
        self.block(fn.body, forms)
        return [self.form(forms, r) for r in fn.body.returns]

    def form(self, forms: dict[str, Form], v: str) -> Form:
        return forms.get(v) or {self.canon.get(v, v): ONE}

    def number(self, op: Op) -> None:
        if op.name in _UNNUMBERED or not op.results:
            return
        try:
            key = (op.name, tuple(self.canon.get(o, o) for o in op.operands),
                   tuple(sorted((k, _attr_key(v)) for k, v in op.attrs.items())),
                   tuple(repr(t) for t in op.result_types), tuple(_region_key(r, self.canon) for r in op.regions))
            hash(key)
        except TypeError:
            return
        first = self.numbers.setdefault(key, op.results)
        if first is not op.results:
            self.canon.update(zip(op.results, first))

    def block(self, block: Block, forms: dict[str, Form]) -> None:
        for op in block.ops:
            self.number(op)
            self.op(op, forms)
            if op.name == "stablehlo.while" and len(op.regions) == 2:
                # A constant the loop carries unchanged (jax passes values a body closes
                # over as loop operands) is that constant inside.
                body = op.regions[1]
                for k, o in enumerate(op.operands):
                    f = forms.get(o)
                    if f is not None and set(f) == {UNIT} and k < len(body.returns) \
                            and body.returns[k] == body.args[k]:
                        for region in op.regions:
                            forms[region.args[k]] = f
            for region in op.regions:
                self.block(region, forms)  # other region arguments are atoms

    def op(self, op: Op, forms: dict[str, Form]) -> None:
        fa = self.fa
        name = op.name
        if not op.results:
            return
        r = op.results[0]
        if name == "stablehlo.constant":
            v = splat(op)
            if v is not None and v and math.isfinite(v) and not only_device(fa, r):
                forms[r] = {UNIT: ((1, ((r, float(v), 1),)),)}
            return
        if name == "func.call":
            self.call(op, forms)
            return
        ins = [forms.get(o) for o in op.operands]
        if name in _MOVES and ins and ins[0] is not None:
            forms[r] = ins[0]
            return
        if name == "stablehlo.negate" and ins and ins[0] is not None:
            forms[r] = {a: tuple((-s, f) for s, f in c) for a, c in ins[0].items()}
            return
        if len(op.operands) != 2 or (not any(ins) and name not in ("stablehlo.add", "stablehlo.subtract")):
            return  # (a sum of two atoms is a form: s + s is s twice)
        a, b = (self.form(forms, o) for o in op.operands)
        is_int = not op.result_types[0].is_float
        out: Form | None = None
        if name in ("stablehlo.add", "stablehlo.subtract"):
            if is_int and any(e < 0 for f in (a, b) for c in f.values() for _, fs in c for _, _, e in fs):
                return  # a truncated quotient is no multiple: integer sums of floors stay atoms
            out = _plus(a, b, 1 if name == "stablehlo.add" else -1)
            if out is not None and any(len(c) > 1 for atom, c in out.items() if atom != UNIT):
                self.record(out, op)  # a sum of multipliers of one atom
        elif name == "stablehlo.multiply":
            k = 0 if set(a) == {UNIT} else 1 if set(b) == {UNIT} else None
            if k is None:
                return
            const, other = (a, b) if k == 0 else (b, a)
            if self._device_count(op, k, const):
                return
            out = _scale(other, const[UNIT])
            if out is not None and set(other) != {UNIT}:
                self.record(out, op)
        elif name == "stablehlo.divide":
            if set(b) != {UNIT} or self._device_count(op, 1, b):
                return
            inv = _inverse(b[UNIT])
            scaled = _scale(a, inv) if inv is not None else None
            if scaled is not None and set(a) != {UNIT}:
                self.record(scaled, op)
            # An integer quotient truncates: recorded as a multiplier, but its own atom.
            out = None if is_int and set(a) != {UNIT} else scaled
        if out is not None and _interesting(out):
            forms[r] = out

    def _device_count(self, op: Op, k: int, const: Form) -> bool:
        """Rule (f): a constant that divides a cross-device sum by its group size is no
        factor (a chain through one is left out)."""
        c = const[UNIT]
        if len(c) != 1 or len(c[0][1]) != 1:
            return False
        _, v, e = c[0][1][0]
        return device_count(self.fa, op, k, v if e > 0 else 1.0 / v)

    def call(self, op: Op, forms: dict[str, Form]) -> None:
        callee = self.fa.module.funcs.get(op.attrs.get("callee", ""))
        if callee is None:
            return
        args = callee.body.args
        consts = tuple((k, forms[o][UNIT]) for k, o in enumerate(op.operands)
                       if o in forms and set(forms[o]) == {UNIT})
        key = (callee.name, consts)
        if key not in self.calls:
            self.calls[key] = []  # a call cycle (none in StableHLO) reads no returns
            self.calls[key] = self.func(callee, {args[k]: {UNIT: c} for k, c in consts})
        by_arg = {a: o for a, o in zip(args, op.operands)}
        for r, ret in zip(op.results, self.calls[key]):
            out: Form | None = {}
            for atom, coef in ret.items():
                if atom in by_arg:
                    # The callee's argument is the caller's operand: substitute its form.
                    part = _scale(self.form(forms, by_arg[atom]), coef)
                    out = None if part is None or out is None else _plus(out, part, 1)
                elif out is not None:
                    out = _plus(out, {atom: coef}, 1)
                if out is None:
                    break
            if out is not None and _interesting(out):
                forms[r] = out
                # The composed multipliers (a chain begun by the caller and ended by the
                # callee: divide(s * 2.0, 4096.0) multiplies s by 2 / 4096).
                self.record(out, op)


def multipliers(fa: ProgramFacts) -> list[Multiplier]:
    """Every multiplier of the program: per multiply or divide by a constant expression,
    and per add or subtract that sums multipliers of one atom, the coefficient of each atom
    of the result (with the constants of the calls that reach it); each coefficient once
    per op."""
    w = _Walk(fa)
    main = fa.module.funcs.get(fa.module.entry)
    if main is not None:
        w.func(main, {})
    return w.out


__all__ = ["MAX_FACTORS", "MAX_TERMS", "UNIT", "Coefficient", "Factor", "Form", "Multiplier", "Term",
           "multipliers", "value"]
