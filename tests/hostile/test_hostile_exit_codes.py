"""The exit-code contract (0/1/2/3, 130/143) and the one JSON error object of --json, on the
real CLI: usage errors as argparse finds them, option values, check-pass pass options,
pipeline files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile import GOOD_A, GOOD_B, cli, json_error, main_in_process, one_error_line

A, B = str(GOOD_A), str(GOOD_B)

USAGE_ERRORS = {
    "unknown flag": ("verify", "--bogus", A, B),
    "missing argument": ("verify", A),
    "no command": (),
    "unknown command": ("prove", A, B),
    "jobs not a number": ("verify", "--jobs", "two", A, B),
    "jobs zero": ("verify", "--jobs", "0", A, B),
    "jobs negative": ("verify", "--jobs", "-2", A, B),
    "timeout negative": ("verify", "--timeout", "-1", A, B),
    "timeout zero": ("verify", "--timeout", "0", A, B),
    "timeout nan": ("verify", "--timeout", "nan", A, B),
    "timeout inf": ("verify", "--timeout", "inf", A, B),
    "timeout missing value": ("verify", A, B, "--timeout"),
    "max-input-mb negative": ("verify", "--max-input-mb", "-5", A, B),
    "bad core": ("verify", "--core", "cvc5", A, B),
    "check-pass without --pass-pipeline": ("check-pass", A),
    "both from stdin": ("verify", "-", "-"),
}


@pytest.mark.parametrize("case", list(USAGE_ERRORS))
def test_usage_error_exits_3_with_one_line(case: str, capsys) -> None:
    code, out, err = main_in_process(capsys, *USAGE_ERRORS[case])
    assert code == 3 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tv-mlir: error:"), err


@pytest.mark.parametrize("case", list(USAGE_ERRORS))
def test_usage_error_with_json_prints_one_json_object(case: str, capsys) -> None:
    args = USAGE_ERRORS[case]
    code, out, err = main_in_process(capsys, *args[:1], "--json", *args[1:])
    d = json.loads(out)
    assert code == 3 and d == {"verdict": "error", "exit_code": 3, "kind": "usage", "error": d["error"]}
    assert err.strip() == f"tv-mlir: error: {d['error']}"


def test_usage_errors_on_the_real_cli() -> None:
    for args in (USAGE_ERRORS["unknown flag"], USAGE_ERRORS["jobs not a number"], USAGE_ERRORS["timeout nan"]):
        p = cli(*args[:1], "--json", *args[1:], timeout=30)
        assert one_error_line(p, 3).startswith("tv-mlir: error:")
        assert json_error(p)["kind"] == "usage"


def test_timeout_and_jobs_messages_name_the_value(capsys) -> None:
    _, _, err = main_in_process(capsys, "verify", "--timeout", "nan", A, B)
    assert "--timeout" in err and "'nan'" in err
    _, _, err = main_in_process(capsys, "verify", "--jobs", "two", A, B)
    assert "--jobs" in err and "'two'" in err


def test_bad_env_limit_is_usage_error(capsys, monkeypatch) -> None:
    monkeypatch.setenv("TV_MLIR_MAX_INPUT_MB", "lots")
    code, out, err = main_in_process(capsys, "verify", "--json", A, B)
    assert code == 3 and "TV_MLIR_MAX_INPUT_MB" in err and json.loads(out)["kind"] == "usage"


def test_parse_error_and_missing_file_with_json(tmp_path) -> None:
    bad = tmp_path / "garbage.mlir"
    bad.write_text("this is not MLIR {\n")
    p = cli("verify", "--json", A, str(bad))
    d = json_error(p)
    assert p.returncode == 3 and d["kind"] == "parse" and "garbage.mlir" in d["error"]
    p = cli("verify", "--json", A, str(tmp_path / "nosuch.mlir"))
    d = json_error(p)
    assert p.returncode == 3 and d["kind"] == "usage" and "no such file" in d["error"]


def test_internal_error_with_json_is_one_object(monkeypatch, capsys) -> None:
    from tv_mlir import api
    from tv_mlir import cli as cli_mod

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("a bug of ours")

    monkeypatch.setattr(api, "verify", broken)
    assert cli_mod.main(["verify", "--json", A, B]) == 2
    captured = capsys.readouterr()
    d = json.loads(captured.out)
    assert d == {"verdict": "error", "exit_code": 2, "kind": "internal", "error": d["error"]}
    assert d["error"].startswith("KeyError") and "internal error" in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_verdicts_keep_their_codes_with_json() -> None:
    p = cli("verify", "--json", A, B)
    assert p.returncode == 0 and json.loads(p.stdout)["verdict"] == "equivalent"


# ---------------------------------------------------------------------------
# check-pass: an option the pass does not have is refused, in one line


@pytest.mark.parametrize("pipeline", ["builtin.module(canonicalize{bogus=1})",
                                      "builtin.module(func.func(cse{nope}))",
                                      "builtin.module(no-such-pass)"])
def test_check_pass_rejects_unknown_pass_or_option(pipeline: str, capsys) -> None:
    code, out, err = main_in_process(capsys, "check-pass", "--pass-pipeline", pipeline, A)
    assert code == 3 and out == "" and len(err.strip().splitlines()) == 1 and "--pass-pipeline" in err


def test_check_pass_bad_option_value_on_the_real_cli() -> None:
    # LLVM prints its own complaint about the value on fd 2; it must not add a second line.
    p = cli("check-pass", "--pass-pipeline", "builtin.module(canonicalize{top-down=maybe})", A)
    line = one_error_line(p, 3)
    assert "--pass-pipeline" in line and "maybe" in line


def test_check_pass_pipeline_file_option_checked(tmp_path, capsys) -> None:
    pipe = tmp_path / "p.txt"
    pipe.write_text("shrink bogus=1\ninline\n")
    code, _, err = main_in_process(capsys, "check-pass", "--pass-pipeline", "builtin.module(cse)",
                                   "--pipeline", str(pipe), A)
    assert code == 3 and "takes no options" in err


# ---------------------------------------------------------------------------
# --pipeline: files that are not pipelines, and names that are built in


def test_pipeline_files_that_are_not_text_are_usage_errors(tmp_path, capsys) -> None:
    binary = tmp_path / "binary"
    binary.write_bytes(bytes(range(256)) * 4)
    nul = tmp_path / "nul.txt"
    nul.write_text("inline\n\x00dce\n")
    bad_option = tmp_path / "opt.txt"
    bad_option.write_text("inline\ndce frobnicate=2\n")
    for path, words in ((binary, "not UTF-8"), (nul, "binary"), (tmp_path, "cannot read pipeline"),
                        (bad_option, "line 2: pass dce: bad options"), (Path("/dev/zero"), "larger than")):
        code, out, err = main_in_process(capsys, "verify", "--json", "--pipeline", str(path), A, B)
        assert code == 3 and words in err and len(err.strip().splitlines()) == 1, (path, err)
        assert json.loads(out)["kind"] == "usage"
    p = cli("verify", "--pipeline", str(binary), A, B)
    assert "not UTF-8" in one_error_line(p, 3)


def test_builtin_pipeline_name_is_not_shadowed_by_a_file(tmp_path) -> None:
    (tmp_path / "default").write_text("frobnicate\n")
    p = cli("verify", "--pipeline", "default", A, B, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    # The file is still reachable by a path.
    p = cli("verify", "--pipeline", "./default", A, B, cwd=tmp_path)
    assert "unknown pass 'frobnicate'" in one_error_line(p, 3)
