"""stablehlo.rng_bit_generator: random bits as a function of the ui64 state operand.

The bits are a function of the state alone (equal states give equal bits, in one run and
across runs; XLA shows it), so each output word is an uninterpreted function of the state's
32-bit words and the word's place in the stream: two draws from equal states are equal
terms, and a device that draws its local shape from the shared state gets the first words
of the global draw (not its own block), as on XLA. The functions' numeric values are XLA's
generators bit for bit (`tv_mlir.algebra.prng`), so fingerprints and replays are XLA's
numbers. The new state is exact integer arithmetic. What XLA:CPU does, measured
(tests/test_ops_xla_more.py):

- PHILOX (and DEFAULT, which is PHILOX on XLA:CPU), state (s0, s1) or (s0, s1, s2): key s0,
  128-bit counter s1 + 2**64 s0 (two words) or s1 + 2**64 s2 (three words). u32 word j of
  the stream is word j % 4 of Philox-4x32-10 at counter + j // 4; an n-element ui32 draw is
  words 0 .. n-1 in row-major order, a ui64 element e is words 2e (low) and 2e + 1 (high), a
  ui8 / ui16 element the low bits of word e. The counter advances by the blocks used,
  ceil(n / 4) (ceil(n / 2) for ui64): two words keep s0 and wrap s1 (the carry is lost,
  though a draw's own blocks carry into s0), three words carry into s2.
- THREE_FRY, state (s0, s1) only: key s0, 64-bit counter s1. A ui64 element e is
  ThreeFry-2x32 at s1 + e (word 0 low, word 1 high); a ui32 draw halves its first even
  dimension (else its largest, rounded up), the element at position p there being word p % 2
  at s1 + the row-major index of p // 2 in the halved shape. The state advances by the
  counters used.

Only unsigned outputs are modelled: XLA:CPU hands back an unsigned buffer for a signed or
float result type (the HLO verifier accepts it), so what later ops read there is not
established."""
from __future__ import annotations

import math

import numpy as np

from tv_mlir.algebra import Algebra, Kind
from tv_mlir.ir import Op, TensorType
from tv_mlir.semantics.common import OpContext, Rule, unsupported

I = Kind.INT
_WORD = 1 << 32


def _const(alg: Algebra, values: np.ndarray) -> np.ndarray:
    return alg.constant(np.asarray(values, dtype=np.int64), I)


def _mod_word(alg: Algebra, x: np.ndarray) -> np.ndarray:
    """x mod 2**32 in [0, 2**32), from the truncating remainder."""
    word = alg.full(x.shape, _WORD, I)
    r = alg.rem(x, word, I)
    return alg.select(alg.compare("LT", r, alg.full(x.shape, 0, I), I, False), alg.add(r, word, I), r, I)


def _words(alg: Algebra, state: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each state word as its (low, high) 32-bit halves, scalars (0-d arrays). Exact for a
    ui64 held as its unsigned value (symbolic) and as its int64 bits (numeric) alike: floor
    division and the remainder mod 2**32 read the two's complement bits of a negative x."""
    out = []
    for k in range(state.shape[0]):
        x = state[k:k + 1]
        low = _mod_word(alg, x)
        high = _mod_word(alg, alg.div(alg.sub(x, low, I), alg.full(x.shape, _WORD, I), I))  # exact division
        out.append((low.reshape(()), high.reshape(())))
    return out


def _real(alg: Algebra, x: np.ndarray) -> np.ndarray:
    return alg.convert(x, TensorType(x.shape, "ui32"), TensorType(x.shape, "f64"))


def _words_of(alg: Algebra, name: str, scalars: list[np.ndarray], per_element: list[np.ndarray]) -> np.ndarray:
    """The 32-bit words uf(name)(scalars..., per_element...) over per_element's shape: the
    function's real value made an integer in [0, 2**32) by XLA's saturating conversion
    (so the symbolic result is an integer of the word's range whatever the function is)."""
    shape = per_element[0].shape
    args = [_real(alg, np.broadcast_to(s, shape).copy()) for s in scalars] + [_real(alg, _const(alg, p))
                                                                              for p in per_element]
    value = alg.uf(name, args)
    return alg.convert(value, TensorType(shape, "f64"), TensorType(shape, "ui32"))


def _add_u64(alg: Algebra, low: np.ndarray, high: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low + 2**32 high) + n for 0 <= n < 2**32, by 32-bit words: the new low and high
    words and the carry out of 64 bits (0 or 1). Word arithmetic keeps every value in
    [0, 2**33], where the numeric algebra's int64 and the symbolic integers agree."""
    word = alg.full((), _WORD, I)
    one, zero = alg.full((), 1, I), alg.full((), 0, I)
    t = alg.add(low, alg.full((), n, I), I)
    c1 = alg.select(alg.compare("GE", t, word, I, False), one, zero, I)
    lo = alg.sub(t, alg.mul(c1, word, I), I)
    u = alg.add(high, c1, I)
    c2 = alg.select(alg.compare("GE", u, word, I, False), one, zero, I)
    hi = alg.sub(u, alg.mul(c2, word, I), I)
    return lo, hi, c2


def _u64(alg: Algebra, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """low + 2**32 high as a ui64 element (the numeric algebra's int64 wraps to its bits)."""
    total = alg.add(low, alg.mul(high, alg.full(np.shape(high), _WORD, I), I), I)
    return alg.wrap(total, TensorType(np.shape(total), "ui64"))


def _state(state: np.ndarray, parts: list[np.ndarray]) -> np.ndarray:
    """The new state: the key word kept, then the new counter words."""
    return np.concatenate([state[0:1]] + [np.reshape(p, (1,)) for p in parts])


def _shaped(alg: Algebra, words32: np.ndarray, out: TensorType, shape: tuple[int, ...]) -> np.ndarray:
    return alg.wrap(words32.reshape(shape), TensorType(shape, out.dtype))


def _philox(alg: Algebra, op: Op, state: np.ndarray, out: TensorType) -> list[np.ndarray]:
    ws = _words(alg, state)
    key = [ws[0][0], ws[0][1]]
    high = ws[0] if state.shape[0] == 2 else ws[2]
    counter = [ws[1][0], ws[1][1], high[0], high[1]]
    n = math.prod(out.shape)
    wide = out.bit_width == 64
    stream = np.arange(2 * n if wide else n, dtype=np.int64)
    words = _words_of(alg, "philox_u32", key + counter, [stream])
    if wide:
        bits = _u64(alg, words[0::2], words[1::2]).reshape(out.shape)
    else:
        bits = _shaped(alg, words, out, out.shape)
    blocks = -(-len(stream) // 4)
    lo, hi, carry = _add_u64(alg, ws[1][0], ws[1][1], blocks)
    s1 = _u64(alg, lo, hi)
    if state.shape[0] == 2:
        return [_state(state, [s1]), bits]
    s2 = alg.wrap(alg.add(state[2:3], np.reshape(carry, (1,)), I), TensorType((1,), "ui64"))
    return [_state(state, [s1, s2]), bits]


def threefry_halves(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int]:
    """For a ui32 ThreeFry draw of `shape`: each element's counter offset h and word w, and
    the number of counters the draw uses."""
    if not shape:
        return np.zeros((), np.int64), np.zeros((), np.int64), 1
    even = [i for i, d in enumerate(shape) if d % 2 == 0]
    split = even[0] if even else max(range(len(shape)), key=lambda i: (shape[i], -i))
    half = list(shape)
    half[split] = -(-shape[split] // 2)
    idx = list(np.indices(shape, dtype=np.int64))
    w = idx[split] % 2
    idx[split] = idx[split] // 2
    h = np.ravel_multi_index(tuple(idx), tuple(half)) if math.prod(shape) else np.zeros(shape, np.int64)
    return np.asarray(h, np.int64), w, math.prod(half)


def _threefry(alg: Algebra, op: Op, state: np.ndarray, out: TensorType) -> list[np.ndarray]:
    ws = _words(alg, state)
    scalars = [ws[0][0], ws[0][1], ws[1][0], ws[1][1]]
    if out.bit_width == 64:
        e = np.arange(math.prod(out.shape), dtype=np.int64).reshape(out.shape)
        low = _words_of(alg, "threefry_u32", scalars, [e, np.zeros_like(e)])
        high = _words_of(alg, "threefry_u32", scalars, [e, np.ones_like(e)])
        bits, used = _u64(alg, low, high), e.size
    else:
        h, w, used = threefry_halves(out.shape)
        bits = _shaped(alg, _words_of(alg, "threefry_u32", scalars, [h, w]), out, out.shape)
    lo, hi, _ = _add_u64(alg, ws[1][0], ws[1][1], used)
    return [_state(state, [_u64(alg, lo, hi)]), bits]


def _rng_bit_generator(ctx: OpContext, op: Op, args: list[np.ndarray]) -> list[np.ndarray]:
    st, out = ctx.operand_types[0], op.result_types[1]
    algorithm = str(op.attrs.get("rng_algorithm", "DEFAULT")).rsplit(".", 1)[-1].upper()
    if st.dtype != "ui64" or len(st.shape) != 1:
        raise unsupported(op, f"{op.name} with a state of type {st.dtype}{list(st.shape)}: XLA takes a ui64 vector")
    if not out.is_unsigned or out.bit_width not in (8, 16, 32, 64):
        raise unsupported(op, f"{op.name} into {out.dtype}: only unsigned integer bits are modelled "
                          "(XLA:CPU returns an unsigned buffer for a signed or float result type)")
    state = args[0] if ctx.alg.symbolic else np.asarray(args[0]).astype(np.int64)  # ui64 as its int64 bits
    if algorithm in ("DEFAULT", "PHILOX") and st.shape[0] in (2, 3):
        return _philox(ctx.alg, op, state, out)
    if algorithm == "THREE_FRY" and st.shape[0] == 2:
        return _threefry(ctx.alg, op, state, out)
    raise unsupported(op, f"{op.name} with algorithm {algorithm} and a state of {st.shape[0]} words "
                      "(XLA:CPU: PHILOX/DEFAULT take 2 or 3, THREE_FRY 2)")


RULES: dict[str, Rule] = {"stablehlo.rng_bit_generator": _rng_bit_generator}
