"""Input assumptions (`assume={"labels": (0, V)}`, `--assume labels=0:V`): a vocab-parallel
label lookup (one-hot of the shard's local ids, psum over tp) against a gather with
clipped indices. They differ only for labels outside [0, V) (one-hot gives 0 there, the
clipped gather an edge logit): not-equivalent without the assumption, equivalent with it,
from Python and from the CLI, on both cores. Unknown names, empty bounds and non-integral ends on an integer
input are refused (float ranges: tests/test_assume_floats.py)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tv_mlir import cli
from tv_mlir.assume import normalize, parse_cli, resolve
from tv_mlir.errors import UsageError
from tv_mlir.ir import TensorType
from tv_mlir.options import Options
from tv_mlir.prove.fingerprints import random_inputs

jax = pytest.importorskip("jax")
jnp = jax.numpy
from jax.sharding import PartitionSpec as P  # noqa: E402

from tv_mlir import jax as tj  # noqa: E402

V, B = 16, 4  # vocabulary (split over tp=4), tokens
MESH = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
ARGS = (jax.ShapeDtypeStruct((B, V), jnp.float32), jax.ShapeDtypeStruct((B,), jnp.int32))


def label_logit(logits, labels):
    """The reference: each token's logit at its label (indices clipped into the vocabulary)."""
    return jnp.take_along_axis(logits, labels[:, None], axis=1, mode="clip")[:, 0]


def _vocab_parallel_body(logits, labels):
    shard = logits.shape[1]
    local = labels - jax.lax.axis_index("tp") * shard  # this shard's vocabulary offset
    picked = jnp.sum(jax.nn.one_hot(local, shard, dtype=logits.dtype) * logits, axis=1)
    return jax.lax.psum(picked, "tp")


vocab_parallel = jax.shard_map(_vocab_parallel_body, mesh=MESH, in_specs=(P(None, "tp"), P()), out_specs=P(),
                               check_vma=False)


def _check(args: tuple = ARGS, **options):
    return tj.check(vocab_parallel, *args, reference=label_logit, form="shardy", **options)


def test_out_of_vocabulary_labels_differ_without_the_assumption() -> None:
    v = _check()
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed
    labels = np.array(c.inputs["labels"])
    assert ((labels < 0) | (labels >= V)).any(), labels  # the witness needs an id outside the vocabulary
    assert v.assume == {}


# The z3 core (terms built in z3) is held to a smaller vocabulary: at V=16 its 4 solver
# queries take from 3 s to past the 60 s timeout depending on what z3's context built
# before (AST ids order its search), where the own core closes all by simplification.
@pytest.mark.parametrize(("core", "vocab", "tokens"), [("own", V, B), ("z3", 8, 2)])
def test_labels_inside_the_vocabulary_are_equivalent(core: str, vocab: int, tokens: int) -> None:
    args = (jax.ShapeDtypeStruct((tokens, vocab), jnp.float32), jax.ShapeDtypeStruct((tokens,), jnp.int32))
    v = _check(args, assume={"labels": (0, vocab)}, core=core, cache=False)
    assert v.verdict == "equivalent", v.reason
    assert v.assume == {"labels": [0, vocab]}


def test_a_bound_that_admits_one_bad_label_keeps_the_witness_inside_it() -> None:
    """[-1, V): the only labels left that differ are -1; the minimised witness stays inside."""
    v = _check(assume={"labels": (-1, V)})
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed
    labels = np.array(c.inputs["labels"])
    assert labels.min() >= -1 and labels.max() < V and (labels == -1).any(), labels


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref, other = tj.export_pair(vocab_parallel, *ARGS, reference=label_logit, form="shardy", directory=tmp_path,
                                name="label_logit")
    assert cli.main(["verify", str(ref), str(other)]) == 1
    capsys.readouterr()
    assert cli.main(["verify", str(ref), str(other), "--assume", f"labels=0:{V}"]) == 0
    out = capsys.readouterr().out
    assert f"assume:  labels in [0, {V})" in out
    # Positional names and JSON.
    assert cli.main(["verify", str(ref), str(other), "--assume", f"%arg1=0:{V}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["assume"] == {"%arg1": [0, V]}
    # Refused: a float input, an unknown name, a malformed or empty bound (usage errors, exit 3).
    for bad, message in [("labels=0.5:4", "an integer input's bound is two integers"),
                         ("logits=2:1", "is empty"),
                         ("tokens=0:4", "no input is called tokens"),
                         ("labels=0", "--assume takes NAME=LO:HI"),
                         ("labels=4:4", "is empty")]:
        assert cli.main(["verify", str(ref), str(other), "--assume", bad]) == 3, bad
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_python_refusals() -> None:
    with pytest.raises(UsageError, match="holds no finite value of input logits"):
        _check(assume={"logits": (1e39, float("inf"))})  # past f32's largest value
    with pytest.raises(UsageError, match="no input is called tokens"):
        _check(assume={"tokens": (0, 4)})
    with pytest.raises(UsageError, match="two integers"):
        _check(assume={"labels": (0.5, 4)})
    with pytest.raises(UsageError, match="two numbers"):
        Options(assume={"labels": (float("nan"), 4)})
    with pytest.raises(UsageError, match="must map input names"):
        Options(assume="labels=0:4")


def test_bounds_resolution() -> None:
    types = [TensorType((4, 16), "f32"), TensorType((4,), "i32"), TensorType((4,), "ui8")]
    names = ["logits", "batch['labels']", "mask"]
    b = normalize({"labels": (0, 16), "arg2": (-5, 300)})
    # By the pytree leaf's last key; intersected with the type's range; closed.
    assert resolve(b, names, types) == [None, (0, 15), (0, 255)]
    # At shrunk sizes a bound equal to a shrunk class's original size follows it.
    assert resolve(b, names, types, sizes={16: 4}) == [None, (0, 3), (0, 255)]
    assert parse_cli("x=-3:7") == ("x", -3, 7)
    with pytest.raises(UsageError, match="bounded twice"):
        normalize([("x", 0, 1), ("x", 0, 2)])


def test_random_runs_stay_inside_the_bounds() -> None:
    types = [TensorType((64,), "i32"), TensorType((64,), "i32")]
    sets = random_inputs(types, bounds=[(3, 5), None])
    assert all(3 <= s[0].min() and s[0].max() <= 5 for s in sets)
    assert any(s[1].min() < 0 for s in sets)  # the unbounded input keeps its usual spread


def _one_hot_pick(logits, labels):
    return jnp.sum(jax.nn.one_hot(labels, logits.shape[1], dtype=logits.dtype) * logits, axis=1)


def test_the_bound_follows_the_shrunk_vocabulary() -> None:
    """Single device, vocabulary 64 shrunk to a few ids: `(0, 64)` is the shrunk
    vocabulary's range at the shrunk sizes. Kept at 64 there, labels past the small
    vocabulary would give a witness the original sizes do not show (retries)."""
    args = (jax.ShapeDtypeStruct((8, 64), jnp.float32), jax.ShapeDtypeStruct((8,), jnp.int32))
    without = tj.check(_one_hot_pick, *args, reference=label_logit, form="shardy")
    assert without.verdict == "not-equivalent" and without.counterexample is not None
    v = tj.check(_one_hot_pick, *args, reference=label_logit, form="shardy", assume={"labels": (0, 64)})
    assert v.verdict == "equivalent", v.reason
    assert v.shrink is not None and v.shrink["applied"] and not v.retries, (v.shrink, v.retries)


def _abs(v):
    return jnp.abs(v) * 2.0


def _plain(v):
    return v + v


def _negated(v):
    return -(v + v)


V_ARG = (jax.ShapeDtypeStruct((4,), jnp.float32),)


@pytest.mark.parametrize("core", ["own", "z3"])
def test_a_float_input_assumed_non_negative(core: str) -> None:
    """|v| * 2 against v + v: equal exactly for v >= 0. Without the assumption the witness
    has a negative element; with `v=0:inf` both cores prove it; a real difference under
    the assumption keeps its witness non-negative."""
    without = tj.check(_plain, *V_ARG, reference=_abs, form="shardy", core=core)
    assert without.verdict == "not-equivalent", without.reason
    assert without.counterexample is not None
    assert (np.array(without.counterexample.inputs["v"]) < 0).any()
    v = tj.check(_plain, *V_ARG, reference=_abs, form="shardy", core=core, assume={"v": (0, float("inf"))})
    assert v.verdict == "equivalent", v.reason
    bug = tj.check(_negated, *V_ARG, reference=_abs, form="shardy", core=core, assume={"v": (0, float("inf"))})
    assert bug.verdict == "not-equivalent", bug.reason
    c = bug.counterexample
    assert c is not None and c.confirmed and (np.array(c.inputs["v"]) >= 0).all(), c.inputs


def test_float_signs_resolve_and_parse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    types = [TensorType((4,), "f32"), TensorType((1,), "i32")]
    names = ["nu", "count"]
    inf = float("inf")
    assert parse_cli("nu=0:inf") == ("nu", 0, inf)
    got = resolve(normalize({"nu": (0, inf), "count": (0, inf)}), names, types)
    assert got == [(0, inf), (0, 2**31 - 1)]  # an int bound without a top: the type's largest value
    from tv_mlir.assume import signs
    assert signs(got) == [1, 0]
    assert signs(resolve(normalize({"nu": (1, inf)}), names, types)) == [2, 0]  # a range above 0: positive
    # A pattern bounds every input it matches, and must match one.
    many = [TensorType((4,), "f32")] * 3 + [TensorType((1,), "i32")]
    assert signs(resolve(normalize({"v_*": (0, inf)}), ["v_a", "m_a", "v_b", "step"], many)) == [1, 0, 1, 0]
    with pytest.raises(UsageError, match="no input matches nu_"):
        resolve(normalize({"nu_*": (0, inf)}), ["v_a", "m_a", "v_b", "step"], many)
    # Brackets are literal (pytree names), in exact names and in patterns.
    tree = ["opt_state[0].nu['w']", "opt_state[0].mu['w']", "params['w']", "opt_state[0].count"]
    got = resolve(normalize({"opt_state[0].nu*": (0, inf), "opt_state[0].count": (0, inf)}), tree, many)
    assert got == [(0, inf), None, None, (0, 2**31 - 1)]
    # The random runs draw the assumed input non-negative, the others as before.
    sets = random_inputs([TensorType((64,), "f32")] * 2, signs=[1, 0])
    assert all(s[0].min() >= 0 for s in sets) and any(s[1].min() < 0 for s in sets)
    ref, other = tj.export_pair(_plain, *V_ARG, reference=_abs, form="shardy", directory=tmp_path, name="absv")
    assert cli.main(["verify", str(ref), str(other), "--assume", "v=0:inf", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["assume"]
    assert got == {"v": [0.0, "inf"]} and isinstance(got["v"][0], float)  # a float range: closed
