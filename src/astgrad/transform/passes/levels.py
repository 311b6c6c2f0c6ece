"""The optimisation passes, by level: each a ``(ctx) -> None`` over pipeline.Context.

They rewrite the generated function after the sweeps (``ctx.fn_def``) and
read what the sweeps recorded (``ctx.primal``, ``ctx.adjoint``, ``ctx.rev``).
pipeline.py lists them in ENTRY with the lowest level each runs at, and
marks those that may leave dead code (``Pass.tidy``): dead code then runs
after them, unless the pass returns False (it changed nothing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import compat
from .. import runtime
from .cleanup import drop_unread_saves as _drop_unread_saves, propagate_copies, release, rename_into_returned, unstack
from .fixed_shapes import FixedShapes, drop_fixed_shape_saves
from .float_casts import drop_float_casts
from ..ir.compat import gast
from ..ir.trees import rewrite
from .accumulate import accumulate_in_place
from .inplace import reuse_buffers
from .invariant_saves import drop_invariant_saves
from .item_updates import pass_items_through
from .number_unbroadcasts import drop_number_unbroadcasts
from .number_items import cut_number_items
from .recurrences import solve_linear_loops
from .unused import drop_arrays, shapes_on_stack as _shapes_on_stack, shapes_only, unbind
from .saves import overwritten_on_stack
from .static_shapes import static_shapes as _static_shapes
from .where_products import select_products
from .scatter_sums import sum_scatters
from .slice_constants import bind_slices
from .slice_views import share_slice_views
from .write_in_place import write_items_in_place
from .written_items import read_written_items
from .invariant_shapes import hoist_invariant_shapes
from .item_adds import add_items_in_place
from .chained_adds import chain_item_adds
from .number_items import unpack_number_items
from .shared_products import share_products
from .negations import fold_negations

if TYPE_CHECKING:  # the passes' one argument; pipeline.py imports this module
    from ..pipeline import Context


def dead_code(ctx: Context) -> None:
    """Drop what nothing reads (a value that could raise keeps its check); collapse empty blocks."""
    ctx.tidy()


def number_unbroadcasts(ctx: Context) -> bool:
    """``unbroadcast(g, shape(x))`` is ``g`` where x and g are surely numbers (ranks 0)."""
    return drop_number_unbroadcasts(ctx.fn_def, ctx.analysis.ranks, ctx.adjoints, ctx.ns)


def number_items(ctx: Context) -> bool:
    """``number_items(g, k)`` for ``_like(g, lst)`` of a list of ``k`` numbers (``np.array([a, b])``'s gradient),
    the numpy backend's."""
    if ctx.module.backend is not None:
        return False
    return cut_number_items(ctx.fn_def, ctx.body, set(ctx.params), ctx.analysis.ranks, ctx.ns)


def float_casts(ctx: Context) -> bool:
    """``through_cast(g, u)`` is ``g`` where no value of ``u`` can hold integers (a write into an array of floats)."""
    return drop_float_casts(ctx.fn_def, ctx.body, ctx.params, ctx.given_floats, ctx.ns)


def static_shapes(ctx: Context) -> bool:
    """Read a shape from a name surely of that shape, so the value itself need not be computed."""
    return _static_shapes(ctx.fn_def.body, ctx.adjoint, ctx.analysis.shapes, ctx.rev.available, ctx.ns)


def inline_temporaries(ctx: Context) -> None:
    """Write a single-use primal temporary into the statement that reads it."""
    ctx.fn_def = unbind(ctx.fn_def, ctx.primal, ctx.names.temps, ctx.ns)


def shapes_on_stack(ctx: Context) -> None:
    """Push ``only_shape(t)`` where the adjoint reads a saved ``t`` only for its shape."""
    ctx.fn_def = _shapes_on_stack(ctx.fn_def, ctx.adjoint, ctx.helpers[:2], ctx.helpers[2])


def drop_unread_saves(ctx: Context) -> None:
    """Stop saving what no adjoint statement reads any more (after fusion): pushes and pops in pairs."""
    ctx.fn_def = _drop_unread_saves(ctx.fn_def, ctx.adjoint)


def fixed_shapes(ctx: Context) -> bool:
    """Stop saving, in a loop, a value the adjoint reads only for a shape that is the same on every trip."""
    body = ctx.fn_def.body
    returned = None
    if ctx.mode in ("grad", "vjp", "pullback"):  # as the ranks read callees' (analyse)
        def returned(op):
            return ctx.module.returned_shape(ctx, op, ctx.analysis.ranks.atom_rank)
    ctx.fn_def = drop_fixed_shape_saves(ctx.fn_def, ctx.adjoint, lambda: FixedShapes(ctx.body, ctx.params, ctx.analysis,
                                                                                       ctx.ns, ctx.given_floats,
                                                                                       returned), ctx.ns)
    return ctx.fn_def.body is not body


def invariant_saves(ctx: Context) -> bool:
    """Stop saving, in a loop, a value every trip computes the same from the same operands (``nu * dt``)."""
    body = ctx.fn_def.body
    ctx.fn_def = drop_invariant_saves(ctx.fn_def, ctx.adjoint, ctx.body, ctx.params, ctx.ns)
    return ctx.fn_def.body is not body


def keep_only_shapes(ctx: Context) -> None:
    """``t = only_shape(t)`` after the last primal read of a value the adjoint reads only for its shape."""
    ctx.fn_def = drop_arrays(ctx.fn_def, ctx.primal, ctx.adjoint, ctx.helpers, ctx.names.temps, ctx.ns)


def compute_only_shapes(ctx: Context) -> None:
    """``t = Shaped(broadcast_shape(...))``: a value everything reads only for its shape is not computed."""
    ctx.fn_def = shapes_only(ctx.fn_def, ctx.ns, ctx.helpers, ctx.given_floats)


def item_updates(ctx: Context) -> bool:
    """The adjoint of ``a[i] = a[i] + v`` passes a's gradient through: no ``setitem(g, i, 0)`` added back to."""
    return pass_items_through(ctx.fn_def, ctx.ns)


def where_products(ctx: Context) -> bool:
    """``cleaned(unselected(w, c, ...), w * x)`` of ``w = np.where(c, g, 0)``, with ``x`` of ``c``'s shape, is
    ``np.where(c, g * x, 0)``: no mask, no cleaning."""
    return select_products(ctx.fn_def, ctx.analysis.shapes, ctx.ns)


def scatter_sums(ctx: Context) -> bool:
    """Two ``du = du + scatter(g, s, i)`` of one gradient, shape and index add ``g_1 + g_2`` once: a slice
    read several times adds its summed gradients in one call."""
    return sum_scatters(ctx.fn_def, ctx.ns)


def slice_views(ctx: Context) -> bool:
    """``t4 = u[1:-1]`` read again with nothing between that rebinds ``u`` or writes into an array is
    ``t4 = t1`` of the view ``t1 = u[1:-1]`` made first (read through where ``t4`` is not saved)."""
    return share_slice_views(ctx.fn_def, ctx.ns, ctx.names.temps)


def read_through_copies(ctx: Context) -> None:
    """Read ``b`` where the adjoint wrote ``a = b`` (``dx = dy``, not ``dt4 = dy`` first); name ``b`` ``a`` where
    ``a`` is returned (``dx = 6 * dz * y``, not ``dy = ...; dx = dy``)."""
    returned = {n.id for n in compat.walk(ctx.fn_def.body[-1]) if isinstance(n, gast.Name)}
    copies = {n.id for stmt in ctx.adjoint for n in compat.walk(stmt)
              if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    ctx.fn_def = rename_into_returned(propagate_copies(ctx.fn_def, copies - returned), copies)


def saves_in_locals(ctx: Context) -> None:
    """A value saved outside every loop stays in a local instead of going through ``_stack``."""
    ctx.fn_def = unstack(ctx.fn_def)


def overwritten_saves(ctx: Context) -> None:
    """An item or slice write saves the values it overwrote (``overwritten(y, i)``), not the whole array;
    only its shape where the reverse sweep reads no more of it."""
    from ...rules import _extra

    through_cast, ndim = ctx.ns.name_of(_extra.through_cast), ctx.ns.name_of(runtime.ndim)
    ctx.fn_def = overwritten_on_stack(ctx.fn_def, lambda name: ctx.ns.globals.get(name) is _extra.setitem,
                                      ctx.ns.bind(runtime.overwritten, "overwritten"),
                                      ctx.ns.bind(runtime.restored, "restored"), ctx.helpers[2],
                                      ctx.helpers[:2] + ((ndim,) if ndim is not None else ()),
                                      (through_cast,) if through_cast is not None else ())


def release_arrays(ctx: Context) -> None:
    """``del`` each array after its last read."""
    params = ctx.fn_def.args.args + ctx.fn_def.args.kwonlyargs
    shaped = ctx.ns.bind(runtime.Shaped, "Shaped")
    ctx.fn_def = release(ctx.fn_def, keep=[a.id for a in params] + [ctx.ns.stack], numbers=_numbers(ctx),
                         small=(ctx.helpers[1], ctx.helpers[2], shaped))


def in_place(ctx: Context) -> None:
    """Write a result into an operand the function made and nothing reads again (``add_into``); add the
    gradient of indexing at its index (``added_at``), into the gradient itself where nothing else reaches it."""
    accumulate_in_place(ctx.fn_def, ctx.ns)
    ctx.fn_def = reuse_buffers(ctx.fn_def, ctx.ns, numbers=_numbers(ctx), counts=ctx.helpers[1:2])


def in_place_halves(ctx: Context) -> None:
    """A callee's ``in_place``, in each half of its pair: what the forward half saves is read again by the
    backward half (a pullback's, once per cotangent), and the backward half never writes into what it pops."""
    for fn_def in ctx.fn_defs:
        accumulate_in_place(fn_def, ctx.ns)
        reuse_buffers(fn_def, ctx.ns, numbers=_numbers(ctx), counts=ctx.helpers[1:2])


def items_in_place(ctx: Context) -> None:
    """``a[i] = v`` written into ``a`` itself where no other name reaches its array (``setitem_into``)."""
    ctx.fn_def = write_items_in_place(ctx.fn_def, ctx.ns, ctx.analysis.ranks)


def linear_recurrences(ctx: Context) -> None:
    """A reverse loop of steps affine in one adjoint, over saved numbers: cumulative products instead.

    A vjp's seed known to hold real floats needs no test at run time (a
    compiled backend keeps the loop: it is given the form with the test).
    """
    seed = ctx.seed if ctx.entry and ctx.mode == "vjp" and ctx.module.backend is None else None
    ctx.fn_def = solve_linear_loops(ctx.fn_def, ctx.ns, ctx.names, seed, lambda: ctx.given_floats)


def array_sizes(ctx: Context) -> None:
    """``x.size`` for ``size(x)`` of a parameter the call's ranks prove an array, without the helper's call.

    ``size`` serves a number too; a parameter of rank 1 or more (the entry
    guards ``type(x) is np.ndarray and x.ndim == k``; the general path gives
    a Dask array its rank too) has the attribute, with the same value.
    Asking the rank makes the gradient specialise by rank (ranks.Ranks.asked).
    A parameter the function assigns keeps the helper.
    """
    fn_def, ranks = ctx.fn_def, ctx.analysis.ranks
    params = {a.id for a in fn_def.args.posonlyargs + fn_def.args.args}
    assigned = {n.id for stmt in fn_def.body for n in compat.walk(stmt)
                if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}

    def replace(node):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and ctx.ns.globals.get(node.func.id) is runtime.size \
                and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], gast.Name):
            name = node.args[0].id
            if name in params and name not in assigned and (ranks.rank(name) or 0) >= 1:
                return compat.attr(compat.name(name), "size")
        return None
    fn_def.body = [rewrite(stmt, replace) for stmt in fn_def.body]


def written_items(ctx: Context) -> None:
    """``g[i]`` for ``written(g, i)`` where ``i`` is surely a Python int (a ``range`` loop's counter); the
    numpy backend's (Numba compiles the call).  In every function made (a callee's two halves, after the
    in-place passes of each)."""
    if ctx.module.backend is None:
        for fn_def in ctx.fn_defs:
            read_written_items(fn_def, ctx.ns)


def invariant_shapes(ctx: Context) -> None:
    """``shape(x)`` read once before the outermost loop that cannot change it (the numpy backend's), in every
    function made."""
    if ctx.module.backend is None:
        for fn_def in ctx.fn_defs:
            hoist_invariant_shapes(fn_def, ctx.ns, ctx.names, ctx.analysis.ranks.rank, callee=not ctx.entry)


def slice_constants(ctx: Context) -> None:
    """``np.s_[1:-1]`` of literal slices and ints read from a constant the module binds once (the numpy
    backend's), in every function made; last, so no pass that reads ``np.s_`` sees a name."""
    if ctx.module.backend is None:
        for fn_def in ctx.fn_defs:
            bind_slices(fn_def, ctx.ns)


def item_adds(ctx: Context) -> None:
    """``d = add_at(d, g, s, i)`` in a loop written ``d[i] += g`` behind one test of ``d`` before the loop and
    one of ``g``'s type a trip, where ``i`` is surely an integer (the numpy backend's), in every function made."""
    if ctx.module.backend is None:
        ranks = ctx.analysis.ranks
        for fn_def in ctx.fn_defs:
            add_items_in_place(fn_def, ctx.ns, ctx.names,
                               lambda name: ranks.value.get(name) if ranks.rank(name) is not None else None)


def chained_adds(ctx: Context) -> None:
    """A run of ``d = add_at(d, g, s, i)`` in one block (a callee's ``dy`` built item by item) written ``d[i] +=
    g`` behind one test of ``d`` after the statement binding it, where ``i`` is surely an integer (the numpy
    backend's), in every function made."""
    if ctx.module.backend is None:
        ranks = ctx.analysis.ranks
        for fn_def in ctx.fn_defs:
            chain_item_adds(fn_def, ctx.ns, ctx.names,
                            lambda name: ranks.value.get(name) if ranks.rank(name) is not None else None)


def number_item_parts(ctx: Context) -> None:
    """``x0, x1 = number_items(g, 2)`` where ``number_items``' list is read only by ``part`` of each item, just after
    it (the numpy backend's), in every function made."""
    if ctx.module.backend is None:
        for fn_def in ctx.fn_defs:
            unpack_number_items(fn_def, ctx.ns)


def shared_products(ctx: Context) -> None:
    """``a * b`` computed again from the same operands in a later statement of the block, nothing between able to
    change them, computed once before the first (the numpy backend's), in every function made."""
    if ctx.module.backend is None:
        for fn_def in ctx.fn_defs:
            share_products(fn_def, ctx.ns, ctx.names)


def negations(ctx: Context) -> None:
    """``a + -x * y`` is ``a - x * y``, and ``a + n`` of ``n = -x`` read there alone is ``a - x``, where every
    value of ``x`` is surely of floats (the numpy backend's), in every function made."""
    if ctx.module.backend is None:
        for fn_def in ctx.fn_defs:
            fold_negations(fn_def, ctx.ns)


def _numbers(ctx: Context) -> list:
    return [ctx.seed] if ctx.entry and ctx.mode == "grad" else []  # the seed of a gradient is the number 1.0
