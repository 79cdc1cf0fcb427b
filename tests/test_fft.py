"""Complex numbers and `stablehlo.fft` (tv_mlir/passes/complex.py): complex values become
pairs of real parts, FFTs products with DFT matrices whose irrational entries are
`cosine` of constant angles (uninterpreted, an approximation the verdict lists). Held to
XLA like every op (conftest.check_against_xla: numeric, symbolic and own-terms algebras at
the same inputs), with mutations of the rewrite that XLA must catch, ops the pass does not
rewrite ending `unknown` naming them, and the sharded FFT pair of testdata/bug_patterns."""
from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from conftest import check_against_xla
from tv_mlir.api import verify
from tv_mlir.passes import complex as cx

DATA = Path(__file__).resolve().parent.parent / "testdata" / "bug_patterns"


def M(sig: str, body: str) -> str:
    lines = "\n".join("    " + ln.strip() for ln in body.strip().splitlines())
    return f"module @m {{\n  func.func public @main{sig} {{\n{lines}\n  }}\n}}\n"


def nice(seed: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    return (rng.integers(-160, 161, size=shape) / 4).astype(np.float32).astype(np.float64)


def c(t: str) -> str:
    return t.replace("T", "complex<f32>")


CASES: dict[str, tuple[str, Callable[[], list[np.ndarray]]]] = {}


def case(name: str, text: str, shapes: list[tuple[int, ...]]) -> None:
    CASES[name] = (text, lambda: [nice(f"{name}{i}", s) for i, s in enumerate(shapes)])


def _split(t: str, v: str = "%f") -> str:
    """The real and imaginary parts of complex `v` of type tensor<...xT> (the entry is real)."""
    return f"""%re = stablehlo.real {v} : ({c(t)}) -> {t.replace('T', 'f32')}
    %im = stablehlo.imag {v} : ({c(t)}) -> {t.replace('T', 'f32')}
    return %re, %im : {t.replace('T', 'f32')}, {t.replace('T', 'f32')}"""


def _pair(t: str) -> str:
    return f"%z = stablehlo.complex %a, %b : {c(t)}"


for n in (8, 5, 6):
    case(f"rfft_{n}", M(f"(%x: tensor<3x{n}xf32>) -> (tensor<3x{n // 2 + 1}xf32>, tensor<3x{n // 2 + 1}xf32>)", f"""
        %f = stablehlo.fft %x, type = RFFT, length = [{n}] : (tensor<3x{n}xf32>) -> tensor<3x{n // 2 + 1}xcomplex<f32>>
        {_split(f"tensor<3x{n // 2 + 1}xT>")}"""), [(3, n)])
for n in (6, 5):
    for kind in ("FFT", "IFFT"):
        t = f"tensor<2x{n}xT>"
        case(f"{kind.lower()}_{n}", M(f"(%a: tensor<2x{n}xf32>, %b: tensor<2x{n}xf32>) -> ({t.replace('T', 'f32')}, "
                                      f"{t.replace('T', 'f32')})", f"""
            %z = stablehlo.complex %a, %b : {c(t)}
            %f = stablehlo.fft %z, type = {kind}, length = [{n}] : ({c(t)}) -> {c(t)}
            {_split(t)}"""), [(2, n), (2, n)])
for n in (8, 7):
    h = n // 2 + 1
    case(f"irfft_{n}", M(f"(%a: tensor<3x{h}xf32>, %b: tensor<3x{h}xf32>) -> tensor<3x{n}xf32>", f"""
        %z = stablehlo.complex %a, %b : tensor<3x{h}xcomplex<f32>>
        %f = stablehlo.fft %z, type = IRFFT, length = [{n}] : (tensor<3x{h}xcomplex<f32>>) -> tensor<3x{n}xf32>
        return %f : tensor<3x{n}xf32>"""), [(3, h), (3, h)])
case("fft_2d", M("(%a: tensor<2x4x6xf32>, %b: tensor<2x4x6xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xf32>)", f"""
    %z = stablehlo.complex %a, %b : tensor<2x4x6xcomplex<f32>>
    %f = stablehlo.fft %z, type = FFT, length = [4, 6] : (tensor<2x4x6xcomplex<f32>>) -> tensor<2x4x6xcomplex<f32>>
    {_split("tensor<2x4x6xT>")}"""), [(2, 4, 6), (2, 4, 6)])
case("rfft_irfft_3d", M("(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x3xf32>)", """
    %f = stablehlo.fft %x, type = RFFT, length = [2, 3, 4] : (tensor<2x3x4xf32>) -> tensor<2x3x3xcomplex<f32>>
    %k = stablehlo.constant dense<2.0> : tensor<2x3x3xf32>
    %kc = stablehlo.convert %k : (tensor<2x3x3xf32>) -> tensor<2x3x3xcomplex<f32>>
    %g = stablehlo.multiply %f, %kc : tensor<2x3x3xcomplex<f32>>
    %h = stablehlo.fft %g, type = IRFFT, length = [2, 3, 4] : (tensor<2x3x3xcomplex<f32>>) -> tensor<2x3x4xf32>
    %i = stablehlo.imag %f : (tensor<2x3x3xcomplex<f32>>) -> tensor<2x3x3xf32>
    return %h, %i : tensor<2x3x4xf32>, tensor<2x3x3xf32>"""), [(2, 3, 4)])
T = "tensor<2x3xT>"
case("complex_arith", M("(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %p: tensor<2x3xf32>, %q: tensor<2x3xf32>) -> "
                        "(tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)", f"""
    %z = stablehlo.complex %a, %b : {c(T)}
    %w = stablehlo.complex %p, %q : {c(T)}
    %m = stablehlo.multiply %z, %w : {c(T)}
    %s = stablehlo.subtract %m, %z : {c(T)}
    %n = stablehlo.negate %s : {c(T)}
    %two = stablehlo.constant dense<2.0> : tensor<2x3xf32>
    %twoc = stablehlo.convert %two : (tensor<2x3xf32>) -> {c(T)}
    %d = stablehlo.divide %n, %twoc : {c(T)}
    %e = stablehlo.add %d, %w : {c(T)}
    %ab = stablehlo.abs %e : ({c(T)}) -> tensor<2x3xf32>
    %cv = stablehlo.convert %e : ({c(T)}) -> tensor<2x3xf32>
    %re = stablehlo.real %e : ({c(T)}) -> tensor<2x3xf32>
    %im = stablehlo.imag %e : ({c(T)}) -> tensor<2x3xf32>
    return %re, %im, %ab, %cv : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>"""),
     [(2, 3)] * 4)
case("complex_shapes_dot", M("(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %p: tensor<3x4xf32>, %q: tensor<3x4xf32>) -> "
                             "(tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>)", f"""
    %z = stablehlo.complex %a, %b : {c(T)}
    %w = stablehlo.complex %p, %q : tensor<3x4xcomplex<f32>>
    %t = stablehlo.transpose %z, dims = [1, 0] : ({c(T)}) -> tensor<3x2xcomplex<f32>>
    %r = stablehlo.reshape %t : (tensor<3x2xcomplex<f32>>) -> tensor<2x3xcomplex<f32>>
    %s = stablehlo.slice %r [0:1, 0:3] : (tensor<2x3xcomplex<f32>>) -> tensor<1x3xcomplex<f32>>
    %k = stablehlo.concatenate %r, %s, %s, dim = 0 : (tensor<2x3xcomplex<f32>>, tensor<1x3xcomplex<f32>>, tensor<1x3xcomplex<f32>>) -> tensor<4x3xcomplex<f32>>
    %dt = stablehlo.dot_general %k, %w, contracting_dims = [1] x [0] : (tensor<4x3xcomplex<f32>>, tensor<3x4xcomplex<f32>>) -> tensor<4x4xcomplex<f32>>
    %zr = stablehlo.constant dense<0.0> : tensor<f32>
    %zero = stablehlo.convert %zr : (tensor<f32>) -> tensor<complex<f32>>
    %sum = stablehlo.reduce(%dt init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x4xcomplex<f32>>, tensor<complex<f32>>) -> tensor<4xcomplex<f32>>
    %sr = stablehlo.imag %sum : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
    %re = stablehlo.real %dt : (tensor<4x4xcomplex<f32>>) -> tensor<4x4xf32>
    %im = stablehlo.imag %dt : (tensor<4x4xcomplex<f32>>) -> tensor<4x4xf32>
    return %re, %im, %sr : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>"""),
     [(2, 3), (2, 3), (3, 4), (3, 4)])


@pytest.mark.parametrize("name", list(CASES))
def test_complex_op_against_xla(xla, name: str) -> None:  # type: ignore[no-untyped-def]
    text, inputs = CASES[name]
    check_against_xla(xla, text, inputs(), rtol=1e-4, atol=2e-4)


# Mutations of the rewrite: XLA must tell each apart (the cases above would pass with a
# rewrite that never ran, were the semantics not held to XLA; these show they are).

def _must_fail(xla, name: str) -> None:  # type: ignore[no-untyped-def]
    text, inputs = CASES[name]
    with pytest.raises(AssertionError):
        check_against_xla(xla, text, inputs(), rtol=1e-4, atol=2e-4)


def test_mutation_sine_as_cosine(xla, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(cx, "_sin", lambda km, n: cx.Fraction(km, n))
    _must_fail(xla, "rfft_8")


def test_mutation_inverse_as_forward(xla, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    forward = cx._c2c
    monkeypatch.setattr(cx, "_c2c", lambda b, x, axis, n, dt, inverse: forward(b, x, axis, n, dt, False))
    _must_fail(xla, "ifft_5")


def test_mutation_exact_cosine_table(xla, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(cx._EXACT_COS, cx.Fraction(1, 6), cx.Fraction(-1, 2))
    _must_fail(xla, "fft_6")


def test_mutation_irfft_counts_every_bin_once(xla, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    # Without the Hermitian weights (2 for the bins that stand for two) the inverse is wrong.
    matrix = cx._matrix
    monkeypatch.setattr(cx, "_matrix", lambda b, n_in, n_out, dt, entry: matrix(
        b, n_in, n_out, dt, lambda k, m: (min(cx.Fraction(entry(k, m)[0]), cx.Fraction(1, n_out)), entry(k, m)[1])))
    _must_fail(xla, "irfft_8")


# What the pass does not rewrite is `unknown`, naming the op; never a real rule on a complex value.

def _verify_self(text: str):  # type: ignore[no-untyped-def]
    return verify(text, text)


@pytest.mark.parametrize("body, op", [
    (f"""%z = stablehlo.complex %a, %a : {c('tensor<4xT>')}
     %e = stablehlo.exponential %z : {c('tensor<4xT>')}
     %r = stablehlo.real %e : ({c('tensor<4xT>')}) -> tensor<4xf32>
     return %r : tensor<4xf32>""", "stablehlo.exponential"),
    (f"""%z = stablehlo.complex %a, %a : {c('tensor<4xT>')}
     %e = stablehlo.divide %z, %z : {c('tensor<4xT>')}
     %r = stablehlo.real %e : ({c('tensor<4xT>')}) -> tensor<4xf32>
     return %r : tensor<4xf32>""", "stablehlo.divide"),
    # A product of complex values is not the product of their parts: no per-part reduce.
    (f"""%z = stablehlo.complex %a, %a : {c('tensor<4xT>')}
     %zr = stablehlo.constant dense<1.0> : tensor<f32>
     %one = stablehlo.convert %zr : (tensor<f32>) -> tensor<complex<f32>>
     %p = stablehlo.reduce(%z init: %one) applies stablehlo.multiply across dimensions = [0] : ({c('tensor<4xT>')}, tensor<complex<f32>>) -> tensor<complex<f32>>
     %r = stablehlo.real %p : (tensor<complex<f32>>) -> tensor<f32>
     %b = stablehlo.broadcast_in_dim %r, dims = [] : (tensor<f32>) -> tensor<4xf32>
     return %b : tensor<4xf32>""", "stablehlo.reduce"),
])
def test_unmodelled_complex_op_is_unknown_naming_it(body: str, op: str) -> None:
    v = _verify_self(M("(%a: tensor<4xf32>) -> tensor<4xf32>", body))
    assert v.verdict == "unknown" and v.unsupported and v.unsupported[0]["op"] == op, v.reason


def test_complex_entry_argument_is_unknown() -> None:
    text = M(f"(%a: {c('tensor<4xT>')}) -> tensor<4xf32>", f"""
        %r = stablehlo.real %a : ({c('tensor<4xT>')}) -> tensor<4xf32>
        return %r : tensor<4xf32>""")
    v = _verify_self(text)
    assert v.verdict == "unknown" and "entry" in v.reason, v.reason


def test_a_user_pipeline_without_the_pass_still_gets_it(tmp_path: Path) -> None:
    # run_pipeline appends legalize-complex: a real rule never sees a complex value.
    pipe = tmp_path / "p.txt"
    pipe.write_text("inline\n")
    text, _ = CASES["rfft_5"]
    v = verify(text, text, pipeline=str(pipe))
    assert v.verdict == "equivalent" and v.approximations == ["cosine"], v.reason


# The sharded FFT of jax 16909's shape (testdata/bug_patterns/fft.*): the FFT dim sharded,
# XLA's partitioner all-gathers it; the bug twin keeps the wrong quarter of the result.

def test_sharded_fft_is_equivalent() -> None:
    v = verify(DATA / "fft.ref.mlir", DATA / "fft.partitioned.mlir")
    assert v.verdict == "equivalent", v.reason
    assert v.approximations == ["cosine"] and not v.unsupported


def test_sharded_fft_bug_is_confirmed_on_xla() -> None:
    v = verify(DATA / "fft.ref.mlir", DATA / "fft.wrong_slice.partitioned.mlir")
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes"
    assert any(r.backend == "xla" and r.confirmed for r in c.replay), c.replay


def test_sharded_fft_bug_at_a_larger_batch_is_confirmed_on_xla() -> None:
    # fft_big: (64, 256); the shrinker pins the FFT's dims, the bug is found at these sizes.
    v = verify(DATA / "fft_big.ref.mlir", DATA / "fft_big.wrong_slice.partitioned.mlir")
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes"
