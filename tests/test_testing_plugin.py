"""tv_mlir.testing and the pytest plugin: a user's three-line regression test passes on an
equivalent pair and fails on a bug pair with the verdict, the counterexample and the first
divergence in its message (run by pytester, as a user's pytest session would)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tv_mlir.testing import assert_equivalent, assert_not_equivalent

pytest_plugins = ["pytester"]

PAIRS = Path(__file__).resolve().parent.parent / "testdata" / "pairs"
GOOD = ("dot_transpose.a.mlir", "dot_transpose.b.mlir")
BAD = ("matmul_wrong_transpose.a.mlir", "matmul_wrong_transpose.b.mlir")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A user's test directory holding the two pairs next to the test file. Its session
    runs in a subprocess, as a user's would (the plugin found by its entry point): an
    in-process run drops the modules it imported afterwards, and importing jaxlib a second
    time in one process aborts it."""
    for name in GOOD + BAD:
        shutil.copy(PAIRS / name, pytester.path / name)
    return pytester


def test_three_line_user_test_passes_and_fails(project: pytest.Pytester) -> None:
    project.makepyfile(test_plans="""
        def test_good(tv_mlir_verify):
            tv_mlir_verify("dot_transpose.a.mlir", "dot_transpose.b.mlir")

        def test_bad(tv_mlir_verify):
            tv_mlir_verify("matmul_wrong_transpose.a.mlir", "matmul_wrong_transpose.b.mlir")

        def test_bad_stays_caught(tv_mlir_not_equivalent):
            tv_mlir_not_equivalent("matmul_wrong_transpose.a.mlir", "matmul_wrong_transpose.b.mlir")
    """)
    # From another directory: the fixture finds the modules next to the test file.
    run_from = project.mkdir("elsewhere")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(run_from)
        result = project.runpytest_subprocess(str(project.path / "test_plans.py"), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED *test_plans.py::test_bad - AssertionError*"])
    # The message: headline, verdict, counterexample values, first divergence, XLA replay.
    result.stdout.fnmatch_lines([
        "*expected equivalent: *matmul_wrong_transpose.b.mlir against *matmul_wrong_transpose.a.mlir, "
        "got not-equivalent*",
        "*verdict: not-equivalent*",
        "*counterexample*",
        "*A = *",
        "*first divergence: stablehlo.dot_general at *",
        "*replay (xla*confirmed*",
    ])


def test_options_fixture_reaches_the_verify(project: pytest.Pytester) -> None:
    """A conftest's `tv_mlir_options` applies to every check in its directory (here a bad
    option: the error names it, so the options did arrive)."""
    project.makeconftest("""
        import pytest

        @pytest.fixture
        def tv_mlir_options():
            return {"timeout_s": -1}
    """)
    project.makepyfile(test_opts="""
        def test_good(tv_mlir_verify):
            tv_mlir_verify("dot_transpose.a.mlir", "dot_transpose.b.mlir")
    """)
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*option timeout_s must be a finite number > 0*"])


def test_assert_functions_directly() -> None:
    v = assert_equivalent(PAIRS / GOOD[0], PAIRS / GOOD[1])
    assert v.equivalent
    with pytest.raises(AssertionError) as info:
        assert_equivalent(PAIRS / BAD[0], PAIRS / BAD[1])
    msg = str(info.value)
    assert msg.startswith(f"expected equivalent: {PAIRS / BAD[1]} against {PAIRS / BAD[0]}, got not-equivalent")
    assert "first divergence:" in msg and "counterexample" in msg
    bad = assert_not_equivalent(PAIRS / BAD[0], PAIRS / BAD[1])
    assert bad.counterexample is not None and bad.counterexample.confirmed
    with pytest.raises(AssertionError, match="expected not-equivalent with an XLA-confirmed counterexample"):
        assert_not_equivalent(PAIRS / GOOD[0], PAIRS / GOOD[1])
    # MLIR text works as well as paths.
    assert assert_equivalent((PAIRS / GOOD[0]).read_text(), (PAIRS / GOOD[1]).read_text()).equivalent
