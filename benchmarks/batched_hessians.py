"""Which table entries have no batching rule, which corpus hessians (or jacrev(grad(f))) run batched, and why not.

``astgrad.hessian`` batches the generated jvp of the generated gradient
over its tangent (api/directions.py) and falls back to one jvp per column
where vmap refuses that code or the batched code raises.
``astgrad.jacrev(astgrad.grad(f))`` batches the vjp of the gradient's code
over its seed (reverse over reverse), or hessian's block where reverse mode
does not take that code again, and falls back to one vjp per row.  First it
lists the entries of the rule table that have no batching rule (the ufuncs'
shared elementwise rule counts as one), by the module of their reverse rule.
Then, for each function of tests/corpus/functions.py, whether the batched
path ran and, if not, the first line of the last refusal, then the count per
kind of refusal: the table that says which construct to teach vmap next.
Usage: ``python benchmarks/batched_hessians.py [-v] [--jacrev-of-grad] [--table]``
(``-v``: the batched ones too; ``--jacrev-of-grad``: jacrev(grad(f)) with
respect to the first of the case's arguments, not hessian; ``--table``: the
entries only).
"""

from __future__ import annotations

import collections
import pathlib
import re
import sys
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

import astgrad  # noqa: E402
from astgrad.api import directions  # noqa: E402
from astgrad.transform.ir.errors import TransformError  # noqa: E402
from corpus.functions import CASES  # noqa: E402

#: the kinds of refusal, by what their message says
KINDS = (
    ("stack", r"stack_pop|pushed on|the stack of"),
    ("callee", r"user functions a function calls|is given .*, a list the batched code"),
    ("item write", r"setitem|item_assign|written_by_call"),
    ("test with a batch axis", r"test has a batch axis|for loop runs over"),
    ("container", r"container of containers|unpacking|a list or tuple of arrays"),
    ("no batching rule", r"no batching rule|defbatch|numpy\.matmul: "),
)


def kind_of(message):
    for kind, pattern in KINDS:
        if re.search(pattern, message):
            return kind
    return "other: " + message.split("\n")[0][-60:]


def _first(wrt):
    return wrt[0] if isinstance(wrt, (tuple, list)) else wrt


def survey(of_gradient=False):
    """[(case id, 'batched' | 'error' | kind, first line of the refusal)] for hessian, or for jacrev(grad(f))."""
    refusals: dict = {}
    build = directions.build_batched

    def spying(*args, **kwargs):
        try:
            return build(*args, **kwargs)
        except TransformError as error:
            refusals["last"] = str(error)
            raise

    directions.build_batched = spying
    rows = []
    try:
        for case in CASES:
            refusals.clear()
            if of_gradient:
                hessian = astgrad.jacrev(astgrad.grad(case.f, wrt=_first(case.wrt)), wrt=_first(case.wrt))
            else:
                hessian = astgrad.hessian(case.f, wrt=case.wrt)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    hessian(*case.args)
            except Exception as error:  # noqa: BLE001 -- the loop raises it too: no hessian either way
                rows.append((case.id, "error", type(error).__name__))
                continue
            if hessian.batched:
                rows.append((case.id, "batched", ""))
            elif "last" in refusals:
                message = refusals["last"]
                rows.append((case.id, kind_of(message), message.split("\n")[0].split("astgrad.vmap: ")[-1][:100]))
            else:
                rows.append((case.id, "raised when it ran", ""))
    finally:
        directions.build_batched = build
    return rows


def unbatched_entries():
    """{module of the reverse rule: [names of the entries without a batching rule]}, and the number of entries."""
    from astgrad.rules import shipped
    from astgrad.rules._deferred import import_installed
    from astgrad.rules._registry import load_deferred
    from astgrad.rules.batching import rule_of

    import_installed()
    load_deferred()
    entries = shipped()
    missing: dict = collections.defaultdict(list)
    for entry in entries:
        if rule_of(entry.fn) is None:
            module = getattr(entry.vjp, "__module__", None) or "no gradient"
            missing[module.replace("astgrad.", "")].append(entry.name.replace("numpy.", "np."))
    return missing, len(entries)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    verbose, of_gradient = "-v" in argv, "--jacrev-of-grad" in argv
    missing, count = unbatched_entries()
    for module, names in sorted(missing.items(), key=lambda item: -len(item[1])):
        print(f"{len(names):4}  {module}: {' '.join(sorted(names))}")
    print(f"{sum(map(len, missing.values())):4}  of {count} table entries without a batching rule\n")
    if "--table" in argv:
        return
    rows = survey(of_gradient)
    for case, kind, why in rows:
        if verbose or kind != "batched":
            print(f"{case:34} {kind:24} {why}")
    print()
    for kind, count in collections.Counter(kind for _, kind, _ in rows).most_common():
        print(f"{count:4}  {kind}")
    print(f"{len(rows):4}  corpus {'jacrev(grad(f))' if of_gradient else 'hessians'}")


if __name__ == "__main__":
    main()
