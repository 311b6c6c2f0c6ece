"""The house's layers: each part of astgrad imports only the parts below it.

Inside ``astgrad.transform`` the stages are stacked (top to bottom)::

    transform (the face)  ->  pipeline  ->  back  ->  passes  ->  core  ->  front  ->  runtime  ->  ir

and the package as a whole::

    the face (astgrad, check, autograd, _cli, pytest_plugin, torch)  ->  api  ->  views  ->  backends
      ->  transform  ->  values  ->  tape  ->  rules

A module may import modules of its own layer and of any layer below.  An
arrow that runs back up is named by the failure (``importer -> imported``),
with what to do: move the shared piece down, or the importer up.  Imports
inside functions count (they still tie the two modules together); imports
under ``if TYPE_CHECKING:`` do not.  An arrow allowed by name carries its
reason, and the test fails when it is no longer needed, so the list cannot
rot.
"""

import pytest

from _imports import graph

TRANSFORM = "astgrad.transform"
#: the stages of transform/, top first
STAGES = ["pipeline", "back", "passes", "core", "front", "runtime", "ir"]
#: the parts of the package, top first (a module not named here is part of the face)
PARTS = ["face", "astgrad.api", "astgrad.views", "astgrad.backends", "astgrad.transform", "astgrad.values",
         "astgrad.tape", "astgrad.rules"]
#: arrows that run up on purpose: {(importer, imported): why}
ALLOWED = {
    ("astgrad.rules.catalogue", "astgrad"):
        "the catalogue lists every rule, the transformer's helpers included: it imports the package "
        "inside the function that builds the list, to load them",
}


def stage(module: str) -> int:
    """The rank of ``module``'s stage in ``STAGES`` (the face, ``astgrad.transform`` itself, is -1)."""
    if module == TRANSFORM:
        return -1
    return STAGES.index(module[len(TRANSFORM) + 1:].split(".")[0])


def part(module: str) -> int:
    for i, name in enumerate(PARTS[1:], 1):
        if module == name or module.startswith(name + "."):
            return i
    return 0


def backward_arrows(edges) -> list:
    """Every ``(importer, imported)`` that points up a layer, within transform/ or across the package."""
    found = []
    for importer, imported in ((a, b) for a, bs in edges.items() for b in bs):
        if importer.startswith(TRANSFORM) and imported.startswith(TRANSFORM):
            if stage(imported) < stage(importer):
                found.append((importer, imported))
        elif part(imported) < part(importer):
            found.append((importer, imported))
    return sorted(found)


@pytest.fixture(scope="module")
def edges():
    return graph()


def test_every_stage_of_transform_is_a_subpackage_named_in_the_order(edges):
    stages = {m[len(TRANSFORM) + 1:].split(".")[0] for m in edges if m.startswith(TRANSFORM + ".")}
    assert stages == set(STAGES), "a module of transform/ outside the stages: put it in the stage it serves"


def test_imports_point_down(edges):
    arrows = [a for a in backward_arrows(edges) if a not in ALLOWED]
    assert not arrows, "imports running up a layer (move the shared piece down, or the importer up): " + \
        "; ".join(f"{a} -> {b}" for a, b in arrows)


def test_each_allowed_arrow_is_still_there(edges):
    gone = [arrow for arrow in ALLOWED if arrow[1] not in edges.get(arrow[0], ())]
    assert not gone, f"no longer imported, take them off ALLOWED: {gone}"


def test_the_tape_and_the_transformer_never_import_each_other(edges):
    """Each engine checks the other, so neither may lean on the other: both stand on the rules."""
    crossing = sorted((a, b) for a, bs in edges.items() for b in bs
                      if a.startswith("astgrad.transform") and b.startswith("astgrad.tape")
                      or a.startswith("astgrad.tape") and b.startswith("astgrad.transform"))
    assert not crossing, f"the engines import each other: {crossing}"


def test_the_check_names_an_arrow_that_runs_back():
    fake = {"astgrad.transform.ir.nodes": {"astgrad.transform.front.parse"},
            "astgrad.transform.core.reverse": {"astgrad.transform.front.parse", "astgrad.transform.ir.nodes"},
            "astgrad.rules.elementwise": {"astgrad.tape._tensor"},
            "astgrad.tape._tensor": {"astgrad.rules.elementwise"}}
    assert backward_arrows(fake) == [("astgrad.rules.elementwise", "astgrad.tape._tensor"),
                                     ("astgrad.transform.ir.nodes", "astgrad.transform.front.parse")]
