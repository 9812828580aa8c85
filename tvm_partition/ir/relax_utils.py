"""Small helpers over Relax expressions (and one over TIR's: :func:`unravel`) shared by the frontend,
the passes and the templates."""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import relax

def unravel(flat, dims) -> list:
    """The row-major indices, in an array of extents ``dims``, of TIR expression ``flat`` (a flat
    position)."""
    index = []
    for d in reversed([int(d) for d in dims]):
        index.insert(0, tvm.tirx.floormod(flat, d))
        flat = tvm.tirx.floordiv(flat, d)
    return index


#: Relax constants (``relax.const``) are ``tvm.ir.expr.GenericConst`` objects in TVM 0.27.
Constant = tvm.ir.expr.GenericConst


#: Arguments (by position) that an op's legalization reads as constants, so they stay constants
#: (no weight, no copy to another device): TVM 0.27's ``all_class_non_max_suppression`` keeps at
#: most ``max_output_boxes_per_class`` boxes a class only where that is a constant, and every box
#: otherwise (an ONNX ``NonMaxSuppression`` of 256 boxes and 3 classes at 10 a class: 249 rows where
#: onnxruntime kept 30).
COMPILE_TIME_ARGS = {"relax.vision.all_class_non_max_suppression": (2,)}


def tensor_dims(ty) -> list[int | None] | None:
    """A tensor type's dimensions, None for each one known only at run time (the count a
    ``NonZero`` finds); None where the type is no tensor's or gives no shape."""
    if not isinstance(ty, relax.TensorType) or not isinstance(ty.shape, relax.ShapeExpr):
        return None
    return [int(d) if isinstance(d, tvm.tirx.IntImm) else None for d in ty.shape.values]


def static_tensor(ty) -> bool:
    """Whether ``ty`` is a tensor's whose every dimension is known before it runs."""
    dims = tensor_dims(ty)
    return dims is not None and None not in dims


def compile_time_constants(func: relax.Function) -> set:
    """The constants of ``func`` that an op reads at compile time (:data:`COMPILE_TIME_ARGS`)."""
    kept = set()

    def visit(e):
        if isinstance(e, relax.Call) and isinstance(e.op, tvm.ir.Op):
            kept.update(e.args[i] for i in COMPILE_TIME_ARGS.get(e.op.name, ()) if isinstance(e.args[i], Constant))

    relax.analysis.post_order_visit(func.body, visit)
    return kept


def substitute(expr, fn):
    """``expr`` with every Var and Constant leaf ``x`` replaced by ``fn(x)``."""
    if isinstance(expr, relax.Var | Constant):
        return fn(expr)
    if isinstance(expr, relax.Call):
        return relax.Call(expr.op, [substitute(a, fn) for a in expr.args], expr.attrs, expr.ty_args)
    if isinstance(expr, relax.Tuple):
        return relax.Tuple([substitute(f, fn) for f in expr.fields])
    if isinstance(expr, relax.TupleGetItem):
        return relax.TupleGetItem(substitute(expr.tuple_value, fn), expr.index)
    return expr


def copy_module(mod: tvm.IRModule) -> tvm.IRModule:
    """A new IRModule with ``mod``'s functions, attributes and global infos (vdevices): one to
    replace functions in without touching ``mod``."""
    return tvm.IRModule(dict(mod.functions), attrs=mod.attrs, global_infos=mod.global_infos)


def with_callees(func: relax.Function, source: tvm.IRModule) -> tvm.IRModule:
    """A module of ``func`` as ``main`` and every function of ``source`` it calls by name: the
    PrimFuncs an importer emitted itself (TVM's ONNX frontend writes ``Pad`` in reflect mode,
    ``CumSum`` in reverse and others as ``call_tir`` of TOPI's functions; its ``Clip`` too, which
    :mod:`tvm_partition.frontend.extrema` makes operators again), which a module of ``func`` alone
    would not define."""
    mod = tvm.IRModule({"main": func})
    defined = {gv.name_hint for gv in source.get_global_vars()}
    for gv in relax.analysis.all_global_vars(func):
        if gv.name_hint in defined and gv.name_hint != "main":
            mod[gv] = source[gv.name_hint]
    return mod


def calls_op(call: relax.Call, op) -> bool:
    """Whether ``call`` calls operator ``op`` (not a function or a ``GlobalVar``)."""
    return isinstance(call.op, tvm.ir.Op) and call.op.same_as(op)


def quantizes(mod: tvm.IRModule) -> bool:
    """Whether ``mod``'s ``main`` quantizes a tensor (calls ``relax.quantize``): a quantized model,
    whose outputs another build may round differently (:data:`tvm_partition.runtime.ort.FLIPPED_SHARE`)."""
    quantize, found = tvm.ir.Op.get("relax.quantize"), []
    relax.analysis.post_order_visit(mod["main"], lambda e: found.append(isinstance(e, relax.Call) and calls_op(e, quantize)))
    return any(found)


def rewrite_functions(mod: tvm.IRModule, mutator) -> tvm.IRModule:
    """``mod`` with every Relax function rewritten by ``mutator(mod, func)`` (a ``PyExprMutator``)."""
    out = copy_module(mod)
    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            out[gv] = mutator(mod, func).visit_expr(func)
    return out


def like_block(block, bindings: list):
    """A block of ``block``'s kind (dataflow or not) holding ``bindings``."""
    return relax.DataflowBlock(bindings) if isinstance(block, relax.DataflowBlock) else relax.BindingBlock(bindings)


def view_bindings(bb: relax.BlockBuilder, var: relax.Var, source, shape, offset: int) -> list:
    """``var`` bound to the ``shape`` of ``source`` at byte ``offset`` as a view, no copy:
    ``R.memory.view`` then ``R.memory.ensure_zero_offset`` (which moves the data pointer: kernels
    take tensors of byte offset 0). ``bb`` (in a binding block) infers the calls' types."""
    view = bb.normalize(relax.op.memory.view(source, list(shape), source.ty.dtype, offset))
    v = relax.Var(f"{var.name}_view", view.ty)
    return [relax.VarBinding(v, view), relax.VarBinding(var, bb.normalize(relax.op.memory.ensure_zero_offset(v)))]


def remove_uncalled(mod: tvm.IRModule, candidates) -> None:
    """Delete from ``mod`` (in place) each GlobalVar of ``candidates`` that no Relax function of
    ``mod`` calls any more: a kernel whose calls a pass replaced."""
    called = set()
    for f in mod.functions.values():
        if isinstance(f, relax.Function):
            relax.analysis.post_order_visit(f, lambda e: called.add(e.name_hint) if isinstance(e, tvm.ir.GlobalVar) else None)
    for name in {gv.name_hint for gv in candidates} - called:
        del mod[mod.get_global_var(name)]


def leaves(expr) -> list:
    """The variables ``expr`` reads (Calls, Tuples, TupleGetItems of variables: what a lowered
    function binds)."""
    found = []
    substitute(expr, lambda x: found.append(x) or x)
    return [x for x in found if isinstance(x, relax.Var)]


def rebuilt(mod: tvm.IRModule, func_name: str = "main", *, segments=None, rewrite=None, outer=None,
            params=None, name_of=None) -> tvm.IRModule:
    """A copy of ``mod`` whose ``func_name`` is emitted again binding by binding, the one loop the
    passes that change a few bindings share.

    ``segments``: lists of the function's bindings, one dataflow block each (default: every
    binding in one block); a variable read outside its block or by the function's result is
    emitted as a block output, the others stay dataflow variables. ``rewrite(value, leaf)``: a
    binding's new value (default: ``value`` with its leaves mapped by ``leaf``, which gives a
    variable bound before its new variable and any other leaf ``outer(leaf)``, default itself).
    ``params``: the new function's parameters (default: the old ones). ``name_of(binding)``: its
    variable's new name (default: the old one)."""
    func = mod[func_name]
    if segments is None:
        segments = [[b for block in func.body.blocks for b in block.bindings]]
    home = {b.var: i for i, seg in enumerate(segments) for b in seg}
    escaping = set(leaves(func.body.body))
    for i, seg in enumerate(segments):
        for b in seg:
            escaping.update(v for v in leaves(b.value) if home.get(v, i) != i)
    vmap = {}

    def leaf(e):
        return vmap[e] if e in vmap else (outer(e) if outer is not None else e)

    rewrite = rewrite or substitute
    bb = relax.BlockBuilder()
    with bb.function(func_name, list(func.params) if params is None else params,
                     attrs=dict(func.attrs) if func.attrs else None, pure=func.is_pure):
        for seg in segments:
            with bb.dataflow():
                for b in seg:
                    vmap[b.var] = _emit(bb, b, rewrite(b.value, leaf), b.var in escaping,
                                        name_of(b) if name_of else b.var.name)
        bb.emit_func_output(substitute(func.body.body, leaf))
    out = copy_module(mod)
    out[func_name] = bb.get()[func_name]
    return out


def _emit(bb: relax.BlockBuilder, binding, value, escaping: bool, name: str) -> relax.Var:
    """``binding`` emitted again with ``value``: a ``match_cast`` stays one, for it defines the
    symbolic dimensions it names (a data-dependent shape: the rows a non-maximum suppression keeps,
    ``R.tensor_to_shape`` then ``R.match_cast``); as a plain binding of its value they would be
    defined nowhere, and TVM's ``VMShapeLower`` refuses the function."""
    if isinstance(binding, relax.MatchCast):
        var = bb.match_cast(value, binding.ty, name_hint=name)
        return bb.emit_output(var, name_hint=name) if escaping else var
    return (bb.emit_output if escaping else bb.emit)(value, name_hint=name)


class ByStructure:
    """Answers by module structure: a Python ``tvm.IRModule`` hashes and compares by identity, so
    modules built again (another load of a model, a kernel lowered twice) are keyed here by
    ``tvm_ffi.structural_hash`` (2 ms for the LSTM's module) and matched by ``structural_equal``.
    ``kept``: the most keys held, the oldest dropped first (None: all)."""

    def __init__(self, kept: int | None = None):
        self.kept = kept
        self._by_key: dict = {}

    def get(self, mod, extra: tuple, compute):
        """The answer for ``mod`` (and ``extra``, what else it depends on), ``compute()`` the first time."""
        key = (int(tvm_ffi.structural_hash(mod)), *extra)
        for seen, answer in self._by_key.get(key, ()):
            if tvm_ffi.structural_equal(seen, mod):
                return answer
        answer = compute()
        self._by_key.setdefault(key, []).append((mod, answer))
        while self.kept is not None and len(self._by_key) > self.kept:
            del self._by_key[next(iter(self._by_key))]
        return answer


def matmul_row_axis(shape, shared: bool) -> int:
    """The axis of ``shape`` (a matmul's left operand ``[..., m, k]`` or its output ``[..., m, n]``)
    whose indices are the matmul's rows: ``m``, or, where ``m`` is 1 and the right operand is of
    rank 2 (``shared`` by every leading index), the innermost leading axis of more than one element
    (a sequence-first layout's ``[197, 1, 768]``: its tokens). The frontend pads this axis
    (:func:`tvm_partition.frontend.inference.pad_matmuls`) and the matmul template tiles it
    (:mod:`tvm_partition.build.templates`): ViT-B/16's QKV projection ran 8.1 ms a call as 197
    matrix-vector products, 3.4 as 4-row tiles of its tokens padded to 200 (``run --kernels``,
    amd-epyc-znver4-2c, 2026-11-30)."""
    if shape[-2] == 1 and shared:
        return next((a for a in range(len(shape) - 3, -1, -1) if shape[a] > 1), len(shape) - 2)
    return len(shape) - 2
