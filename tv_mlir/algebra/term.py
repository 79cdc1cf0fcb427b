"""Hash-consed terms of the project's own (the representation under the fast symbolic core,
issue 11; not yet used by the verifier: `SymbolicAlgebra` still builds z3 terms).

Why: building a z3 term from Python costs microseconds per node (wrapper objects,
reference counting); the verifier builds millions of them for values that mostly close
by normal form alone. Here a term is a `Term` object made once per distinct structure by
a `TermStore` (one per proof run: no global state): structurally equal terms are the same
object, so equality is identity and the id is a dict key.

Real terms are kept in polynomial normal form as they are built: a real term is a `POLY`
node whose data is a sorted tuple of (monomial, coefficient), a monomial a sorted tuple of
(atom id, exponent), and the coefficients exact `Fraction`s. Atoms are the real terms that
are not polynomials of others: variables, selects, uninterpreted functions, reciprocals of
non-constant terms, floors, integer-to-real conversions, and products too large to expand
(past `EXPAND_LIMIT` monomials a product stays an opaque atom: sound, only less normal).
So two real terms that are equal as polynomials over their atoms are the same object.
Integer terms are polynomials with integer coefficients over integer atoms in the same
way; Booleans are folded to Python bools where they are constant, comparisons are made of
a polynomial against 0, scaled so that its leading coefficient is 1 (EQ) or +-1 (LT/LE)
(an int polynomial: divided by the gcd of its coefficients, EQ's leading one made positive).

`to_z3` (module `term_z3`) translates a term once per query, with a cache."""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

# Node kinds.
POLY = "poly"      # real or int polynomial over atoms; data: ((monomial, coeff), ...)
VAR = "var"        # free constant; data: name
ITE = "ite"        # args: (cond, then, else), then/else real or int polys
UF = "uf"          # uninterpreted function; data: name; args: polys
EXP = "exponential"  # the UF whose products combine (`TermStore._exps`)
INV = "inv"        # 1/x of a non-constant real poly x (division by 0: see `div`)
FLOOR = "floor"    # floor of a real poly, as a real
TO_REAL = "to_real"  # an int poly as a real
TO_INT = "to_int"  # floor of a real poly, as an int
IDIV = "idiv"      # Euclidean division of int polys (SMT-LIB div)
IMOD = "imod"      # Euclidean remainder (SMT-LIB mod)
PROD = "prod"      # a product of polys kept unexpanded; args: the factors
BITS = "bits"      # a bitwise op on ints of a width; data: (op, width, signed)
BVAR = "bvar"      # Boolean free constant; data: name
AND = "and"        # args: sorted, flattened, at least 2
OR = "or"
NOT = "not"
CMP = "cmp"        # data: "lt0" | "le0" | "eq0"; args: (poly,)
BITE = "bite"      # Boolean select: args (cond, then, else)
BUF = "buf"        # Boolean-valued uninterpreted function; data: name
DEFER = "defer"    # an int term built only when read (an IEEE class); data: its rule's name; args: operands
DEFERRED = "deferred"  # TermStore.caches key: a DEFER rule's name -> (store, name, args) -> the int term or int

REAL, INT, BOOL = "real", "int", "bool"

EXPAND_LIMIT = 4096  # monomials a product may expand to before it stays a `PROD` atom

Monomial = tuple[tuple[int, int], ...]
Coeff = int | Fraction  # an int where the value is integral: int arithmetic is much cheaper
PolyData = tuple[tuple[Monomial, Coeff], ...]


# The size of the terms one store may hold, counted as nodes plus polynomial monomials (a
# node or a monomial is a few hundred bytes at most): past it a proof is stopped with an
# `unknown`, not by the machine running out of memory.
MAX_TERMS = 8_000_000


class TermBudget(Exception):
    """More terms than the store's budget allows (the whole proof's, or a scoped one)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"symbolic terms past the size budget of {limit} (nodes and monomials)")
        self.limit = limit


class Term:
    """One node, made only by a `TermStore`: equal structure, same object."""

    __slots__ = ("id", "kind", "sort", "args", "data", "store", "const", "leaf", "mask", "__weakref__")

    def __init__(self, id_: int, kind: str, sort: str, args: tuple[Term, ...], data: Any, store: TermStore,
                 const: Fraction | None = None, leaf: Term | None = None) -> None:
        self.id = id_
        self.kind = kind
        self.sort = sort
        self.args = args
        self.data = data
        self.store = store  # the store that made it: the term layer builds new terms from any term
        # Read on every element the sweep touches, so worked out once here:
        self.const = const  # a constant polynomial's value
        self.leaf = leaf  # the free constant (VAR atom) a `1 * var` polynomial is; a BVAR itself
        # A bloom filter of the free constants under the term (`free_mask`), worked out on
        # first use: most terms are never substituted into.
        self.mask: int | None = None

    def __repr__(self) -> str:
        return f"Term#{self.id}({self.kind}, {self.sort})"


Bool = bool | Term  # a folded Boolean or a BOOL term


@dataclass(eq=False)
class TermStore:
    """Makes and interns terms; one per proof run."""

    def __repr__(self) -> str:
        return f"TermStore({len(self.nodes)} terms)"

    nodes: list[Term] = field(default_factory=list)
    caches: dict[str, Any] = field(default_factory=dict)  # per-store helpers (the z3 translator)
    _intern: dict[tuple[Any, ...], Term] = field(default_factory=dict)
    _fresh: int = 0
    # Known ranges of integer atoms (cut variables whose definitions bound them, such as a
    # clamped index): comparisons they decide fold as they are built. Bounds are ints or
    # +-inf floats.
    bounds: dict[int, tuple[int | float, int | float]] = field(default_factory=dict)
    # Narrow ranges of cut points (a clamped index, a flag) from their definitions' range
    # analysis: read by range analysis (`intervals`: no wrap where no overflow) and by
    # canonical guards (`univariate`), never to fold comparisons (see terms.record_range).
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)
    _negated: dict[int, Term] = field(default_factory=dict)
    _atom_polys: dict[int, Term] = field(default_factory=dict)  # atom id -> its polynomial 1 * atom
    _compared: dict[tuple[str, int, int], Bool] = field(default_factory=dict)
    _compared_bounds: int = 0  # how many known bounds `_compared` was made with
    _cmps: dict[tuple[str, int], Bool] = field(default_factory=dict)  # (op, difference id) -> `_cmp`
    _cmps_bounds: int = 0  # how many known bounds `_cmps` was made with
    size: int = 0  # nodes made plus the monomials of the polynomials among them
    limit: int = MAX_TERMS  # `TermBudget` when `size` passes it
    _uni: Any = None  # the `univariate.Univariate` of this store, made on first use
    # The atoms that are exp(x) (`uf` of EXP): a monomial with two of them is one (`_exps`).
    _exp_atoms: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        from tv_mlir.algebra.univariate import Univariate  # it reads this module's node kinds
        self._uni = Univariate(self)

    @contextmanager
    def budget(self, extra: int) -> Iterator[None]:
        """At most `extra` more size inside the block (and never past the store's limit):
        a check that may blow up (an expansion) stops with `TermBudget` instead."""
        old = self.limit
        self.limit = min(old, self.size + extra)
        try:
            yield
        finally:
            self.limit = old

    def close(self) -> None:
        """The proof this store served is over. Its tables tie every term to the store
        (`nodes` and the interning dicts hold the terms, each term holds the store): a
        cycle only a full collection frees, after walking every term, and only once the
        object arrays that also hold them (which the collector cannot see into) are gone.
        Without the tables the terms are freed by reference counting when their last user
        goes. A term made after this would reuse an old id, so making one raises
        `TermBudget` (the limit is below any size)."""
        self.limit = -1
        self.nodes = []
        self._intern = {}
        self.caches = {}
        self._negated, self._atom_polys, self._compared, self._cmps = {}, {}, {}, {}
        self.bounds, self.ranges = {}, {}
        self._uni = None

    # -- interning -----------------------------------------------------------
    def _mk(self, kind: str, sort: str, args: tuple[Term, ...] = (), data: Any = None) -> Term:
        key = (kind, sort, tuple([a.id for a in args]) if args else (), data)
        t = self._intern.get(key)
        if t is None:
            self.size += 1
            if self.size > self.limit:
                raise TermBudget(self.limit)
            t = Term(len(self.nodes), kind, sort, args, data, self)
            if kind == BVAR:
                t.leaf = t
            self.nodes.append(t)
            self._intern[key] = t
        return t

    def _poly(self, sort: str, terms: dict[Monomial, Coeff], products: bool = True) -> Term:
        # The hot path of every arithmetic op: the key is the normal form itself, and the
        # atoms (the node's args) are worked out only for a polynomial not seen before.
        # products=False: every monomial of `terms` is one of an interned polynomial's
        # (a sum, a scaling), which holds at most one exp factor already (`_exps`).
        if products and self._exp_atoms and sort == REAL:
            terms = self._exps(terms)
        # One comprehension (most coefficients are ints): zero ones dropped, integral
        # Fractions made ints (`_coeff`, inlined).
        items = [(m, c) if type(c) is not Fraction or c.denominator != 1 else (m, c.numerator)
                 for m, c in terms.items() if c]
        items.sort()
        data: PolyData = tuple(items)
        key = (POLY, sort, data)
        t = self._intern.get(key)
        if t is None:
            t = self._new_poly(sort, data)
            self._intern[key] = t
        return t

    def _new_poly(self, sort: str, data: PolyData) -> Term:
        self.size += 1 + len(data)
        if self.size > self.limit:
            raise TermBudget(self.limit)
        if len(data) == 1:  # one monomial: its atoms are sorted and distinct already
            atoms = [a for a, _ in data[0][0]]
        else:
            atoms = sorted({a for m, _ in data for a, _ in m})
        nodes = self.nodes
        const: Fraction | None = None
        leaf: Term | None = None
        if not data:
            const = Fraction(0)
        elif len(data) == 1:
            (m, c), = data
            if not m:
                const = Fraction(c)
            elif c == 1 and len(m) == 1 and m[0][1] == 1 and nodes[m[0][0]].kind == VAR:
                leaf = nodes[m[0][0]]
        t = Term(len(nodes), POLY, sort, tuple([nodes[a] for a in atoms]), data, self, const, leaf)
        nodes.append(t)
        return t

    def _exps(self, terms: dict[Monomial, Coeff]) -> dict[Monomial, Coeff]:
        """exp(x)^i * exp(y)^j is exp(i*x + j*y), so a monomial has at most one exp factor,
        with exponent 1: the identity of the real exponential that an online softmax
        rests on (flash and ring attention rescale a partial sum by exp(m_old - m_new), so
        exp(s - m_old) * exp(m_old - m_new) must be exp(s - m_new)). An identity of exp
        for all reals, so normalising by it only makes equal terms of equal values; the
        fingerprints' other function (`prove.fingerprints.OTHER_FUNCS`) keeps it."""
        # Asked of every real polynomial once an exp atom exists: a monomial of at most one
        # atom to the first power holds at most one exp factor, and most are such.
        for m in terms:
            if len(m) > 1 or (m and m[0][1] > 1):
                break
        else:
            return terms
        exps = self._exp_atoms
        out: dict[Monomial, Coeff] | None = None
        for k, (m, c) in enumerate(terms.items()):
            n_exp = 0
            for a, e in m:
                if a in exps:
                    n_exp += e
            if n_exp < 2:
                if out is not None:
                    prev = out.get(m)
                    out[m] = c if prev is None else prev + c
                continue
            if out is None:
                out = dict(list(terms.items())[:k])
            rest = [(a, e) for a, e in m if a not in exps]
            arg = self.add(*[self.scale(self.nodes[a].args[0], e) for a, e in m if a in exps])
            if arg.const != 0:
                rest.append((self._exp_atom(arg).id, 1))
            m2: Monomial = tuple(sorted(rest))
            prev = out.get(m2)
            out[m2] = c if prev is None else prev + c
        return terms if out is None else out

    def _exp_atom(self, arg: Term) -> Term:
        atom = self._mk(UF, REAL, (arg,), EXP)
        self._exp_atoms.add(atom.id)
        return atom

    def polynomial(self, sort: str, terms: dict[Monomial, Coeff]) -> Term:
        """The polynomial with these monomials and coefficients (read from `terms_of`)."""
        return self._poly(sort, terms)

    def find_polynomial(self, sort: str, terms: dict[Monomial, Coeff]) -> Term | None:
        """`polynomial(sort, terms)` when some term is that polynomial already, else None;
        no new polynomial is made. For look-ups (`CutStore._sum_of_partials`) that mostly
        miss: a polynomial made only to be looked up is never used again, and making it
        (its atoms, its node) cost more than the look-up. The key is `_poly`'s normal
        form, exp factors merged first (which may make exp atoms, as `_poly` does)."""
        if self._exp_atoms and sort == REAL:
            terms = self._exps(terms)
        items = [(m, c) if type(c) is not Fraction or c.denominator != 1 else (m, c.numerator)
                 for m, c in terms.items() if c]
        items.sort()
        return self._intern.get((POLY, sort, tuple(items)))

    def _atom_poly(self, atom: Term) -> Term:
        # By atom id first: an int key hashes much faster than the nested tuple of the
        # polynomial's interning key, and most calls find the polynomial made already.
        t = self._atom_polys.get(atom.id)
        if t is not None:
            return t
        data: PolyData = ((((atom.id, 1),), 1),)
        key = (POLY, atom.sort, data)
        t = self._intern.get(key)
        if t is None:
            # `_new_poly` of one atom, without its general case (every cut variable and
            # every select or function application is made through here).
            self.size += 2
            if self.size > self.limit:
                raise TermBudget(self.limit)
            t = Term(len(self.nodes), POLY, atom.sort, (atom,), data, self, None, atom if atom.kind == VAR else None)
            self.nodes.append(t)
            self._intern[key] = t
        self._atom_polys[atom.id] = t
        return t

    # -- constants and variables ---------------------------------------------
    def real(self, value: int | Fraction) -> Term:
        assert not isinstance(value, float), "constants are exact"
        return self._poly(REAL, {(): value}, False)

    def int_(self, value: int) -> Term:
        return self._poly(INT, {(): value})

    def var(self, name: str, sort: str) -> Term:
        """A free constant of a real or int sort, as a polynomial; BOOL: a Boolean atom."""
        if sort == BOOL:
            return self._mk(BVAR, BOOL, (), name)
        return self._atom_poly(self._mk(VAR, sort, (), name))

    def fresh(self, prefix: str, sort: str) -> Term:
        """A free constant no other term names (cut points)."""
        self._fresh += 1
        name = f"{prefix}!{self._fresh}"
        key = (BVAR if sort == BOOL else VAR, sort, (), name)
        while key in self._intern:  # a name some input took (`var`): the next one
            self._fresh += 1
            name = f"{prefix}!{self._fresh}"
            key = (key[0], sort, (), name)
        if sort == BOOL:
            return self._mk(BVAR, BOOL, (), name)
        # One per cut point (hundreds of thousands): the atom and its polynomial `1 * atom`
        # are made directly, as `_mk` and `_atom_poly` would, without their lookups (a new
        # atom has no polynomial yet).
        self.size += 3
        if self.size > self.limit:
            raise TermBudget(self.limit)
        nodes = self.nodes
        atom = Term(len(nodes), VAR, sort, (), name, self)
        nodes.append(atom)
        self._intern[key] = atom
        data: PolyData = ((((atom.id, 1),), 1),)
        t = Term(len(nodes), POLY, sort, (atom,), data, self, None, atom)
        nodes.append(t)
        self._intern[(POLY, sort, data)] = t
        self._atom_polys[atom.id] = t
        return t

    # -- reading polynomials ---------------------------------------------------
    @staticmethod
    def terms_of(p: Term) -> PolyData:
        assert p.kind == POLY, p
        return p.data

    @staticmethod
    def constant(p: Term) -> Fraction | None:
        """The value of a constant polynomial, else None."""
        return p.const

    def atom_of(self, p: Term) -> Term | None:
        """The atom a polynomial is (1 * atom), else None."""
        data = p.data
        if p.kind == POLY and len(data) == 1 and data[0][1] == 1 and len(data[0][0]) == 1 and data[0][0][0][1] == 1:
            return self.nodes[data[0][0][0][0]]
        return None

    # -- arithmetic --------------------------------------------------------------
    def add(self, *ps: Term) -> Term:
        # Sums below start a monomial at its first coefficient, not at 0 + c: int + Fraction
        # takes Fraction's slow reflected path.
        acc: dict[Monomial, Coeff] = {}
        for p in ps:
            for m, c in self.terms_of(p):
                prev = acc.get(m)
                acc[m] = c if prev is None else prev + c
        return self._poly(ps[0].sort, acc, False)

    def scale(self, p: Term, k: Fraction | int) -> Term:
        assert not isinstance(k, float), "coefficients are exact"
        if type(k) is not int:
            k = _coeff(Fraction(k))
        if k == 1:
            return p
        return self._poly(p.sort, {m: c * k for m, c in self.terms_of(p)}, False)

    def neg(self, p: Term) -> Term:
        hit = self._negated.get(p.id)
        if hit is None:
            hit = self._negated[p.id] = self.scale(p, -1)
        return hit

    def sub(self, a: Term, b: Term) -> Term:
        return self.add(a, self.neg(b))

    def mul(self, a: Term, b: Term) -> Term:
        # A constant factor scales by its coefficient as stored (an int where integral),
        # not by `const` (always a Fraction, whose arithmetic is much slower).
        if a.const is not None:
            return self.scale(b, a.data[0][1] if a.data else 0)
        if b.const is not None:
            return self.scale(a, b.data[0][1] if b.data else 0)
        ta, tb = self.terms_of(a), self.terms_of(b)
        if len(ta) == 1 and len(tb) == 1:  # monomial times monomial: most products of cut points
            (ma, ca), (mb, cb) = ta[0], tb[0]
            return self._poly(a.sort, {_mono_mul(ma, mb): ca * cb})
        if len(ta) * len(tb) > EXPAND_LIMIT:
            x, y = (a, b) if a.id <= b.id else (b, a)
            return self._atom_poly(self._mk(PROD, a.sort, (x, y)))
        acc: dict[Monomial, Coeff] = {}
        for ma, ca in ta:
            for mb, cb in tb:
                m = _mono_mul(ma, mb)
                prev = acc.get(m)
                acc[m] = ca * cb if prev is None else prev + ca * cb
        return self._poly(a.sort, acc)

    def sum_of_products(self, pairs: Iterable[tuple[Term, Term]], sort: str) -> Term:
        """sum(a * b for a, b in pairs): the same term as `sum` of `mul`s, without interning
        a polynomial per product (the inner loop of every contraction)."""
        acc: dict[Monomial, Coeff] = {}
        get = acc.get
        for a, b in pairs:
            ta, tb = a.data, b.data
            if a.kind != POLY or b.kind != POLY:
                raise ValueError("products of polynomials only")
            if len(ta) == 1 and len(tb) == 1:  # monomial times monomial: most products of cut points
                (ma, ca), = ta
                (mb, cb), = tb
                if len(ma) == 1 and len(mb) == 1:  # atom times atom (`_mono_mul`'s case, inlined)
                    xa, xb = ma[0], mb[0]
                    x, y = xa[0], xb[0]
                    m: tuple[tuple[int, int], ...] = (xa, xb) if x < y else (xb, xa) if y < x else ((x, xa[1] + xb[1]),)
                else:
                    m = _mono_mul(ma, mb)
                prev = get(m)
                acc[m] = ca * cb if prev is None else prev + ca * cb
                continue
            if len(ta) * len(tb) > EXPAND_LIMIT:
                for m, c in self.mul(a, b).data:
                    prev = get(m)
                    acc[m] = c if prev is None else prev + c
                continue
            for ma, ca in ta:
                for mb, cb in tb:
                    m = _mono_mul(ma, mb)
                    prev = get(m)
                    acc[m] = ca * cb if prev is None else prev + ca * cb
        return self._poly(sort, acc)

    def sum(self, ps: Sequence[Term], sort: str) -> Term:
        return self.add(*ps) if ps else (self.real(0) if sort == REAL else self.int_(0))

    def inv(self, p: Term) -> Term:
        """1/p. For a non-constant p an atom; its value at p == 0 is left open, as SMT-LIB's
        division by zero is (the IEEE class of a float quotient says what happens there)."""
        k = self.constant(p)
        if k is not None and k != 0:
            return self.real(Fraction(1) / k)
        data = p.data
        if len(data) == 1 and len(data[0][0]) == 1:
            (((a, e),), c), = data
            if e == 1 and a in self._exp_atoms:  # 1 / (c * exp(x)) is exp(-x) / c
                return self.scale(self._atom_poly(self._exp_atom(self.neg(self.nodes[a].args[0]))),
                                  Fraction(1) / Fraction(c))
        return self._atom_poly(self._mk(INV, REAL, (p,)))

    def div(self, a: Term, b: Term) -> Term:
        return self.mul(a, self.inv(b))

    def floor(self, p: Term) -> Term:
        k = self.constant(p)
        if k is not None:
            return self.real(k.__floor__())
        return self._atom_poly(self._mk(FLOOR, REAL, (p,)))

    def to_real(self, p: Term) -> Term:
        k = self.constant(p)
        if k is not None:
            return self.real(k)
        return self._atom_poly(self._mk(TO_REAL, REAL, (p,)))

    def to_int(self, p: Term) -> Term:
        """Floor of a real, as an int."""
        k = self.constant(p)
        if k is not None:
            return self.int_(k.__floor__())
        return self._atom_poly(self._mk(TO_INT, INT, (p,)))

    def idiv(self, a: Term, b: Term) -> Term:
        """SMT-LIB's Euclidean div; b == 0 is left open like SMT-LIB."""
        ka, kb = self.constant(a), self.constant(b)
        if ka is not None and kb is not None and kb != 0:
            q = int(ka) // int(kb) if kb > 0 else -(int(ka) // -int(kb))
            return self.int_(q)
        return self._atom_poly(self._mk(IDIV, INT, (a, b)))

    def imod(self, a: Term, b: Term) -> Term:
        ka, kb = self.constant(a), self.constant(b)
        if ka is not None and kb is not None and kb != 0:
            return self.int_(int(ka) % abs(int(kb)))
        return self._atom_poly(self._mk(IMOD, INT, (a, b)))

    def bits(self, op: str, width: int, signed: bool, args: Sequence[Term]) -> Term:
        """A bitwise op ("and", "or", "xor", "not") on two's-complement ints of a width."""
        ks = [self.constant(a) for a in args]
        if all(k is not None for k in ks):
            return self.int_(bitwise(op, width, signed, [int(k) for k in ks if k is not None]))
        return self._atom_poly(self._mk(BITS, INT, tuple(args), (op, width, signed)))

    def uf(self, name: str, args: Sequence[Term], sort: str = REAL) -> Term:
        if sort == BOOL:
            return self._mk(BUF, BOOL, tuple(args), name)
        if name == EXP and sort == REAL:
            return self._atom_poly(self._exp_atom(args[0]))
        return self._atom_poly(self._mk(UF, sort, tuple(args), name))

    # -- deferred terms ----------------------------------------------------------
    def deferred(self, name: str, args: Sequence[Term]) -> Term:
        """The int term the rule `name` (registered in `caches[DEFERRED]`) builds from args,
        as one node that stands for it until something reads it (`expand`). Hash-consed
        like any node: the same rule over the same operand terms is one node, which is sound
        because a rule is a function of its operands' terms (docs/architecture.md, round 11)."""
        return self._atom_poly(self._mk(DEFER, INT, tuple(args), name))

    def expand(self, t: Term) -> Term:
        """What a DEFER node (or `1 * node`) stands for: its rule's term over its args."""
        node = self.atom_of(t) if t.kind == POLY else t
        assert node is not None and node.kind == DEFER, t
        memo: dict[int, Term] = self.caches.setdefault(DEFERRED + ".memo", {})
        got = memo.get(node.id)
        if got is None:
            got = memo[node.id] = self._apply_rule(node.data, node.args)
        return got

    def _apply_rule(self, name: str, args: Sequence[Term]) -> Term:
        rules = self.caches.get(DEFERRED) or {}
        if name not in rules:
            raise ValueError(f"no rule {name!r} for a deferred term")
        k = rules[name](self, name, tuple(args))
        return self.int_(k) if isinstance(k, int) else k

    # -- selects -----------------------------------------------------------------
    def ite(self, c: Bool, a: Term, b: Term, canonical: bool = False) -> Term:
        """if c then a else b. canonical=True (the value of a program's select) rebuilds a
        condition over one integer atom from its truth set and joins nested selects; the
        algebra's own selects (IEEE classes, clamps, wraps) keep their conditions as built."""
        if c is True:
            return a
        if c is False or a is b:
            return b
        assert isinstance(c, Term)
        if not canonical:
            if c.kind == NOT:
                c, a, b = c.args[0], b, a
            return self._atom_poly(self._mk(ITE, a.sort, (c, a, b)))
        # An index guard over one integer atom is rebuilt from its truth set, so that two
        # programs' guards of the same rows are one term (module `univariate`).
        c = self._uni.canonical(c)
        if c is True:
            return a
        if c is False:
            return b
        assert isinstance(c, Term)
        if c.kind == NOT:
            c, a, b = c.args[0], b, a
        # Nested guards with a shared other branch are one guard: ite(c, ite(d, x, y), y) is
        # ite(c and d, x, y), and ite(c, x, ite(d, x, y)) is ite(c or d, x, y).
        inner = self.atom_of(a)
        if inner is not None and inner.kind == ITE and inner.args[2] is b:
            return self.ite(self.and_(c, inner.args[0]), inner.args[1], b, canonical=True)
        inner = self.atom_of(b)
        if inner is not None and inner.kind == ITE and inner.args[1] is a:
            return self.ite(self.or_(c, inner.args[0]), a, inner.args[2], canonical=True)
        return self._atom_poly(self._mk(ITE, a.sort, (c, a, b)))

    def bite(self, c: Bool, a: Bool, b: Bool) -> Bool:
        if c is True:
            return a
        if c is False:
            return b
        if a is b:
            return a
        if a is True and b is False:
            return c
        if a is False and b is True:
            return self.not_(c)
        if isinstance(a, bool):
            return self.or_(self.and_(c, a), self.and_(self.not_(c), b))
        if isinstance(b, bool):
            return self.or_(self.and_(c, a), self.and_(self.not_(c), b))
        assert isinstance(c, Term)
        return self._mk(BITE, BOOL, (c, a, b))

    # -- Booleans ----------------------------------------------------------------
    def not_(self, x: Bool) -> Bool:
        if isinstance(x, bool):
            return not x
        if x.kind == NOT:
            return x.args[0]
        return self._mk(NOT, BOOL, (x,))

    def and_(self, *xs: Bool) -> Bool:
        return self._junction(AND, xs)

    def or_(self, *xs: Bool) -> Bool:
        return self._junction(OR, xs)

    def _junction(self, kind: str, xs: Iterable[Bool]) -> Bool:
        absorbing = kind == OR
        parts: dict[int, Term] = {}
        for x in xs:
            if isinstance(x, bool):
                if x is absorbing:
                    return absorbing
                continue
            for y in (x.args if x.kind == kind else (x,)):
                parts[y.id] = y
        for y in parts.values():
            if y.kind == NOT and y.args[0].id in parts:
                return absorbing  # x and not x / x or not x
        if not parts:
            return not absorbing
        if len(parts) == 1:
            return next(iter(parts.values()))
        return self._mk(kind, BOOL, tuple(parts[i] for i in sorted(parts)))

    def xor(self, a: Bool, b: Bool) -> Bool:
        if isinstance(a, bool):
            return self.not_(b) if a else b
        if isinstance(b, bool):
            return self.not_(a) if b else a
        return self.or_(self.and_(a, self.not_(b)), self.and_(self.not_(a), b))

    # -- comparisons -----------------------------------------------------------
    # Comparisons are memoised: the IEEE class logic asks the same ones again and again
    # (is this class NaN? is this divisor 0?) and each builds a difference and scales it.
    def lt(self, a: Term, b: Term) -> Bool:
        return self._compare("lt0", a, b)

    def le(self, a: Term, b: Term) -> Bool:
        return self._compare("le0", a, b)

    def eq(self, a: Term, b: Term) -> Bool:
        if a is b:
            return True
        return self._compare("eq0", a, b)

    def _compare(self, op: str, a: Term, b: Term) -> Bool:
        # A bound noted after a comparison was memoised may decide it now (an input's own
        # range constraints are built before its bounds are known): the memo is only good
        # for the bounds it was made with, like `_cmp`'s.
        if len(self.bounds) != self._compared_bounds:
            self._compared.clear()
            self._compared_bounds = len(self.bounds)
        key = (op, a.id, b.id)
        hit = self._compared.get(key)
        if hit is None:
            hit = self._compared[key] = self._cmp(op, self.sub(a, b))
        return hit

    def _cmp(self, op: str, d: Term) -> Bool:
        # Memoised by the difference too: substitution rebuilds the same comparison in
        # every unfolding step that passes it. New known bounds may decide comparisons
        # made before them (an input's range constraints): they clear the memo.
        if len(self.bounds) != self._cmps_bounds:
            self._cmps.clear()
            self._cmps_bounds = len(self.bounds)
        key = (op, d.id)
        hit = self._cmps.get(key)
        if hit is None:
            hit = self._cmps[key] = self._cmp_new(op, d)
        return hit

    def _cmp_new(self, op: str, d: Term) -> Bool:
        k = self.constant(d)
        if k is not None:
            return {"lt0": k < 0, "le0": k <= 0, "eq0": k == 0}[op]
        data = self.terms_of(d)
        if self.bounds and d.sort == INT and len(data) <= 2:
            decided = self._decided_by_bounds(op, data)
            if decided is not None:
                return decided
        c = data[-1][1]
        if c == 1 and (d.sort != INT or all(type(x) is int for _, x in data)):
            # Already in canonical scale (below): a leading 1 is its own magnitude, and the
            # content of integer coefficients with a leading 1 is 1.
            return self._mk(CMP, BOOL, (d,), op)
        lead = Fraction(c)
        # Canonical scaling: EQ by the leading coefficient; orders by its magnitude only
        # (a negative factor would flip them). An int polynomial keeps integer coefficients
        # (`to_z3` and `substitute` read them as ints): it is divided by their content (gcd
        # of the numerators over lcm of the denominators), for EQ signed like the leading
        # coefficient, instead of by the leading coefficient.
        one = Fraction(1)  # never int / int: that is a float
        if d.sort == INT:
            g = Fraction(math.gcd(*(c.numerator for _, c in data)), math.lcm(*(c.denominator for _, c in data)))
            d = self.scale(d, one / g if op != "eq0" or lead > 0 else -one / g)
        else:
            d = self.scale(d, one / lead if op == "eq0" else one / abs(lead))
        return self._mk(CMP, BOOL, (d,), op)

    def _decided_by_bounds(self, op: str, data: PolyData) -> bool | None:
        """a*x + b < 0 (<= 0, == 0) when the atom x has known bounds that decide it."""
        b: Coeff = 0
        a: Coeff = 0
        atom = None
        for mono, c in data:
            if not mono:
                b = c
            elif len(mono) == 1 and mono[0][1] == 1 and atom is None:
                atom, a = mono[0][0], c
            else:
                return None  # a product, or a second atom (x - y: one atom's bounds do not decide it)
        rng = self.bounds.get(atom) if atom is not None else None
        if rng is None:
            return None
        lo, hi = rng
        ends = [a * lo + b, a * hi + b]  # inf * 0 does not occur: a != 0
        low, high = min(ends), max(ends)
        if op == "lt0":
            return True if high < 0 else False if low >= 0 else None
        if op == "le0":
            return True if high <= 0 else False if low > 0 else None
        return False if low > 0 or high < 0 else (True if low == high == 0 else None)

    # -- walking ---------------------------------------------------------------
    def walk(self, roots: Iterable[Term]) -> Iterator[Term]:
        """Every term under the roots once, children before parents."""
        seen: set[int] = set()
        for root in roots:
            stack: list[tuple[Term, bool]] = [(root, False)]
            while stack:
                t, done = stack.pop()
                if t.id in seen:
                    continue
                if done or not t.args:
                    seen.add(t.id)
                    yield t
                    continue
                stack.append((t, True))
                stack.extend((a, False) for a in t.args if a.id not in seen)

    def substitute(self, t: Term | bool, mapping: dict[int, Term | bool], memo: dict[int, Any] | None = None
                   ) -> Term | bool:
        """t with the atoms (or Boolean atoms) whose ids `mapping` names replaced (a key may
        also be a variable's polynomial, as `var` returns it: it stands for its atom), rebuilt
        bottom-up through the constructors: the result is in normal form again (constants
        fold, polynomials re-expand). A memo shared between calls must come with the same
        mapping."""
        if isinstance(t, bool):
            return t
        memo = {} if memo is None else memo
        # A variable's polynomial (1 * atom) as a key stands for its atom: the atom is what
        # the polynomials containing it refer to.
        for key in list(mapping):
            atom = self.atom_of(self.nodes[key])
            if atom is not None and atom.id not in mapping:
                mapping = {**mapping, atom.id: mapping[key]}
        if not mapping:
            return t
        return self._substitute(t, mapping, memo)

    def _substitute(self, root: Term, mapping: dict[int, Term | bool], memo: dict[int, Any]) -> Any:
        # Subterms that cannot mention a key are kept without a walk (unfolding substitutes
        # a few cut variables into large terms, step after step): a term is made after its
        # subterms, so one older than every key mentions none; and one whose bloom filter
        # of free constants misses every key's bit mentions no free constant among them.
        low = min(mapping)
        kmask = _keys_mask(self.nodes[k] for k in mapping)
        stack: list[tuple[Term, bool]] = [(root, False)]
        while stack:
            t, done = stack.pop()
            i = t.id
            if i in memo:
                continue
            if i in mapping:
                memo[i] = mapping[i]
            elif done:
                memo[i] = self._rebuild(t, memo)
            elif i < low or not t.args or (kmask and not (t.mask if t.mask is not None else self.free_mask(t))
                                             & kmask):
                memo[i] = t
            else:
                stack.append((t, True))
                stack.extend([(a, False) for a in t.args if a.id not in memo])
        return memo[root.id]

    def free_mask(self, t: Term) -> int:
        """A bloom filter of the free constants (VAR, BVAR) under t: the OR of their `_bit`s.
        Worked out once per term, children first, without recursion (terms nest deeply)."""
        m = t.mask
        if m is not None:
            return m
        stack: list[tuple[Term, bool]] = [(t, False)]
        while stack:
            x, done = stack.pop()
            if x.mask is not None:
                continue
            if done or not x.args:
                if x.kind in (VAR, BVAR):
                    x.mask = _bit(x.id)
                else:
                    acc = 0
                    for a in x.args:
                        acc |= a.mask  # type: ignore[operator]  # set: children come first
                    x.mask = acc
                continue
            stack.append((x, True))
            stack.extend((a, False) for a in x.args if a.mask is None)
        return t.mask  # type: ignore[return-value]

    def replace_atoms(self, p: Term, mapping: dict[int, Term]) -> Term:
        """The polynomial p with some of its own atoms (by id) replaced by polynomials, one
        level deep: unlike `substitute`, nothing under the atoms is walked."""
        return self._rebuild(p, {a.id: mapping.get(a.id, a) for a in p.args})

    def _rebuild_poly(self, t: Term, memo: dict[int, Any]) -> Term:
        """The polynomial t with its atoms replaced as `memo` says: each monomial is the
        product of its coefficient and its atoms' replacements (`mul` in turn, so products
        past `EXPAND_LIMIT` stay atoms as they would), the sum of them all. Monomials whose
        atoms all stay, and the products within the limit, are worked out in one dict
        instead of interning a polynomial per partial product (most of a rebuilt
        polynomial is unchanged)."""
        changed = {a.id for a in t.args if memo[a.id] is not a}
        acc: dict[Monomial, Coeff] = {}
        get = acc.get
        for m, c in t.data:
            if len(m) == 1:
                if m[0][0] not in changed:
                    prev = get(m)
                    acc[m] = c if prev is None else prev + c
                    continue
            elif changed.isdisjoint([a for a, _ in m]):
                prev = get(m)
                acc[m] = c if prev is None else prev + c
                continue
            prod: PolyData = (((), c),)
            for atom_id, e in m:
                factor = memo[atom_id]
                if factor.kind != POLY:  # an atom left as it was: its polynomial
                    factor = self._atom_poly(factor)
                for _ in range(e):
                    prod = self._mul_data(t.sort, prod, factor)
            for pm, pc in prod:
                prev = get(pm)
                acc[pm] = pc if prev is None else prev + pc
        return self._poly(t.sort, acc)

    def _mul_data(self, sort: str, a: PolyData, b: Term) -> PolyData:
        """The data of `mul(a, b)` for the polynomial a with data `a` (zero coefficients
        dropped as `_poly` drops them), without interning a unless the product would stay
        an atom (past `EXPAND_LIMIT`): the same normal form `mul` gives."""
        tb = b.data
        if not a or (len(a) == 1 and not a[0][0]):  # a constant: `mul` scales b
            k = a[0][1] if a else 0
            return tb if k == 1 else tuple((m, c * k) for m, c in tb if k)
        if b.const is not None:
            k = tb[0][1] if tb else 0
            return a if k == 1 else tuple((m, c * k) for m, c in a if k)
        if len(a) == 1 and len(tb) == 1:
            (ma, ca), (mb, cb) = a[0], tb[0]
            return ((_mono_mul(ma, mb), ca * cb),)
        if len(a) * len(tb) > EXPAND_LIMIT:
            return self.mul(self._poly(sort, dict(a)), b).data
        acc: dict[Monomial, Coeff] = {}
        get = acc.get
        for ma, ca in a:
            for mb, cb in tb:
                m = _mono_mul(ma, mb)
                prev = get(m)
                acc[m] = ca * cb if prev is None else prev + ca * cb
        return tuple((m, c) for m, c in acc.items() if c)

    def _rebuild(self, t: Term, memo: dict[int, Any]) -> Any:
        args = [memo[a.id] for a in t.args]
        for x, a in zip(args, t.args):  # a loop, not all() over a generator: a hot path
            if x is not a:
                break
        else:
            return t
        k = t.kind
        if k == POLY:
            return self._rebuild_poly(t, memo)
        if k in (VAR, BVAR):
            return t
        # The kinds substitution rebuilds most (selects and their conditions) first.
        if k == ITE:
            # A value select whose guard became one atom's (the sides of a local proof
            # unfolded to a common index) is made canonical now; int selects are mostly the
            # IEEE class lattice's, which gains nothing from it.
            return self.ite(args[0], args[1], args[2], canonical=t.sort == REAL)
        if k == CMP:
            return self._cmp(t.data, args[0])
        if k == AND:
            return self.and_(*args)
        if k == OR:
            return self.or_(*args)
        if k == NOT:
            return self.not_(args[0])
        if k == UF:
            return self.uf(t.data, args, t.sort)
        if k == BUF:
            return self.uf(t.data, args, BOOL)
        if k == INV:
            return self.inv(args[0])
        if k == FLOOR:
            return self.floor(args[0])
        if k == TO_REAL:
            return self.to_real(args[0])
        if k == TO_INT:
            return self.to_int(args[0])
        if k == IDIV:
            return self.idiv(args[0], args[1])
        if k == IMOD:
            return self.imod(args[0], args[1])
        if k == PROD:
            return self.mul(args[0], args[1])
        if k == BITS:
            return self.bits(t.data[0], t.data[1], t.data[2], args)
        if k == BITE:
            return self.bite(args[0], args[1], args[2])
        if k == DEFER:  # the rule over the new operands: what the node stood for, put in
            return self._apply_rule(t.data, args)
        raise ValueError(f"unknown term kind {k}")


def bitwise(op: str, width: int, signed: bool, xs: Sequence[int]) -> int:
    """A bitwise op on ints read as `width`-bit two's complement, result read back as a
    signed or unsigned int of that width."""
    mask = (1 << width) - 1
    if op == "not":
        r = ~xs[0] & mask
    else:
        r = {"and": xs[0] & xs[1], "or": xs[0] | xs[1], "xor": xs[0] ^ xs[1]}[op] & mask
    return r - (1 << width) if signed and r >= 1 << (width - 1) else r


# Bits of the bloom filter of free constants (`TermStore.free_mask`): wide enough that the
# terms of a local proof, which mention a few hundred free constants, rarely fill it.
MASK_LOG = 10  # 1024 bits


def _bit(i: int) -> int:
    """The bloom-filter bit of the free constant with id i (a multiplicative hash: cut
    variables made one after another land on scattered bits)."""
    return 1 << (((i * 0x9E3779B1) & 0xFFFFFFFF) >> (32 - MASK_LOG))


def _keys_mask(keys: Iterable[Term]) -> int:
    """The bloom-filter bits of substitution keys, or 0 (no filtering) when a key is not a
    free constant: a term mentions such a key without mentioning its bit."""
    mask = 0
    for k in keys:
        if k.kind in (VAR, BVAR):
            mask |= _bit(k.id)
        elif k.leaf is not None:  # a variable's polynomial: any term with it has the atom
            mask |= _bit(k.leaf.id)
        else:
            return 0
    return mask


def _coeff(c: Coeff) -> Coeff:
    """One representation per value: integral Fractions become ints."""
    if type(c) is Fraction and c.denominator == 1:
        return c.numerator
    return c


def _mono_mul(a: Monomial, b: Monomial) -> Monomial:
    if not a:
        return b
    if not b:
        return a
    la, lb = len(a), len(b)
    if la == 1 and lb == 1:  # two atoms: the common case of products of cut points
        (x, ex), (y, ey) = a[0], b[0]
        if x == y:
            return ((x, ex + ey),)
        return (a[0], b[0]) if x < y else (b[0], a[0])
    if la == 1 or lb == 1:  # one atom into a sorted monomial (substitution's products)
        if la == 1:
            a, b = b, a
        y, ey = b[0]
        for i, (x, ex) in enumerate(a):
            if x >= y:
                if x == y:
                    return a[:i] + ((x, ex + ey),) + a[i + 1:]
                return a[:i] + b + a[i:]
        return a + b
    acc = dict(a)
    for atom, e in b:
        prev = acc.get(atom)
        acc[atom] = e if prev is None else prev + e
    return tuple(sorted(acc.items()))
