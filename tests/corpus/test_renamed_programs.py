"""Renaming a program's variables to the generator's own names changes no gradient.

A random program of ``programs.py`` (helpers, loops, branches, a closure and a
global read by ``f``) is differentiated, then every identifier it defines
(parameters, locals, helpers, ``f``, ``np``, the global and the closure
variable) is renamed, one to one, to names the generator uses: those of the
program's own generated source (``t1``, ``dx``, ``dresult``, ``_stack``,
``forward_h0``, ``unbroadcast``, ...) and a fixed list.  The renamed program
computes the same values, so its gradient must be the same; a generated name
that captured or shadowed a user's name would change it or crash.  The
default run is derandomized and short; ``--runslow`` runs many more.
"""

import ast
import builtins
import hashlib
import io
import itertools
import keyword
import tokenize

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

import astgrad

from .programs import fresh_run, load, programs

X = np.array([0.37, -0.65, 1.13])
Y = np.array([0.93, 0.43, -0.42])

FIXED = (["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "result", "value", "dresult", "_stack", "np", "math",
          "_returned", "_break", "_skip", "_trips", "_saved1", "_", "i", "unbroadcast", "Shaped", "add_into",
          "shape", "size", "only_shape", "filled", "multiply_into", "default", "len", "min", "reversed",
          "tuple", "isinstance", "forward_f", "backward_f", "df", "_dep1"]
         + [f"{prefix}{n}" for prefix in ("d", "forward_", "backward_")
            for n in ("x", "y", "a", "b", "c", "h0", "h1", "v0", "v1", "i", "k0")])


def with_global_and_closure(source):
    """``f`` moved into a factory so it reads a closure variable, and reading a global too."""
    head, _, body = source.partition("def f(x, y):\n")
    lines = body.rstrip("\n").split("\n")
    lines[-1] += " + np.sum(x * g0) + np.sum(y * c0)"
    inner = "\n".join("    " + line for line in ["def f(x, y):"] + lines)
    return (f"{head}g0 = np.array([0.5, -0.25, 1.5])\n\n\ndef make():\n"
            f"    c0 = np.array([1.25, 0.5, -0.75])\n\n{inner}\n\n    return f\n\n\nf = make()\n")


def identifiers(source):
    """The names the program defines: not attributes, keywords of calls, numpy's own name or builtins."""
    found, depth, previous = [], 0, None
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for k, tok in enumerate(tokens):
        if tok.type == tokenize.OP:
            depth += tok.string in "([{"
            depth -= tok.string in ")]}"
        elif tok.type == tokenize.NAME and not keyword.iskeyword(tok.string) and tok.string != "numpy" \
                and not hasattr(builtins, tok.string) and (previous is None or previous.string != "."):
            keyword_argument = depth > 0 and tokens[k + 1].string == "="
            if not keyword_argument and tok.string not in found:
                found.append(tok.string)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT):
            previous = tok
    return found


def renamed(source, mapping):
    """``source`` with each identifier token renamed (attributes and call keywords are left alone)."""
    out, depth, previous = [], 0, None
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for k, tok in enumerate(tokens):
        text = tok.string
        if tok.type == tokenize.OP:
            depth += text in "([{"
            depth -= text in ")]}"
        elif tok.type == tokenize.NAME and text in mapping and (previous is None or previous.string != ".") \
                and not (depth > 0 and tokens[k + 1].string == "="):
            text = mapping[text]
        out.append(tok._replace(string=text))
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT):
            previous = tok
    return tokenize.untokenize(out)


def generated_names(source):
    """Every identifier of a generated module's source."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.FunctionDef):
            found.add(node.name)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
    return found


def one_to_one(draw, names, pool):
    """A renaming of ``names`` onto distinct names, most of them drawn from ``pool``."""
    mapping, used = {}, set()
    for name in names:
        choice = draw(st.sampled_from(pool)) if draw(st.integers(0, 4)) else name
        if choice in used:
            choice = name if name not in used else next(n for n in (f"{name}_{k}" for k in itertools.count(9))
                                                        if n not in used)
        mapping[name] = choice
        used.add(choice)
    return mapping


def gradient_or_refusal(f):
    """``grad(f)(X, Y)``, or the located refusal of a write the aliasing check cannot prove safe
    (``UnsupportedSyntaxError``, "shares memory"); any other error fails the test."""
    try:
        df = astgrad.grad(f, wrt=(0, 1))
    except astgrad.TransformError as exc:
        if "shares memory" not in exc.reason:
            raise
        return None, exc
    with np.errstate(all="ignore"):
        return df(X, Y), None


def check_renamed_program(source, data, directory):
    source = with_global_and_closure(source)
    original = load(source, directory, _module_name(source))
    with np.errstate(all="ignore"):
        value = original.f(X, Y)
    assume(bool(np.all(np.isfinite(value))))
    expected, refusal = gradient_or_refusal(original.f)
    assume(refusal is not None or all(np.all(np.isfinite(g)) for g in expected))
    names = identifiers(source)
    builtins_read = {n for n in generated_names(source) if hasattr(builtins, n)}
    made = generated_names(astgrad.grad(original.f, wrt=(0, 1)).source) if refusal is None else set()
    pool = sorted((made | set(FIXED)) - builtins_read - {"numpy"})
    mapping = one_to_one(data.draw, names, pool)
    assert len(set(mapping.values())) == len(mapping)
    new_source = renamed(source, mapping)
    note(new_source)
    module = load(new_source, directory, _module_name(new_source))
    f = getattr(module, mapping["f"])
    with np.errstate(all="ignore"):
        assert np.array_equal(f(X, Y), value), "the renaming changed the program"
    got, renamed_refusal = gradient_or_refusal(f)
    if refusal is not None or renamed_refusal is not None:  # the same refusal, at the same line
        assert refusal is not None and renamed_refusal is not None \
            and renamed_refusal.lineno == refusal.lineno, f"{refusal}\n{renamed_refusal}\n\nrenamed program:\n{new_source}"
        return
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12, err_msg=f"renamed program:\n{new_source}")


def _module_name(source):
    """Named by content, so a failure replays with the same file names in its traceback."""
    return f"astgrad_renamed_{hashlib.sha1(source.encode()).hexdigest()[:12]}"


COMMON = dict(deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@settings(max_examples=15, derandomize=True, **COMMON)
@given(source=programs(), data=st.data())
def test_renaming_to_generated_names_changes_no_gradient(source, data, tmp_path_factory):
    check_renamed_program(source, data, tmp_path_factory.mktemp("renamed", numbered=True))


@pytest.mark.slow
@settings(max_examples=300, **fresh_run(**COMMON))
@given(source=programs(), data=st.data())
def test_many_renamings_change_no_gradient(source, data, tmp_path_factory):
    check_renamed_program(source, data, tmp_path_factory.mktemp("renamed", numbered=True))
