"""The op census (`make census`, tv_mlir/census.py): every op in the testdata programs has
semantics or a test that asserts its `unknown` verdict."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT, TESTDATA
from tv_mlir import census


@pytest.fixture(scope="module")
def testdata_census() -> census.Census:
    return census.take([TESTDATA])


def test_every_testdata_op_has_semantics_or_an_unknown_test(testdata_census: census.Census) -> None:
    missing = {c.key: sorted(c.files)[:3] for c in testdata_census.with_status(census.UNSUPPORTED)}
    assert not missing, ("ops in testdata programs with neither semantics nor an `unknown` test "
                         f"(add a rule, or a test and an entry in census.UNKNOWN_TESTED): {missing}")
    # The census read the programs: the models' everyday ops and issue 15's are there.
    keys = set(testdata_census.ops)
    assert {"stablehlo.dot_general", "stablehlo.all_reduce", "chlo.erfc", "stablehlo.convolution",
            "stablehlo.reduce_window", "stablehlo.select_and_scatter"} <= keys
    assert testdata_census.programs > 100


def test_unknown_tested_ops_name_a_test_that_names_them() -> None:
    for op, test_file in census.UNKNOWN_TESTED.items():
        path = ROOT / test_file
        assert path.is_file(), f"{op}: {test_file} does not exist"
        name = op.split(" @")[-1] if " @" in op else op
        assert name in path.read_text(), f"{test_file} never mentions {name}"
        assert census.status(op) == census.UNKNOWN_TESTED_STATUS


def _module(tmp_path: Path, name: str, body: str, arg: str = "tensor<4xf32>") -> Path:
    path = tmp_path / f"{name}.mlir"
    path.write_text(f"module @m {{\n  func.func public @main(%a: {arg}) -> {arg} {{\n{body}\n  }}\n}}\n")
    return path


def test_census_flags_ops_without_semantics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # rng is stateful (a hidden generator state, no seed operand): it has no semantics, and
    # a test of its `unknown` (census.UNKNOWN_TESTED); @my_kernel has neither.
    _module(tmp_path, "rng", """    %lo = stablehlo.constant dense<0.0> : tensor<f32>
    %hi = stablehlo.constant dense<1.0> : tensor<f32>
    %shape = stablehlo.constant dense<[4]> : tensor<1xi64>
    %0 = stablehlo.rng %lo, %hi, %shape, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<4xf32>
    %1 = stablehlo.add %0, %a : tensor<4xf32>
    return %1 : tensor<4xf32>""")
    _module(tmp_path, "calls", """    %0 = stablehlo.custom_call @Sharding(%a) {mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.custom_call @my_kernel(%0) : (tensor<4xf32>) -> tensor<4xf32>
    %2 = stablehlo.add %1, %0 : tensor<4xf32>
    return %2 : tensor<4xf32>""")
    (tmp_path / "broken.mlir").write_text("module {")
    result = census.take([tmp_path])
    assert result.programs == 2 and len(result.unreadable) == 1
    assert result.ops["stablehlo.rng"].status == census.UNKNOWN_TESTED_STATUS
    assert result.ops["stablehlo.custom_call @my_kernel"].status == census.UNSUPPORTED
    assert result.ops["stablehlo.custom_call @Sharding"].status == census.SEMANTICS
    assert result.ops["stablehlo.add"].status == census.SEMANTICS
    assert census.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "stablehlo.rng" in out and "1 unsupported" in out


def test_census_command_on_the_hand_written_pairs(capsys: pytest.CaptureFixture[str]) -> None:
    assert census.main([str(TESTDATA / "hand")]) == 0
    out = capsys.readouterr().out
    assert "0 unsupported" in out
    # The hand pairs' cholesky (once their unsupported example) has semantics now.
    assert census.status("stablehlo.cholesky") == census.SEMANTICS
    assert any(line.split()[:1] == ["stablehlo.cholesky"] and line.endswith("semantics") for line in out.splitlines())
