"""What `tv_mlir.jax.check` does besides the proof, and that it is not done in vain: the
export compiles the sharded jit only as far as XLA's partitioner needs (its backend options
leave the partitioned module as it is), and the staged proof's random runs honour an input
assumed >= 0, so the random outputs agree on a correct pair and no witness is searched for.
Figures: docs/jax.md, "The flax train step through check"."""
from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from typing import Any  # noqa: E402

import pytest  # noqa: E402

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from tv_mlir import jax as tj  # noqa: E402
from tv_mlir.stages import lineage  # noqa: E402
from tv_mlir.stages import run as stages_run  # noqa: E402

# tests/conftest.py sets the 8 host devices before jax is imported: fewer is a broken set-up,
# which must fail here, not skip the module.
if len(jax.devices()) < 8:
    raise RuntimeError(f"tests/test_jax_check_cost.py needs 8 host devices, jax sees {len(jax.devices())}")

MESH = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
W = NamedSharding(MESH, P("dp", "tp"))
SPEC = jax.ShapeDtypeStruct((8, 16), jnp.float32)


def adam_like(w: Any, mu: Any, nu: Any, g: Any) -> Any:
    """An Adam update: the second moment's square root is NaN where nu < 0."""
    mu2 = 0.9 * mu + 0.1 * g
    nu2 = 0.99 * nu + 0.01 * g * g
    w2 = w - 0.1 * (mu2 / (jnp.sqrt(nu2) + 1e-8) + 0.01 * w)
    return w2 * jnp.tanh(jnp.sum(w2, axis=1, keepdims=True)), mu2, nu2


def _check(monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Any, list[bool], list[Any], list[Any]]:
    """The verdict, what the cut's `outputs_agree` said, the lifts run, and the cut's
    random input sets."""
    agreed: list[bool] = []
    lifts: list[Any] = []
    drawn: list[Any] = []
    real_agree, real_lift, real_draw = lineage.outputs_agree, stages_run._lift, stages_run.random_inputs

    def agree(*args: Any) -> bool:
        agreed.append(real_agree(*args))
        return agreed[-1]

    def lift(*args: Any, **kwargs: Any) -> Any:
        lifts.append(args)
        return real_lift(*args, **kwargs)
    def draw(*args: Any, **kwargs: Any) -> Any:
        drawn.append(real_draw(*args, **kwargs))
        return drawn[-1]
    monkeypatch.setattr(lineage, "outputs_agree", agree)
    monkeypatch.setattr(stages_run, "_lift", lift)
    monkeypatch.setattr(stages_run, "random_inputs", draw)
    v = tj.check(adam_like, SPEC, SPEC, SPEC, SPEC, in_shardings=(W,) * 4, out_shardings=(W,) * 3,
                 stage_min_elements=0, cache=False, **options)
    return v, agreed, lifts, drawn


NU = 2  # adam_like's argument


def test_the_cuts_random_runs_draw_an_input_assumed_nonnegative_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the assumption the cut draws nu of both signs (so sqrt(nu2) is NaN on its runs).
    v, agreed, lifts, drawn = _check(monkeypatch)
    assert v.verdict == "equivalent", v.reason
    assert len(drawn) == 1 and any((s[NU] < 0).any() for s in drawn[0])
    # With nu >= 0 assumed the cut's runs draw it >= 0, as the proof does: no NaN, the
    # outputs agree, and no witness is searched for (the cut drew nu from the whole normal
    # distribution before: the outputs disagreed and the lift ran, ~1.4 s of the flax
    # step's 20 s, to find nothing on a correct pair).
    v, agreed, lifts, drawn = _check(monkeypatch, assume={"nu": (0, float("inf"))})
    assert v.verdict == "equivalent", v.reason
    assert len(drawn) == 1 and all((s[NU] >= 0).all() for s in drawn[0])
    assert agreed == [True] and lifts == []


def test_the_export_options_are_known_to_xla_and_only_act_after_the_partitioner() -> None:
    # Every fast-backend option is one XLA takes (an unknown one is an error at compile),
    # and the partitioned module is the same with and without them (the flax steps' too:
    # docs/jax.md). A fresh jit object per export: a compiled one may not dump again.
    assert tj._FAST_BACKEND.get("xla_cpu_use_fusion_emitters") is False
    texts = []
    for options in (tj._FAST_BACKEND, {}):
        fresh = jax.jit(lambda *a: adam_like(*a), in_shardings=(W,) * 4, out_shardings=(W,) * 3)
        saved = tj._FAST_BACKEND
        try:
            tj._FAST_BACKEND = options
            texts.append(tj.partitioned_text(fresh, [SPEC] * 4))
        finally:
            tj._FAST_BACKEND = saved
    assert texts[0] == texts[1]
