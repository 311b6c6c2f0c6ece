"""Every python block of README.md and docs/*.md runs, in order, one namespace a page, as the page shows it.

A block the page marks `<!-- not run: why -->` (on the line before its fence) is illustrative (a fragment,
generated code, a cluster address); `<!-- needs: module program:name -->` skips the page's blocks from there on when an
optional module (or a program on PATH) is missing; `<!-- test with: 20_000_000 = 20_000 -->` (after those) runs the block with
smaller sizes. A block's printed lines must match the `# ...` comments the page writes after
its `print(...)` calls (tests/test_docs_printed_values.py checks those).
"""

import ast
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.M | re.S)
MARK = re.compile(r"<!--\s*(not run|needs):?\s*(.*?)\s*-->\s*\n(?:<!--\s*test with:.*-->\s*\n)?\Z")
SMALLER = re.compile(r"<!--\s*test with:\s*(.*?)\s*-->\s*\n\Z")

PAGE = """
import importlib.util, re, shutil, sys
import numpy as np

def claim(value, shown, where):
    places = max([len(digits) for digits in re.findall(r"\\.(\\d*)", shown)] + [0])
    tol = 0.6 * 10.0 ** -places
    expected = np.asarray(eval(shown, {"array": np.array, "nan": np.nan, "inf": np.inf}), dtype=float)
    value = np.asarray(value.detach().numpy() if hasattr(value, "detach") else value, dtype=float)
    assert value.shape == expected.shape and np.allclose(value, expected, rtol=tol, atol=tol), (
        f"{where}: the page shows {shown}, the code gives {value!r}")

def missing(needs):
    for need in needs.split():
        if need.startswith("program:"):
            if shutil.which(need[len("program:"):]) is None:
                return True
            continue
        try:
            if importlib.util.find_spec(need) is None:
                return True
        except ImportError:
            return True
    return False

def run_page(args):
    ns = {"__name__": "__main__", "_claim_": claim}
    for path, needs in zip(args[0::2], args[1::2]):
        if needs != "-" and missing(needs):
            print("skipped, needs", needs)
            break
        with open(path) as file:
            exec(compile(file.read(), path, "exec"), ns)
"""

# One page: a process of its own.
RUNNER = PAGE + """
run_page(sys.argv[1:])
"""

# Every page: one process imports numpy and astgrad once (what each page's process spent most of its
# time on), then forks a child for each page, so each page still starts from a process of its own that
# has run nothing else. A request is one line of JSON: the page's directory, its arguments, the file
# for its stderr; the answer is one line, the page's exit status.
FORKING = PAGE + """
import json, os, signal, traceback
import astgrad  # noqa: F401

for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            signal.alarm(120)
            os.chdir(request["cwd"])
            for fd, name in ((1, "stdout"), (2, "stderr")):
                os.dup2(os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
            sys.argv = ["-c", *request["args"]]
            run_page(request["args"])
            status = 0
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


def blocks(page: pathlib.Path):
    """(line, code, mark, detail) of each python block."""
    text = page.read_text()
    for match in FENCE.finditer(text):
        before = text[:match.start()]
        mark = MARK.search(before[-200:])
        code = match.group(1)
        smaller = SMALLER.search(before[-200:])
        for pair in smaller[1].split(",") if smaller else ():
            large, small = (side.strip() for side in pair.split("="))
            assert large in code, f"{page.name}: {large} is not in the block after the test-with mark"
            code = code.replace(large, small)
        yield (before.count("\n") + 2, code, mark[1] if mark else None, mark[2] if mark else None)


CLAIM = re.compile(r"^(?P<expression>[^\s#][^#]*?)\s+#\s*(?P<comment>[-\d\[(a].*)$")


def shown_value(comment: str):
    """The literal a comment starts with, or None when it is prose."""
    for cut in (comment, comment.split(": ")[0], comment.split(" = ")[0], comment.split(", ")[0]):
        try:
            ast.parse(cut, mode="eval")
            eval(cut, {"array": np.array, "nan": np.nan, "inf": np.inf, "__builtins__": {}})
        except Exception:
            continue
        return cut.strip()
    return None


def with_claims(code: str, where: str) -> str:
    """Each `expression   # value` line of the block asserts the value."""
    lines = code.split("\n")
    for i, line in enumerate(lines):
        match = CLAIM.match(line)
        if not match:
            continue
        shown = shown_value(match["comment"])
        try:
            tree = ast.parse(match["expression"])
        except SyntaxError:
            continue
        if shown is None or len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
            continue
        call = tree.body[0].value
        expression = match["expression"]
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "print" and len(call.args) == 1:
            expression = ast.unparse(call.args[0])
        lines[i] = f"_claim_({expression}, {shown!r}, {f'{where}+{i}'!r})"
    return "\n".join(lines)


def page_with_blocks():
    return [page for page in PAGES if any(True for _ in blocks(page))]


ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MPLBACKEND": "Agg"}


@pytest.fixture(scope="module")
def run_page():
    """``run_page(args, cwd)``: the page's exit status and stderr, from a forked child where there is fork."""
    if not hasattr(os, "fork"):
        def in_a_process(args, cwd):
            result = subprocess.run([sys.executable, "-c", RUNNER, *args], capture_output=True, text=True,
                                    cwd=cwd, env=ENV, timeout=120)
            return result.returncode, result.stderr
        yield in_a_process
        return
    server = subprocess.Popen([sys.executable, "-c", FORKING], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=ROOT, env=ENV)

    def forked(args, cwd):
        request = {"cwd": str(cwd), "args": args, "stdout": str(cwd / "stdout.txt"), "stderr": str(cwd / "stderr.txt")}
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        answer = server.stdout.readline()
        assert answer, "the process that forks the pages ended"
        return int(answer), (cwd / "stderr.txt").read_text()
    yield forked
    server.stdin.close()
    server.wait(timeout=60)


@pytest.mark.parametrize("page", page_with_blocks(), ids=lambda p: p.name)
def test_the_python_blocks_of_a_page_run(page, tmp_path, run_page):
    args = []
    needs = "-"
    for line, code, mark, detail in blocks(page):
        if mark == "not run":
            assert detail, f"{page.name}:{line}: say why the block is not run"
            continue
        if mark == "needs":
            needs = detail
        path = tmp_path / f"{page.stem.replace('-', '_')}_line_{line}.py"
        path.write_text(with_claims(code, f"{page.name}:{line}"))
        args += [str(path), needs]
    returncode, stderr = run_page(args, tmp_path)
    assert returncode == 0, stderr[-3000:]
