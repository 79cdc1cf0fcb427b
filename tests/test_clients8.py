"""The eighth batch of real clients (testdata/gen_clients8.py, helper-77): jit steps XLA's
SPMD partitioner rewrites (flax MultiHeadDotProductAttention / Conv / LayerNorm / Embed,
optax sgd-nesterov / rmsprop / adagrad / clip + scheduled adam / lars / yogi, a scan with
a sharding constraint in its body, uneven shardings, reduce-scatters, sorts along sharded
axes, bf16 and int4 mixed precision, a 6-device and an out-of-order mesh) and shard_map
plans on a 3-axis mesh, through `tv_mlir.jax.check` as a user calls it. Correct programs
are `equivalent`; each bug twin is `not-equivalent` with a counterexample XLA shows at the
original sizes.

The batch's finding: a `while_loop` with a data-dependent stop (an iteration to
convergence capped by a counter, a decode loop until EOS) could not be run whole (a pair
proved whole, or the whole proof after a failed loop stage, was `unknown`). It is now run as
at most N guarded trips, `select(cond, body, values)` (semantics/control.py,
`guard_trips`); the tests below hold its semantics to XLA's in both algebras, a twin whose
loop stops at another threshold not-equivalent and XLA-confirmed, and a loop whose counter
test is or-ed (so it bounds nothing) still refused. docs/jax.md, "Eighth batch"."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_confirmed_at_original_sizes, check_against_xla, check_client, client_generator
from tv_mlir.api import verify


@pytest.fixture(scope="module")
def gen8():
    return client_generator("gen_clients8")  # skips without jax, flax and optax


@pytest.mark.parametrize("name", [
    # Also equivalent (docs/jax.md), left to `gen_clients8.py --one` for CPU: permutation_jit
    # and scan_wsc_grad_jit (~5 s each).
    "mha_flax_jit", "conv_ln_jit", "embed_take_jit", "sgd_nesterov_jit", "rmsprop_centered_jit",
    "clip_adam_sched_jit", "adagrad_jit", "yogi_jit", "lars_ema_jit", "tiny_lm_step_jit",
    "einsum_uneven_jit", "reduce_scatter_jit", "sort_topk_jit", "bf16_attn_jit", "int4_dot_jit",
    "reduce_precision_jit", "hash_embed_jit", "mesh6_uneven_jit", "mesh_permuted_jit", "roll_reverse_jit",
    "segment_sum_jit", "gqa_repeat_jit",
    "pos3_smap", "rowpar3_smap", "halo_conv_smap", "gather2_smap", "flat_index_smap", "a2a_transpose_smap",
])
def test_client_through_check(gen8, name: str) -> None:
    v = check_client(gen8, name)
    assert v.verdict == "equivalent", v.reason


@pytest.mark.parametrize("name", [
    "pos3_smap_bug",  # axis_index('tp') where the sequence is over sp (both of size 2)
    "rowpar3_smap_bug",  # psum over sp where the contraction is over tp (both of size 2)
    "halo_conv_smap_bug",  # a circular ppermute: device 0 takes the last device's tail, not zeros
    "gather2_smap_bug",  # all_gather over (tp, dp) of rows sharded over (dp, tp)
    "flat_index_smap_bug",  # the flat device index with dp's stride 2, not 4
    "a2a_transpose_smap_bug",  # the all_to_all's received blocks read in reverse
])
def test_a_hand_written_bug_is_caught(gen8, name: str) -> None:
    assert_confirmed_at_original_sizes(check_client(gen8, name))


# ---------------------------------------------------------------------------
# Data-dependent while loops bounded by a counter (semantics/control.py, guard_trips).

def _lowered(fn, *shapes) -> str:
    import jax

    return jax.jit(fn).lower(*shapes).as_text()


def _newton(thr: float = 1e-3, counter_first: bool = False, bound_or: bool = False):
    import jax
    import jax.numpy as jnp

    def f(a):
        def cond(c):
            x, i = c
            far = jnp.max(jnp.abs(x * x - a)) > thr
            if bound_or:
                return far | (i < 20)
            return ((i < 20) & far) if counter_first else (far & (i < 20))

        def body(c):
            x, i = c
            return 0.5 * (x + a / x), i + 1

        return jax.lax.while_loop(cond, body, (jnp.ones_like(a) + a, 0))
    return f


def _decode():
    """A greedy decode loop as users write it: stop when every row has emitted EOS (0) or
    after 6 steps; the state is the last token and a done flag per row."""
    import jax
    import jax.numpy as jnp

    def f(emb, w, tok):
        def cond(c):
            _, done, i, _ = c
            return jnp.logical_not(jnp.all(done)) & (i < 6)

        def body(c):
            tok, done, i, total = c
            logits = jnp.tanh(emb[tok]) @ w
            nxt = jnp.where(done, 0, jnp.argmax(logits, -1))
            return nxt, done | (nxt == 0), i + 1, total + jnp.max(logits, -1) * (1 - done)

        return jax.lax.while_loop(cond, body, (tok, tok == 0, 0, jnp.zeros(tok.shape, jnp.float32)))
    return f


def _halving(thr: float):
    """x -> x / 2 + c until max(x) <= thr or 20 trips (dyadic values: the harness's exact
    evaluation stays small, where Newton's rationals double their digits every trip)."""
    import jax
    import jax.numpy as jnp

    def f(x, c):
        return jax.lax.while_loop(lambda s: (jnp.max(s[0]) > thr) & (s[1] < 20),
                                  lambda s: (s[0] * 0.5 + c, s[1] + 1), (x, 0))
    return f


def test_guarded_loop_semantics_agree_with_xla(xla) -> None:
    """The guarded trips on the numeric and both symbolic algebras (evaluated at the same
    inputs) give XLA's results, for a loop that stops early, one that runs to its cap, and
    a decode loop with an integer state."""
    import jax
    import jax.numpy as jnp

    s = jax.ShapeDtypeStruct((2, 2), jnp.float32)
    x = np.array([[3.0, 40.0], [-2.0, 7.5]], np.float32)
    c = np.array([[0.25, 0.5], [1.0, -0.125]], np.float32)
    for thr in (2.0, -100.0):  # stops after a few trips; never stops before its 20th
        check_against_xla(xla, _lowered(_halving(thr), s, s), [x, c], rtol=1e-5, atol=1e-6)
    emb, w = jax.ShapeDtypeStruct((5, 3), jnp.float32), jax.ShapeDtypeStruct((3, 5), jnp.float32)
    tok = jax.ShapeDtypeStruct((4,), jnp.int32)
    rng = np.random.default_rng(8)
    ins = [rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(3, 5)).astype(np.float32),
           np.array([1, 2, 0, 4], np.int32)]
    check_against_xla(xla, _lowered(_decode(), emb, w, tok), ins, rtol=1e-5, atol=1e-6)


def test_a_converging_loop_is_proved_and_its_twin_caught() -> None:
    import jax
    import jax.numpy as jnp

    s = jax.ShapeDtypeStruct((2, 2), jnp.float32)
    ref = _lowered(_newton(), s)
    opts = {"cache": False, "assume": {"arg0": (0.5, 4.0)}}
    other = _lowered(_newton(counter_first=True), s)
    for stages in (True, False):  # by the staged loop induction; by the loop run whole
        v = verify(ref, other, stages=stages, **opts)
        assert v.verdict == "equivalent", (stages, v.reason)
    assert_confirmed_at_original_sizes(verify(ref, _lowered(_newton(thr=1e-1), s), **opts))


def test_a_loop_whose_counter_test_is_or_ed_stays_refused() -> None:
    """`far | (i < 20)` is not bounded by the counter (the loop runs while `far`): no
    guarded trips, the loop is refused by name, never given a bound it does not have."""
    import jax
    import jax.numpy as jnp

    s = jax.ShapeDtypeStruct((2, 2), jnp.float32)
    text = _lowered(_newton(bound_or=True), s)
    v = verify(text, text, cache=False, stages=False, assume={"arg0": (0.5, 4.0)})
    assert v.verdict == "unknown" and "not bounded by a counter" in v.reason, v.reason


def test_guard_trips_reads_the_counter_bound() -> None:
    """The bound is the counter's: 20 trips from 0, 19 from 1, 10 from 0 by steps of 2;
    an unknown start bounds nothing."""
    import jax
    import jax.numpy as jnp

    from tv_mlir.frontend.read import load_module
    from tv_mlir.semantics.control import guard_trips

    def loop(start: int, step: int):
        def f(a):
            return jax.lax.while_loop(lambda c: (jnp.max(c[0]) > 1.0) & (c[1] < 20),
                                      lambda c: (c[0] * 0.5, c[1] + step), (a, start))
        return f

    s = jax.ShapeDtypeStruct((2,), jnp.float32)
    for start, step, want in ((0, 1, 20), (1, 1, 19), (0, 2, 10), (25, 1, 0)):
        m = load_module(_lowered(loop(start, step), s))
        op = next(o for o in m.main.body.walk() if o.name == "stablehlo.while")
        assert guard_trips(op, [None, start]) == want, (start, step)
        assert guard_trips(op, [None, None]) is None


@pytest.mark.parametrize("name", ["newton_while_jit", "greedy_decode_jit"])
def test_a_jit_loop_with_a_data_dependent_stop_through_check(gen8, name: str) -> None:
    """The jit Newton and greedy-decode loops in jax's Shardy lowering (a global program, no
    collective in the loop; proved by the staged loop induction) are equivalent to the
    single-device loops, and their twins (another threshold, one step fewer) are caught,
    XLA-confirmed. XLA's partitioned modules put all-reduces in the loop, which
    execute/spmd.py's lockstep loop still refuses (docs/jax.md, Eighth batch)."""
    v = check_client(gen8, name, form="shardy")
    assert v.verdict == "equivalent", v.reason
    assert_confirmed_at_original_sizes(check_client(gen8, f"{name}_bug", form="shardy"))

