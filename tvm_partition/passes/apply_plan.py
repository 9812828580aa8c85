"""ApplyPlan: rewrite a Relax ``main`` so every fused op runs where the Plan says.

Whole ops are placed with ``R.to_vdevice`` on their inputs; split ops are duplicated per device
on slices of their inputs (``strided_slice``), and their parts are joined with ``concat`` only
where a consumer needs the whole tensor. The rewrite follows these rules (foundation issue, item 6):

* weights reach each device once, at load time: slicing and copying a weight depends only on
  parameters, so ``LiftTransformParams`` (run by :mod:`tvm_partition.build.executable`) moves it into
  ``main_transform_params``;
* a ``to_vdevice`` is emitted only where producer and consumer devices differ, and each copy is
  made once and reused;
* the parts of a split op are emitted GPU first: CUDA launches are asynchronous, so the GPU part
  runs while the VM executes the CPU part (EOP Sec. 3.1, Eq. 2: T = max(cpu, gpu) + copies);
  the inputs of all parts are copied before the first part is launched, so a copy back from the
  GPU (which waits for the GPU's stream) never waits for this op's own GPU part, and only then
  sliced on the parts' devices (TVM's ``FuseOps`` fuses such a slice into an elementwise part
  and launches the part where the slice stood), and the concats joining parts stay kernels of
  their own (:mod:`tvm_partition.passes.joins`): ``tests/test_vm_order.py`` reads the compiled
  program;
* a region that is one aligned block of memory (rows of a row-major tensor) is taken as a view,
  not sliced (:func:`tvm_partition.ir.split_rules.view_offset`): FuseOps fuses no slice into a
  matmul or convolution, so each was a kernel copying the rows;
* consecutive ops split the same way stay split: a consumer whose part needs exactly (or a slice
  of) a producer part on the same device reads it directly, with no concat + split round trip.
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..ir.emission import units, whole_device
from ..ir.graph import OpGraph
from ..plan import OnDevice, Plan, Split
from ..ir.relax_utils import Constant, compile_time_constants, copy_module, substitute
from ..ir.split_rules import (IllegalSplit, Region, is_tensor, shape_of, substitute_operands, tensor_operands,
                              view_offset)


@tvm.transform.module_pass(opt_level=0, name="ApplyPlan")
class ApplyPlan:
    """Module pass: apply ``plan`` to ``func_name`` (default ``main``) of a high-level Relax module.

    Use it in your own pipeline before TVM's fusion::

        seq = tvm.transform.Sequential([ApplyPlan(plan), relax.transform.RealizeVDevice(), ...])
    """

    def __init__(self, plan: Plan, func_name: str = "main", graph: OpGraph | None = None):
        self.plan = plan
        self.func_name = func_name
        self.graph = graph  # an OpGraph already built for the module this pass will receive

    def transform_module(self, mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        reuse = self.graph is not None and self.graph.func.same_as(mod[self.func_name])
        graph = self.graph if reuse else OpGraph(mod, self.func_name)
        self.plan.validate(graph)
        emitter = _Emitter(graph, self.plan)
        func = emitter.run()
        out = copy_module(mod)
        out[self.func_name] = func
        # the very VDevice objects the IR refers to: TVM looks them up by identity
        out.update_global_info("vdevice", [emitter.vdev[d.name] for d in self.plan.devices])
        return out


def vdevice(spec) -> relax.VDevice:
    return relax.VDevice(spec.tvm_target(), spec.index, "global")


class _Emitter:
    def __init__(self, graph: OpGraph, plan: Plan):
        self.g = graph
        self.plan = plan
        self.host = plan.host
        self.vdev = {d.name: vdevice(d) for d in plan.devices}
        self.gpu_first = {d.name: (0 if d.kind == "gpu" else 1, i) for i, d in enumerate(plan.devices)}
        self.bb = relax.BlockBuilder()
        self.whole: dict = {}  # original expr -> {device: new expr}
        self.parts: dict = {}  # original var -> [(Region, device, new expr)]
        self.cache: dict = {}  # (original expr, Region | None, device) -> new expr
        # weights and the values computed from weights only (moved to load time)
        self.static_vars = set(graph.weight_params) | {graph.bindings[i].var for i in graph.static}
        self.params: set = set()  # main's new parameters (run)
        self.compile_time = compile_time_constants(graph.func)

    # ------------------------------------------------------------------ placement state
    def emit(self, expr):
        return self.bb.emit(expr)

    def with_operands(self, call: relax.Call, operands: list) -> relax.Call:
        """``call`` with its tensor operands ``operands`` and its other variables (a shape: what
        ``R.shape_of`` of a ``NonZero``'s result gave, read by ``R.shape_to_tensor``) the new
        function's: they have no device, and were left the old function's, defined nowhere."""
        call = substitute_operands(call, operands)

        def new(a):
            if isinstance(a, relax.Var) and not is_tensor(a) and a in self.whole:
                return next(iter(self.whole[a].values()))
            if isinstance(a, relax.Tuple):
                return relax.Tuple([new(f) for f in a.fields])
            return a

        return relax.Call(call.op, [new(a) for a in call.args], call.attrs, call.ty_args)

    def emit_binding(self, b, value):
        """``value`` (binding ``b``'s new value) emitted; a ``match_cast`` stays one, for it defines
        the dimensions it names (a ``NonZero``'s count: ``R.match_cast(R.nonzero(x), R.Tensor((1,
        n)))``): emitted as a plain binding, what reads ``n`` fails to legalize."""
        if not isinstance(b, relax.MatchCast):
            return self.emit(value)
        ty = b.ty
        vdev = getattr(self.bb.normalize(value).ty, "vdevice", None)
        if isinstance(ty, relax.TensorType) and vdev is not None:
            ty = relax.TensorType(ty.shape, ty.dtype, vdevice=vdev)
        return self.bb.match_cast(value, ty)

    def move(self, expr, dev):
        """Copy ``expr`` (a new-IR value) to ``dev``; tuples are copied field by field."""
        if isinstance(expr.ty, relax.TupleType):
            fields = [self.move(self.emit(relax.TupleGetItem(expr, i)), dev) for i in range(len(expr.ty.fields))]
            return self.emit(relax.Tuple(fields))
        return self.emit(relax.op.to_vdevice(expr, self.vdev[dev]))

    def slice(self, expr, region: Region, offset: int = 0, view: bool = True):
        """``region`` of ``expr`` (whose first element is ``offset`` along the axis): a view where
        the region is one aligned block of memory (:func:`~tvm_partition.ir.split_rules.view_offset`)
        and ``view``, else a ``strided_slice``. Weights are sliced (``view=False``): their slices
        run once, at load time, and a view would keep the whole weight alive beside its parts. So
        are ``main``'s arguments: an RPC server passes them as ``DLTensor*``, which
        ``runtime.TVMTensorCreateView`` refuses (``tests/test_deploy.py``'s RPC run)."""
        local = Region(region.axis, region.lo - offset, region.hi - offset)
        view = view and expr not in self.params  # over RPC, main's arguments are no Tensors to view
        at = view_offset(shape_of(expr), expr.ty.dtype, local) if view else None
        if at is None:
            return self.emit(relax.op.strided_slice(expr, [local.axis], [local.lo], [local.hi]))
        shape = list(shape_of(expr))
        shape[local.axis] = local.size
        return self.emit(relax.op.memory.ensure_zero_offset(self.emit(relax.op.memory.view(expr, shape, None, at))))

    def concat(self, pieces: list, axis: int):
        return self.emit(relax.op.concat(pieces, axis=axis))  # kept a kernel of its own: joins.py

    def device_of_whole(self, orig, prefer):
        devs = self.whole[orig]
        return prefer if prefer in devs else next(iter(devs))

    def get(self, orig, dev: str, region: Region | None):
        """``orig`` (an expr of the original main), or its ``region``, as a value on ``dev``."""
        key = (orig, region, dev)
        if key in self.cache:
            return self.cache[key]
        val = self._get(orig, dev, region)
        self.cache[key] = val
        return val

    def _get(self, orig, dev, region):
        if isinstance(orig, Constant):
            if orig in self.compile_time:  # read by the op's legalization: stays a constant
                return orig
            val = orig if region is None else self.slice(orig, region, view=False)
            return val if dev == self.host else self.move(val, dev)
        whole = self.whole.get(orig, {})
        parts = self.parts.get(orig, [])
        if region is None:
            if dev in whole:
                return whole[dev]
            if whole:
                src = self.device_of_whole(orig, self.host)
                whole[dev] = self.move(whole[src], dev)
                return whole[dev]
            if parts:
                pieces = [self.get(orig, dev, r) for r, _, _ in sorted(parts, key=lambda p: p[0].lo)]
                full = self.concat(pieces, parts[0][0].axis)
                self.whole.setdefault(orig, {})[dev] = full
                return full
            raise IllegalSplit(f"value {getattr(orig, 'name', orig)} was used before it was computed")
        view = orig not in self.static_vars  # a weight's slices run at load time: sliced
        for r, pdev, e in parts:
            if r.covers(region):
                piece = e if r == region else self.slice(e, region, offset=r.lo, view=view)
                return piece if pdev == dev else self.move(piece, dev)
        if dev in whole:
            return self.slice(whole[dev], region, view=view)
        if whole:  # slice where the tensor is, then copy only the slice
            src = self.device_of_whole(orig, self.host)
            return self.move(self.slice(whole[src], region, view=view), dev)
        return self.slice(self.get(orig, dev, None), region, view=view)

    def prefetch(self, orig, dev: str, region: Region | None) -> None:
        """The copies and joins ``get(orig, dev, region)`` needs, without the slice it then takes
        on ``dev``: TVM's ``FuseOps`` joins that slice to the part reading it and emits the fused
        kernel where the slice stood, so a slice before a copy put the GPU part before the copy,
        which then waited for it (BERT's attention split on cpu,gpu: ``tests/test_vm_order.py``).
        :meth:`tvm_partition.planners.simulate.Run.prefetch` mirrors it."""
        if isinstance(orig, Constant) or region is None:
            self.get(orig, dev, region)
            return
        covering = [(r, pdev) for r, pdev, _ in self.parts.get(orig, []) if r.covers(region)]
        if covering:
            if covering[0][1] != dev:
                self.get(orig, dev, region)  # sliced where the part is, then copied
        elif dev not in self.whole.get(orig, {}):
            self.get(orig, dev, region if self.whole.get(orig) else None)

    # ------------------------------------------------------------------ units
    def emit_glue(self, i: int) -> None:
        b = self.g.bindings[i]
        if isinstance(b.value, relax.Var) and not isinstance(b, relax.MatchCast):  # alias: shares its source's placement
            for table in (self.whole, self.parts):
                if b.value in table:
                    table[b.var] = table[b.value]
            return
        free = self.g.free[i]
        if isinstance(b.value, relax.TupleGetItem | relax.Tuple) and free and free[0] in self.whole:
            dev = self.device_of_whole(free[0], self.host)
        else:
            dev = self.host
        self.whole[b.var] = {dev: self.emit_binding(b, substitute(b.value, lambda v: self.get(v, dev, None)))}

    def emit_static(self, i: int) -> None:
        b = self.g.bindings[i]
        self.whole[b.var] = {self.host: self.emit_binding(b, substitute(b.value, lambda v: self.get(v, self.host, None)))}

    def emit_op(self, op_id: str) -> None:
        op = self.g.ops[op_id]
        dec = self.plan.ops.get(op_id)
        if dec is None and op.is_view:
            if self.emit_view_follow(op):
                return
            dec = OnDevice(self.view_device(op))
        dec = dec or OnDevice(self.host)
        if isinstance(dec, Split):
            size = shape_of(op.primary)[dec.dim]
            parts = dec.parts(size, op.granules.get(dec.dim, 1))
            if len(parts) == 1:
                dec = OnDevice(parts[0][0])
            else:
                regions = [(dev, Region(dec.dim, lo, hi)) for dev, lo, hi in sorted(parts, key=lambda p: self.gpu_first[p[0]])]
                fetches = [(x, dev, self.g.propagate(op, region)[0].get(x)) for dev, region in regions
                           for x in op.inputs if is_tensor(x) and (x in self.whole or x in self.parts)]
                for x, dev, region in fetches:  # every part's copies first: a copy back from the GPU
                    self.prefetch(x, dev, region)  # must not wait for this op's GPU part
                for x, dev, region in fetches:  # then the slices on the parts' own devices
                    self.get(x, dev, region)
                for dev, region in regions:
                    self.emit_part(op, dev, region)
                return
        needs, rebuilds = self.g.propagate(op, None)[:2]
        for x in op.inputs:  # every copy and join first (emission.units), as the simulator prices them
            if is_tensor(x) and (x in self.whole or x in self.parts):
                self.get(x, dec.device, needs.get(x))
        env = self.emit_members(op, dec.device, needs, rebuilds)
        for o in op.outputs:
            self.whole[o] = {dec.device: env[o]}

    def emit_member(self, i: int) -> None:
        """One binding of an op placed whole, on the op's device."""
        b = self.g.bindings[i]
        dev = whole_device(self.g, self.plan, self.g.op_of_binding[i])
        if isinstance(b.value, relax.Call):
            operands = [self.get(o, dev, None) for o in tensor_operands(b.value)]
            val = self.emit_binding(b, self.with_operands(b.value, operands))
        else:  # tuple access inside the group
            val = self.emit_binding(b, substitute(b.value, lambda v: self.get(v, dev, None)))
        self.whole[b.var] = {dev: val}

    def emit_members(self, op, dev, needs, rebuilds) -> dict:
        env = {}
        for m in op.members:
            b = self.g.bindings[m]
            if not isinstance(b.value, relax.Call):  # tuple access inside the group
                env[b.var] = self.emit_binding(
                    b, substitute(b.value, lambda v: env[v] if v in env else self.get(v, dev, None)))
                continue
            operands = [
                env[o] if o in env else self.get(o, dev, needs.get(o)) for o in tensor_operands(b.value)
            ]
            rebuild = rebuilds.get(m)
            env[b.var] = self.emit_binding(b, rebuild(operands) if rebuild else self.with_operands(b.value, operands))
        return env

    def emit_part(self, op, dev: str, region: Region) -> None:
        needs, rebuilds, _ = self.g.propagate(op, region)
        env = self.emit_members(op, dev, needs, rebuilds)
        for o in op.outputs:
            self.parts.setdefault(o, []).append((needs[o], dev, env[o]))

    def emit_view_follow(self, op) -> bool:
        """A reshape-like op with no decision keeps its input's parts split, where the axis survives."""
        (src,) = [x for x in op.inputs if is_tensor(x)] or [None]
        parts = self.parts.get(src)
        if src is None or not parts or src in self.whole:
            return False
        plans = []
        for r, dev, _ in parts:
            for axis in range(len(shape_of(op.primary))):
                try:
                    needs, rebuilds, _ = self.g.propagate(op, Region(axis, r.lo, r.hi))
                except IllegalSplit:
                    continue
                if needs.get(src) == r:
                    plans.append((dev, Region(axis, r.lo, r.hi)))
                    break
            else:
                return False
        for dev, region in plans:
            self.emit_part(op, dev, region)
        return True

    def view_device(self, op) -> str:
        for x in op.inputs:
            if x in self.whole:
                return self.device_of_whole(x, self.host)
            if x in self.parts:
                return max(self.parts[x], key=lambda p: p[0].size)[1]
        return self.host

    # ------------------------------------------------------------------ driver
    def run(self) -> relax.Function:
        g, bb = self.g, self.bb
        host_vdev = self.vdev[self.host]
        params = []
        for p in g.func.params:
            ty = p.ty
            if isinstance(ty, relax.TensorType):
                ty = relax.TensorType(ty.shape, ty.dtype, vdevice=host_vdev)
            params.append(relax.Var(p.name, ty))
        self.params = set(params)
        for old, new in zip(g.func.params, params):
            self.whole[old] = {self.host: new}
        attrs = dict(g.func.attrs) if g.func.attrs else {}
        with bb.function(g.func_name, params, attrs=attrs, pure=True):
            with bb.dataflow():
                for u in units(g, self.plan):
                    if isinstance(u, str):
                        self.emit_op(u)
                    elif u[0] == "static":
                        self.emit_static(u[1])
                    elif u[0] == "member":
                        self.emit_member(u[1])
                    else:
                        self.emit_glue(u[1])
                result = substitute(g.func.body.body, lambda v: self.get(v, self.host, None))
                out = bb.emit_output(result)
            bb.emit_func_output(out)
        return bb.get()[g.func_name]
