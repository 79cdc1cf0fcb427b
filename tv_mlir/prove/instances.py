"""Proofs by instance: a local proof carries over to every pair of elements that is the
same problem over other free constants.

Why: a tensor's elements are proved one by one, and most of them repeat one proof with
other leaves. Column h of an embedding gradient's all-reduce is row v's case split on the
token ids over the cotangents g[t, h]; every column is the same split over other
cotangents. Unfolding and splitting once per column costs milliseconds per element; a
look-up below costs a fraction of one.

What a local proof of (a, b) shows: a == b holds for all values of the free constants
left once the cut variables it unfolded are replaced by their definitions (cut points are
free constants; a definition is the cut variable's value, so putting it in is an
identity). The checks it runs read, besides the terms, the definitions of integer and
Boolean cut variables (the case split on an index looks through them) and facts the store
keeps per free constant: known bounds and narrow ranges (comparisons fold by them), the
real ranges of short definitions, and the sign a cut point's name carries.

The signature of a term (`_Canon`) is built bottom-up and kept per term for the whole
sweep: a shape number, interned from the node's kind, sort, data and its children's shape
numbers, and the list of free constants it reaches, with the wiring of each child's list
into the node's own. A free constant is written by its facts (never its name); an integer
or Boolean cut variable by the signature of its definition (the case split reads through
it); a real cut variable is a free constant, as the proof leaves it unless it unfolds it.
Equal shape numbers mean one term structure up to a one-to-one renaming of the listed
free constants, by induction on the interned keys (terms are hash-consed, so a structure
with its free constants is one term). A pair's shallow signature (`_pair`) joins its
elements' signatures by the free constants they share. The definitions a proof unfolded
(`_unfolded`) are written after it, each as the position of its variable in the pair's
list of free constants, its definition's shape and the positions of the definition's own
free constants (appended to the list as they first appear, so unfoldings inside
definitions are positions too). Both together determine the formula the proof showed, up
to a one-to-one renaming of free constants with the same facts, so the first pair's proof,
which held for all values of its free constants, holds for the second's. (The proof may
have unfolded a variable on one side only; its formula then holds for all values of that
variable, so also with the definition put in on the other side.) A cut variable whose
wrap-around facts name another term (`intervals`) has no signature: such a pair is never
recorded or looked up.

The proof's unfolded variables are kept as positions (its pattern), so a later pair with
the same shallow signature is tried with the variables at the same positions unfolded and
compared with the recorded signature as a whole. The elements of one tensor share most of
their subterms, so a pair costs the nodes no earlier pair had, not its whole size.

Before the signatures, a pair is compared in lockstep with the few proved pairs of its
shallow signature kept for that (`_same_problem`; kept where their signatures were
quadratic, `_quadratic`): both walked together, node by node, building the renaming of free
constants as it goes. It decides the same thing as the signatures (the
new pair's formula, with the definitions at the proved pair's unfolded variables put in,
is the proved formula with its free constants renamed one-to-one to constants of the same
facts) without making a signature node: a signature lists the free constants under every
node, which for a select chain over one index (an embedding lookup: the index's constant in
every condition) is quadratic in the chain's length."""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from tv_mlir.algebra import fast, intervals
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.base import Kind
from tv_mlir.algebra.term import BOOL, BVAR, INT, POLY, VAR, Term
from tv_mlir.prove.cuts import CutStore

LEAF_LIMIT = 4096  # free constants one signature may list; past it the term or pair has none
PATTERNS_PER_KEY = 8  # unfolding patterns kept per shallow signature (most recently used first)
REPS_PER_KEY = 4  # proved pairs kept per shallow signature for the lockstep comparison
LOCKSTEP = True  # compare with proved pairs in lockstep where that is cheaper (the switch the tests flip)
# A proved pair is compared in lockstep only when its signature's new nodes listed at least
# LOCKSTEP_RATIO free constants each on average (over at least LOCKSTEP_NODES new nodes): a
# select chain over one index lists the index at every level, so its signature is quadratic in
# the chain's length, where a lockstep walk is linear. Elsewhere signatures are cheaper: they
# reuse the nodes earlier pairs signed (docs/architecture.md, round 10).
LOCKSTEP_RATIO = 10
LOCKSTEP_NODES = 64
MAX_SIGNATURES = 200_000  # signatures kept in all; past it nothing more is recorded

Canon = tuple[int, tuple[int, ...]]  # (shape number, the free constants' ids in order)
_MISSING: Any = object()  # not in a memo (None is a value there: no signature)
_UNIT_ATOM = ((((0, 1),), 1),)  # a polynomial `1 * atom` as `_Canon` writes it (atom at position 0)


@dataclass
class _Canon:
    """Signatures of terms (module docstring): a shape number, interned from the node and
    its children's shape numbers, and the list of free constants it wires."""

    cuts: CutStore
    shapes: dict[tuple[Any, ...], int] = field(default_factory=dict)
    memo: dict[int, Canon | None] = field(default_factory=dict)  # term id -> its signature
    leaves: dict[int, int | None] = field(default_factory=dict)  # free constant's id -> its shape
    # Free constants listed by the nodes made so far, summed: the work signatures cost
    # (`InstanceTable._quadratic`: a select chain over one index lists it at every level).
    entries: int = 0

    def work(self) -> tuple[int, int]:
        """Nodes signed and free constants listed so far."""
        return len(self.memo), self.entries

    def _intern(self, key: tuple[Any, ...]) -> int:
        n = self.shapes.get(key)
        if n is None:
            n = self.shapes[key] = len(self.shapes)
        return n

    def of(self, root: Term) -> Canon | None:
        """The signature of a term that nothing is unfolded in (an integer definition)."""
        memo = self.memo
        get = memo.get
        got = get(root.id, _MISSING)
        if got is not _MISSING:
            return got
        combine, children = self._combine, self._children
        # Post-order without recursion (definitions nest deeply): a node is combined once
        # its children are; one that is on the stack twice is combined at its first pop.
        stack: list[Term] = [root]
        push, pop = stack.extend, stack.pop
        entries = 0
        while stack:
            t = stack[-1]
            tid = t.id
            if tid in memo:
                pop()
                continue
            kids = t.args or children(t)
            sigs = [get(k.id, _MISSING) for k in kids]
            if _MISSING in sigs:  # the node again once its children are done
                push([k for k, g in zip(kids, sigs) if g is _MISSING])
                continue
            pop()
            got = memo[tid] = combine(t, sigs)
            if got is not None:
                entries += len(got[1])
        self.entries += entries
        return memo[root.id]

    def _children(self, t: Term) -> tuple[Term, ...]:
        """The children of a node without arguments: a free constant has none, an integer
        or Boolean cut variable its definition."""
        if t.kind in (VAR, BVAR):
            cut = self.cuts.cuts_by_id.get(t.id)
            # Integer and Boolean cut variables are read through (the case split does);
            # real ones inside them are left as they are, as the proof leaves them.
            if cut is not None and isinstance(cut.term, Term) and t.sort in (INT, BOOL):
                return (cut.term,)
        return ()

    def leaf(self, t: Term) -> int | None:
        """The shape number of a free constant: its sort and facts, never its name. Kept
        per constant: its facts are set when it is made (an input's bounds) or cut (its
        definition's ranges, `terms.record_range`), before any term mentions it."""
        got = self.leaves.get(t.id, False)
        if got is not False:
            return got
        store = t.store
        if t.id in (store.caches.get(intervals._WRAPS) or ()):
            shape = None
        else:
            real_range = (store.caches.get(fast.REAL_RANGES) or {}).get(t.id)
            shape = self._intern(("leaf", t.sort, _sign(t), store.bounds.get(t.id), store.ranges.get(t.id),
                                  real_range))
        self.leaves[t.id] = shape
        return shape

    def _combine(self, t: Term, kids: list[Canon | None]) -> Canon | None:
        kind = t.kind
        n = len(kids)
        if not n:
            if kind in (VAR, BVAR):
                shape = self.leaf(t)
                return None if shape is None else (shape, (t.id,))
            merged: tuple[int, ...] = ()
            shapes: tuple[int, ...] = ()
            wiring: Any = None
        elif None in kids:
            return None
        elif n == 1:
            # One child: its list is the node's (a list never repeats a constant).
            shape, merged = kids[0]  # type: ignore[misc]
            if kind in (VAR, BVAR):  # a definition put in
                return self._intern(("def", t.sort, shape)), merged
            if len(merged) > LEAF_LIMIT:
                return None
            shapes, wiring = (shape,), None
        else:
            # Selects (three children) and products/comparisons (two) are most nodes: their
            # lists joined by tuple concatenation, the general case through chain.
            lists: Any
            if n == 3:
                (s0, l0), (s1, l1), (s2, l2) = kids  # type: ignore[misc]
                merged, shapes, lists = l0 + l1 + l2, (s0, s1, s2), (l0, l1, l2)
            elif n == 2:
                (s0, l0), (s1, l1) = kids  # type: ignore[misc]
                merged, shapes, lists = l0 + l1, (s0, s1), (l0, l1)
            else:
                lists = [k[1] for k in kids]  # type: ignore[index]
                merged = tuple(chain.from_iterable(lists))
                shapes = tuple([k[0] for k in kids])  # type: ignore[index]
            wiring = None
            if len(set(merged)) != len(merged):
                # Positions in first-met order: a dict keeps insertion order, and setdefault
                # numbers a constant once (len(pos) is read before it is inserted).
                pos: dict[int, int] = {}
                put = pos.setdefault
                wiring = tuple([tuple([put(x, len(pos)) for x in leaves]) for leaves in lists])
                merged = tuple(pos)
            # else the children share no free constant: the node's list is theirs one after
            # the other, which their shapes determine (each shape fixes its list's length), so
            # None stands for that wiring; any other wiring repeats a constant.
            if len(merged) > LEAF_LIMIT:
                return None
        data: Any = t.data
        if kind == POLY:
            args = t.args
            if len(args) == 1:  # every monomial is a power of the one atom
                if len(data) == 1 and data[0][1] == 1 and data[0][0][0][1] == 1:
                    # 1 * atom (every select or free constant used as a value): the
                    # general line's data, without building it per node.
                    data = _UNIT_ATOM
                else:
                    data = tuple([(tuple([(0, e) for _, e in m]), c) for m, c in data])
            else:
                at = {a.id: i for i, a in enumerate(args)}
                data = tuple([(tuple([(at[x], e) for x, e in m]), c) for m, c in data])
        return self._intern((kind, t.sort, data, shapes, wiring)), merged


@dataclass
class InstanceTable:
    """Signatures of proved pairs (module docstring), for one sweep's cut store.

    Keyed by the pair's shallow signature (no real cut variable unfolded), then by the
    proof's unfolding pattern (the elements of one tensor share it), then the full
    signature, with how it was proved."""

    store: CutStore
    hits: int = 0
    recorded: int = 0
    _canon: _Canon = field(init=False)
    _patterns: dict[Any, dict[frozenset[int], dict[Any, str]]] = field(default_factory=dict)
    # Proved pairs by shallow signature, most recently used first: (roots, the ids of the cut
    # variables the proof unfolded, how it was proved), for `_same_problem`.
    _reps: dict[Any, list[tuple[list[Term], frozenset[int], str]]] = field(default_factory=dict)
    walked: int = 0  # node pairs the lockstep comparisons walked (`_same_problem`)
    # Signatures of formulas the solver did not prove -> (the batch's timeout, the formula's share).
    _solver_failures: dict[Any, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._canon = _Canon(self.store)

    def proved(self, a: Any, b: Any, kind: Kind) -> str | None:
        """How a pair that (a, b) is an instance of was proved, or None."""
        pair = self._pair(a, b, kind)
        if pair is None:
            return None
        key, leaves = pair
        roots = _roots(a, b)
        assert roots is not None  # `_pair` made a signature of them
        reps = self._reps.get(key) if LOCKSTEP else None
        if reps:
            for j, (rep, unfolded, how) in enumerate(reps):
                walked = [0]
                same = _same_problem(self._canon, rep, roots, unfolded, walked)
                self.walked += walked[0]
                if same:
                    self.hits += 1
                    if j:
                        reps.insert(0, reps.pop(j))
                    return how
        patterns = self._patterns.get(key)
        if not patterns:
            return None
        work = self._canon.work()
        for unfold, signatures in patterns.items():
            expanded = list(leaves)
            got = self._unfolded(expanded, unfold, by_position=True)
            proved = signatures.get(got[0]) if got is not None else None
            if proved is not None:
                self.hits += 1
                _to_front(patterns, unfold, signatures)
                if self._quadratic(work):  # its neighbours are likelier its instances
                    assert got is not None
                    self._keep(key, roots, frozenset(expanded[i] for i in got[1]), proved)
                return proved
        return None

    def _quadratic(self, before: tuple[int, int]) -> bool:
        """Whether the signature nodes made since `before` (`_Canon.work`) listed LOCKSTEP_RATIO
        free constants each or more: then the pair is kept for lockstep comparisons."""
        if not LOCKSTEP:
            return False
        nodes, entries = self._canon.work()
        nodes -= before[0]
        return nodes >= LOCKSTEP_NODES and entries - before[1] >= LOCKSTEP_RATIO * nodes

    def _keep(self, key: Any, roots: list[Term], unfolded: frozenset[int], how: str) -> None:
        reps = self._reps.setdefault(key, [])
        reps.insert(0, (roots, unfolded, how))
        del reps[REPS_PER_KEY:]

    def record(self, a: Any, b: Any, kind: Kind, unfolded: set[int], how: str) -> None:
        """(a, b) was proved (`how`) with the cut variables `unfolded` (ids) put in."""
        if self.recorded >= MAX_SIGNATURES:
            return
        pair = self._pair(a, b, kind)
        if pair is None:
            return
        key, leaves = pair
        work = self._canon.work()
        full = self._unfolded(list(leaves), frozenset(unfolded), by_position=False)
        if full is None:
            return
        patterns = self._patterns.setdefault(key, {})
        signatures = patterns.get(full[1])
        if signatures is None:
            if len(patterns) >= PATTERNS_PER_KEY:
                patterns.pop(next(reversed(patterns)))  # the least recently used pattern
            signatures = {}
        _to_front(patterns, full[1], signatures)
        if full[0] not in signatures:
            signatures[full[0]] = how
            self.recorded += 1
        if self._quadratic(work):
            roots = _roots(a, b)
            assert roots is not None  # `_pair` made a signature of them
            self._keep(key, roots, frozenset(unfolded), how)

    def solver_failed(self, formula: Any, timeout_s: float, share: float) -> bool:
        """The solver failed before on this formula over other free constants, given at
        least this timeout for its batch and this share of it (`note_solver_failure`):
        asking again costs the same time for the same outcome. Keyed by the formula the
        solver is asked, exactly (a proof's signature would not do: it puts definitions in
        on both sides where the proof put one in on one side, which makes a failed formula
        look like an easier one). The final local proofs give the solver more time than the
        sweep's, so a failure in the sweep does not stop them. Leaving a pair unproved is
        always sound."""
        key = self._formula(formula)
        got = self._solver_failures.get(key) if key is not None else None
        return got is not None and got[0] >= timeout_s and got[1] >= share

    def note_solver_failure(self, formula: Any, timeout_s: float, share: float) -> None:
        """`share`: the least time the formula had alone (a batch that times out is asked
        again one formula at a time, each with its part of the timeout)."""
        if len(self._solver_failures) < MAX_SIGNATURES:
            key = self._formula(formula)
            if key is not None:
                old = self._solver_failures.get(key, (-1.0, -1.0))
                self._solver_failures[key] = (max(timeout_s, old[0]), max(share, old[1]))

    def _formula(self, formula: Any) -> Any | None:
        if type(formula) is not Term:
            return None
        got = self._canon.of(formula)
        return None if got is None else got[0]

    def _pair(self, a: Any, b: Any, kind: Kind) -> tuple[tuple[Any, ...], list[int]] | None:
        """The pair's shallow signature (nothing unfolded) and its free constants in the
        order the signature wires them: the roots' signatures (`_Canon`, kept per term for
        the whole sweep: the elements of one tensor share most of their subterms, so a pair
        costs the nodes no earlier pair had) joined by the free constants they share."""
        roots = _roots(a, b)
        if roots is None:
            return None
        canon = self._canon
        shapes = []
        pos: dict[int, int] = {}
        leaves: list[int] = []
        wiring = []
        for r in roots:
            got = canon.of(r)
            if got is None:
                return None
            shapes.append(got[0])
            wiring.append(_wire(got[1], pos, leaves))
        if len(leaves) > LEAF_LIMIT:
            return None
        key = (kind.name, _classes(a), _classes(b), len(T.element_terms(a)), tuple(shapes), tuple(wiring))
        return key, leaves

    def _unfolded(self, leaves: list[int], unfold: frozenset[int], by_position: bool
                  ) -> tuple[tuple[Any, ...], frozenset[int]] | None:
        """The definitions put in, as a signature, and the positions of their variables.
        `leaves` (extended here) lists the pair's free constants in signature order; a
        variable is put in when its position (by_position) or its id is in `unfold`. Each
        definition is written as its position, its shape and the positions of its own free
        constants, appended to `leaves` as they first appear: with the shallow signature
        this determines the formula with those definitions put in, up to a one-to-one
        renaming of free constants with the same facts."""
        cuts = self.store.cuts_by_id
        canon = self._canon
        pos = {x: i for i, x in enumerate(leaves)}
        out = []
        opened = set()
        i = 0
        while i < len(leaves):
            x = leaves[i]
            if (i if by_position else x) in unfold:
                cut = cuts.get(x)
                d = cut.term if cut is not None and isinstance(cut.term, Term) else None
                got = canon.of(d) if d is not None else None
                if got is None:
                    return None
                out.append((i, got[0], _wire(got[1], pos, leaves)))
                opened.add(i)
                if len(leaves) > LEAF_LIMIT:
                    return None
            i += 1
        return tuple(out), frozenset(opened)


def _same_problem(canon: _Canon, rep: list[Term], new: list[Term], unfolded: frozenset[int],
                  walked: list[int] | None = None) -> bool:
    """Whether the pair of terms `new` is the proved pair `rep` over other free constants:
    walking both together from their roots, every node has the same kind, sort, data and
    number of children (a polynomial's monomials read by its atoms' positions), integer and
    Boolean cut variables are read through on both sides (as `_Canon` does), a cut
    variable of `rep` in `unfolded` is met by a cut variable on the new side and both are
    read through (their definitions put in), and every other free constant of `rep` is met
    by one of the same facts (`_Canon.leaf`), one-to-one throughout: each constant of `rep`
    (unfolded ones too) by one constant of `new`, and no constant of `new` by two. (That the
    renaming is a function is what soundness needs: a formula valid for all values of its
    constants stays valid when two of the same facts are made one. One-to-one is asked as
    the signatures ask it.)

    Then the new formula, with those definitions put in, is the proved one with its free
    constants renamed one-to-one to constants of the same facts (by induction over the
    walk: each node is the renamed node), so the proof, which held for all values of its
    free constants within their facts, holds for it; putting a definition in is an
    identity. This is what equal signatures with the proof's pattern show (module
    docstring), decided without interning a node. A pair of nodes met again under the same
    renaming is not walked again: the renaming only grows, so a match stays a match.
    `walked[0]` (if given) counts the node pairs walked."""
    if len(rep) != len(new):
        return False
    cuts = canon.cuts.cuts_by_id
    leaf = canon.leaf
    ren: dict[int, int] = {}  # rep's free constant id -> new's
    back: dict[int, int] = {}  # new's -> rep's
    seen: set[tuple[int, int]] = set()
    stack = list(zip(rep, new))
    pop, push = stack.pop, stack.extend
    while stack:
        y, x = pop()
        k = (y.id, x.id)
        if k in seen:
            continue
        seen.add(k)
        if walked is not None:
            walked[0] += 1
        if y is x:
            # The same term on both sides (a condition shared by neighbouring elements):
            # it is its own renaming exactly when the renaming fixes the free constants it
            # reaches (`_Canon`'s list, kept per term for the sweep: integer and Boolean cut
            # variables read through) and, inside unfolded definitions, theirs.
            got = canon.of(y)
            if got is not None:
                for c in got[1]:
                    r = ren.get(c)
                    if r is None:
                        if c in back:
                            return False
                        ren[c] = back[c] = c
                    elif r != c:
                        return False
                    if c in unfolded:
                        d = cuts[c].term if c in cuts else None
                        if type(d) is not Term:
                            return False
                        stack.append((d, d))
                continue
        kind = y.kind
        if kind != x.kind or y.sort != x.sort:
            return False
        ya, xa = y.args, x.args
        if ya or xa:
            if len(ya) != len(xa):
                return False
            if kind == POLY:
                if not _same_monomials(y, x):
                    return False
            elif y.data != x.data:
                return False
            push(zip(ya, xa))
            continue
        if kind not in (VAR, BVAR):
            if y.data != x.data:  # a constant
                return False
            continue
        cy, cx = cuts.get(y.id), cuts.get(x.id)
        dy = cy.term if cy is not None and type(cy.term) is Term else None
        dx = cx.term if cx is not None and type(cx.term) is Term else None
        if y.sort in (INT, BOOL) and (dy is not None or dx is not None):
            # Read through, as the case split does: no constant of its own.
            if dy is None or dx is None:
                return False
            stack.append((dy, dx))
            continue
        mapped = ren.get(y.id)
        if mapped is None:
            if x.id in back:
                return False
            ren[y.id] = x.id
            back[x.id] = y.id
        elif mapped != x.id:
            return False
        if y.id in unfolded:
            if dy is None or dx is None:
                return False
            stack.append((dy, dx))
            continue
        shape = leaf(y)
        if shape is None or shape != leaf(x):
            return False
    return True


def _same_monomials(y: Term, x: Term) -> bool:
    """Two polynomials' monomials are the same, with each atom read as its position among the
    node's children (`_Canon._combine` writes them so), coefficients and exponents equal."""
    dy, dx = y.data, x.data
    if len(dy) != len(dx):
        return False
    if len(y.args) == 1:  # every monomial is a power of the one atom (or the constant)
        for (my, cy), (mx, cx) in zip(dy, dx):
            if cy != cx or len(my) != len(mx) or (my and my[0][1] != mx[0][1]):
                return False
        return True
    py = {a.id: i for i, a in enumerate(y.args)}
    px = {a.id: i for i, a in enumerate(x.args)}
    for (my, cy), (mx, cx) in zip(dy, dx):
        if cy != cx or len(my) != len(mx):
            return False
        for (ay, ey), (ax, ex) in zip(my, mx):
            if ey != ex or py[ay] != px[ax]:
                return False
    return True


def _wire(ids: tuple[int, ...], pos: dict[int, int], leaves: list[int]) -> tuple[int, ...]:
    """The positions of `ids` in `leaves`, appending the ones not there yet."""
    w = []
    for x in ids:
        p = pos.get(x)
        if p is None:
            p = pos[x] = len(leaves)
            leaves.append(x)
        w.append(p)
    return tuple(w)


def _to_front(patterns: dict[frozenset[int], dict[Any, str]], key: frozenset[int], value: dict[Any, str]) -> None:
    """Put `key` first (dicts keep insertion order: patterns are tried most recently used
    first, and the last one is dropped when a key has too many)."""
    if next(iter(patterns), None) == key:
        return
    rest = [(k, v) for k, v in patterns.items() if k != key]
    patterns.clear()
    patterns[key] = value
    patterns.update(rest)


def _roots(a: Any, b: Any) -> list[Term] | None:
    terms = T.element_terms(a) + T.element_terms(b)
    if not terms or not all(type(t) is Term for t in terms):
        return None  # folded elements or the z3 core's terms
    return terms


def _classes(x: Any) -> Any:
    """An element's IEEE class where it is known (part of the problem, not a term)."""
    k = getattr(x, "k", None)
    return k if isinstance(k, int) else None


def _sign(t: Term) -> int:
    """The sign a free constant's name carries (`fast.known_sign` reads it)."""
    name = str(t.data)
    if name.startswith(fast.POSITIVE_CUT_PREFIX + "!"):
        return fast.POS_SIGN
    if name.startswith(fast.NONNEGATIVE_CUT_PREFIX + "!"):
        return fast.NONNEG_SIGN
    return 0
