"""The cut store: every top-level value element of both programs becomes a cut variable with
its defining term recorded, so that terms stay one op deep. Structurally equal definitions
share one variable (in either program). The store expands, scans and evaluates terms
definition by definition, so that a full expansion to the inputs is built only when a
proof needs it."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tv_mlir.algebra import Symbolic
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.fast import FF, SUM_CLASSES, sum_class
from tv_mlir.algebra.term import INT, POLY, VAR, Term
from tv_mlir.ir import Op

# A sum of the other program's partial results is tried as the sum of their definitions
# (`CutStore._sum_of_partials`): sums of at most PARTIALS_MAX summands, expanding to at most
# PARTIAL_MONOMIALS monomials. PARTIAL_SUMS is the switch the tests flip.
PARTIAL_SUMS = True
PARTIALS_MAX = 64
PARTIAL_MONOMIALS = 4096


@dataclass(frozen=True)
class Origin:
    """Where a cut variable's value was computed: for first-divergence reports."""

    side: str  # "ref" or "other"
    op: str
    loc: str
    value: str  # the SSA value (without device suffix)
    device: int | None  # in a manual region: the device
    index: tuple[int, ...] = ()  # the element's position in the value


@dataclass(eq=False)
class Cut:
    """A cut variable and what is known about its definition, found once by a walk over
    the definition when first needed (most reference definitions are never unfolded)."""

    var: Any  # the fresh constant
    term: Any  # its defining term (one op deep over older cut variables and inputs)
    order: int  # creation order: a definition mentions only older cut variables
    scanned: bool = False
    vars: frozenset[int] = frozenset()  # ids of the cut variables the definition mentions
    leaves: frozenset[int] = frozenset()  # ids of the other free constants (program inputs)
    local_approximation: bool = False  # the definition itself applies an uninterpreted function
    site: Origin | None = None  # the op result it was cut from (index not set)
    position: int = 0  # the element's flat position in that result
    shape: tuple[int, ...] = ()  # the result's shape

    @property
    def origin(self) -> Origin | None:
        """Where the value was computed, with the element's index (worked out only for
        reports: most cuts never need it)."""
        if self.site is None:
            return None
        index = tuple(int(i) for i in np.unravel_index(self.position, self.shape)) if self.shape else ()
        return replace(self.site, index=index)


@dataclass
class CutStore:
    """Cut variables by id, their definitions, and the expansions built so far."""

    alg: Symbolic
    cuts_by_id: dict[int, Cut] = field(default_factory=dict)
    count: int = 0
    origin: Origin | None = None  # the op whose results are being cut
    # Own-core floats cut with an IEEE class that depends on the inputs (a term, not a
    # known class), and the op result where the first one was cut: such classes spread to
    # every value computed from them and cost a class term per element, so a run that
    # passes its term budget names where they began (`driver`).
    symbolic_classes: int = 0
    first_symbolic_class: Origin | None = None
    _by_term: dict[int, Any] = field(default_factory=dict)  # defining term id -> variable
    _expanded: dict[int, Any] = field(default_factory=dict)  # cut id -> term over the inputs

    def cut_array(self, arr: np.ndarray) -> np.ndarray:
        new = np.empty(arr.shape, dtype=object)
        flat = new.reshape(-1)
        shape = arr.shape
        cut_term = self._cut_term
        # Every element of every op result comes through here: a plain list to iterate
        # (indexing an object array per element costs more), one-term elements (all but
        # floats of a symbolic class) without the list of cuts.
        for i, x in enumerate(arr.reshape(-1).tolist()):
            if type(x) is FF and type(x.k) is int:  # an own-core float of a known class
                c = cut_term(x.v, i, shape)
                flat[i] = x if c is x.v else FF(c, x.k)
                continue
            if type(x) is FF:  # an own-core float whose class depends on the inputs
                self.symbolic_classes += 1
                if self.first_symbolic_class is None:
                    self.first_symbolic_class = self.origin
            terms = T.element_terms(x)
            if not terms:  # a folded Python value
                flat[i] = x
            elif len(terms) == 1:
                t = terms[0]
                c = cut_term(t, i, shape)
                flat[i] = x if c is t else T.with_terms(x, [c])
            else:
                cut = [cut_term(t, i, shape) for t in terms]
                flat[i] = x if all(c is t for c, t in zip(cut, terms)) else T.with_terms(x, cut)
        return new

    def _cut_term(self, t: Any, position: int, shape: tuple[int, ...]) -> Any:
        key = T.cut_key(t)
        if key is None:  # an input, a cut variable or a literal
            return t
        hit = self._by_term.get(key)
        if hit is not None:  # the same term already has a variable (in either program)
            return hit
        if PARTIAL_SUMS and self.origin is not None and self.origin.side == "other" and type(t) is Term:
            hit = self._sum_of_partials(t)
            if hit is None and t.sort == INT:
                hit = self._class_of_partials(t)
            if hit is not None:
                return hit
        var = T.fresh_cut(t, self.definition)
        self.cuts_by_id[T.term_id(var)] = Cut(var, t, self.count, site=self.origin, position=position, shape=shape)
        T.record_range(var, t, self.definition)
        self._by_term[key] = var
        self.count += 1
        return var

    def _sum_of_partials(self, t: Term) -> Any | None:
        """The variable of a definition that t is once its summands' own definitions are
        put in, else None.

        Why: the other program's all-reduce (or reduce-scatter, or add of partial results)
        sums per-device partial sums, each cut apart as its own variable, where the
        reference computes the whole sum in one op: p0 + p1 against sum_k x_k * g_k. The
        partials have no reference counterpart, so without this every element is a local
        proof (unfold p0 and p1, compare), one per gradient element of a data-parallel step.
        Putting the definitions in is an identity (a cut variable is its definition), so
        when the sum of the definitions is the very term a variable stands for, t equals
        that variable: a structural hit like any other, no proof needed. Only sums of cut
        variables of the other program (degree-1 monomials, any coefficients: a pmean
        scales them) whose definitions are polynomials are tried, one level deep, and only
        where the result stays small; anything else is left to the sweep's proofs."""
        data = t.data
        if t.kind != POLY or len(data) < 2 or len(data) > PARTIALS_MAX:
            return None
        cuts = self.cuts_by_id
        acc: dict[Any, Any] = {}
        changed = False
        for m, c in data:
            if not m:  # the constant term
                acc[m] = c
                continue
            if len(m) != 1 or m[0][1] != 1:
                return None  # a product: not a sum of partial results
            cut = cuts.get(m[0][0])
            if cut is None:
                if t.store.nodes[m[0][0]].kind != VAR:
                    return None  # a select or a function: not a sum of partial results
                acc[m] = c  # an input
                continue
            d = cut.term
            if (type(d) is not Term or d.kind != POLY or d.sort != t.sort or cut.site is None
                    or cut.site.side != "other"):
                acc[m] = c
                continue
            changed = True
            if len(acc) + len(d.data) > PARTIAL_MONOMIALS:
                return None
            for dm, dc in d.data:
                prev = acc.get(dm)
                acc[dm] = dc * c if prev is None else prev + dc * c
        if not changed:
            return None
        # A variable stands only for a term made already: look the sum up, make nothing.
        whole = t.store.find_polynomial(t.sort, acc)
        return None if whole is None else self._by_term.get(whole.id)

    def _class_of_partials(self, t: Term) -> Any | None:
        """The variable of the IEEE class a sum of partial sums has once the partials' own
        class definitions are put in, else None: `_sum_of_partials` for the class term of
        a float of an input-dependent class. The class of a sum is one flat form over the
        classes of its operands (`fast.sum_class`), and the class of a sum of sums is the
        class of the sum of all their operands (which classes occur decides it), so a
        cut variable of the other program whose definition is such a form is replaced by
        it (an identity: a cut variable is its definition) and the flat form rebuilt over
        the union. A hit is the very term a variable stands for; no proof needed."""
        cache: dict[int, Any] = t.store.caches.get(SUM_CLASSES) or {}
        hit = cache.get(t.id)
        if hit is None:
            return None
        cuts = self.cuts_by_id
        ks: list[Any] = list(hit[1])
        changed = False
        for k in hit[0]:
            cut = cuts.get(T.term_id(k))
            d = None if cut is None else cut.term
            if (cut is not None and cut.site is not None and cut.site.side == "other" and type(d) is Term
                    and d.id in cache):
                ks.append(d)
                changed = True
            else:
                ks.append(k)
        if not changed:
            return None
        whole = sum_class(t.store, ks)
        return None if isinstance(whole, int) else self._by_term.get(whole.id)

    def info(self, i: int) -> Cut:
        """The cut with id i, its definition scanned."""
        cut = self.cuts_by_id[i]
        if not cut.scanned:
            cut.vars, cut.leaves, cut.local_approximation = self._scan(cut.term)
            cut.scanned = True
        return cut

    def definition(self, var: Any) -> Any | None:
        """The defining term of a cut variable (given as its free constant), else None."""
        cut = self.cuts_by_id.get(T.term_id(var))
        return None if cut is None else cut.term

    def alias(self, ours: Any, ref: Any) -> None:
        """`ours` was proved equal to the reference element `ref`: later terms identical to
        our definition take the reference variable directly. For floats only when both are
        finite: equal infinities or NaNs say nothing about the value parts."""
        if T.is_float(ours):
            if not (T.finite_float(ours) and T.finite_float(ref)):
                return
        elif T.is_folded(ours) or T.is_folded(ref):
            return
        o, r = T.element_terms(ours)[0], T.element_terms(ref)[0]
        cut = self.cuts_by_id.get(T.term_id(o))
        if cut is not None:
            self._by_term[T.term_id(cut.term)] = r

    def _scan(self, t: Any) -> tuple[frozenset[int], frozenset[int], bool]:
        """The cut variables, other free constants and whether an uninterpreted function is
        applied in t, stopping at cut variables."""
        # No term applies an uninterpreted function before the first use of one.
        return T.scan(t, self.cuts_by_id, check_uf=bool(self.alg.approximations))

    def vars_of(self, terms: Iterable[Any]) -> set[int]:
        out: set[int] = set()
        for t in terms:
            if T.term_id(t) in self.cuts_by_id:
                out.add(T.term_id(t))
            elif T.is_compound(t):
                out |= self._scan(t)[0]
        return out

    def closure(self, roots: Iterable[int]) -> list[Cut]:
        """Every cut variable reachable from `roots`, oldest first (definition order)."""
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            stack.extend(self.info(i).vars)
        return sorted((self.cuts_by_id[i] for i in seen), key=lambda c: c.order)

    # -- expansion and evaluation ---------------------------------------------
    def expand_terms(self, terms: list[Any]) -> list[Any]:
        """The terms with every cut variable replaced, recursively: terms over the inputs."""
        full = self._expanded  # kept across calls: output elements share most of their cones
        for cut in self.closure(self.vars_of(terms)):
            i = T.term_id(cut.var)
            if i not in full:
                full[i] = T.substitute(cut.term, [(self.cuts_by_id[v].var, full[v]) for v in cut.vars])
        out = []
        for t in terms:
            vs = self.vars_of([t])
            out.append(T.substitute(t, [(self.cuts_by_id[v].var, full[v]) for v in vs]))
        return out

    def cone(self, elements: Sequence[Any]) -> list[Cut]:
        """The cut variables the elements depend on, through their definitions, oldest first."""
        return self.closure(self.vars_of(t for x in elements for t in T.element_terms(x)))

    def expand_element(self, x: Any) -> Any:
        if T.is_folded(x):
            return x
        return T.with_terms(x, self.expand_terms(T.element_terms(x)))

    def uses_approximation(self, x: Any) -> bool:
        """Whether x (fully expanded) applies an uninterpreted function."""
        if not self.alg.approximations:
            return False
        for t in T.element_terms(x):
            vs, _, uf = self._scan(t)
            if uf or any(c.local_approximation for c in self.closure(vs)):
                return True
        return False

    def evaluate(self, terms: list[Any], env: dict[int, tuple[Any, Any]]) -> list[Any] | None:
        """The terms' values (simplified terms, literals unless an uninterpreted function
        is applied) at the inputs `env` gives (input constant id -> (constant, value)),
        evaluated definition by definition so that no full expansion is built. None when a
        term mentions a free constant that env does not give."""
        vals: dict[int, Any] = {}

        def at(term: Any, vs: Iterable[int], leaves: Iterable[int]) -> Any | None:
            pairs = []
            for leaf in leaves:
                if leaf not in env:
                    return None
                pairs.append(env[leaf])
            pairs += [(self.cuts_by_id[v].var, vals[v]) for v in vs]
            return T.simplify(T.substitute(term, pairs))

        for cut in self.closure(self.vars_of(terms)):
            v = at(cut.term, cut.vars, cut.leaves)
            if v is None:
                return None
            vals[T.term_id(cut.var)] = v
        out = []
        for t in terms:
            i = T.term_id(t)
            if i in vals:
                out.append(vals[i])
            elif i in env:
                out.append(env[i][1])
            else:
                vs, leaves, _ = self._scan(t)
                v = at(t, vs, leaves)
                if v is None:
                    return None
                out.append(v)
        return out


def origin_of(side: str, op: Op, name: str) -> Origin:
    value, _, device = name.partition("@")
    return Origin(side, op.name, op.loc, value, int(device) if device else None)


