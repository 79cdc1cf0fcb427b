"""Input assumptions: bounds on integer inputs (`assume={"labels": (0, vocab)}`,
`--assume labels=0:VOCAB`), so that token ids outside the vocabulary are not reported as
differences; and the sign of float inputs (`assume={"nu": (0, inf)}`, `--assume nu=0:inf`),
so that an optimizer state that is never negative (Adam's second moment under a `sqrt`) is
not reported as a NaN difference.

A bound is half-open, as Python's `range(lo, hi)` and slices: `(0, vocab)` means
0 <= labels < vocab; `hi` may be `inf` (no upper bound: the type's largest value for an
integer input). A float input takes only `(0, inf)`: x >= 0 (a sign is what the proof can
use; a narrower interval would also need every witness search to keep to it). It applies
to every element of the input, everywhere the verifier chooses input values: the symbolic
inputs of both cores (their constraints, the own core's per-symbol bounds and signs), the
random runs, the witness search and minimisation, the full-size check; the verdict lists
it.

Names: a pattern with `*` / `?` wildcards (`v_*`, `*nu*`) bounds every input whose name
matches; else
an input's name as the reader exposes it (jax's `loc("labels")` debug names, as
`lowered.as_text(debug_info=True)` writes them; a pytree leaf such as `batch['labels']`
may also be given by its last key, `labels`, when that is unique), or its position,
`arg3` / `%arg3`.

Shrinking: a bound equal to the original size of a shrunk dimension class is that
class's size at the shrunk sizes (`(0, vocab)` follows the vocabulary dimension down);
any other bound stays as it is."""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tv_mlir.errors import UsageError

# (name, lo, hi): lo <= x < hi; hi may be math.inf.
Bound = tuple[str, int, int | float]
# A float input assumed >= 0: its entry in `resolve`'s list.
NONNEGATIVE: tuple[int, float] = (0, math.inf)


def normalize(value: object) -> tuple[Bound, ...]:
    """A mapping name -> (lo, hi), or an iterable of (name, lo, hi), as a tuple of bounds;
    UsageError for anything else (a float bound, lo >= hi, a repeated name)."""
    if value is None:
        return ()
    items: Iterable[Any]
    if isinstance(value, Mapping):
        items = [(name, *_pair(name, b)) for name, b in value.items()]
    elif isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise UsageError(f"option assume must map input names to (lo, hi) bounds, got {value!r}")
    else:
        items = value
    out: list[Bound] = []
    for item in items:
        if not (isinstance(item, tuple | list) and len(item) == 3):
            raise UsageError(f"option assume: {item!r} is not a (name, lo, hi) bound")
        name, lo, hi = item
        if not isinstance(name, str) or not name:
            raise UsageError(f"option assume: input names are strings, got {name!r}")
        lo, hi = _pair(name, (lo, hi))
        if any(b[0] == name for b in out):
            raise UsageError(f"option assume: {name} is bounded twice")
        out.append((name, lo, hi))
    return tuple(out)


def _pair(name: object, b: object) -> tuple[int, int | float]:
    if not (isinstance(b, tuple | list) and len(b) == 2):
        raise UsageError(f"option assume: the bound of {name} must be (lo, hi), got {b!r}")
    lo, hi = b
    if isinstance(hi, float) and hi == math.inf:
        hi_ok = True
    else:
        hi_ok = isinstance(hi, int) and not isinstance(hi, bool) or _is_np_int(hi)
    if not (hi_ok and (isinstance(lo, int) and not isinstance(lo, bool) or _is_np_int(lo))):
        raise UsageError(f"option assume: the bound of {name} must be two integers (lo, hi) (hi may be inf), "
                         f"got {b!r}")
    lo, hi = int(lo), (hi if hi == math.inf else int(hi))
    if lo >= hi:
        raise UsageError(f"option assume: the bound of {name} is empty: [{lo}, {hi}) (hi is excluded)")
    return lo, hi


def _is_np_int(x: object) -> bool:
    import numpy as np

    return isinstance(x, np.integer)


CLI_FORM = re.compile(r"(.+)=(-?\d+):(-?\d+|inf)")


def parse_cli(text: str) -> Bound:
    """`NAME=LO:HI` (HI excluded, as in a Python slice; `inf` for no upper bound)."""
    m = CLI_FORM.fullmatch(text.strip())
    if not m:
        raise UsageError(f"--assume takes NAME=LO:HI (integers, HI excluded, or inf), got '{text}'")
    hi = math.inf if m.group(3) == "inf" else int(m.group(3))
    return normalize([(m.group(1), int(m.group(2)), hi)])[0]


def describe(bounds: Sequence[Bound]) -> list[str]:
    """One 'labels in [0, 64)' per bound, as the verdict prints them."""
    return [f"{name} in [{lo}, {hi})" for name, lo, hi in bounds]


def signs(bounds: Sequence[tuple[int, int | float] | None]) -> list[int]:
    """Per input of `resolve`'s list: 1 for a float input assumed >= 0, else 0 (the sign
    code of `Options.nonnegative_inputs`)."""
    return [1 if b == NONNEGATIVE else 0 for b in bounds]


def resolve(bounds: Sequence[Bound], names: Sequence[str], types: Sequence[Any],
            sizes: Mapping[int, int] | None = None) -> list[tuple[int, int] | None]:
    """Per program input (in order): its closed bounds (lo, hi - 1) within its type's
    range, NONNEGATIVE for a float input assumed >= 0 (`signs`), or None. `sizes`: original
    size -> shrunk size of the shrunk dimension classes (a bound equal to an original size
    becomes the shrunk one). UsageError for a name no input has, a Boolean input, a float
    input bounded otherwise than (0, inf), or a bound outside the type's range."""

    out: list[tuple[int, int] | None] = [None] * len(types)
    for name, lo, hi in bounds:
        for k in _indices(name, names):
            out[k] = _resolve_one(name, lo, hi, names[k], types[k], sizes)
    return out


def _resolve_one(name: str, lo: int, hi: int | float, input_name: str, t: Any,
                 sizes: Mapping[int, int] | None) -> tuple[int, int]:
    from tv_mlir.algebra.base import type_range
    from tv_mlir.semantics.fixed_width import int_width

    if getattr(t, "is_float", False):
        if (lo, hi) != NONNEGATIVE:
            raise UsageError(f"--assume {name}: input {input_name} is {t}: a float input takes only "
                             f"{name}=0:inf (>= 0), got [{lo}, {hi})")
        return NONNEGATIVE  # type: ignore[return-value]  # a sign, read by `signs`
    width = int_width(t)
    if width is None:
        raise UsageError(f"--assume {name}: input {input_name} is {t}: only integer and float inputs can be "
                         f"bounded")
    tlo, thi = type_range(width, not t.is_unsigned)
    top = thi + 1 if isinstance(hi, float) else hi  # hi is an int or inf (`_pair`)
    if sizes:
        lo, top = sizes.get(lo, lo), (top if isinstance(hi, float) else sizes.get(top, top))
    closed_lo, closed_hi = max(lo, tlo), min(top - 1, thi)
    if closed_lo > closed_hi:
        raise UsageError(f"--assume {name}: [{closed_lo}, {closed_hi + 1}) holds no value of input "
                         f"{input_name}'s type {t}")
    return closed_lo, closed_hi


def _indices(name: str, names: Sequence[str]) -> list[int]:
    """The inputs a name means: one (`_index`: the exact name first, so `opt_state[0].count`
    is itself), or with `*` / `?` wildcards (`v_*`, `*nu*`; brackets are literal: pytree
    names are full of them) every input whose name matches, at least one."""
    if name in names or not any(c in name for c in "*?"):
        return [_index(name, names)]
    pattern = re.compile(re.escape(name).replace(r"\*", ".*").replace(r"\?", "."))
    hits = [k for k, n in enumerate(names) if pattern.fullmatch(n)]
    if not hits:
        known = ", ".join(names) if len(names) <= 12 else ", ".join(names[:12]) + ", ..."
        raise UsageError(f"--assume: no input matches {name} (inputs: {known})")
    return hits


def _index(name: str, names: Sequence[str]) -> int:
    if name in names:
        return list(names).index(name)
    m = re.fullmatch(r"%?arg(\d+)", name)
    if m and int(m.group(1)) < len(names):
        return int(m.group(1))
    # A pytree leaf by its last key: `labels` for `batch['labels']` or `batch.labels`.
    leaf = [k for k, n in enumerate(names) if n.endswith((f"['{name}']", f'["{name}"]', f".{name}"))]
    if len(leaf) == 1:
        return leaf[0]
    known = ", ".join(names) if len(names) <= 12 else ", ".join(names[:12]) + ", ..."
    what = f"{len(leaf)} inputs end in {name}" if leaf else f"no input is called {name}"
    raise UsageError(f"--assume: {what} (inputs: {known}; or arg0..arg{len(names) - 1})")


def shrunk_sizes(shrink: Mapping[str, Any] | None) -> dict[int, int]:
    """Original size -> verified size of the shrunk classes of a shrink summary. Two
    classes of one original size shrunk to different sizes: the larger (a wider bound
    admits more inputs, never fewer witnesses)."""
    out: dict[int, int] = {}
    if not shrink or not shrink.get("applied"):
        return out
    for e in shrink.get("shrunk", []):
        o, v = int(e["original"]), int(e["verified"])
        out[o] = max(out.get(o, v), v)
    return out


def within(arrays: Sequence[Any], bounds: Sequence[tuple[int, int] | None]) -> bool:
    """Every bounded input's elements lie within its bounds."""
    import numpy as np

    for a, b in zip(arrays, bounds):
        if b is not None and np.size(a) and not (np.min(a) >= b[0] and np.max(a) <= b[1]):
            return False
    return True
