"""The command line as a user meets it: exit codes, one-line errors, JSON."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, TESTDATA

BAD = TESTDATA / "bad"
GOOD = TESTDATA / "hand/add_commute.a.mlir"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-m", "tv_mlir", *args], input=stdin, capture_output=True,
                          cwd=ROOT, env=env, timeout=300)


@pytest.mark.parametrize("bad", ["garbage.mlir", "empty.mlir", "truncated.mlir", "binary.mlir", "missing.mlir"])
def test_bad_input_is_one_line_exit_3(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    """In this process (`cli.main`, what the console script calls): a CLI process costs
    seconds of imports, ten of them here; the real process is run on one below."""
    from tv_mlir import cli

    for args in ((str(BAD / bad), str(GOOD)), (str(GOOD), str(BAD / bad))):
        code = cli.main(["verify", *args])
        out, err = capsys.readouterr()
        assert code == 3, err
        err = err.strip()
        assert len(err.splitlines()) == 1, err
        assert err.startswith("tv-mlir: error:") and "Traceback" not in err
        assert bad in err
        assert out == ""


def test_truncated_points_at_line_and_column() -> None:
    """The real process, on one bad input: exit 3, one line on stderr, nothing on stdout."""
    p = run("verify", str(BAD / "truncated.mlir"), str(GOOD))
    err = p.stderr.decode().strip()
    assert p.returncode == 3 and p.stdout == b"" and len(err.splitlines()) == 1, err
    assert err.startswith("tv-mlir: error:") and "Traceback" not in err
    assert "truncated.mlir:" in err and err.split("truncated.mlir:")[1].split(":")[0].isdigit()


def test_signature_mismatch_exit_3_names_both() -> None:
    p = run("verify", str(BAD / "mismatch.a.mlir"), str(BAD / "mismatch.b.mlir"))
    assert p.returncode == 3
    err = p.stderr.decode()
    assert "mismatch.a.mlir takes" in err and "mismatch.b.mlir takes" in err


def test_exit_codes_and_text_report() -> None:
    eq = run("verify", str(TESTDATA / "pairs/dot_transpose.a.mlir"), str(TESTDATA / "pairs/dot_transpose.b.mlir"))
    assert eq.returncode == 0 and b"verdict: equivalent" in eq.stdout
    ne = run("verify", str(TESTDATA / "pairs/div_mul.a.mlir"), str(TESTDATA / "pairs/div_mul.b.mlir"))
    assert ne.returncode == 1
    out = ne.stdout.decode()
    assert "verdict: not-equivalent" in out and "counterexample (" in out and "confirmed" in out
    un = run("verify", str(TESTDATA / "hand/unsupported_rng.a.mlir"), str(TESTDATA / "hand/unsupported_rng.b.mlir"))
    assert un.returncode == 2 and b"stablehlo.rng" in un.stdout


def test_json_schema() -> None:
    p = run("verify", "--json", str(TESTDATA / "pairs/div_mul.a.mlir"), str(TESTDATA / "pairs/div_mul.b.mlir"))
    d = json.loads(p.stdout)
    assert set(d) >= {"verdict", "reason", "time_s", "outputs", "counterexample", "approximations", "precision", "stats"}
    assert d["verdict"] == "not-equivalent"
    assert d["outputs"][0]["index"] == 0 and d["outputs"][0]["verdict"] == "not-equivalent"
    c = d["counterexample"]
    assert set(c) >= {"inputs", "output", "index", "ref_value", "other_value", "replay"}
    assert c["ref_value"] == "nan"
    assert c["replay"][0]["confirmed"] is True
    p = run("verify", "--json", str(GOOD), str(TESTDATA / "hand/add_commute.b.mlir"))
    d = json.loads(p.stdout)
    assert d["verdict"] == "equivalent" and d["counterexample"] is None and p.returncode == 0


def test_stdin_and_bytecode(tmp_path) -> None:

    from tv_mlir.frontend.read import parse_mlir, read_source

    ctx, module = parse_mlir(read_source(GOOD))
    bc = tmp_path / "a.mlirbc"
    with ctx, open(bc, "wb") as f:
        module.operation.write_bytecode(f)
    assert bc.read_bytes().startswith(b"ML\xefR")
    p = run("verify", "-", str(bc), stdin=GOOD.read_bytes())
    assert p.returncode == 0, p.stderr
    assert run("verify", "-", "-").returncode == 3


def test_unknown_pipeline_is_usage_error(tmp_path) -> None:
    p = run("verify", "--pipeline", "nosuch", str(GOOD), str(GOOD))
    assert p.returncode == 3 and b"no pipeline 'nosuch'" in p.stderr
    bad = tmp_path / "p.txt"
    bad.write_text("inline\nfrobnicate\n")
    p = run("verify", "--pipeline", str(bad), str(GOOD), str(GOOD))
    assert p.returncode == 3 and b"line 2: unknown pass 'frobnicate'" in p.stderr


def test_check_pass_runs_a_real_mlir_pass(tmp_path) -> None:
    src = tmp_path / "in.mlir"
    src.write_text("""func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<0.0> : tensor<4xf32>
  %0 = stablehlo.add %x, %c : tensor<4xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
""")
    p = run("check-pass", "--pass-pipeline", "builtin.module(canonicalize,cse)", "--json", str(src))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["stats"]["pass_pipeline"] == "builtin.module(canonicalize,cse)"
    p = run("check-pass", "--pass-pipeline", "builtin.module(no-such-pass)", str(src))
    assert p.returncode == 3 and len(p.stderr.decode().strip().splitlines()) == 1


def test_progress_goes_to_stderr_and_json_stays_clean() -> None:
    p = run("verify", "--json", "--progress", str(TESTDATA / "pairs/div_mul.a.mlir"), str(TESTDATA / "pairs/div_mul.b.mlir"))
    assert json.loads(p.stdout)["verdict"] == "not-equivalent"
    assert b"tv-mlir: numeric runs" in p.stderr and b"symbolic execution" in p.stderr
    quiet = run("verify", "--json", str(TESTDATA / "pairs/div_mul.a.mlir"), str(TESTDATA / "pairs/div_mul.b.mlir"))
    assert quiet.stderr.count(b"tv-mlir:") == 0  # not a terminal: no progress by default


def test_replica_divergence_names_devices_in_text_and_json() -> None:
    sharded = TESTDATA / "sharded"
    args = (str(sharded / "replica_divergence.ref.mlir"), str(sharded / "replica_divergence_bug.gspmd.mlir"))
    p = run("verify", *args)
    assert p.returncode == 1, p.stderr
    out = p.stdout.decode()
    assert "replicas of output 0" in out and "devices 0 and 3" in out
    assert "replay (xla): device 0 = " in out and "confirmed" in out
    v = json.loads(run("verify", "--json", *args).stdout)
    c = v["counterexample"]
    assert v["verdict"] == "not-equivalent" and c["devices"] == [0, 3] and c["side"] == "other"
    assert [r["confirmed"] for r in c["replay"]] == [True, True]
    assert v["outputs"][0]["what"] == "output 0" and v["outputs"][0]["verdict"] == "equivalent"


def test_version_and_bad_arguments() -> None:
    import tv_mlir

    p = run("--version")
    assert p.returncode == 0 and p.stdout.decode().strip() == f"tv-mlir {tv_mlir.__version__}"
    p = run("verify", str(GOOD))  # argparse's own exit code would be 2, which means `unknown`
    assert p.returncode == 3 and b"required: other" in p.stderr


def test_internal_error_is_one_line_exit_2(monkeypatch, capsys) -> None:
    from tv_mlir import api, cli

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("a bug of ours")

    monkeypatch.setattr(api, "verify", broken)
    assert cli.main(["verify", str(GOOD), str(GOOD)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tv-mlir: internal error: KeyError") and len(err.splitlines()) == 1


def test_no_replay_on_a_shrunk_pair_says_why_it_is_not_carried_back() -> None:
    """--no-replay leaves a shrunk witness where it was found; the report must say that
    replay is off, not that the inputs are too large (they are small here)."""
    sharded = TESTDATA / "sharded"
    p = run("verify", "--no-replay", "--json", str(sharded / "mlp_tp.ref.mlir"),
            str(sharded / "mlp_tp_bug_missing_psum.shardy.mlir"))
    assert p.returncode == 1, p.stderr
    c = json.loads(p.stdout)["counterexample"]
    assert c["shrunk_index"] is not None and c["embedded"] is None
    assert c["not_embedded"] == "replay is off (--no-replay)"
    text = run("verify", "--no-replay", str(sharded / "mlp_tp.ref.mlir"),
               str(sharded / "mlp_tp_bug_missing_psum.shardy.mlir")).stdout.decode()
    assert "replay is off (--no-replay)" in text and "too large" not in text
