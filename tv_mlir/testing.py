"""Assertions for regression tests: a compiler change that breaks a sharding plan fails a
test with the verdict, the counterexample and the first divergence in its message.

    from tv_mlir.testing import assert_equivalent
    assert_equivalent("attn.ref.mlir", "attn.partitioned.mlir")

    from tv_mlir.testing import assert_jax_equivalent
    assert_jax_equivalent(step, params, batch, in_shardings=..., out_shardings=...)

`assert_equivalent` takes what `tv_mlir.verify` takes (paths, MLIR text or bytes, streams,
modules); `assert_jax_equivalent` what `tv_mlir.jax.check` takes (a function and its
arguments or their ShapeDtypeStructs). Both pass `**options` on (`timeout_s`, `assume`,
`inputs`, ...) and return the Verdict when it is `equivalent`; anything else (also
`unknown`: a check that could not decide is not a passing test) raises AssertionError
whose message is the verdict as `tv-mlir verify` prints it. The pytest plugin
(tv_mlir/pytest_plugin.py) offers the same as the fixture `tv_mlir_verify`."""
from __future__ import annotations

import os
from typing import Any

from tv_mlir.api import ModuleLike, verify
from tv_mlir.report import to_text
from tv_mlir.verdict import Verdict

__all__ = ["assert_equivalent", "assert_jax_equivalent", "assert_not_equivalent", "failure_message"]


def failure_message(verdict: Verdict, ref: object, other: object, expected: str = "equivalent") -> str:
    """What a failed assertion says: one headline, then the verdict's own text rendering
    (reason, counterexample, first divergence, replays), as the CLI prints it."""
    return f"expected {expected}: {_label(other)} against {_label(ref)}, got {verdict.verdict}\n{to_text(verdict)}"


def assert_equivalent(ref: ModuleLike, other: ModuleLike, **options: Any) -> Verdict:
    """`other` computes what `ref` computes (tv_mlir.verify says `equivalent`), else
    AssertionError with the verdict. Returns the Verdict."""
    __tracebackhide__ = True  # pytest shows the caller's line, then the message
    verdict = verify(ref, other, **options)
    if not verdict.equivalent:
        raise AssertionError(failure_message(verdict, ref, other))
    return verdict


def assert_not_equivalent(ref: ModuleLike, other: ModuleLike, confirmed: bool = True, **options: Any) -> Verdict:
    """A known-bad pair stays caught: `not-equivalent`, with a counterexample that XLA
    reproduced when `confirmed` (the default). Returns the Verdict."""
    __tracebackhide__ = True
    verdict = verify(ref, other, **options)
    c = verdict.counterexample
    if verdict.verdict != "not-equivalent" or (confirmed and (c is None or not c.confirmed)):
        what = "not-equivalent with an XLA-confirmed counterexample" if confirmed else "not-equivalent"
        raise AssertionError(failure_message(verdict, ref, other, expected=what))
    return verdict


def assert_jax_equivalent(fn: Any, *args: Any, in_shardings: Any = None, out_shardings: Any = None,
                          reference: Any = None, form: str = "partitioned", **options: Any) -> Verdict:
    """The sharded `jax.jit(fn, in_shardings=, out_shardings=)` computes what its reference
    computes (`tv_mlir.jax.check`'s arguments; `form` "partitioned", "shardy" or "gspmd").
    Imports jax. Returns the Verdict."""
    __tracebackhide__ = True
    from tv_mlir import jax as tj

    verdict = tj.check(fn, *args, in_shardings=in_shardings, out_shardings=out_shardings, reference=reference,
                       form=form, **options)
    if not verdict.equivalent:
        name = getattr(fn, "__name__", "fn")
        raise AssertionError(failure_message(verdict, f"{name} (reference)", f"{name} ({form})"))
    return verdict


def _label(spec: object) -> str:
    """A short name for a module argument: its path, a stream's name, or 'MLIR text'."""
    if isinstance(spec, os.PathLike):
        return os.fspath(spec)
    name = getattr(spec, "name", None) or getattr(spec, "source", None)
    if isinstance(name, str):
        return name
    if isinstance(spec, bytes):
        return "MLIR bytes"
    if isinstance(spec, str) and ("\n" in spec or "{" in spec):
        return "MLIR text"
    return str(spec)
