"""Input assumptions: bounds on integer inputs (`assume={"labels": (0, vocab)}`,
`--assume labels=0:VOCAB`), so that token ids outside the vocabulary are not reported as
differences; and ranges of float inputs (`assume={"p": (0, 1)}`, `--assume p=0:1`), so that
a probability that is never above 1, or an optimizer state that is never negative (Adam's
second moment under a `sqrt`, `--assume nu=0:inf`), is not reported as a difference.

An integer bound is half-open, as Python's `range(lo, hi)` and slices: `(0, vocab)` means
0 <= labels < vocab; `hi` may be `inf` (no upper bound: the type's largest value); both
ends are integers. A float range is closed, [lo, hi]: half-open makes no sense for reals
(`p=0:1` is 0 <= p <= 1, a mask or a probability; `lr=0.001:1`; `t=0.5:inf`; `x=-inf:0`);
the ends are decimals, `inf` / `-inf` for no bound, and an end inside the type's range (an
f16 input cannot be assumed >= 1e6). What the range means is decided by the input's type,
so one `p=0:1` is {0} on an integer input and [0, 1] on a float one; a non-integral end on
an integer input is an error. A float range is a set of reals: a ranged float input is a
finite real even under `--inputs ieee` (+-inf and NaN lie in no range).

It applies to every element of the input, everywhere the verifier chooses input values: the
symbolic inputs of both cores (their constraints lo <= x <= hi, the own core's
per-symbol bounds and, for a float range from 0 or above, its sign), the random runs (drawn
inside, `into`), the witness search and minimisation (a candidate outside is no witness,
`within`), the full-size check; the verdict lists it (`describe`: `labels in [0, 64)`,
`p in [0, 1]`). A stage of a staged proof proves its inputs free of a float range (a wider
domain: an `equivalent` stage holds under the range too; only a float input's sign from 0
reaches the stage inputs it feeds, stages/finite.py); a stage that fails sends the pair to
the whole proof, which has the range.

Names: a pattern with `*` / `?` wildcards (`v_*`, `*nu*`) bounds every input whose name
matches; else
an input's name as the reader exposes it (jax's `loc("labels")` debug names, as
`lowered.as_text(debug_info=True)` writes them; a pytree leaf such as `batch['labels']`
may also be given by its last key, `labels`, when that is unique), or its position,
`arg3` / `%arg3`.

Shrinking: an integer bound equal to the original size of a shrunk dimension class is that
class's size at the shrunk sizes (`(0, vocab)` follows the vocabulary dimension down); any
other bound, and every float range (a value, not a size), stays as it is."""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from tv_mlir.errors import UsageError

# (name, lo, hi) as given: integers or floats (+-inf for no bound). What it means is decided
# by the input's type (`resolve`): lo <= x < hi on an integer input, lo <= x <= hi on a float.
Bound = tuple[str, int | float, int | float]


class FloatRange(NamedTuple):
    """A float input's closed range [lo, hi] (`resolve`'s entry for it); an end may be
    +-inf. A tuple, so `within` and the (lo, hi) readers of bounds read it as they read an
    integer input's closed bounds; its ends are Python floats, so the integer-only readers
    (shrinking's rules b and k) pass it by."""

    lo: float
    hi: float


# What `resolve` gives per input: an integer input's closed bounds, a float range, or None.
Resolved = tuple[int, int] | FloatRange | None


def normalize(value: object) -> tuple[Bound, ...]:
    """A mapping name -> (lo, hi), or an iterable of (name, lo, hi), as a tuple of bounds;
    UsageError for anything else (a NaN end, lo > hi, a repeated name)."""
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


def _pair(name: object, b: object) -> tuple[int | float, int | float]:
    if not (isinstance(b, tuple | list) and len(b) == 2):
        raise UsageError(f"option assume: the bound of {name} must be (lo, hi), got {b!r}")
    lo, hi = (_number(x) for x in b)
    if lo is None or hi is None:
        raise UsageError(f"option assume: the bound of {name} must be two numbers (lo, hi) (integers for an "
                         f"integer input, decimals for a float one; inf / -inf for no bound), got {b!r}")
    if lo > hi or lo == math.inf or hi == -math.inf:
        raise UsageError(f"option assume: the bound of {name} is empty: lo {lo} > hi {hi}, or no finite value")
    return lo, hi


def _number(x: object) -> int | float | None:
    """An integer as an int, any other real as a float; None for a Boolean, NaN or a
    non-number."""
    if isinstance(x, bool | np.bool_):
        return None
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating) and not math.isnan(x):
        f = float(x)
        return int(f) if f.is_integer() else f  # 1.0 is 1: the type decides what it means
    return None


NUMBER = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|-?inf"
CLI_FORM = re.compile(rf"(.+)=({NUMBER}):({NUMBER})")


def parse_cli(text: str) -> Bound:
    """`NAME=LO:HI`: an integer input's LO..HI-1 (HI excluded, as in a Python slice), a
    float input's [LO, HI] (both ends included); `inf` / `-inf` for no bound."""
    m = CLI_FORM.fullmatch(text.strip())
    if not m:
        raise UsageError(f"--assume takes NAME=LO:HI (an integer input: integers, HI excluded; a float input: "
                         f"decimals, both ends included; inf / -inf for no bound), got '{text}'")
    return normalize([(m.group(1), _cli_number(m.group(2)), _cli_number(m.group(3)))])[0]


def _cli_number(text: str) -> int | float:
    # An integer as an int: through a float, 2**63 - 1 would become 2**63.
    return int(text) if re.fullmatch(r"-?\d+", text) else float(text)


def _end(x: int | float | str) -> str:
    return x if isinstance(x, str) else f"{x:g}" if isinstance(x, float) else str(x)


def describe(record: Mapping[str, Sequence[int | float | str]]) -> list[str]:
    """One 'labels in [0, 64)' (an integer input, hi excluded) or 'p in [0, 1]' (a float
    range, closed) per entry of the verdict's record (`record`). An infinite end of a float
    range is open, `nu in [0, inf)`: a ranged input is a finite real, also under
    `--inputs ieee`, so +inf is not among the values the verdict covers."""
    out = []
    for name, (lo, hi) in record.items():
        closed = isinstance(lo, float) or lo == "-inf"  # `record` writes a float range's ends so
        left = "(" if lo == "-inf" else "["
        right = "]" if closed and hi != "inf" else ")"
        out.append(f"{name} in {left}{_end(lo)}, {_end(hi)}{right}")
    return out


def record(bounds: Sequence[Bound], names: Sequence[str] | None = None,
           types: Sequence[Any] | None = None) -> dict[str, list[int | float | str]]:
    """The verdict's record of the bounds: name -> [lo, hi], an unbounded end as "inf" /
    "-inf" (JSON has no infinity). A float range (a name of float inputs, when the inputs'
    `names` and `types` are known) has float ends, 0.0 rather than 0: `describe` prints it
    closed."""
    out: dict[str, list[int | float | str]] = {}
    for name, lo, hi in bounds:
        floats = False
        if names is not None and types is not None:
            try:
                floats = any(getattr(types[k], "is_float", False) for k in _indices(name, names))
            except UsageError:
                floats = False
        out[name] = [_json_end(lo, floats), _json_end(hi, floats)]
    return out


def _json_end(x: int | float, floats: bool) -> int | float | str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x) if floats else x


def signs(bounds: Sequence[Resolved]) -> list[int]:
    """Per input of `resolve`'s list: 2 for a float range above 0, 1 for one from 0 (the
    sign codes of `Options.positive_inputs` / `nonnegative_inputs`), else 0."""
    return [(2 if b.lo > 0 else 1 if b.lo == 0 else 0) if isinstance(b, FloatRange) else 0 for b in bounds]


def into(x: np.ndarray, b: FloatRange, exact: bool) -> np.ndarray:
    """Float draws `x` (small integers when `exact`, else standard normal) moved into the
    range: past one end, the distance from it (`lo + |x|`, so `0:inf` draws |x| as the
    sign did); inside two finite ends, small integers clipped (exact, readable) and normal
    draws spread over the range (`tanh`, three decimals: few ties, which fingerprints
    need). Every result lies in [lo, hi]."""
    lo, hi = b
    if math.isinf(lo) and math.isinf(hi):
        out = x
    elif math.isinf(hi):
        out = lo + np.abs(x)
    elif math.isinf(lo):
        out = hi - np.abs(x)
    elif exact:
        out = x
    else:
        out = np.round(lo + (hi - lo) * (0.5 + 0.5 * np.tanh(x)), 3)
    return np.clip(np.asarray(out, dtype=np.float64), lo, hi)


def resolve(bounds: Sequence[Bound], names: Sequence[str], types: Sequence[Any],
            sizes: Mapping[int, int] | None = None) -> list[Resolved]:
    """Per program input (in order): an integer input's closed bounds (lo, hi - 1) within
    its type's range, a float input's FloatRange, or None. `sizes`: original size -> shrunk
    size of the shrunk dimension classes (an integer bound equal to an original size becomes
    the shrunk one). UsageError for a name no input has, a Boolean input, a non-integral
    end on an integer input, or a bound that holds no value of the input's type."""

    out: list[Resolved] = [None] * len(types)
    for name, lo, hi in bounds:
        for k in _indices(name, names):
            out[k] = _resolve_one(name, lo, hi, names[k], types[k], sizes)
    return out


def _resolve_one(name: str, lo: int | float, hi: int | float, input_name: str, t: Any,
                 sizes: Mapping[int, int] | None) -> Resolved:
    from tv_mlir.algebra.base import type_range
    from tv_mlir.semantics.fixed_width import int_width

    if getattr(t, "is_float", False):
        return _float_range(name, lo, hi, input_name, t)
    width = int_width(t)
    if width is None:
        raise UsageError(f"--assume {name}: input {input_name} is {t}: only integer and float inputs can be "
                         f"bounded")
    if isinstance(lo, float) or isinstance(hi, float) and hi != math.inf:
        raise UsageError(f"--assume {name}: input {input_name} is {t}: an integer input's bound is two integers "
                         f"LO:HI (HI excluded, or inf), got {_end(lo)}:{_end(hi)}")
    tlo, thi = type_range(width, not t.is_unsigned)
    top = thi + 1 if isinstance(hi, float) else hi  # hi is an int or inf
    if sizes:
        lo, top = sizes.get(lo, lo), (top if isinstance(hi, float) else sizes.get(top, top))
    closed_lo, closed_hi = max(lo, tlo), min(top - 1, thi)
    if closed_lo > closed_hi:
        raise UsageError(f"--assume {name}: [{lo}, {top}) is empty or holds no value of input {input_name}'s "
                         f"type {t} (an integer input's HI is excluded)")
    return closed_lo, closed_hi


def _float_range(name: str, lo: int | float, hi: int | float, input_name: str, t: Any) -> FloatRange:
    """[lo, hi] of a float input: it must hold a finite value of the input's type (a range
    beyond it says nothing an input of that type can be)."""
    top = _largest(t.dtype)
    if lo > top or hi < -top:
        raise UsageError(f"--assume {name}: [{_end(lo)}, {_end(hi)}] holds no finite value of input "
                         f"{input_name}'s type {t} (a float range is closed, both ends included)")
    return FloatRange(float(lo), float(hi))


def _largest(dtype: str) -> float:
    """The largest finite value of a float element type (inf for one numpy and ml_dtypes do
    not know: then no end is refused for being past it)."""
    import ml_dtypes

    known = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16}
    kind = known.get(dtype)
    return math.inf if kind is None else float(ml_dtypes.finfo(kind).max)


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


def within(arrays: Sequence[Any], bounds: Sequence[Resolved]) -> bool:
    """Every bounded input's elements lie within its bounds."""
    import numpy as np

    for a, b in zip(arrays, bounds):
        if b is not None and np.size(a) and not (np.min(a) >= b[0] and np.max(a) <= b[1]):
            return False
    return True
