"""Path or text, and what the Python API accepts: a str naming an existing file is a file,
a str that can only be a path and does not exist is 'no such file', MLIR text is text;
wrong types are the documented UsageError (a TvError), never AttributeError."""
from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
from hostile import GOOD_A, GOOD_B, cli, one_error_line

import tv_mlir
from tv_mlir.check_pass import check_pass
from tv_mlir.errors import TvError, UsageError
from tv_mlir.frontend.read import read_source


def test_relative_names_that_look_like_ops_are_files(tmp_path) -> None:
    # 'module_a.mlir' starts like `module`, 'func_b.mlir' like `func`: once read as MLIR text.
    (tmp_path / "module_a.mlir").write_bytes(GOOD_A.read_bytes())
    (tmp_path / "func_b.mlir").write_bytes(GOOD_B.read_bytes())
    p = cli("verify", "module_a.mlir", "func_b.mlir", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert b"verdict: equivalent" in p.stdout


@pytest.mark.parametrize("name", ["module_a.mlir", "func_b", "#x.mlirbc", "dir/other.mlir"])
def test_missing_file_says_so(tmp_path, name: str) -> None:
    p = cli("verify", name, str(GOOD_B), cwd=tmp_path, timeout=30)
    assert one_error_line(p, 3) == f"tv-mlir: error: no such file: {name}"


def test_path_rule_of_read_source(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = GOOD_A.read_text()
    odd = tmp_path / "odd {name}"  # has a '{' but exists: a file
    odd.write_text(text)
    assert read_source("odd {name}").data == text.encode()
    assert read_source(text).data == text.encode()  # a newline: text
    assert read_source("module { }").name == "<text>"  # one line with a body: text
    for name in ("module_a.mlir", "plain", "x.mlirbc", "module {}.mlir"):
        with pytest.raises(UsageError, match="no such file"):
            read_source(name)
    with pytest.raises(UsageError, match="Is a directory"):
        read_source(str(tmp_path))
    with pytest.raises(UsageError, match="cannot read nosuch"):
        read_source(Path("nosuch"))  # a Path is always a file


@pytest.mark.parametrize("bad", [None, 3, 2.5, ["a.mlir"], object(), {"ref": "a"}],
                         ids=["None", "int", "float", "list", "object", "dict"])
def test_api_wrong_types_are_usage_errors(bad: object) -> None:
    with pytest.raises(UsageError) as info:
        tv_mlir.verify(bad, GOOD_B)  # type: ignore[arg-type]
    assert isinstance(info.value, TvError) and type(bad).__name__ in str(info.value)
    with pytest.raises(UsageError):
        tv_mlir.verify(GOOD_A, bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        check_pass(bad, "builtin.module(cse)")  # type: ignore[arg-type]


def _specs(tmp_path: Path) -> dict[str, object]:
    data = GOOD_A.read_bytes()
    return {
        "str path": str(GOOD_A),
        "Path": GOOD_A,
        "text": data.decode(),
        "bytes": data,
        "bytearray": bytearray(data),
        "memoryview": memoryview(data),
        "StringIO": io.StringIO(data.decode()),
        "BytesIO": io.BytesIO(data),
        "text file": open(GOOD_A, encoding="utf-8"),  # noqa: SIM115 - the stream is the input
        "binary file": open(GOOD_A, "rb"),  # noqa: SIM115
    }


def test_api_accepts_paths_text_bytes_and_streams(tmp_path) -> None:
    for label, spec in _specs(tmp_path).items():
        v = tv_mlir.verify(spec, GOOD_B)  # type: ignore[arg-type]
        assert v.verdict == "equivalent", label
        if hasattr(spec, "close"):
            spec.close()


def test_api_stream_errors_are_usage_errors(tmp_path) -> None:
    closed = open(GOOD_A, "rb")  # noqa: SIM115
    closed.close()
    with pytest.raises(UsageError, match="cannot read"):
        tv_mlir.verify(closed, GOOD_B)
    latin = tmp_path / "latin1.mlir"
    latin.write_bytes(b"// caf\xe9\n" + GOOD_A.read_bytes())
    with open(latin, encoding="utf-8") as f, pytest.raises(UsageError, match="not UTF-8"):
        tv_mlir.verify(f, GOOD_B)


def test_check_pass_api_checks_its_arguments() -> None:
    with pytest.raises(UsageError):
        check_pass(GOOD_A, None)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="no such file"):
        check_pass("nosuch.mlir", "builtin.module(cse)")
    v = check_pass(io.StringIO(GOOD_A.read_text()), "builtin.module(cse)")
    assert v.verdict == "equivalent"


@pytest.mark.parametrize("options", [
    {"timeout_s": -1}, {"timeout_s": 0}, {"timeout_s": math.nan}, {"timeout_s": math.inf}, {"timeout_s": True},
    {"timeout_s": "5"}, {"jobs": 0}, {"jobs": 1.5}, {"jobs": True}, {"jobs": "2"}, {"max_input_bytes": 0},
    {"pipeline": None}, {"no_such_option": 1}, {"core": "cvc5"},
], ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_api_bad_options_are_usage_errors(options: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        tv_mlir.verify(GOOD_A, GOOD_B, **options)


def test_api_options_object_type_checked() -> None:
    with pytest.raises(UsageError, match="Options"):
        tv_mlir.verify(GOOD_A, GOOD_B, "fast")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        tv_mlir.Options(timeout_s=-1)
