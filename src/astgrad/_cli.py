"""The command line: ``python -m astgrad show|check|graph FILE.py:FUNC``.

``show`` prints the code astgrad generates for a function; ``check`` runs
:func:`astgrad.check_grads` on it and prints its table; ``graph`` prints
the generated code's data flow as Graphviz DOT (or renders it to a file).  A failure (a file or
function that is not there, a function astgrad refuses) prints one line
``astgrad: error: ...`` and exits with status 1; a gradient mismatch found by
``check`` prints the table and exits with status 1 too.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import sys
from typing import Any, Callable, NoReturn, Optional, Sequence

import numpy as np

_DESCRIPTION = """\
Differentiate a numpy function in a Python file and print the result.

  astgrad show model.py:loss                 the generated gradient of loss
  astgrad show model.py:loss --wrt w --wrt b the gradient with respect to w and b
  astgrad show model.py:f --mode vjp         the vector-Jacobian product
  astgrad show model.py:f --mode jvp         the Jacobian-vector product (forward mode)
  astgrad check model.py:loss --args "np.ones(3), 2.0"
                                             compare generated, taped and finite-difference gradients
  astgrad graph model.py:loss -o loss.svg    the generated gradient's data flow, as a picture

FILE is imported as a module (its directory is put on sys.path first, and
code under `if __name__ == "__main__":` does not run); FUNC may be dotted
(Class.method)."""

_EPILOG = "Exit status: 0 on success, 1 on an error or a gradient mismatch, 2 on a usage error."


_LEVELS = (0, 1, 2)
_OPTIMIZE_HELP = ("the optimisation level of the generated code: 0 (the adjoint as the rules write it), 1 (what a "
                  "careful person writes by hand: no dead code, temporaries and elementwise chains folded), 2 (also "
                  "memory work: shapes instead of arrays, recomputation, in-place results; the default)")


class _Failure(Exception):
    """An error to report on one line, without a traceback."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="astgrad", description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def target(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("target", metavar="FILE.py:FUNC", help="the file and the function in it")
        sub.add_argument("--wrt", action="append", metavar="NAME",
                         help="a parameter to differentiate with respect to, by name or position; "
                              "repeat for several (default: the first parameter; for Class.method the first "
                              "after self)")

    show = commands.add_parser(
        "show", help="print the generated gradient source",
        description="Print the Python source astgrad generates for the gradient of FUNC.")
    target(show)
    show.add_argument("--mode", choices=("grad", "vjp", "jvp"), default="grad",
                      help="grad: the gradient of a scalar function (default); "
                           "vjp: the vector-Jacobian product of any function; "
                           "jvp: the Jacobian-vector product (forward mode)")
    show.add_argument("--stage", metavar="STAGE",
                      help="print the code as it is after this pass of the transformer (see astgrad.show)")
    show.add_argument("--optimize", type=int, choices=_LEVELS, metavar="N", help=_OPTIMIZE_HELP)

    graph = commands.add_parser(
        "graph", help="print the generated gradient's data flow as Graphviz DOT",
        description="Print the data flow of the code astgrad generates for FUNC as Graphviz DOT text "
                    "(astgrad.graph), or render it to a file with -o.")
    target(graph)
    graph.add_argument("--mode", choices=("grad", "vjp"), default="grad", help="as for show")
    graph.add_argument("--optimize", type=int, choices=_LEVELS, metavar="N", help=_OPTIMIZE_HELP)
    graph.add_argument("-o", "--output", metavar="FILE",
                       help="write the picture to FILE in the format its suffix names (.svg, .png, .pdf; "
                            ".dot for the text); needs the graphviz package and Graphviz's dot program")

    check = commands.add_parser(
        "check", help="compare the gradients of both engines with finite differences",
        description="Run astgrad.check_grads on FUNC at the given arguments and print its table.")
    target(check)
    check.add_argument("--args", required=True, metavar="EXPR",
                       help="the arguments as written inside a call's parentheses, e.g. \"np.ones(3), 2.0\"; "
                            "evaluated with np and FILE's globals in scope")
    check.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance (default 1e-5)")
    check.add_argument("--atol", type=float, default=1e-6, help="absolute tolerance (default 1e-6)")
    return parser


def _split_target(target: str) -> tuple[str, str]:
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise _Failure(f"{target!r}: expected FILE.py:FUNC, e.g. model.py:loss")
    return path, name


def _load(path: str) -> Any:
    """Import the file at ``path`` as a module of its own (so its source can be read back)."""
    if not os.path.isfile(path):
        raise _Failure(f"{path}: no such file")
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if stem.isidentifier() and stem not in sys.modules else f"_astgrad_cli_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise _Failure(f"{path}: cannot be imported as a Python module (is it a .py file?)")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(path))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as error:
        raise _Failure(f"{error.filename}:{error.lineno}: SyntaxError: {error.msg}") from None
    except Exception as error:
        raise _Failure(f"{path}: importing it raised {_one_line(error)}") from None
    return module


def _function(module: Any, path: str, name: str) -> Callable:
    value = module
    for part in name.split("."):
        if not hasattr(value, part):
            found = sorted(k for k, v in vars(module).items()
                           if inspect.isfunction(v) and v.__module__ == module.__name__)
            listing = f"; its functions: {', '.join(found)}" if found else ""
            raise _Failure(f"{path}: no function {name!r}{listing}")
        value = getattr(value, part)
    if not callable(value):
        raise _Failure(f"{path}: {name} is a {type(value).__name__}, not a function")
    return value


def _wrt(values: Optional[Sequence[str]]) -> Any:
    if not values:
        return 0
    parsed = [int(v) if v.isdigit() else v for v in values]
    return parsed[0] if len(parsed) == 1 else tuple(parsed)


def _is_method(module: Any, name: str) -> bool:
    """Whether ``name`` (dotted) reaches a function through a class: a method whose first parameter is ``self``."""
    owner = module
    parts = name.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    if not inspect.isclass(owner):
        return False
    return inspect.isfunction(inspect.getattr_static(owner, parts[-1], None))


def _default_wrt(fn: Callable, module: Any, path: str, name: str, given: Optional[Sequence[str]]) -> Any:
    """What to differentiate with respect to: ``--wrt``, else the first parameter, but never a method's ``self``."""
    if given:
        return _wrt(given)
    if not _is_method(module, name):
        return 0
    parameters = list(inspect.signature(fn).parameters)
    if len(parameters) < 2:
        raise _Failure(f"{path}: {name} is a method whose only parameter is {parameters[0] if parameters else 'none'}"
                       f": name what to differentiate with respect to with --wrt")
    print(f"astgrad: {name} is a method: differentiating with respect to {parameters[1]!r}, the first parameter "
          f"after {parameters[0]!r} (--wrt chooses another)", file=sys.stderr)
    return 1


def _accepts(fn: Callable, name: str) -> bool:
    return name in inspect.signature(fn).parameters


def _show(fn: Callable, args: argparse.Namespace) -> None:
    import astgrad

    wrt = args.wrt_resolved
    makers: dict[str, Callable[..., Any]] = {"grad": astgrad.grad, "vjp": astgrad.vjp, "jvp": astgrad.jvp}
    make = makers[args.mode]
    options: dict[str, Any] = {}
    if args.optimize is not None:
        if not _accepts(make, "optimize"):
            raise _Failure(f"--optimize: this version of astgrad has no optimisation levels for {args.mode}")
        options["optimize"] = args.optimize
    if args.stage is None:
        print(make(fn, wrt=wrt, **options).source, end="")
        return
    if not _accepts(astgrad.show, "stage"):
        raise _Failure("--stage: this version of astgrad.show has no stages")
    if args.mode != "grad":
        if not _accepts(astgrad.show, "mode"):
            raise _Failure("--stage is available with --mode grad only")
        options["mode"] = args.mode
    options["stage"] = args.stage
    astgrad.show(fn, wrt, **options)


def _graph(fn: Callable, args: argparse.Namespace) -> None:
    import astgrad

    make = astgrad.grad if args.mode == "grad" else astgrad.vjp
    options = {} if args.optimize is None else {"optimize": args.optimize}
    picture = astgrad.graph(make(fn, wrt=args.wrt_resolved, **options))
    if args.output is None:
        print(picture.source, end="")
        return
    try:
        picture.save(args.output)
    except (ImportError, RuntimeError, ValueError, OSError) as error:
        raise _Failure(str(error) if args.output in str(error) else f"{args.output}: {error}") from None


def _arguments(expr: str, module: Any) -> tuple:
    scope = dict(vars(module))
    scope.setdefault("np", np)
    scope.setdefault("numpy", np)
    try:
        values, keywords = eval(f"(lambda *a, **k: (a, k))({expr})", scope)  # noqa: S307 - the user's own
    except SyntaxError:
        raise _Failure(f"--args {expr!r}: not an argument list (write it as inside a call's parentheses, "
                       f"e.g. \"np.ones(3), 2.0\")") from None
    except Exception as error:
        raise _Failure(f"--args {expr!r} raised {_one_line(error)}") from None
    if keywords:
        raise _Failure(f"--args {expr!r}: keyword arguments are not supported; pass them by position")
    return values


def _check(fn: Callable, module: Any, args: argparse.Namespace) -> int:
    import astgrad

    values = _arguments(args.args, module)
    try:
        report = astgrad.check_grads(fn, *values, wrt=args.wrt_resolved, rtol=args.rtol, atol=args.atol)
    except astgrad.GradientMismatch as mismatch:
        print(mismatch.report)
        print(f"astgrad: gradient mismatch in {args.target}", file=sys.stderr)
        return 1
    print(report)
    return 0


def _one_line(error: BaseException) -> str:
    from .transform.ir.errors import TransformError

    if isinstance(error, TransformError):
        text = f"{error.filename}:{error.lineno}:{error.col + 1}: {error.reason}"
        return f"{text}. {error.hint}" if error.hint else text
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {' '.join(lines)}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    args = _parser().parse_args(argv)
    fn: Optional[Callable] = None
    try:
        path, name = _split_target(args.target)
        module = _load(path)
        fn = _function(module, path, name)
        args.wrt_resolved = _default_wrt(fn, module, path, name, args.wrt)
        if args.command == "show":
            _show(fn, args)
            return 0
        if args.command == "graph":
            _graph(fn, args)
            return 0
        return _check(fn, module, args)
    except BrokenPipeError:  # the reader stopped early (``| head``): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush is silent
        return 1
    except _Failure as failure:
        return _fail(str(failure))
    except Exception as error:  # a refusal of the transformer, or the function itself failed
        return _fail(_one_line(error) + _wrt_hint(fn, args))


def _wrt_hint(fn: Optional[Callable], args: argparse.Namespace) -> str:
    """What the failed command differentiated with respect to, and how to choose otherwise (``--wrt``)."""
    wrt = getattr(args, "wrt_resolved", None)
    if fn is None or wrt is None:
        return ""
    try:
        parameters = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ""
    chosen = [parameters[w] if isinstance(w, int) and w < len(parameters) else str(w)
              for w in (wrt if isinstance(wrt, tuple) else (wrt,))]
    return f" (differentiated with respect to {', '.join(repr(c) for c in chosen)}; --wrt NAME chooses another)"


def _fail(message: str) -> int:
    print(f"astgrad: error: {message}", file=sys.stderr)
    return 1


def _entry() -> NoReturn:
    """The ``astgrad`` console script."""
    sys.exit(main())
