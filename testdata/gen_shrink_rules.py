"""Generate the shrinking-rule pairs in testdata/shrink_rules/ (issue 12 item 1).

Run from the repository root (sets its own 8-device XLA flags):

    .venv/bin/python testdata/gen_shrink_rules.py

Every pair is a reference, a correct twin (`ok`) and a bug twin (`bug`), written so that a
shrinking rule of docs/shrinking.md is what keeps the bug visible (or the correct pair
equal) at the shrunk sizes: without the rule the bug is `equivalent` at the shrunk sizes
(or the correct pair is `not-equivalent` there). Each comes at a small size (the full-size
check could run there; the tests turn it off) and at a realistic size (4096 / 2048 / 32000,
where the full-size check is over its budget).

Ground truth on XLA, at the original sizes: on random inputs (and integer inputs at both
ends of their range) the correct twin agrees with the reference and the bug twin differs;
the script asserts it (non-zero exit otherwise). Realistic variants over RUN_LIMIT
elements are lowered only (the same code as their small variant, which is run).

Files: `<pair>.<variant>.{ref,ok,bug}.mlir`; `manifest.json` lists them with the rule,
the sizes and what the bug is.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=testdata/)")

OUT = Path(__file__).resolve().parent / "shrink_rules"
F32, I32 = jnp.float32, jnp.int32
RUN_LIMIT = 50_000_000  # elements of the inputs: larger variants are lowered, not run
TP = 4
MESH_TP = Mesh(np.array(jax.devices()[:TP]), ("tp",))
MESH_D = Mesh(np.array(jax.devices()[:8]), ("d",))


@dataclass(frozen=True)
class Arg:
    shape: tuple[int, ...]
    dtype: Any = F32
    hi: int = 0  # int32 inputs from [0, hi)

    def spec(self) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(self.shape, self.dtype)


@dataclass
class Pair:
    name: str
    rule: str  # a..f of issue 12 item 1
    variant: str  # small / big
    sizes: dict[str, int]
    args: list[Arg]
    ref: Callable[..., Any]
    ok: Callable[..., Any]
    bug: Callable[..., Any]
    what: str


def _smap(mesh: Mesh, body: Callable[..., Any], in_specs: tuple, out_specs: Any) -> Callable[..., Any]:
    return jax.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)


# (a) Two constants that become equal: a mean's divisor written with the other dim's size.
def mean_divisor(b: int, h: int, variant: str) -> Pair:
    def ref(x):
        return jnp.sum(x) / h

    def ok(x):
        return jnp.sum(jnp.mean(x, axis=1))

    def bug(x):
        return jnp.sum(x) / b

    return Pair("mean_divisor", "a", variant, {"batch": b, "hidden": h}, [Arg((b, h))], ref, ok, bug,
                "divides the sum by the batch size instead of the hidden size")


# (a) A sequence offset written with the hidden size instead of the local sequence length.
def seq_offset(s: int, h: int, variant: str) -> Pair:
    local = s // TP

    def ref(x, table):
        return x + table

    def body(stride):
        def f(x, table):
            off = lax.axis_index("tp") * stride
            return x + lax.dynamic_slice(table, (off, 0), (local, h))
        return f

    def sharded(stride):
        return _smap(MESH_TP, body(stride), (P("tp", None), P(None, None)), P("tp", None))

    return Pair("seq_offset", "a", variant, {"seq": s, "hidden": h}, [Arg((s, h)), Arg((s, h))],
                ref, sharded(local), sharded(h), "the block offset is tp * hidden instead of tp * local sequence")


# (a) A constant near a size: a clamp at V - 2 where V - 1 is right.
def clip_near(v: int, b: int, variant: str) -> Pair:
    def ref(x, idx):
        return x[jnp.clip(idx, 0, v - 1)]

    def ok(x, idx):
        return jnp.take(x, jnp.minimum(idx, v - 1), mode="clip")

    def bug(x, idx):
        return x[jnp.clip(idx, 0, v - 2)]

    return Pair("clip_near", "a", variant, {"vocab": v, "batch": b}, [Arg((v,)), Arg((b,), I32, v)],
                ref, ok, bug, "the index is clamped at V - 2: the last word is never read")


# (b) A position threshold written as a float product: pos * (1/T) >= 1 is pos >= T.
def pos_product(s: int, h: int, t: int, variant: str) -> Pair:
    def pos():
        return lax.broadcasted_iota(F32, (s, h), 0)

    def ref(x):
        return jnp.where(pos() * (1.0 / t) >= 1.0, 0.0, x)

    def ok(x):
        return jnp.where(pos() >= float(t), 0.0, x)

    def bug(x):
        return x * 1.0

    return Pair("pos_product", "b", variant, {"seq": s, "hidden": h, "threshold": t}, [Arg((s, h))], ref, ok, bug,
                f"the mask of positions >= {t} (written as pos * {1.0 / t} >= 1) is missing")


# (b) A position clipped at a non-integer float through jnp.clip (a private function that
# takes the position and its bounds as arguments): the bound names position T.
def pos_clip(s: int, h: int, t: int, variant: str) -> Pair:
    def pos():
        return lax.broadcasted_iota(F32, (s, h), 0)

    def ref(x):
        return x * jnp.clip(pos(), 0.0, t + 0.5)

    def ok(x):
        return x * jnp.minimum(pos(), t + 0.5)

    def bug(x):
        return x * pos()

    return Pair("pos_clip", "b", variant, {"seq": s, "hidden": h, "threshold": t}, [Arg((s, h))], ref, ok, bug,
                f"the positions are not clipped at {t + 0.5}")


# (b) A float position offset from the partition index: axis * L.0 + iota.
def float_offset(s: int, h: int, variant: str) -> Pair:
    local = s // TP

    def ref(x):
        return x * lax.broadcasted_iota(F32, (s, h), 0)

    def body(scale):
        def f(x):
            p = lax.axis_index("tp").astype(F32) * scale + lax.broadcasted_iota(F32, (local, h), 0)
            return x * p
        return f

    def sharded(scale):
        return _smap(MESH_TP, body(scale), (P("tp", None),), P("tp", None))

    return Pair("float_offset", "b", variant, {"seq": s, "hidden": h}, [Arg((s, h))], ref,
                sharded(float(local)), sharded(float(local - 1)),
                "the float position offset is tp * (L - 1) instead of tp * L")


# (c) A top-2 mask over the experts (max, then the max of the rest); the bug keeps all.
def top2(t: int, e: int, variant: str) -> Pair:
    def ref(x):
        m1 = jnp.max(x, axis=1, keepdims=True)
        m2 = jnp.max(jnp.where(x == m1, -jnp.inf, x), axis=1, keepdims=True)
        return jnp.where(x >= m2, x, 0.0)

    def ok(x):
        m1 = -jnp.min(-x, axis=1, keepdims=True)
        m2 = jnp.max(jnp.where(x < m1, x, -jnp.inf), axis=1, keepdims=True)
        return jnp.where(x < m2, 0.0, x)

    def bug(x):
        return x * 1.0

    return Pair("top2", "c", variant, {"tokens": t, "experts": e}, [Arg((t, e))], ref, ok, bug,
                "the top-2 routing mask is missing")


# (c) The same top-2 mask written as a loop (max, then mask it out, twice): a statistic of
# a rank the loop decides, so the expert class is pinned.
def top2_loop(t: int, e: int, variant: str) -> Pair:
    def masked_max(x):
        def step(_, carry):
            xs, m = carry
            m = jnp.max(xs, axis=1, keepdims=True)
            return jnp.where(xs == m, -jnp.inf, xs), m
        _, m2 = lax.fori_loop(0, 2, step, (x, jnp.zeros((t, 1), F32)))
        return jnp.where(x >= m2, x, 0.0)

    def ok(x):
        m1 = jnp.max(x, axis=1, keepdims=True)
        m2 = jnp.max(jnp.where(x == m1, -jnp.inf, x), axis=1, keepdims=True)
        return jnp.where(x >= m2, x, 0.0)

    def bug(x):
        return x * 1.0

    return Pair("top2_loop", "c", variant, {"tokens": t, "experts": e}, [Arg((t, e))], masked_max, ok, bug,
                "the top-2 routing mask (a loop of masked maxes in the reference) is missing")


# (d) A transposed update of a square weight.
def transpose_square(h: int, variant: str) -> Pair:
    def ref(w, g):
        return w - 0.5 * g

    def ok(w, g):
        return w + g * -0.5

    def bug(w, g):
        return w - 0.5 * g.T

    return Pair("transpose_square", "d", variant, {"hidden": h}, [Arg((h, h)), Arg((h, h))], ref, ok, bug,
                "the update uses g transposed")


# (d) An untiled all_gather whose shards are interleaved by the reshape.
def gather_interleave(b: int, n: int, variant: str) -> Pair:
    def ref(x):
        return x * 2.0

    def body(interleave):
        def f(x):
            g = lax.all_gather(x, "tp", axis=0, tiled=False)  # [tp, b, n/tp]
            g = jnp.transpose(g, (1, 2, 0) if interleave else (1, 0, 2))
            return g.reshape(b, n) * 2.0
        return f

    def sharded(interleave):
        return _smap(MESH_TP, body(interleave), (P(None, "tp"),), P(None, None))

    return Pair("gather_interleave", "d", variant, {"batch": b, "n": n}, [Arg((b, n))], ref,
                sharded(False), sharded(True), "the gathered shards are interleaved instead of concatenated")


# (e) A cubic summand inside max(., -inf): Newton's pair (equal at n = 2, not at n = 3).
def newton_max(n: int, variant: str) -> Pair:
    def ref(x):
        return jnp.sum(jnp.maximum(x ** 3, -jnp.inf))

    def ok(x):
        return jnp.sum(x * x * x)

    def bug(x):
        s1, s2 = jnp.sum(x), jnp.sum(x * x)
        return 1.5 * s1 * s2 - 0.5 * s1 ** 3

    return Pair("newton_max", "e", variant, {"n": n}, [Arg((n,))], ref, ok, bug,
                "p3 replaced by the two-variable Newton identity in p1, p2")


# (f) pmean over 8 devices where the local batch is also 8.
def pmean(b: int, h: int, variant: str) -> Pair:
    def ref(x):
        return jnp.mean(x, axis=0)

    def body(reduce):
        def f(x):
            return reduce(jnp.mean(x, axis=0))
        return f

    def sharded(reduce):
        return _smap(MESH_D, body(reduce), (P("d", None),), P(None))

    return Pair("pmean", "f", variant, {"batch": b, "hidden": h}, [Arg((b, h))], ref,
                sharded(lambda y: lax.pmean(y, "d")), sharded(lambda y: lax.psum(y, "d") / 4.0),
                "divides the sum over devices by 4 instead of 8")


def pairs() -> list[Pair]:
    return [
        mean_divisor(16, 64, "small"), mean_divisor(8, 4096, "big"),
        seq_offset(32, 64, "small"), seq_offset(2048, 4096, "big"),
        clip_near(64, 8, "small"), clip_near(32000, 16, "big"),
        pos_product(64, 4, 40, "small"), pos_product(2048, 4096, 1000, "big"),
        float_offset(32, 4, "small"), float_offset(2048, 4096, "big"),
        pos_clip(64, 4, 40, "small"), pos_clip(2048, 4096, 1000, "big"),
        top2(8, 8, "small"), top2(16384, 64, "big"),
        top2_loop(8, 8, "small"), top2_loop(64, 64, "big"),
        transpose_square(16, "small"), transpose_square(4096, "big"),
        gather_interleave(2, 32, "small"), gather_interleave(8, 4096, "big"),
        newton_max(8, "small"), newton_max(4096, "big"),
        pmean(64, 16, "small"), pmean(64, 4096, "big"),
    ]


def _inputs(p: Pair, rng: np.random.Generator, edge: int) -> list[np.ndarray]:
    out = []
    for a in p.args:
        if a.dtype == I32:
            # Random indices, then every index at the top end of its range, then at 0.
            x = rng.integers(0, a.hi, size=a.shape) if edge == 0 else np.full(a.shape, a.hi - 1 if edge == 1 else 0)
            out.append(x.astype(np.int32))
        else:
            out.append(rng.standard_normal(a.shape).astype(np.float32))
    return out


def _max_diff(p: Pair, f: Callable[..., Any], g: Callable[..., Any]) -> float:
    rng = np.random.default_rng(20261201)
    worst = 0.0
    for edge in range(3):
        xs = _inputs(p, rng, edge)
        a, b = np.asarray(jax.jit(f)(*xs), np.float64), np.asarray(jax.jit(g)(*xs), np.float64)
        scale = max(1.0, float(np.max(np.abs(a))))
        worst = max(worst, float(np.max(np.abs(a - b))) / scale)
    return worst


def main() -> int:
    OUT.mkdir(exist_ok=True)
    manifest = []
    for p in pairs():
        stem = f"{p.name}.{p.variant}"
        specs = [a.spec() for a in p.args]
        ran = sum(int(np.prod(a.shape)) for a in p.args) <= RUN_LIMIT
        if ran:
            ok_diff, bug_diff = _max_diff(p, p.ref, p.ok), _max_diff(p, p.ref, p.bug)
            assert ok_diff < 1e-5, f"{stem}: the correct twin differs from the reference by {ok_diff}"
            assert bug_diff > 1e-3, f"{stem}: the bug twin does not differ from the reference ({bug_diff})"
            print(f"{stem}: ok {ok_diff:.2e}, bug {bug_diff:.2e}")
        else:
            print(f"{stem}: lowered only (the small variant is run)")
        manifest.append(write_twins(p, stem, specs, ran))
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


def write_twins(p: Pair, stem: str, specs: list, ran: bool) -> dict:
    """The pair's reference, correct and bug twins lowered to OUT, and its manifest entry."""
    for kind, fn in (("ref", p.ref), ("ok", p.ok), ("bug", p.bug)):
        text = jax.jit(fn, keep_unused=True).lower(*specs).as_text(debug_info=True)
        (OUT / f"{stem}.{kind}.mlir").write_text(text)
    return {"pair": p.name, "variant": p.variant, "rule": p.rule, "sizes": p.sizes, "bug": p.what,
            "ran_on_xla": ran, "files": {k: f"{stem}.{k}.mlir" for k in ("ref", "ok", "bug")}}



def write_batch(out: Path, pairs: list[Pair], assume: dict[str, Any]) -> int:
    """A red-team generator's main: its pairs' twins and manifest written into `out` (f32,
    XLA-checked as write_manifest says)."""
    global OUT
    jax.config.update("jax_enable_x64", False)
    out.mkdir(exist_ok=True)
    OUT = out  # write_twins and write_manifest write there
    write_manifest(pairs, "manifest.json", ok_tol=1e-4, assume=assume)
    return 0


def write_manifest(pairs: list[Pair], manifest: str, ok_tol: float = 1e-5, assume: dict[str, Any] | None = None) -> int:
    """The pairs' twins written with `write_twins` and listed in OUT / manifest, each run on
    XLA at its original sizes first where it fits RUN_LIMIT (the correct twin within `ok_tol`
    of the reference, the bug twin apart from it), with `assume[name]` (or {}) as each entry's
    --assume bounds when `assume` is given: the main loop of the generators in shrink_rules/."""
    entries = []
    for p in pairs:
        stem = f"{p.name}.{p.variant}"
        specs = [a.spec() for a in p.args]
        ran = sum(int(np.prod(a.shape)) for a in p.args) <= RUN_LIMIT
        if ran:
            ok_diff, bug_diff = _max_diff(p, p.ref, p.ok), _max_diff(p, p.ref, p.bug)
            assert ok_diff < ok_tol, f"{stem}: the correct twin differs from the reference by {ok_diff}"
            assert bug_diff > 1e-3, f"{stem}: the bug twin does not differ from the reference ({bug_diff})"
            print(f"{stem}: ok {ok_diff:.2e}, bug {bug_diff:.2e}")
        entries.append(write_twins(p, stem, specs, ran))
    if assume is not None:
        for e in entries:
            e["assume"] = assume.get(e["pair"], {})
    (OUT / manifest).write_text(json.dumps(entries, indent=1) + "\n")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
