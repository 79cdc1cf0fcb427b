"""Generate deep decoder stacks at Llama-3 dims in testdata/depth/.

Run from the repository root:

    .venv/bin/python testdata/gen_depth.py      # sets its own 8-device XLA flags

Plain jax. Reuses (by import) testdata/gen_sharded.py's case type, numeric check and export
helpers and its 2x4 ("dp", "tp") mesh, and testdata/gen_core.py's decoder pieces (RMSNorm,
causal attention, SwiGLU, the Megatron f/g operators ``copy_to_tp`` / ``reduce_from_tp``,
``w``, ``named``). Every layer is gen_core's decoder layer (pre-RMSNorm, causal multi-head
attention, SwiGLU MLP, residuals) with per-layer weights stacked on a leading layer dim,
tensor-parallel over tp the Megatron way (q/k/v and gate/up column-parallel, o and down
row-parallel with an all-reduce), the batch data-parallel over dp.

- ``stack8b_L{2,16,32}``: forward-only stacks at Llama-3-8B-like dims (hidden 4096, 32
  heads of 128, ffn 14336, batch 8, seq 16; the input is the hidden state, no vocab). Bug
  twin ``stack8b_L32_bug_layer27``: the MLP's row-parallel psum is missing in layer 27
  (1-based; layer index 26).
- ``stack405b_L126``: Llama-3-405B-shaped (hidden 16384, 128 heads of 128 (no GQA), ffn
  53248, 126 layers, batch 8, seq 16), forward AND backward: loss = mean of squares of the
  stack output, result (loss, d loss / d each stacked weight). The sharded side uses
  Megatron's conjugate operators so jax.grad is right under ``check_vma=False``, and psums
  the loss and the gradients over dp. Bug twin ``stack405b_L126_bug_layer97``: the MLP's
  reduce_from_tp (psum forward) is missing in layer 97 (1-based; index 96).
- Scan forms ``stack8b_L32_scan``, ``stack405b_L126_scan``: the same functions with
  ``lax.scan`` over the stacked weights (body = one layer), the reference and the sharded
  program both scanned; bug twin ``stack405b_L126_scan_bug_layer97``: the scan carries the
  iteration index and the MLP reduce is ``jnp.where(i == 96, partial, psum(partial))``.

Nothing runs at the full dims. Every case is first checked numerically with gen_sharded's
``check`` on the SAME functions at small dims (hidden 16, 4 heads of 4, ffn 32, batch 4,
seq 8) with the SAME layer count (``checked_sizes`` in the manifest); the scan forms are in
addition checked against the unrolled reference (and the scanned bug twin against the
unrolled bug twin). Then the full-dim programs are lowered from ShapeDtypeStructs by
gen_sharded's ``export_case`` (``<plan>.ref.mlir``, ``<name>.shardy.mlir``,
``<name>.gspmd.mlir``; no partitioned form), parsed back, and each file is loaded by
``tv_mlir.frontend.read.load_module``. ``manifest.json`` is in testdata/core's format
(``sizes`` with ``layers``) plus ``layers``, ``pass``, ``form``, ``checked_sizes``,
``bug_layer`` (1-based) / ``bug_layer_index`` (0-based) and ``ops`` (lines matching
`` = stablehlo.`` per file). Output is byte-identical on rerun.

``--only NAME[,NAME]`` restricts to some cases (development; writes no manifest).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_core as gc  # noqa: E402
import gen_sharded as gs  # noqa: E402  (sets the 8-device XLA flags before importing jax)
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

OUT = gs.HERE / "depth"
DP = gs.DP
SEED = 20260301

SMALL = {"batch": 4, "seq": 8, "hidden": 16, "heads": 4, "head_dim": 4, "ffn": 32}
DIMS_8B = {"batch": 8, "seq": 16, "hidden": 4096, "heads": 32, "head_dim": 128, "ffn": 14336}
DIMS_405B = {"batch": 8, "seq": 16, "hidden": 16384, "heads": 128, "head_dim": 128, "ffn": 53248}

NAMES = gc.DEC_NAMES  # x, attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down
IN_SPECS = gc.DEC_SPECS
FWD_OUT = gc.DEC_OUT
GRAD_OUT = (P(),) + IN_SPECS[1:]  # loss, then one gradient per stacked weight


def _ident(t):
    return t


# --------------------------------------------------------------------------
# One layer, the unrolled and the scanned stack
# --------------------------------------------------------------------------


def _layer(x, p, hd, enter, attn_reduce, mlp_reduce):
    """gen_core's decoder layer on this layer's weights `p`. On a tp shard the weights are
    its columns (q/k/v, gate/up) or rows (o, down), so the head count is local; `enter`
    marks a replicated activation entering the tp-split part (identity, or copy_to_tp for
    the backward), the reduces all-reduce the row-parallel partial sums."""
    an, wq, wk, wv, wo, mn, wg, wu, wd = p
    b, s, _ = x.shape
    h = enter(gc._rmsnorm(x, an))
    nh = wq.shape[-1] // hd
    q, k, v = ((h @ m).reshape(b, s, nh, hd) for m in (wq, wk, wv))
    x = x + attn_reduce(gc._causal_attention(q, k, v) @ wo)
    h = enter(gc._rmsnorm(x, mn))
    return x + mlp_reduce(gc._swiglu(h, wg, wu, wd))


def _unrolled(x, ws, hd, enter, attn_reduce, mlp_reduces):
    for l in range(ws[0].shape[0]):
        x = _layer(x, [m[l] for m in ws], hd, enter, attn_reduce, mlp_reduces[l])
    return x


def _scanned(x, ws, hd, enter, attn_reduce, mlp_reduce, bug_index=None):
    """lax.scan over the stacked weights. With `bug_index`, the carry holds the iteration
    index and the MLP all-reduce is skipped in that iteration only."""
    if bug_index is None:
        def body(x, p):
            return _layer(x, p, hd, enter, attn_reduce, mlp_reduce), None

        x, _ = lax.scan(body, x, tuple(ws))
        return x

    def body_i(carry, p):
        x, i = carry

        def reduce(t):
            return jnp.where(i == bug_index, t, mlp_reduce(t))  # BUG: no all-reduce in iteration i

        return (_layer(x, p, hd, enter, attn_reduce, reduce), i + 1), None

    (x, _), _ = lax.scan(body_i, (x, jnp.int32(0)), tuple(ws))
    return x


def _reduces(n_layers, right, bug_index):
    out = [right] * n_layers
    if bug_index is not None:
        out[bug_index] = _ident  # BUG: this layer's MLP partial sums never all-reduced
    return out


# --------------------------------------------------------------------------
# Function builders (the same code at small and at full dims; hd is the head size)
# --------------------------------------------------------------------------


def _fn(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    f.__name__ = f.__qualname__ = name
    return gc.named(f, NAMES)


# memoized: a twin's reference is its plan's function object, so jax compiles it once
@functools.cache
def fwd_fns(hd: int, scan: bool, bug_index: int | None = None):
    """Forward-only stack: (reference, tp body). 8B family."""

    def ref(x, *ws):
        if scan:
            return _scanned(x, ws, hd, _ident, _ident, _ident)
        return _unrolled(x, ws, hd, _ident, _ident, [_ident] * ws[0].shape[0])

    def tp(x, *ws):
        if scan:
            return _scanned(x, ws, hd, _ident, gc._psum_tp, gc._psum_tp, bug_index)
        return _unrolled(x, ws, hd, _ident, gc._psum_tp, _reduces(ws[0].shape[0], gc._psum_tp, bug_index))

    sfx = "_scan" if scan else ""
    bug = "" if bug_index is None else f"_bug_layer{bug_index + 1}"
    return _fn(f"stack_fwd{sfx}_ref", ref), _fn(f"stack_fwd{sfx}_tp{bug}", tp)


@functools.cache
def grad_fns(hd: int, scan: bool, bug_index: int | None = None):
    """Loss = mean of squares of the stack output; returns (loss, grads of the 9 stacked
    weights). 405B family."""

    def ref_loss(ws, x):
        y = (_scanned(x, ws, hd, _ident, _ident, _ident) if scan
             else _unrolled(x, ws, hd, _ident, _ident, [_ident] * ws[0].shape[0]))
        return jnp.mean(y * y)

    def tp_loss(ws, x):
        """This (dp, tp) shard's part of the global mean: its dp batch slice's sum of
        squares over all B * S * H elements (the psum over dp adds the parts); the same
        value on every tp shard of a dp group."""
        if scan:
            y = _scanned(x, ws, hd, gc.copy_to_tp, gc.reduce_from_tp, gc.reduce_from_tp, bug_index)
        else:
            y = _unrolled(x, ws, hd, gc.copy_to_tp, gc.reduce_from_tp,
                          _reduces(ws[0].shape[0], gc.reduce_from_tp, bug_index))
        return jnp.sum(y * y) / (y.size * DP)

    def ref(x, *ws):
        loss, grads = jax.value_and_grad(ref_loss)(tuple(ws), x)
        return (loss, *grads)

    def tp(x, *ws):
        loss, grads = jax.value_and_grad(tp_loss)(tuple(ws), x)
        return (lax.psum(loss, "dp"), *lax.psum(grads, "dp"))

    sfx = "_scan" if scan else ""
    bug = "" if bug_index is None else f"_bug_layer{bug_index + 1}"
    return _fn(f"stack_grad{sfx}_ref", ref), _fn(f"stack_grad{sfx}_tp{bug}", tp)


def stack_args(d: dict[str, int], n_layers: int) -> list[gs.Arg]:
    B, S, H, NH, HD, F = (d[k] for k in ("batch", "seq", "hidden", "heads", "head_dim", "ffn"))
    L, A = n_layers, NH * HD
    w = gc.w
    # the residual-branch outputs (o, down) scaled by 1/sqrt(2 L) as in GPT-2 / Megatron's
    # init, so that the residual stream stays O(1) through 126 layers and the f32 rounding
    # of the gradients stays inside check's atol
    r = float(1.0 / np.sqrt(2 * L))
    return [gs.f32("x", B, S, H), w("attn_norm", L, H),
            w("wq", L, H, A, fan_in=H), w("wk", L, H, A, fan_in=H), w("wv", L, H, A, fan_in=H),
            w("wo", L, A, H, fan_in=A, scale=r), w("mlp_norm", L, H),
            w("w_gate", L, H, F, fan_in=H), w("w_up", L, H, F, fan_in=H),
            w("w_down", L, F, H, fan_in=F, scale=r)]


# --------------------------------------------------------------------------
# Case table
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    name: str
    plan: str
    family: str  # "8b" (forward) | "405b" (forward + backward)
    layers: int
    scan: bool = False
    bug_index: int | None = None  # 0-based layer of the seeded bug

    @property
    def full(self) -> dict[str, int]:
        return DIMS_8B if self.family == "8b" else DIMS_405B

    def case(self, d: dict[str, int]) -> gs.Case:
        make = fwd_fns if self.family == "8b" else grad_fns
        ref = make(d["head_dim"], self.scan)[0]  # the plan's reference object
        tp = make(d["head_dim"], self.scan, self.bug_index)[1]
        out = FWD_OUT if self.family == "8b" else GRAD_OUT
        c = gs.Case(self.name, self.plan, stack_args(d, self.layers), ref, tp, IN_SPECS, out)
        if self.bug_index is not None:
            where = "iteration" if self.scan else "layer"
            what = "MLP partial sums" if self.family == "8b" else "MLP partial sums (reduce_from_tp's forward psum)"
            c.expect, c.kind = "not-equivalent", "value"
            c.bug = (f"row-parallel {what} of {where} {self.bug_index + 1} (1-based; index {self.bug_index}) "
                     f"never all-reduced over tp (missing psum)")
        return c


SPECS = [
    Spec("stack8b_L2", "stack8b_L2", "8b", 2),
    Spec("stack8b_L16", "stack8b_L16", "8b", 16),
    Spec("stack8b_L32", "stack8b_L32", "8b", 32),
    Spec("stack8b_L32_bug_layer27", "stack8b_L32", "8b", 32, bug_index=26),
    Spec("stack8b_L32_scan", "stack8b_L32_scan", "8b", 32, scan=True),
    Spec("stack405b_L126", "stack405b_L126", "405b", 126),
    Spec("stack405b_L126_bug_layer97", "stack405b_L126", "405b", 126, bug_index=96),
    Spec("stack405b_L126_scan", "stack405b_L126_scan", "405b", 126, scan=True),
    Spec("stack405b_L126_scan_bug_layer97", "stack405b_L126_scan", "405b", 126, scan=True, bug_index=96),
]


# --------------------------------------------------------------------------
# Extra numeric checks of the scan forms
# --------------------------------------------------------------------------


def cross_check(scan: Spec, seed: int) -> str:
    """At small dims: the scanned sharded program against the unrolled reference (a
    correct scan), or against the unrolled sharded bug twin (a scanned bug twin: the bug
    fires in the same layer)."""
    unrolled = next(s for s in SPECS if s.family == scan.family and s.layers == scan.layers
                    and not s.scan and s.bug_index == scan.bug_index)
    a, b = unrolled.case(SMALL), scan.case(SMALL)
    if scan.bug_index is None:  # gen_sharded's check with the unrolled reference
        c = gs.Case(scan.name + "_vs_unrolled", unrolled.plan, b.args, a.ref, b.body, IN_SPECS, b.out_specs)
        return "vs unrolled ref: " + gs.check(c, seed)
    rng = np.random.default_rng(seed)
    fa, fb = gs.sharded_fn(a), gs.sharded_fn(b)
    worst = 0.0
    for _ in range(gs.N_TRIALS):
        inputs = [x.draw(rng) for x in a.args]
        for u, v in zip(jax.tree.leaves(fa(*inputs)), jax.tree.leaves(fb(*inputs))):
            u, v = np.asarray(u), np.asarray(v)
            worst = max(worst, float(np.max(np.abs(u - v))))
            assert np.allclose(v, u, rtol=1e-4, atol=1e-5), f"{scan.name}: differs from {unrolled.name}"
    return f"vs unrolled bug twin: max|diff|={worst:.3g}"


def op_count(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if " = stablehlo." in line)


def load_check(path: Path) -> str:
    """Load with tv_mlir's reader; over its op budget (tv_mlir.options.MAX_OPS), load again
    with the reader's budget raised for this call only, and say so."""
    from tv_mlir.errors import Unsupported
    from tv_mlir.frontend import read

    try:
        m = read.load_module(str(path))
        return f"{sum(1 for _ in m.main.body.walk())} walked"
    except Unsupported as e:
        if "op budget" not in str(e):
            raise
    budget = read.MAX_OPS
    read.MAX_OPS = 10**7
    try:
        m = read.load_module(str(path))
    finally:
        read.MAX_OPS = budget
    return f"OVER tv_mlir's {budget}-op read budget; {sum(1 for _ in m.main.body.walk())} walked with it raised"


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def main() -> int:
    import time

    only = None
    if len(sys.argv) > 2 and sys.argv[1] == "--only":
        only = set(sys.argv[2].split(","))
    specs = [s for s in SPECS if only is None or s.name in only]
    small = [s.case({**SMALL}) for s in SPECS]
    full = [s.case(s.full) for s in SPECS]
    gs.validate(small)
    gs.validate(full)
    OUT.mkdir(parents=True, exist_ok=True)
    manifest = []
    for k, s in enumerate(SPECS):
        if s not in specs:
            continue
        t0 = time.perf_counter()
        msg = gs.check(small[k], SEED + k)
        print(f"{s.name:34s} {small[k].expect:15s} small L={s.layers}: {msg} ({time.perf_counter() - t0:.0f}s)",
              flush=True)
        if s.scan:
            t0 = time.perf_counter()
            print(f"{'':34s} {cross_check(s, SEED + k)} ({time.perf_counter() - t0:.0f}s)", flush=True)
        t0 = time.perf_counter()
        files = gs.export_case(full[k], OUT, False)
        ops = {}
        for kind in ("ref", "shardy", "gspmd"):
            p = OUT / files[kind]
            ops[kind] = op_count(p)
            n = load_check(p)
            print(f"{'':34s} {files[kind]}: {ops[kind]} stablehlo ops, {n}, "
                  f"{p.stat().st_size / 2**20:.2f} MB", flush=True)
        print(f"{'':34s} exported in {time.perf_counter() - t0:.0f}s", flush=True)
        manifest.append({**gs.manifest_entry(full[k], files), "sizes": {**s.full, "layers": s.layers},
                         "layers": s.layers, "pass": "forward" if s.family == "8b" else "forward+backward",
                         "form": "scan" if s.scan else "unrolled",
                         "checked_sizes": {**SMALL, "layers": s.layers},
                         "bug_layer": None if s.bug_index is None else s.bug_index + 1,
                         "bug_layer_index": s.bug_index, "ops": ops})
    if only is not None:
        return 0
    written = {m[k] for m in manifest for k in ("ref", "shardy", "gspmd") if m[k]}
    for p in sorted(OUT.glob("*.mlir")):
        if p.name not in written:  # stale: a removed case
            p.unlink()
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    total = sum(p.stat().st_size for p in OUT.iterdir() if p.is_file())
    print(f"wrote {len(manifest)} cases to {OUT} ({total / 2**20:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
