"""When our float64 replay stops being the reals: its own overflow.

A difference through approximated ops counts when our float64 interpreter, with the real
functions, shows it and XLA shows it too (`settle._reproduced`). The float64 run is the
arbiter of "the programs differ over the reals": it tracks the reals to float64 rounding
everywhere float64 does not overflow, past the f32 maximum as well as below it. So the
replay ends where float64 overflows, not where f32 would: Muon's Newton-Schulz iterations
with a dropped all-reduce blow up to 1e60 in float64 (a finite value, the reals' value up to
rounding) while XLA's f32 shows NaN; that is a real difference, confirmed. Softmax without
its max shift at x = 100 stays no difference: float64 gives the same 1/8 on both sides, and
XLA's f32 NaN alone does not make a witness.

Float64 overflow is an infinity or a NaN that an op makes out of finite float operands:
- an infinity anywhere (x * 1e200 * 1e200, exp(800), a sum past 1.8e308), except an
  infinity of `divide` whose divisor is 0 at that element (division by zero is the same
  at every precision; `where(d == 0, 0, x / d)` is a common idiom);
- a NaN of an op that is not one element function (a dot, a reduce, a loop: a sum of
  overflowed terms of both signs is inf - inf inside it). A NaN of an element function of
  finite arguments is its domain (0 / 0, sqrt(-1)), the same at every precision.
Constants and ops with a non-finite float operand (-inf attention masks, a max reduce's
-inf init, a select of them) are left alone. An infinity out of a transcendental function
ends the replay whatever its operands (exp(inf), log(0): poles and limits the reals do not
have), as before.

Only top-level ops are observed (`Interpreter._observe`): an overflow inside a loop body
or a reducer shows at the loop's or reduce's results, or not at all when the body masks it
(1 / inf = 0) - a limit of the replay, not of this guard alone."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tv_mlir.ir import Module
from tv_mlir.semantics.ops import BROADCASTING_ELEMENTWISE, CONTROL, ELEMENTWISE, TRANSCENDENTAL_OPS

# Ops computing each result element from the operands' elements at that position alone.
_ELEMENT_FUNCTIONS = ELEMENTWISE | BROADCASTING_ELEMENTWISE
# Ops whose NaN out of finite operands is not read as float64's overflow: element functions
# (0 / 0, sqrt(-1): their domain, the same at every precision), library calls (a LAPACK
# factorization of a matrix that is not positive definite writes NaN: `semantics/linalg.py`'s
# lapack_failed), and ops with regions, whose bodies are not observed (a shard_map's or a
# call's NaN may be either; the replay before 1decb2f read no NaN as overflow anywhere, so
# these keep that reading, and an infinity out of them still ends the replay).
_NAN_DOMAIN = _ELEMENT_FUNCTIONS | CONTROL | {"stablehlo.custom_call", "sdy.manual_computation"}


class OutOfRange(Exception):
    """Float64 overflowed: from there on the replay's values are not the reals' (an inf or
    NaN where the real value is finite)."""


@dataclass
class OverflowGuard:
    """An interpreter observer for one run of one module: raises OutOfRange at float64's
    own overflow. Values are named as the observer sees them: a per-device part of a value
    `v` as `v@d` (`Interpreter._observe`); a value whose part on device d was not observed
    (the same contents as an observed device's) is looked up by its bare name, which holds
    the conjunction over the observed devices."""

    # value -> every element finite (None: not a float value)
    finite: dict[str, bool | None] = field(default_factory=dict)
    divisor_names: frozenset[str] = frozenset()  # values some top-level divide divides by
    divisors: dict[str, list[np.ndarray]] = field(default_factory=dict)

    @classmethod
    def of(cls, module: Module, arrays: Sequence[np.ndarray]) -> OverflowGuard:
        """The guard for a run of `module` on `arrays` (its global inputs: a per-device
        program's slices of a finite input are finite)."""
        body = module.main.body
        names = frozenset(op.operands[1] for op in body.ops if op.name == "stablehlo.divide")
        guard = cls(divisor_names=names)
        for name, x in zip(body.args, arrays):
            guard._record(name, name, np.asarray(x))
        return guard

    def __call__(self, op: Any, results: list[Any]) -> None:
        device = _device(op)
        arrays = [np.asarray(r) for r in results]
        floats = [a for a in arrays if a.dtype.kind == "f" and a.size]
        if op.name in TRANSCENDENTAL_OPS and any(np.isinf(a).any() for a in floats):
            raise OutOfRange(f"{op.name} at {op.loc} overflows")
        finite_in = self._operands_finite(op, device)
        if finite_in:
            for a in floats:
                if np.isinf(a).any() and not self._division_by_zero(op, device, a):
                    raise OutOfRange(f"{op.name} at {op.loc} overflows float64")
                if op.name not in _NAN_DOMAIN and np.isnan(a).any():
                    raise OutOfRange(f"{op.name} at {op.loc} overflows float64 (NaN out of finite operands)")
        for name, a in zip(op.results, arrays):
            self._record(name, _bare(name), a)
        return None

    def _record(self, name: str, bare: str, a: np.ndarray) -> None:
        # Non-float values are recorded as None: known, and no float operand.
        ok = bool(np.isfinite(a).all()) if a.dtype.kind == "f" else None
        self.finite[name] = ok
        if bare != name:
            self.finite[bare] = ok if ok is None or bare not in self.finite else bool(self.finite[bare]) and ok
        if bare in self.divisor_names:
            self.divisors.setdefault(name, []).append(a)
            if bare != name:
                self.divisors.setdefault(bare, []).append(a)

    def _lookup(self, table: dict[str, Any], name: str, device: int | None) -> Any:
        if device is not None and f"{name}@{device}" in table:
            return table[f"{name}@{device}"]
        return table.get(name)

    def _operands_finite(self, op: Any, device: int | None) -> bool:
        """Whether the op has a float operand and every float operand is finite. An operand
        not seen (a value from outside the observed ops) leaves the op unjudged."""
        known = [name in self.finite or (device is not None and f"{name}@{device}" in self.finite)
                 for name in op.operands]
        if not all(known):
            return False
        seen = [self._lookup(self.finite, name, device) for name in op.operands]
        floats = [s for s in seen if s is not None]
        return bool(floats) and all(floats)

    def _division_by_zero(self, op: Any, device: int | None, result: np.ndarray) -> bool:
        """A divide's infinities are all at elements whose divisor is 0 (on every observed
        candidate for the divisor's value on this device)."""
        if op.name != "stablehlo.divide" or len(op.operands) != 2:
            return False
        candidates = self._lookup(self.divisors, op.operands[1], device)
        if not candidates:
            return False
        inf = np.isinf(result)
        return all(c.shape == result.shape and bool(np.all(c[inf] == 0)) for c in candidates)


def _device(op: Any) -> int | None:
    """The device of a per-device observation (results named `v@d`), else None."""
    if not op.results:
        return None
    _, sep, tail = op.results[0].rpartition("@")
    return int(tail) if sep and tail.isdigit() else None


def _bare(name: str) -> str:
    head, sep, tail = name.rpartition("@")
    return head if sep and tail.isdigit() else name
