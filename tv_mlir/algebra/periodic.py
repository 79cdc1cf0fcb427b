"""Whether own terms read an integer free constant x only through its residue mod some M,
shown from their structure: the proof by cases (prove/cases.py) may then enumerate M
consecutive values of x instead of its whole range (docs/cases.md, "Periodic atoms").

A ring buffer's slot `pos % W` is what makes this common: jnp's `%` on an int32 `pos`
known to be >= 0 is `pos - W * idiv(pos, W)` in the store (the Euclidean division of
SMT-LIB), and every cache row, mask and score reads `pos` only through it. Over a
position range of 1000 there are 1000 cases; over the residues there are W.

The argument. Every node of the store is a function of its arguments (its kind and data
are fixed), so a node whose arguments are all functions of r = x mod M (and of other free
constants) is one too. The base cases, for an integer polynomial A = a x + B with a an
integer and B free of x, and k a nonzero integer constant:
- `imod(A, k)` (Euclidean: A - k idiv(A, k), in 0..|k|-1) has period |k| in x, since
  A(x + k) = A(x) + a k and a k is a multiple of k;
- a polynomial in which x occurs only as sum_M c_M x M + sum_M e_M d M with d = idiv(A, k)
  and e_M a = -k c_M for every monomial M (free of x and d): putting x = (r + k d - B) / a,
  r = imod(A, k), the d terms cancel and it is a polynomial in r, the M and B (`_matched`;
  jnp's `y * (pos % 16)` expands to y pos - 16 y idiv(pos, 16)).
Anything else that reads x (x itself, x squared, idiv(x, k) on its own, a compare of x
with a constant) is not periodic: None. Periods combine by their least common multiple,
and past `limit` the answer is None (too many cases)."""
from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

from tv_mlir.algebra.term import IDIV, IMOD, INT, POLY, VAR, Term, TermStore

# False only in the tests: x itself counts as periodic (a read outside any residue is
# ignored), the loosening that must let a bug twin through.
BARE_READS_BREAK = True


def period(store: TermStore, roots: Iterable[Term], x: Term, limit: int) -> int | None:
    """The least M <= limit such that every root is, by the module's rules, a function of
    x mod M and of other free constants (1: no root reads x); None when none is shown.
    `x` is the free constant (a VAR node, or its `1 * x` polynomial)."""
    var = x.leaf if x.kind == POLY and x.leaf is not None else x
    assert var.kind == VAR, "a period is asked of a free constant"
    bit = store.free_mask(var)
    memo: dict[int, int | None] = {}
    return _lcm((_period(store, root, var, bit, limit, memo) for root in roots), 1, limit)


def _lcm(periods: Iterable[int | None], out: int, limit: int) -> int | None:
    """The lcm of `out` and the periods; None at the first None or past `limit`."""
    for p in periods:
        if p is None:
            return None
        out = math.lcm(out, p)
        if out > limit:
            return None
    return out


def _period(store: TermStore, root: Term, var: Term, bit: int, limit: int, memo: dict[int, int | None]) -> int | None:
    # Children first with an explicit stack: selects nest as deep as a dimension is long.
    # Each node's parts (`_parts`: what its period is made of) are read once, on the way down.
    parts: dict[int, tuple[list[Term], int] | None] = {}
    stack: list[Term] = [root]
    while stack:
        u = stack[-1]
        if u.id in memo:
            stack.pop()
            continue
        if not store.free_mask(u) & bit:
            memo[u.id] = 1  # no x below (the filter has no false negatives)
        elif u.id == var.id:
            memo[u.id] = None if BARE_READS_BREAK else 1  # x itself, outside a residue
        elif u.id not in parts:
            parts[u.id] = found = _parts(u, var)
            stack.extend(a for a in (found[0] if found is not None else ()) if a.id not in memo)
            continue
        else:
            found = parts[u.id]
            memo[u.id] = None if found is None else _lcm((memo.get(a.id) for a in found[0]), found[1], limit)
        stack.pop()
    return memo[root.id]


def _parts(u: Term, var: Term) -> tuple[list[Term], int] | None:
    """(the subterms u's period is made of, the period of what u itself matches); None when
    u reads x bare. A matched residue's dividend and quotient are not among the subterms:
    an `imod` of A linear in x, or an integer polynomial `_matched` reads; any other node
    is made of its arguments."""
    if u.kind == IMOD:
        k = _residue(u.args[0], u.args[1], var)
        if k is not None:
            return [], k
    if u.kind == POLY and u.sort == INT:
        return _matched(u, var)
    return list(u.args), 1


def dividends(nodes: Iterable[Term]) -> set[int]:
    """The free constants that occur linearly in the dividend of an `idiv` or `imod` by a
    constant among the nodes: the only ones a period above 1 can be shown for."""
    out: set[int] = set()
    for u in nodes:
        if u.kind in (IDIV, IMOD) and u.args[1].const and u.args[0].kind == POLY:
            out.update(m[0][0] for m, _ in u.args[0].data if len(m) == 1 and m[0][1] == 1)
    return out


Monomial = tuple[tuple[int, int], ...]


def _matched(u: Term, var: Term) -> tuple[list[Term], int] | None:
    """For an integer polynomial u: the atoms it reads besides a residue, and the residue's
    period; None when x stays bare.

    u = sum_M cx_M x M + sum_M cd_M d M + R (M monomials free of x and d, R the monomials
    with neither) with d = idiv(A, k), A = a x + B. Put x = (r + k d - B) / a, r = imod(A, k):
    the d terms cancel exactly when cd_M a = -k cx_M for every M, and then u is a
    polynomial in r (period |k|), the M, R and B. x squared, or d without its x partner,
    is not matched."""
    nodes = u.store.nodes
    with_x: dict[Monomial, Fraction | int] = {}
    others: list[tuple[Monomial, Fraction | int]] = []
    for m, c in u.data:
        e = dict(m).get(var.id)
        if e is None:
            others.append((m, c))
        elif e != 1:
            return None
        else:
            with_x[tuple(f for f in m if f[0] != var.id)] = c
    if not with_x:
        return [nodes[a] for m, _ in others for a, _ in m], 1
    for d in u.args:
        if d.kind != IDIV:
            continue
        k = _residue(d.args[0], d.args[1], var)
        if k is None:
            continue
        a_x = next(c for m, c in d.args[0].data if m == ((var.id, 1),))
        kk = int(d.args[1].const)  # type: ignore[arg-type]  # _residue: an integer
        with_d: dict[Monomial, Fraction | int] = {}
        rest: list[Monomial] = []
        for m, c in others:
            e = dict(m).get(d.id)
            if e is None:
                rest.append(m)
            elif e != 1:
                break
            else:
                with_d[tuple(f for f in m if f[0] != d.id)] = c
        else:
            if with_d.keys() == with_x.keys() and all(with_d[m] * a_x == -kk * c for m, c in with_x.items()):
                keep = [nodes[a] for m in [*with_x, *rest] for a, _ in m]
                return keep, k
    if not BARE_READS_BREAK:  # the tests' loosening: x read bare as if it were not read
        return [nodes[a] for m, _ in others for a, _ in m] + [nodes[a] for m in with_x for a, _ in m], 1
    return None


def _residue(a: Term, k: Term, var: Term) -> int | None:
    """|k| when `imod(a, k)` is periodic in x with period |k|: k a nonzero integer constant,
    a an integer polynomial a1 x + B with a1 a nonzero integer and B free of x."""
    kc = k.const
    if kc is None or kc == 0 or Fraction(kc).denominator != 1 or a.kind != POLY or a.sort != INT:
        return None
    store = a.store
    bit = store.free_mask(var)
    coeff: Fraction | int = 0
    for m, c in a.data:
        if m == ((var.id, 1),):
            coeff = c
        elif any(store.free_mask(store.nodes[i]) & bit and _mentions(store.nodes[i], var) for i, _ in m):
            return None
    if coeff == 0 or Fraction(coeff).denominator != 1:
        return None
    return abs(int(kc))


def _mentions(t: Term, var: Term) -> bool:
    """Whether x occurs under t (the bloom filter may say so falsely)."""
    if t.id == var.id:
        return True
    return any(u.id == var.id for u in t.store.walk([t]))
