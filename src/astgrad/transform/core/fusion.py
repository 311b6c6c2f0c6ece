"""One adjoint expression per user expression of elementwise operations.

Normalisation splits ``x = np.sin(x) * 0.9 + 0.1 * x * x - 0.01 * x * x * x``
into nine one-operation statements, and inlining each rule separately gives
some twenty array (or number) operations in the adjoint.  This pass treats a
*group* (a run of elementwise ufunc operations joined by temporaries that are
read once) as one expression: the chain rule is applied symbolically, each
rule's local derivative is the rule inlined with the gradient as a symbol,
and like terms are collected, so the adjoint is

    dx = dx * (np.cos(x) * 0.9 + x * 0.2 - x * x * 0.03)

the derivative a person would write.  The rules stay the only source of the
derivatives: a rule whose inlined gradient is not ``g`` times something (or
that needs statements) ends the group.

``Poly`` is the algebra: sums of terms, each a coefficient times a product of
*atoms* (names and opaque expressions such as ``np.cos(x)``) to integer powers.
A temporary whose value is a single term (``t5 = 0.1 * x``) is expanded into
it, so ``0.1 * x * x`` differentiates to ``x * 0.2``; other temporaries stay
names (``t2 = np.exp(...)`` is read, not recomputed).

Long: finding groups, differentiating a group as one expression and emitting
it are one pass.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..ir import compat
from . import remat
from ..ir.compat import gast
from ..ir.nodes import Op, blocks, own_reads, walk_statements

# symbols, never identifiers, so no name of the user's can be mistaken for them
G = "<g>"      # the incoming gradient, as a symbol in an inlined rule
ANS = "<ans>"  # the result, when its name is also an operand's
MAX_TERMS = 16           # a product that expands further keeps its factors opaque


class NotFusable(Exception):
    """The group cannot be written as one expression; the adjoint falls back to one rule per operation."""


class Poly:
    """A sum of ``coefficient * atom ** power * ...`` terms; ``terms`` maps a factor tuple to its coefficient."""

    __slots__ = ("terms",)

    def __init__(self, terms=None):
        self.terms = dict(terms or {})
        if any(c == 0 for c in self.terms.values()):
            # ``inf * 0`` and ``x - x`` at infinity are nan; the rules' own code keeps that
            raise NotFusable

    @staticmethod
    def const(c):
        return Poly({(): c})

    @staticmethod
    def atom(key):
        return Poly({((key, 1),): 1})

    def monomial(self):
        return len(self.terms) == 1

    def __add__(self, other):
        out = dict(self.terms)
        for k, c in other.terms.items():
            out[k] = _simplest(out.get(k, 0) + c)
        return Poly(out)

    def __neg__(self):
        return Poly({k: -c for k, c in self.terms.items()})

    def __sub__(self, other):
        return self + (-other)

    def __mul__(self, other):
        if len(self.terms) * len(other.terms) > MAX_TERMS:
            raise OverflowError
        out: dict = {}
        for k1, c1 in self.terms.items():
            for k2, c2 in other.terms.items():
                k = _times(k1, k2)
                out[k] = _simplest(out.get(k, 0) + c1 * c2)
        return Poly(out)

    def inverse(self):
        """``1 / self`` for a monomial; None otherwise."""
        if not self.monomial():
            return None
        (k, c), = self.terms.items()
        inverse = 1 / c if isinstance(c, float) else Fraction(1, 1) / c  # x / 3 stays a division by 3
        return Poly({tuple((a, -p) for a, p in k): _simplest(inverse)})

    def without(self, key):
        """``self / key`` where every term holds ``key`` to the first power; else NotFusable."""
        out = {}
        for k, c in self.terms.items():
            powers = dict(k)
            if powers.get(key) != 1:
                raise NotFusable
            out[tuple((a, p) for a, p in k if a != key)] = c
        return Poly(out)

    def content(self):
        """``(c, p)`` with ``self == c * p`` exactly, p in a normal form: ``2 - 2 * t * t`` is 2 * (1 - t * t)."""
        c = self.terms[min(self.terms)]  # the same term for every ordering of the sum
        out = {}
        for k, ck in self.terms.items():
            q = _simplest(Fraction(ck) / Fraction(c)) if not isinstance(ck, float) and not isinstance(c, float) \
                else ck / c
            if q * c != ck:
                return 1, self  # not exact in floating point: no common factor
            out[k] = q
        return c, Poly(out)

    def key(self):
        """Equal for equal sums, whatever the order of their terms."""
        return tuple(sorted(self.terms.items(), key=lambda kc: kc[0]))

    def atoms(self):
        return {a for k in self.terms for a, _ in k}


def _simplest(c):
    """A Fraction with denominator 1 as an int (coefficients are int, float or Fraction)."""
    if isinstance(c, Fraction) and c.denominator == 1:
        return int(c)
    return c


def _times(k1, k2):
    powers = dict(k1)
    for a, p in k2:
        powers[a] = powers.get(a, 0) + p
    return tuple(sorted(((a, p) for a, p in powers.items() if p), key=lambda ap: ap[0]))


class Algebra:
    """Converts expressions to and from ``Poly``; atoms get keys in order of first appearance."""

    def __init__(self, boolean=None):
        self.nodes = {}   # key -> gast expression
        self.keys = {}    # dump -> key
        # which names may hold booleans (numpy's -b, b - b and b + b are not arithmetic on them)
        self.boolean_name = boolean or (lambda name: True)

    def key(self, node):
        dump = gast.dump(node)
        if dump not in self.keys:
            self.keys[dump] = len(self.keys)
            self.nodes[self.keys[dump]] = node
        return self.keys[dump]

    def name_key(self, name):
        return self.key(compat.name(name))

    def poly(self, node, env):
        """``node`` as a Poly; names in ``env`` are replaced by their Poly."""
        if isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return Poly.const(node.value)
        if isinstance(node, gast.Name):
            if node.id in env:
                return env[node.id]
            return Poly.atom(self.key(compat.name(node.id)))
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
            inner = self.poly(node.operand, env)
            return -inner if isinstance(node.op, gast.USub) else inner
        if isinstance(node, gast.BinOp):
            op = type(node.op)
            try:
                if op in (gast.Add, gast.Sub, gast.Mult):
                    left, right = self.poly(node.left, env), self.poly(node.right, env)
                    return left + right if op is gast.Add else left - right if op is gast.Sub else left * right
                if op is gast.Div:
                    left, right = self.poly(node.left, env), self.poly(node.right, env)
                    inverse = right.inverse()
                    if inverse is not None:
                        return left * inverse
                    if mentions_symbols(node.right):
                        raise NotFusable
                    denominator = Poly.atom(self.key(compat.binop(compat.const(1), "Div", self.expr(right))))
                    return left * denominator
                if op is gast.Pow and isinstance(node.right, gast.Constant) and type(node.right.value) is int \
                        and 0 <= node.right.value <= 4:
                    base = self.poly(node.left, env)
                    out = Poly.const(1)
                    for _ in range(node.right.value):
                        out = out * base
                    return out
            except OverflowError:
                pass
        if mentions_symbols(node):
            raise NotFusable  # the gradient inside np.where(...) or a call: not a factor
        return Poly.atom(self.key(_substituted(node, env, self)))

    # -- back to code ------------------------------------------------------

    def expr(self, poly):
        """Python for ``poly``: a factor common to every term is taken out once."""
        terms = list(poly.terms.items())
        if not terms:
            return compat.const(0.0)
        if len(terms) > 1:
            common = _common(terms)
            if common:
                rest = Poly({tuple((a, p - common.get(a, 0)) for a, p in k if p != common.get(a, 0)): c
                             for k, c in terms})
                return self._product(1, tuple(common.items()), self.expr(rest))
        out = None
        for k, c in terms:
            negative = c < 0
            if out is not None and negative:
                term = self._product(-c, k)
                out = compat.binop(out, "Sub", term)
            else:
                # a sum starts from a number: 1.0 * m - n, never m - n, for boolean m and n
                term = self._product(c, k, numeric=out is None and len(terms) > 1)
                out = term if out is None else compat.binop(out, "Add", term)
        return out

    def _boolean(self, key) -> bool:
        """Whether atom ``key`` may hold booleans: a comparison, a logical operation, a name that may."""
        node = self.nodes[key]
        if isinstance(node, gast.Name):
            return key >= 0 and self.boolean_name(node.id)  # negative keys: the gradient and shared arrays
        if isinstance(node, (gast.Compare, gast.BoolOp)) or isinstance(node, gast.Constant) and \
                isinstance(node.value, bool):
            return True
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.Not, gast.Invert)):
            return True
        if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.BitAnd, gast.BitOr, gast.BitXor)):
            return True
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute):
            return node.func.attr.startswith("logical_") or node.func.attr in _BOOLEAN_FUNCTIONS
        return False

    def _product(self, c, factors, last=None, numeric=False):
        """``c * a * b / d`` (``-a * b`` for ``c == -1``), times ``last`` (a sum) if given.

        The coefficient comes first and the gradient (key -1) right after it,
        so a number times a number is one multiplication, not one per element.
        """
        parts = [compat.clone(self.nodes[a]) for a, p in factors for _ in range(p) if p > 0]
        denominator = [a for a, p in factors for _ in range(-p) if p < 0]
        if last is not None:
            parts.append(last)
        divisor = None
        if isinstance(c, Fraction):  # 2 * x / 3: the exact division the user wrote
            c, divisor = c.numerator, c.denominator
        positive = [a for a, p in factors if p > 0]
        boolean = last is None and bool(positive) and all(self._boolean(a) for a in positive)
        lead = 1 if positive and positive[0] == -1 else 0  # the gradient, then the other factors
        if c == -1 and parts and not boolean:
            parts[0] = compat.make("UnaryOp", op=gast.USub(), operand=parts[0])
        elif c != 1 or not parts:
            parts.insert(0, compat.const(float(c) if boolean and c in (1, -1) else c))
            lead += 1
        elif boolean and numeric:
            parts.insert(0, compat.const(1.0))
            lead += 1
        if not boolean:
            parts = _computed_early(parts, lead)
        out = parts[0]
        for node in parts[1:]:
            out = compat.binop(out, "Mult", node)
        for a in denominator:
            out = compat.binop(out, "Div", compat.clone(self.nodes[a]))
        if divisor is not None:
            out = compat.binop(out, "Div", compat.const(divisor))
        return out

    def gradient_times(self, g, poly):
        """``g * poly`` as code, ``g`` first among the factors."""
        self.nodes[-1] = compat.name(g)
        return self.expr(Poly.atom(-1) * poly)


def _computed_early(parts, lead):
    """The first factor that computes something (a call, a sum) moved up to just after the ``lead``
    ones (the coefficient and the gradient): ``g * (x * np.cos(x) + 2) * x * t2``.

    numpy writes ``a * b`` into ``a``'s or ``b``'s memory when that is a
    temporary (an array nothing else refers to, above 256 KiB), so once the
    product holds a temporary, every further factor fills the same array.
    ``g * x * t2 * (...)`` would allocate one more, for ``g * x``.
    """
    for i in range(lead, len(parts)):
        if not _atom(parts[i]):
            return parts[:lead] + [parts[i]] + parts[lead:i] + parts[i + 1:]
    return parts


def _atom(node) -> bool:
    if isinstance(node, gast.UnaryOp):
        node = node.operand
    return isinstance(node, (gast.Name, gast.Constant))


_BOOLEAN_FUNCTIONS = {"isnan", "isinf", "isfinite", "signbit", "greater", "greater_equal", "less", "less_equal",
                      "equal", "not_equal", "isclose", "isneginf", "isposinf"}


def mentions_symbols(node) -> bool:
    """Whether ``node`` mentions the gradient or result symbols, which only stand as factors."""
    return any(isinstance(n, gast.Name) and n.id in (G, ANS) for n in compat.walk(node))


def _common(terms):
    """Atoms every term holds to a positive power, with the smallest such power."""
    common = None
    for k, _ in terms:
        powers = {a: p for a, p in k if p > 0}
        common = powers if common is None else {a: min(p, powers[a]) for a, p in common.items() if a in powers}
    return common or {}


def _substituted(node, env, algebra):
    """``node`` with names bound in ``env`` written out (an opaque atom reads the same values)."""
    if not any(isinstance(n, gast.Name) and n.id in env for n in compat.walk(node)):
        return node
    node = compat.clone(node)

    def visit(n):
        for field, child in gast.iter_fields(n):
            if isinstance(child, gast.Name) and child.id in env:
                setattr(n, field, algebra.expr(env[child.id]))
            elif isinstance(child, gast.AST):
                visit(child)
            elif isinstance(child, list):
                child[:] = [algebra.expr(env[c.id]) if isinstance(c, gast.Name) and c.id in env else c
                            for c in child]
                for c in child:
                    if isinstance(c, gast.AST):
                        visit(c)
    visit(node)
    return node


# -- groups ------------------------------------------------------------------

def fusable(op, analysis) -> bool:
    """An active elementwise ufunc of one result, operands by position only."""
    fn = op.fn
    return isinstance(op, Op) and op.kind == "prim" and isinstance(fn, np.ufunc) and fn.signature is None \
        and fn.nout == 1 and not op.kwargs and len(op.targets) == 1 and len(op.args) == fn.nin \
        and analysis.is_active(op)


def groups(stmts, analysis, temps, reads):
    """``{id(root): [ops]}`` for runs of fusable ops in ``stmts`` joined by once-read temporaries.

    ``reads`` counts every read of each name in the function.  A member's
    result is a temporary read once, by a later op of the same group; the
    group's ops are contiguous, so nothing between them changes what they read.
    """
    order = {id(s): i for i, s in enumerate(stmts)}
    finished: list = []
    open_: dict = {}  # temporary -> the ops computing it, waiting for their one reader
    for s in stmts:
        if not (isinstance(s, Op) and fusable(s, analysis)):
            finished += open_.values()
            open_ = {}
            continue
        ops = []
        for a in s.args:
            if isinstance(a, gast.Name) and a.id in open_:
                ops += open_.pop(a.id)
        ops.append(s)
        t = s.targets[0]
        if t in temps and reads.get(t, 0) == 1:
            open_[t] = ops
        else:
            finished.append(ops)
    finished += open_.values()
    out = {}
    for ops in finished:
        ops = sorted(ops, key=lambda m: order[id(m)])
        positions = [order[id(m)] for m in ops]
        if len(ops) >= 2 and positions == list(range(positions[0], positions[0] + len(ops))):
            out[id(ops[-1])] = ops
    return out


def planned(body, analysis, temps) -> list:
    """The groups the reverse sweep will fuse, as lists of the names their ops compute (for ``show``)."""
    reads = read_counts(body)
    found: list = []

    def visit(stmts):
        found.extend([t for op in ops for t in op.targets] for ops in groups(stmts, analysis, temps, reads).values())
        for s in stmts:
            for inner in blocks(s):
                visit(inner)
    visit(body)
    return found


def read_counts(body) -> dict:
    """How often each name is read anywhere in the normalised function."""
    counts: dict = {}

    for s in walk_statements(body):
        for n in own_reads(s):
            counts[n] = counts.get(n, 0) + 1
    return counts


# -- the adjoint of a group ----------------------------------------------------
# What this pass asks of the adjoint sweep it serves (``sweep``), and nothing else:
#   is_input(atom)     the atom is a name whose adjoint the sweep computes
#   may_be_sequence(n) the name may hold a tuple or list (no algebra on those)
#   restorable(n)      the name holds, where the adjoint runs, the value the primal read
#   inline(op, g, ans, needed)  the op's rule inlined (gradients per operand)
#   adj(n), names      adjoint names; fresh temporaries (snapshot/restore on failure)
#   seeds              the scalar seeds (scalar_seeds.ScalarSeeds)
#   saved_targets(op), restore(n)  which targets the primal pushed; ``n = <pop>``
#   remat              {name: op} of the values the sweep recomputes in front of the group's code
#   unbroadcast(expr, n), accumulate(atom, expr, live, out, scalar)


def adjoint(ops, analysis, sweep, live):
    """The adjoint of the group ``ops`` (its root last) as one expression per operand.

    Returns ``(head, code)``: ``head`` must run before the recomputation of
    rematerialised values (a spread seed, the root's old value popped),
    ``code`` holds the gradients.  Returns None, having changed nothing,
    where the group cannot be one expression.
    """
    head, out = [], []
    root = ops[-1]
    r = root.targets[0]
    if r not in live:
        return None
    internal = {m.targets[0] for m in ops[:-1]}
    leaf_names = {a.id for m in ops for a in m.args if sweep.is_input(a) and a.id not in internal}
    if any(sweep.may_be_sequence(n) for n in leaf_names):
        return None
    algebra = Algebra(boolean=lambda name: name not in analysis.active)  # what is differentiated is not boolean
    env: dict = {}  # temporaries whose value is one term of restorable names: written out
    state = sweep.names.snapshot()
    try:
        for m in ops[:-1]:
            value = algebra.poly(m.expr, env)
            if value.monomial() and all(isinstance(algebra.nodes[a], gast.Name)
                                        and sweep.restorable(algebra.nodes[a].id) for a in value.atoms()):
                env[m.targets[0]] = value
        g_key = algebra.name_key(G)
        partials: dict = {}  # name -> {leaf: d name / d leaf}
        for m in ops:
            t = m.targets[0]
            needed = [i for i, a in enumerate(m.args) if sweep.is_input(a)]
            ans = ANS if m is root and r in leaf_names else t
            inlined = sweep.inline(m, G, ans, needed)
            if inlined.prelude:
                raise NotFusable
            mine: dict = {}
            for i in needed:
                grad = inlined.grads.get(i)
                if grad is None:
                    continue
                local = algebra.poly(grad, env).without(g_key)
                a = m.args[i].id
                for leaf, p in (partials[a] if a in internal else {a: Poly.const(1)}).items():
                    mine[leaf] = mine.get(leaf, Poly()) + local * p
            partials[t] = mine
    except (NotFusable, OverflowError, ValueError):
        sweep.names.restore(state)
        return None
    derivatives = {v: p for v, p in partials[r].items() if p.terms}
    if any(mentions_symbols(algebra.nodes[a]) for p in derivatives.values() for a in p.atoms()):
        sweep.names.restore(state)
        return None
    shapes = analysis.shapes
    g = sweep.adj(r)
    seeds = sweep.seeds
    scalar_g = r in seeds.lazy
    # d r / d v has r's whole shape when it reads a name of that shape (2 * t4 of (t4 - y) ** 2): g times it
    # is then the same array for a number g as for g spread, and un-broadcasting it into a smaller v sums
    # the right elements.  Otherwise v must have r's shape, or the spread seed's sum over v's broadcast
    # axes would be lost (each v's gradient broadcasts to v's shape: see ScalarSeeds.takes_scalar)
    whole = {v: any(isinstance(algebra.nodes[a], gast.Name) and shapes.holds_shape_of(algebra.nodes[a].id, r, strict=True)
                    for a in p.atoms()) for v, p in derivatives.items()}
    spread = scalar_g and not all(whole[v] or shapes.holds_shape_of(v, r, strict=True) for v in derivatives)
    scalar_g = scalar_g and not spread
    # operands whose gradients are multiples of one array (tanh(a + 2 * b)) share it
    primitive = {}
    for v, p in derivatives.items():
        c, rest = p.content()
        primitive[v] = (c, rest, rest.key())
    counts: dict = {}
    for _, _, key in primitive.values():
        counts[key] = counts.get(key, 0) + 1
    exprs = {v: algebra.gradient_times(g, p) for v, p in derivatives.items()}
    reads = {n.id for e in exprs.values() for n in compat.walk(e) if isinstance(n, gast.Name)}
    reads |= {v for v in derivatives if not analysis.same_shape(root, v, r)}  # read for shape(v)
    old_root = r in leaf_names and r in reads
    if old_root and r not in sweep.saved_targets(root):
        sweep.names.restore(state)
        return None
    # a recomputed value (``t = x * 0.7`` of ``x = np.sin(t) * y``) is made in front of the code, which
    # pops the group's targets only at its end: it must not read one the group rebinds (then one rule
    # per operation, each popping its own targets before the next one's recomputation)
    popped = {t for m in ops for t in m.targets if t in sweep.saved_targets(m)} - ({r} if old_root else set())
    if popped & remat.operands(sweep.remat, reads):
        sweep.names.restore(state)
        return None
    for n in reads - internal - {r, g}:
        if n in analysis.locals and not sweep.restorable(n):
            sweep.names.restore(state)
            return None
    if spread:  # the gradient of the root, a scalar seed, spread to the root's shape first
        head += seeds.materialize(live, [r])
    pops = []
    for m in reversed(ops):
        for t in reversed(m.targets):
            live.discard(t)
            seeds.lazy.discard(t)
            if t in sweep.saved_targets(m):
                pops.append(sweep.restore(t))
    if old_root:  # the gradient reads the value ``r`` had before the root overwrote it
        head.append(pops.pop(0))
    bound = {}
    for v in sorted(exprs, key=lambda v: v == r):  # the root's own name last: its adjoint is g
        expr = exprs[v]
        c, rest, key = primitive[v]
        summed = analysis.same_shape(root, v, r)
        if counts[key] > 1:
            if key not in bound:
                value = algebra.gradient_times(g, rest)
                bound[key] = (sweep.adj(sweep.names.temp()), value)
                out.append(compat.assign(bound[key][0], value))
            scalar = scalar_g and not (whole[v] or seeds.has_shape_of(bound[key][1], v))  # what the shared name holds
            expr = compat.name(bound[key][0])
            if not summed:  # sum the shared array first, then scale the (smaller) sum: -unbroadcast(dt9, ...)
                expr = sweep.unbroadcast(expr, v)
                summed = True
            algebra.nodes[-2] = expr
            expr = algebra.expr(Poly({((-2, 1),): c}))
        else:
            scalar = scalar_g and not (whole[v] or seeds.has_shape_of(expr, v))
        if not summed:
            expr = sweep.unbroadcast(expr, v)
        sweep.accumulate(compat.name(v), expr, live, out, scalar)
    out += pops
    return head, out

