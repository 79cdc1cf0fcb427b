"""Counterexample replay on XLA: both programs compiled by XLA for the CPU and run at their
own dtypes on the witness, single-device, partitioned over host devices, or per device."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tv_mlir.algebra import NumericAlgebra
from tv_mlir.errors import TvError, Unsupported
from tv_mlir.execute import spmd
from tv_mlir.frontend.read import np_dtype
from tv_mlir.ir import Module
from tv_mlir.verdict import Replay

# (block of the global value, that device's buffer) per device, per output.
Blocks = list[list[tuple[tuple[slice, ...], np.ndarray]]]


@dataclass
class _Assembler:
    """What spmd.gather needs of an interpreter, for assembling XLA's per-device outputs."""

    num_devices: int
    alg: NumericAlgebra = field(default_factory=NumericAlgebra)
    replica_checks: list = field(default_factory=list)


def run_on_xla(runner: Any, module: Module, arrays: Sequence[np.ndarray]) -> tuple[list[np.ndarray], Blocks | None]:
    """Global outputs of the module on XLA, and for sharded ones each device's blocks."""
    arrays = at_entry_dtypes(module, arrays)
    text = module.text
    n = module.num_devices
    if n <= 1:
        return runner.run(text, arrays), None
    if not module.per_device:
        return runner.run_global(text, arrays, n, [t.shape for t in module.global_result_types()])
    loc = module.main.loc
    shardings = module.arg_shardings or (None,) * len(arrays)
    parts = [spmd.scatter(np.asarray(x), s, n, loc).parts if s is not None else (np.asarray(x),) * n
             for x, s in zip(arrays, shardings)]
    outs = runner.run_spmd(text, [[p[d] for p in parts] for d in range(n)], per_device_program=True)
    asm = _Assembler(n)
    globals_, blocks = [], []
    for j, (t, s) in enumerate(zip(module.global_result_types(), module.result_shardings or
                                   (None,) * len(module.main.result_types))):
        local = spmd.Local(tuple(np.asarray(outs[d][j]) for d in range(n)))
        globals_.append(spmd.gather(asm, local, s, t, f"output {j}", loc))
        blocks.append([(spmd.device_block(s, d, n, local.parts[d].shape, loc), local.parts[d]) for d in range(n)])
    return globals_, blocks


def at_entry_dtypes(module: Module, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Float64 and int64 inputs narrowed to the entry's element types before they are
    pickled to the XLA child, which casts them so anyway (`execute/xla._cast`, the same
    `astype`, then a no-op): an f32 program's witness is half its bytes on the pipe, sent
    once per program and embedding layout (an embedded 1024 x 32000 weight: 262 MB of
    float64). Other inputs go as they are."""
    out = []
    for x, t in zip(arrays, module.main.arg_types):
        a = np.asarray(x)
        if a.dtype == np.float64 or a.dtype == np.int64:
            try:
                want = np_dtype(t.dtype)
            except Unsupported:
                want = a.dtype
            kinds = "f" if a.dtype.kind == "f" else "iu"  # float to float, integer to integer
            if want.kind in kinds and want.itemsize < a.itemsize:
                a = a.astype(want)
        out.append(a)
    return out + [np.asarray(x) for x in arrays[len(out):]]  # an arity error is the runner's to report


def xla_replay(ref: Module, other: Module, arrays: list[np.ndarray], output: int, index: tuple[int, ...],
               side: str = "", devices: tuple[int, int] | None = None, runner: Any = None) -> Replay:
    """The witness on XLA: the two programs' values of one output element, or for a
    replica divergence the two devices' copies of it. `runner`: an XlaRunner to reuse
    (it caches compiled modules)."""
    from tv_mlir.execute.xla import XlaRunError
    from tv_mlir.execute.xla_child import shared_runner

    runner = runner or shared_runner()  # a child process: an XLA CHECK failure aborts its process
    try:
        if devices is None:
            r = run_on_xla(runner, ref, arrays)[0][output][index]
            o = run_on_xla(runner, other, arrays)[0][output][index]
        else:
            if output < 0:
                return Replay("xla", None, None, False,
                              "the diverging copies are not a program output; XLA shows only outputs")
            _, blocks = run_on_xla(runner, ref if side == "ref" else other, arrays)
            if blocks is None:
                return Replay("xla", None, None, False, "single-device program")
            r, o = (_element_of(blocks[output][d], index) for d in devices)
    except (XlaRunError, TvError) as exc:
        return Replay("xla", None, None, False, str(exc))
    r, o = py_value(r), py_value(o)
    return Replay("xla", r, o, bool(values_differ(r, o, rtol=1e-4, atol=1e-6)))


def _element_of(block: tuple[tuple[slice, ...], np.ndarray], index: tuple[int, ...]) -> Any:
    slices, arr = block
    local: list[int] = []
    for i, s in zip(index, slices):
        start = s.start or 0
        stop = s.stop if s.stop is not None else start + arr.shape[len(local)]
        if not start <= i < stop:
            raise IndexError(f"index {list(index)} is not in this device's block")
        local.append(i - start)
    return arr[tuple(local)]


def values_differ(a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    """Two output values differ: integers and Booleans exactly (a ui64 draw or an int64
    count a few units apart is a real difference, which a float tolerance at 1e12 would
    call equal), floats within the tolerances."""
    a, b = _num(a), _num(b)
    if isinstance(a, _EXACT) and isinstance(b, _EXACT):
        return int(a) != int(b)
    a, b = float(a), float(b)
    if np.isnan(a) or np.isnan(b):
        return np.isnan(a) != np.isnan(b)
    if np.isinf(a) or np.isinf(b):
        return a != b
    return abs(a - b) > atol + rtol * max(abs(a), abs(b))


_EXACT = (bool, int, np.integer, np.bool_)


def _num(x: Any) -> Any:
    return {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}.get(x, x) if isinstance(x, str) else x


def py_value(x: Any) -> Any:
    if hasattr(x, "dtype") and x.dtype.kind not in "fiub":  # bf16/f8 scalars from XLA
        x = float(x)
    x = x.item() if hasattr(x, "item") else x
    if isinstance(x, float) and not np.isfinite(x):
        return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


# The relative spacing of floats per element type (2^-mantissa bits): a real difference
# below it at an output of that type is one the type does not resolve.
RESOLUTION = {"f64": 2.0 ** -52, "f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}


def unshown_at_own_sizes(c: Any, dtype: str | None = None) -> str | None:
    """Why an exact witness at the programs' own sizes is no exit 1, or None when it is one.
    It is not when XLA ran both programs on it and gives the same value, our float64 replay
    shows no difference either, and the exact values (finite floats) differ by less than the
    output's type resolves (`dtype`, else f32 when XLA's values are f32 numbers, f64 when
    not): the programs then differ as real functions (a f32 literal 1.01587307 written for
    64/63), no run of them shows it, and none could at that type (DESIGN: an unconfirmed
    counterexample is `unknown`). Where XLA could not run them (an error, a stage without
    text) the exact witness stands, as does one that XLA's values show even below the
    replay's tolerance (a fold one f32 step off), one our float64 replay shows (an integer
    wraparound that XLA folds away), or one larger than the type's resolution (an f64
    output 3.5e-7 apart): the difference is then there in the programs' own semantics. `c`:
    a verdict.Counterexample."""
    xla = [r for r in c.replay if r.backend == "xla"]
    if c.confirmed or not xla or any(r.error or r.confirmed for r in xla):
        return None
    if any(r.backend == "numeric" and r.confirmed for r in c.replay):
        return None
    r = xla[0]
    try:
        x, y, a, b = (float(_num(v)) for v in (r.ref_value, r.other_value, c.ref_value, c.other_value))
    except (TypeError, ValueError):
        return None
    # A float output (XLA's values say so: the exact ones may be integral) where XLA gives one
    # finite value: a NaN or an overflow is no rounding of a small difference.
    if not all(isinstance(_num(v), float) for v in (r.ref_value, r.other_value)) or x != y \
            or not np.isfinite([x, a, b]).all():
        return None
    resolution = RESOLUTION.get(dtype or "") or (RESOLUTION["f32"] if float(np.float32(x)) == x else RESOLUTION["f64"])
    rel = abs(a - b) / max(abs(a), abs(b), np.finfo(np.float64).tiny)
    if rel > resolution:
        return None
    return (f"the programs differ as real functions by {rel:.1e} (relative) at the counterexample's input, "
            f"below what their dtypes show ({dtype or 'output'} resolution {resolution:.1e}): XLA runs both and "
            f"gives the same value ({r.ref_value}), and the float64 replay shows no difference")
