"""``LegalizeOps`` as our builds, the OpGraph and the profile's samples run it: each distinct call legalized once.

TVM 0.27's ``LegalizeOps`` calls an op's legalization for every call of the module: a TE compute
made into a PrimFunc (``BlockBuilder.call_te``), which ``BlockBuilder.add_func`` then finds
structurally equal to one the module already holds, and drops. An unrolled RNN repeats the same
ops at every step: the README's LSTM (sequence 100) made 7,821 such calls in one ``compile
--check`` (its OpGraph's fusion and the build's, 2,898 ops each, and the profile's samples), and
all but 462 of them were repeats. :func:`legalize_ops` remembers, per ``BlockBuilder`` (one pass
over one module), the ``call_tir`` a call was legalized to and gives a later call of the same op on
the same types and the same attributes and constant operands the same kernel on its own
operands. Measured (README command 1, empty cache, amd-epyc-znver3-2c, 2026-11-29; four runs each,
alternating with the commit before): 41.2-51.7 s (median 48.9) -> 40.3-42.9 s (41.5), its build
("compiled in") 31.8-33.9 -> 25.2-26.1 s; the same VM program, plan and weights, to the byte.

A legalization is remembered only where it is a ``call_tir`` whose operands are the call's own
variables (TVM's ``call_te`` legalizations); anything else (bindings it emits, constants it folds
into an operand list) is legalized afresh every time. Ops legalize as TVM does, but for
:data:`tvm_partition.ir.fastmath.LEGALIZE`'s (exponentials that vectorise, LRN's pool) and
``nonzero``, made kernels first (:mod:`tvm_partition.ir.nonzero`: TVM calls a function of its
compiler library).
"""

from __future__ import annotations

import contextlib

import tvm
import tvm_ffi
from tvm import relax

from .fastmath import LEGALIZE
from .nms import legalize_nms
from .nonzero import nonzero_as_kernels
from .relax_utils import static_tensor

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")


def legalize_ops() -> tvm.transform.Pass:
    """TVM's ``LegalizeOps`` with :data:`~tvm_partition.ir.fastmath.LEGALIZE`, each distinct call once."""
    remembered = _Remembered()
    return tvm.transform.Sequential(
        [nonzero_as_kernels, relax.transform.LegalizeOps(customize_legalize_map=dict.fromkeys(_legalizations(), remembered))],
        name="LegalizeOps")


_LEGALIZATIONS: dict = {}


def _legalizations() -> dict:
    """``{op name: its legalization}`` of every op that has one (ours where :data:`LEGALIZE` has it),
    read once: walking TVM's 1,026 registered ops took 8 ms, and the profiler makes a pass a sample."""
    if not _LEGALIZATIONS:
        ours = {**LEGALIZE, "relax.vision.all_class_non_max_suppression": legalize_nms}
        for name in tvm.get_global_func("ir.ListOpNames")():
            fn = ours.get(name) or tvm.ir.Op.get(name).get_attr("FLegalize")
            if fn is not None:
                _LEGALIZATIONS[name] = fn
    return _LEGALIZATIONS


class _Remembered:
    """The legalization of every op, remembering what each distinct call became, for one pass."""

    def __init__(self):
        self.builder = None  # held, so that no later builder takes its place (and handle)
        self.memo: dict = {}

    def __call__(self, bb, call):
        vdevice = getattr(call.ty, "vdevice", None)
        with under_gpu_target(vdevice.target if vdevice is not None else None):
            return self._legalized(bb, call)

    def _legalized(self, bb, call):
        legalize = _legalizations()[call.op.name]
        if not all(_static(t) for t in [call.ty] + [a.ty for a in call.args if isinstance(a, relax.Var)]):
            return legalize(bb, call)  # a symbolic extent is a variable of its own: never the same
        if self.builder is None or not self.builder.same_as(bb):
            self.builder, self.memo = bb, {}  # a pass over another module: its kernels are not this one's
        memo, key = self.memo, (call.op.name, _key(call))
        known = memo.get(key)
        if known is not None and _same(known[0], call):
            _, kernel, positions, out_ty = known
            return relax.call_tir(kernel, [call.args[p] for p in positions], out_ty)
        out = legalize(bb, call)
        positions = _operand_positions(out, call)
        if positions is not None:
            memo[key] = (call, out.args[0], positions, _outputs(out))
        return out


def under_gpu_target(target):
    """A context in which ``target`` is current where it is a GPU's (nothing where it is None or a
    CPU's), for legalizing ops placed there (a call's virtual device in a build, a GPU sample's
    device). TVM 0.27's legalizations of ``scatter_elements`` and ``scatter_nd`` read
    ``Target.current()``, which a multi-device build does not set: a scatter on the GPU got TOPI's
    CPU kernel (parallel loops no dlight rule schedules; "no dlight GPU schedule applies to kernel
    scatter_elements_cuda")."""
    return target if target is not None and "gpu" in target.keys else contextlib.nullcontext()


def _outputs(call_tir: relax.Call):
    """The output types ``relax.call_tir`` takes to make ``call_tir`` again: one tensor's, or a
    list of the tensors' of a kernel of several outputs (``split``), whose call holds them as one
    tuple type (``call_tir`` refuses a tuple type there)."""
    (ty,) = call_tir.ty_args
    return list(ty.fields) if isinstance(ty, relax.TupleType) else ty


def _static(ty) -> bool:
    """A tensor of static shape, or a tuple of them: what a type's text tells in full."""
    if isinstance(ty, relax.TensorType):
        return static_tensor(ty)
    if isinstance(ty, relax.TupleType):
        return all(_static(f) for f in ty.fields)
    return False


def _key(call: relax.Call) -> tuple:
    """What a legalization may read of ``call``: its type, its operands' types and which of them
    are one variable (variables) or values (anything else), and its attributes, hashed (then
    compared by :func:`_same`)."""
    operands = tuple(("var", tvm_ffi.structural_hash(a.ty), _first(call, a)) if isinstance(a, relax.Var)
                     else ("expr", tvm_ffi.structural_hash(a)) for a in call.args)
    attrs = tvm_ffi.structural_hash(call.attrs) if call.attrs is not None else 0
    return tvm_ffi.structural_hash(call.ty), operands, attrs


def _first(call: relax.Call, expr) -> int | None:
    """Where ``expr`` first stands among ``call``'s variables (None: nowhere). In the key:
    ``multiply(a, a)`` is another call than ``multiply(a, b)`` (TVM may give it a kernel of one
    input), and in calls of one such pattern the kernel's operands map back to the call's
    unambiguously (:func:`_operand_positions`)."""
    return next((i for i, a in enumerate(call.args) if isinstance(a, relax.Var) and a.same_as(expr)), None)


def _same(known: relax.Call, call: relax.Call) -> bool:
    """The remembered call and ``call`` agree on their types (shapes, dtypes and virtual devices:
    a type's text names no virtual device apart), attributes and non-variable operands (the hashes
    of :func:`_key` matched; this rules out a collision)."""
    return (tvm_ffi.structural_equal(known.ty, call.ty) and tvm_ffi.structural_equal(known.attrs, call.attrs)
            and all(tvm_ffi.structural_equal(a.ty, b.ty) if isinstance(a, relax.Var) else tvm_ffi.structural_equal(a, b)
                    for a, b in zip(known.args, call.args)))


def _operand_positions(out, call: relax.Call) -> list[int] | None:
    """Where each operand of the ``call_tir`` ``out`` sits among ``call``'s variables; None where
    ``out`` is anything else."""
    if not (isinstance(out, relax.Call) and out.op.same_as(_CALL_TIR) and len(out.args) == 2
            and isinstance(out.args[1], relax.Tuple)):
        return None
    positions = [_first(call, operand) for operand in out.args[1].fields]
    return None if None in positions else positions
