"""Exit 1 at the programs' own sizes (issue 12 item 4, DESIGN: an unconfirmed counterexample
is `unknown`): an exact witness that XLA runs and does not show, and that our float64
replay does not show either, is a difference of the real functions below what the dtypes
resolve (api._exit_1_needs_confirmation, witness/replay.unshown_at_own_sizes). A real bug
at the own sizes keeps its exit 1, and so does an exact witness XLA could not run.

And a shrunk witness XLA cannot run at the shrunk sizes (shrinking made the module one XLA
refuses) is retried without shrinking when that is affordable (regrow.retry_unreplayable)."""
from __future__ import annotations

import pytest

from conftest import TESTDATA
from tv_mlir import regrow, verify
from tv_mlir.options import Options
from tv_mlir.verdict import Counterexample, OutputResult, Replay, Verdict
from tv_mlir.witness.replay import unshown_at_own_sizes

R = TESTDATA / "shrink_rules"
C = TESTDATA / "clients"


@pytest.mark.slow  # ~10 s: minimisation, the uniqueness query and both replays at 4x64
def test_a_real_function_difference_xla_does_not_show_is_unknown() -> None:
    """bessel_ratio's ok twin multiplies by the f32 literal 1.01587307 where the reference
    divides by 63 and multiplies by 64: as reals they differ by 6e-8 relative, which f32
    does not resolve; XLA runs both and gives the same value. (--no-shrink: the pair ends
    at its own sizes anyway, after the shrunk witness is not reproduced and the retries.)"""
    v = verify(R / "bessel_ratio.small.ref.mlir", R / "bessel_ratio.small.ok.mlir", shrink=False, timeout_s=60)
    assert v.verdict == "unknown" and v.exit_code == 2, v.reason
    assert v.reason.startswith("the programs differ as real functions by 5.8e-08 (relative)"), v.reason
    assert "below what their dtypes show (f32 resolution 1.2e-07): XLA runs both and gives the same value" \
        in v.reason, v.reason
    c = v.counterexample  # kept for the user
    assert c is not None and not c.confirmed and c.confirmed_at is None
    xla = [r for r in c.replay if r.backend == "xla"]
    assert xla and not xla[0].error and not xla[0].confirmed


def test_a_real_bug_at_the_own_sizes_still_exits_1() -> None:
    """The bug twin (8/7 for 64/63): XLA shows it, exit 1 confirmed at the original sizes."""
    v = verify(R / "bessel_ratio.small.ref.mlir", R / "bessel_ratio.small.bug.mlir", shrink=False, timeout_s=60)
    assert v.verdict == "not-equivalent" and v.exit_code == 1, v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes"


def _cex(replays: list[Replay], ref: object = 1.0, other: object = 1.0000001) -> Counterexample:
    return Counterexample(inputs={"x": [1.0]}, output=0, index=[0], ref_value=ref, other_value=other, replay=replays)


NUM_NO = Replay("numeric", 1.0, 1.0000001, False)
XLA_NO = Replay("xla", 1.0, 1.0, False)


def test_the_rule_needs_xla_to_have_run_and_neither_replay_to_show_it() -> None:
    assert "by 1.0e-07 (relative)" in (unshown_at_own_sizes(_cex([NUM_NO, XLA_NO])) or "")
    assert "by 1.0e-07 (relative)" in (unshown_at_own_sizes(_cex([NUM_NO, XLA_NO]), "f32") or "")
    # XLA's values differ, if by one f32 step below the replay's tolerance (x / sqrt(8)
    # against x / 2.82842731, tests/test_sqrt_constants.py): XLA shows it, it stands.
    one_step = Replay("xla", 0.3535533845424652, 0.3535533547401428, False)
    assert unshown_at_own_sizes(_cex([NUM_NO, one_step], 0.3535533966440824, 0.35355336684176153)) is None
    # Larger than the output type resolves: 1e-7 apart at an f64 output, 1e-6 at an f32 one.
    assert unshown_at_own_sizes(_cex([NUM_NO, XLA_NO]), "f64") is None
    assert unshown_at_own_sizes(_cex([NUM_NO, XLA_NO], 1.0, 1.000001)) is None
    # XLA could not run the programs (or there is no XLA replay: a stage without text):
    # the exact witness stands, as before.
    assert unshown_at_own_sizes(_cex([NUM_NO, Replay("xla", None, None, False, "unsupported op")])) is None
    assert unshown_at_own_sizes(_cex([NUM_NO])) is None
    # The float64 replay shows it (an integer wraparound XLA folds away is one such).
    assert unshown_at_own_sizes(_cex([Replay("numeric", 1.0, 2.0, True), XLA_NO], 1.0, 2.0)) is None
    # Integer outputs, and non-finite values on XLA: no rounding of a small difference.
    assert unshown_at_own_sizes(_cex([Replay("numeric", 3, 4, False), Replay("xla", 3, 3, False)], 3, 4)) is None
    assert unshown_at_own_sizes(_cex([NUM_NO, Replay("xla", "nan", "nan", False)])) is None


def test_own_size_rule_in_the_last_check() -> None:
    """_exit_1_needs_confirmation applies it to a pair not shrunk, and not with --no-replay."""
    from tv_mlir.api import _exit_1_needs_confirmation

    def verdict() -> Verdict:
        v = Verdict("not-equivalent", "output 0 differs at index [0]", counterexample=_cex([NUM_NO, XLA_NO]))
        v.shrink = {"applied": False}
        return v

    v = verdict()
    _exit_1_needs_confirmation(v, Options())
    assert v.verdict == "unknown" and v.reason.endswith(": output 0 differs at index [0]") and v.counterexample
    v = verdict()
    _exit_1_needs_confirmation(v, Options(replay=False))
    assert v.verdict == "not-equivalent"


def _unreplayable(detail: str, applied: bool = True) -> Verdict:
    v = Verdict("unknown", detail, outputs=[OutputResult(0, "unknown", detail=detail), OutputResult(1, "equivalent")])
    v.shrink = {"applied": applied}
    return v


def test_only_xla_failing_on_the_shrunk_modules_is_retried() -> None:
    failed = "counterexample depends on approximated ops (tanh) and XLA could not run it: XLA stopped (signal 6)"
    assert regrow.xla_failed_on_shrunk(_unreplayable(failed)) == "XLA stopped (signal 6)"
    assert regrow.xla_failed_on_shrunk(_unreplayable(failed, applied=False)) == ""  # nothing was shrunk
    assert regrow.xla_failed_on_shrunk(_unreplayable("solver timeout")) == ""
    both = _unreplayable(failed)
    both.outputs.append(OutputResult(2, "unknown", detail="solver timeout"))
    assert regrow.xla_failed_on_shrunk(both) == ""  # another unknown the retry would not settle


def test_a_witness_xla_refuses_at_the_shrunk_sizes_is_verified_without_shrinking() -> None:
    """unreduced_halved (a dot whose tp contraction is left unreduced, summed twice by the
    reshard, against tanh(x @ w)): the shrinker makes the unreduced dim non-divisible and
    XLA refuses the shrunk module, so the tanh witness could not be confirmed (`unknown`,
    as before this retry); at the own sizes XLA runs it and shows the bug."""
    v = verify(C / "unreduced_halved.ref.mlir", C / "unreduced_halved.shardy.mlir", timeout_s=60)
    assert v.verdict == "not-equivalent" and v.exit_code == 1, v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes"
    assert v.shrink is not None and not v.shrink["applied"]
    assert "could not be replayed (XLA could not run the shrunk modules" in v.shrink["reason"]
    assert [r["sizes"] for r in v.retries] == ["original"]


def test_the_retry_is_skipped_when_the_pair_is_too_large_unshrunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regrow, "NO_SHRINK_MAX_ELEMENTS", 0)
    v = verify(C / "unreduced_halved.ref.mlir", C / "unreduced_halved.shardy.mlir", timeout_s=60)
    assert v.verdict == "unknown" and "XLA could not run it" in v.reason, v.reason
    assert v.retries and v.retries[0]["note"].startswith("not tried without shrinking"), v.retries
