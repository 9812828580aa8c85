"""Predicted end-to-end latency of a Plan: a list schedule of what the rewritten program runs.

EOP (VEE '22, Sec. 3.1, Eq. 4) scores a plan by AT(G, R), the plain sum of every operator's
T(p(op, d), R) = max(CPU part, GPU part) + its copies (Eq. 2). That sum ignores two things our
executable really does: an op on the GPU overlaps with the CPU work the VM issues after it, and
ops split the same way keep their parts where they are (no concat + split in between). This
module predicts the latency of the program :class:`tvm_partition.passes.ApplyPlan` emits, in
the order it emits it, and reports both figures (:class:`Simulation`: ``latency_us`` and
``sum_us`` = AT(G, R)).

The execution model is TVM's Relax VM, which runs ``main`` on one host thread:

* a kernel on a CPU device runs on that thread (two CPU devices never overlap: ``cpu,cpu``
  plans are serial, as measured);
* a kernel on a GPU is queued on that GPU's stream: it starts when the stream is free and the
  VM has reached it, and the VM goes on at once (CUDA launches are asynchronous), so the GPU
  part of a split (emitted first, after the inputs of both parts are in place) overlaps with the
  CPU part;
* a copy between devices (``to_vdevice``) blocks the VM and waits for the streams of the GPUs
  it touches (``cudaMemcpy`` orders after earlier work on the stream);
* slices and concats are kernels on the device holding the data, but a slice that is one aligned
  block of memory is a view (:func:`tvm_partition.ir.split_rules.view_offset`), and so is a model's
  own slice of such a block on a CPU (:attr:`OpGraph.viewed_slices
  <tvm_partition.ir.graph.OpGraph.viewed_slices>`, :func:`tvm_partition.passes.slices_as_views`)
  and each part written into its join, and each input of a model's own concat that the build
  writes in place (:attr:`OpGraph.joined_in_place <tvm_partition.ir.graph.OpGraph.joined_in_place>`,
  its inputs computed whole on CPUs): a view launches no kernel and costs the VM thread the cost
  model's ``view_time`` (two calls; the profiler times a chain of views: 0.16 us a view on a Zen 4,
  more than its 0.11 us kernel launch); a slice kernel (of the model's inputs: TVM makes no view
  of an argument) writes a storage of its own, allocated every run, and costs the VM thread the
  cost model's ``alloc_time`` too (0.175 us on that Zen 4: the slices of a split op are all alive
  until its parts run, where the static memory plan reuses the storages of a chain of kernels);
* launching any kernel costs the VM thread the cost model's ``launch_time`` (dispatch, output
  allocation, the call; the profiler measures it on a chain of one-element kernels: 0.18 us
  on the build machine's CPU), a GPU kernel too: its launch is asynchronous, its call is not
  (about 3.2 us on the H100 machine's host, where the GPU runs these models' kernels in
  microseconds: a split plan's GPU launches and CPU parts share one thread);
* a run starts with the cost model's ``run_time`` of the host: the call into the VM from Python,
  its arguments' checks (the profiler times a run of one kernel: 0.77 us on a Zen 4, 0.66 beyond
  its launch), and its ``arg_time`` for each argument of ``main`` beyond the first (0.105 us on
  that Zen 4; the model's inputs and weights: the weights the build moves, slices or packs at load
  time are one or more arguments each, which this count does not follow: GRU's 8 are 14, 0.6 us
  of its 175);
* a run that uses a GPU costs the host the cost model's ``use_time`` of it once, at its first
  copy or kernel there, and the GPU's stream its ``gap_time`` after each kernel, beyond the
  kernel's time alone (both fitted to the profile's GPU contexts: 0 without them). On the stream,
  not the host: the H200 host's whole-GPU rows of ``bench --quick`` fitted so within 5%, where a
  time at each launch on the host left the sequence-100 LSTM's (896 launches) 18% over
  (``benchmarks/gpu_forms.py``, 2026-12-05); its ``equal`` rows fitted better that way.

Data movement follows the pass's rules exactly (:mod:`tvm_partition.passes.apply_plan`), in the
order the pass emits the program (:func:`tvm_partition.ir.emission.units`; ``tests/test_data_movement.py``
checks on random plans that both create the same copies, slices and concats): a
value is copied to a device once and reused; a part needed by a consumer split the same way is
read where it is; a region of a whole tensor is sliced where the tensor is and only the slice
is copied; a whole value needed from parts is concatenated on the consumer's device. Weights
cost nothing here: their slices and copies run once at load time (``LiftTransformParams``).
Times come from a :class:`tvm_partition.cost_models.CostModel`.
"""

from __future__ import annotations

import dataclasses

import networkx as nx
from tvm import relax

from ..ir.emission import units, whole_device
from ..ir.graph import OpGraph, tensor_bytes
from ..plan import OnDevice, Plan, Split
from ..ir.split_rules import IllegalSplit, Region, is_tensor, static_shape, view_offset


@dataclasses.dataclass(frozen=True)
class Task:
    """One interval of the schedule: a kernel on a device or a copy on a link."""

    resource: str  # a device name, or "src->dst" for a copy
    kind: str  # "op", "part", "slice", "concat", "copy"
    label: str  # the op id (kernels) or the value moved
    start_us: float
    end_us: float
    launched: bool = True  # False: a view, or a join the parts write in place (no kernel)


@dataclasses.dataclass
class Simulation:
    latency_us: float  # predicted end-to-end latency (the list schedule's makespan)
    sum_us: float  # EOP's AT(G, R): every op's max-of-parts time plus every copy, slice, concat
    tasks: list[Task]
    op_us: dict  # op id -> its time (max over parts for a split op), as in AT(G, R)
    # op id -> where the cost model's time of it came from (measured, pattern, xgboost, analytic...;
    # a split op's parts joined by "+"); views, which cost nothing, are left out
    op_sources: dict = dataclasses.field(default_factory=dict)

    def busy_us(self, resource: str) -> float:
        return sum(t.end_us - t.start_us for t in self.tasks if t.resource == resource)

    def estimated_share(self) -> float:
        """The share of the ops' time that no measurement of this machine backs: priced by the
        XGBoost regressor or a roofline (``analytic``), for ops never profiled here. Such
        predictions of the onnx package's light models missed by 37-83% (intel, 2026-11-25), where
        measured ones came within 10%."""
        total = sum(self.op_us.values())
        guessed = sum(us for op, us in self.op_us.items()
                      if any(s in ("xgboost", "analytic") for s in self.op_sources.get(op, "").split("+")))
        return guessed / total if total > 0 else 0.0


class _Clock:
    """The VM thread and one stream per GPU."""

    def __init__(self, plan: Plan, launch: dict[str, float] | None = None, entry_us: float = 0.0,
                 view: dict[str, float] | None = None, alloc: dict[str, float] | None = None,
                 use: dict[str, float] | None = None, gap: dict[str, float] | None = None):
        self.kind = {d.name: d.kind for d in plan.devices}
        self.launch = launch or {}  # VM time per kernel launched on a device, beyond the kernel
        self.view = view or {}  # VM time per view of a tensor on a device (no kernel)
        self.alloc = alloc or {}  # VM time per storage allocated in a run on a device
        self.use = use or {}  # VM time once a run uses a GPU (its first copy or kernel there)
        self.gap = gap or {}  # a GPU stream's time after each kernel it runs, beyond the kernel
        self.host = entry_us  # the call into the VM, before its first kernel
        self.stream = {d.name: 0.0 for d in plan.devices if d.kind == "gpu"}
        self.used: set = set()  # the GPUs this run has used
        self.tasks: list[Task] = []
        self.sum_us = 0.0

    def kernel(self, dev: str, us: float, kind: str, label: str, launch: bool = True, views: int = 0,
               storage: bool = False) -> float:
        """A task of ``us`` on ``dev``; ``launch``: the VM launches a kernel for it, else ``views``
        views (each the VM's ``view_time``: a view launches no kernel, but is two calls);
        ``storage``: its output takes a storage of its own (the VM's ``alloc_time``)."""
        self._use(dev)
        if storage:
            self.host += self.alloc.get(dev, 0.0)
        if launch:
            self.host += self.launch.get(dev, 0.0)
        else:
            self.host += views * self.view.get(dev, 0.0)
        if self.kind[dev] == "gpu":
            start = max(self.stream[dev], self.host)
            self.stream[dev] = start + us + (self.gap.get(dev, 0.0) if launch else 0.0)
        else:
            start = self.host
            self.host = start + us
        self.tasks.append(Task(dev, kind, label, start, start + us, launch))
        if kind not in ("op", "part"):
            self.sum_us += us
        return us

    def launch_late(self, index: int, us: float, views: int = 0) -> list[Task]:
        """Task ``index``, a join on a CPU priced in place (its parts as ``views`` views), launched
        after all: it takes its launch and ``us`` where the program runs it, less those views, and
        everything scheduled after it (on the VM thread, or on a stream the thread launched it on)
        moves that much later. Returns the tasks it replaced, ``tasks[index:]`` before."""
        old = self.tasks[index:]
        join = old[0]
        delay = self.launch.get(join.resource, 0.0) + us - views * self.view.get(join.resource, 0.0)
        start = join.start_us + delay - us
        self.tasks[index:] = [dataclasses.replace(join, start_us=start, end_us=start + us, launched=True)] + [
            dataclasses.replace(t, start_us=t.start_us + delay, end_us=t.end_us + delay) for t in old[1:]]
        self.host += delay
        for gpu, free in self.stream.items():
            if free > join.start_us:
                self.stream[gpu] = free + delay
        self.sum_us += us
        return old

    def _use(self, dev: str) -> None:
        """A run's first copy or kernel on the GPU ``dev`` costs the host its ``use`` time."""
        if dev in self.stream and dev not in self.used:
            self.used.add(dev)
            self.host += self.use.get(dev, 0.0)

    def copy(self, us: float, src: str, dst: str, label: str) -> None:
        gpus = [d for d in (src, dst) if d in self.stream]
        for d in gpus:
            self._use(d)
        start = max([self.host] + [self.stream[d] for d in gpus])
        end = start + us
        self.host = end
        for d in gpus:
            self.stream[d] = end
        self.tasks.append(Task(f"{src}->{dst}", "copy", label, start, end))
        self.sum_us += us

    @property
    def makespan(self) -> float:
        return max([self.host] + list(self.stream.values()))


def emit_order(graph: OpGraph) -> list[str]:
    """Ops in the order the pass emits them: topological, ties broken by the first binding."""
    first = {op_id: min(op.members) for op_id, op in graph.ops.items()}
    return list(nx.lexicographical_topological_sort(graph.graph, key=lambda v: first[v]))


class Simulator:
    """Simulates plans of one graph on one cost model; caches op times and split regions."""

    def __init__(self, graph: OpGraph, cost_model):
        self.g = graph
        self.cm = cost_model
        self.order = emit_order(graph)
        self._times: dict = {}
        self._needs: dict = {}
        self._comm: dict = {}
        self._alias: dict = {}
        self._axes: dict = {}
        self._bytes: dict = {}
        self.data = set(graph.data_params)

    @staticmethod
    def per_device(plan: Plan, cost) -> dict[str, float]:
        """``cost`` (a cost model's ``launch_time``, ``view_time`` or ``alloc_time``: what the VM
        spends per kernel launch, view or storage; 0 from a profile that did not time its chain) on
        each device of ``plan``."""
        return {d.name: cost(d.name) for d in plan.devices}

    def entry_time(self, plan: Plan) -> float:
        """What a run costs the host before its first kernel: the call of ``main`` with the model's
        inputs and weights (the cost model's ``run_time``, and ``arg_time`` an argument beyond the
        first)."""
        args = len(self.g.data_params) + len(self.g.weight_params)
        return self.cm.run_time(plan.host) + max(0, args - 1) * self.cm.arg_time(plan.host)

    # ------------------------------------------------------------------ cached costs
    def estimate(self, op_id: str, dev: str, region: Region | None = None):
        """The cost model's :class:`Estimate` (time and source) of the op, or its ``region``, on ``dev``."""
        key = (op_id, dev, region)
        if key not in self._times:
            op = self.g.ops[op_id]
            shape = None
            if region is not None:
                shape = list(op.output_shapes[-1])
                shape[region.axis] = region.size
                shape = tuple(shape)
            self._times[key] = self.cm.estimate(op, dev, shape)
        return self._times[key]

    def op_time(self, op_id: str, dev: str, region: Region | None = None) -> float:
        return self.estimate(op_id, dev, region).us

    def comm_time(self, kind: str, nbytes: float, src: str, dst: str | None = None) -> float:
        key = (kind, round(nbytes), src, dst)
        if key not in self._comm:
            if kind == "copy":
                self._comm[key] = self.cm.comm_time(nbytes, src, dst)
            else:
                self._comm[key] = getattr(self.cm, f"{kind}_time")(nbytes, src)
        return self._comm[key]

    def slice_us(self, x, region: Region, dev: str, within: Region | None = None) -> float | None:
        """The time of the slice kernel taking ``region`` of ``x`` (or of its part ``within``) on
        ``dev``; None where the pass takes a view instead (:func:`tvm_partition.ir.split_rules.view_offset`),
        which costs nothing here; the model's inputs are sliced (an RPC server passes them as
        ``DLTensor*``, of which TVM makes no view)."""
        shape = list(self.shape(x))
        lo = region.lo
        if within is not None:
            shape[within.axis], lo = within.size, region.lo - within.lo
        if x not in self.data and view_offset(shape, x.ty.dtype, Region(region.axis, lo, lo + region.size)) is not None:
            return None
        rbytes = self.nbytes(x) * region.size / max(1, self.extent(x, region.axis))
        return self.comm_time("slice", rbytes, dev)

    def written_in_place(self, x, regions, kinds) -> bool:
        """Whether :func:`tvm_partition.passes.write_joins_in_place` can write the parts
        ``regions`` of ``x`` into their join, the join and the parts on devices of ``kinds``: all
        CPUs, each part an aligned block of ``x``, and ``x`` no view op's (the concat then reads
        the view, which the pass leaves alone). The pass also wants each part read by the join
        alone: :meth:`Run._in_place` sees the readers."""
        if any(k != "cpu" for k in kinds) or any(self.g.ops[o].is_view for o in self.g.producers(x)):
            return False
        return all(view_offset(self.shape(x), x.ty.dtype, r) is not None for r in regions)

    def needs(self, op_id: str, region: Region) -> dict:
        """Input expr -> Region (None: whole) that the part ``region`` of the op reads."""
        key = (op_id, region)
        if key not in self._needs:
            axes = self._identity(op_id, region.axis)
            if axes is not None:  # every input cut [lo, hi) on one axis, or read whole
                self._needs[key] = {x: None if a is None else Region(a, region.lo, region.hi) for x, a in axes.items()}
            else:
                self._needs[key] = self._propagate(op_id, region)
        return self._needs[key]

    def _propagate(self, op_id: str, region: Region) -> dict:
        op = self.g.ops[op_id]
        needs = self.g.propagate(op, region)[0]
        return {x: needs.get(x) for x in op.inputs}

    def _identity(self, op_id: str, axis: int) -> dict | None:
        """``{input: axis or None}`` when both halves of ``axis`` read the same ``[lo, hi)`` of each
        cut input (elementwise ops, matmul rows...): then every region does, and the split rules
        need not run per region. None where a rule shifts or scales regions (convolution halos)."""
        key = (op_id, axis)
        if key not in self._axes:
            n = self.g.ops[op_id].output_shapes[-1][axis]
            halves = [Region(axis, 0, n // 2), Region(axis, n // 2, n)]
            try:
                probes = [self._propagate(op_id, r) for r in halves]
            except IllegalSplit:
                probes = None
            axes = {} if probes else None
            for x in self.g.ops[op_id].inputs if probes else ():
                got = [p.get(x) for p in probes]
                if got[0] is None and got[1] is None:
                    axes[x] = None
                elif all(g is not None and g.axis == got[0].axis and (g.lo, g.hi) == (h.lo, h.hi)
                         for g, h in zip(got, halves)):
                    axes[x] = got[0].axis
                else:
                    axes = None
                    break
            self._axes[key] = axes
        return self._axes[key]

    def nbytes(self, x) -> float:
        if x not in self._bytes:
            # a tuple (ONNX's Dropout returns one) has bytes but no shape to split along, nor has a
            # tensor whose size is known at run time only (what a NonZero finds: its ops are not cut)
            self._bytes[x] = (float(tensor_bytes(x)), static_shape(x) if is_tensor(x) else None)
        return self._bytes[x][0]

    def extent(self, x, axis: int) -> int:
        return self.shape(x)[axis]

    def shape(self, x) -> tuple:
        self.nbytes(x)
        return self._bytes[x][1]

    def source(self, x):
        """``x`` with aliases (``y = x`` glue bindings) looked through, as one Python object per
        node (the first met): the callers key their tables by it. Kept by the node's handle, not
        by ``x``: a dict lookup with a second Python object of a node calls TVM's ``Expr.__eq__``
        (1.4 us against 0.09; :attr:`tvm_partition.ir.graph.OpGraph.binding_reads`)."""
        key = x.__chandle__()
        if key not in self._alias:
            v, seen = x, set()
            while isinstance(v, relax.Var) and v not in seen:
                seen.add(v)
                i = self.g.index_of.get(v)
                if i is None or i in self.g.static or i in self.g.op_of_binding:
                    break
                value = self.g.bindings[i].value
                if not isinstance(value, relax.Var):
                    break
                v = value
            self._alias[key] = self._alias.setdefault(v.__chandle__(), v)  # v is its own source
        return self._alias[key]

    # ------------------------------------------------------------------ simulate
    def run(self, plan: Plan) -> Simulation:
        return Run(self, plan).run()

    def start(self, plan: Plan) -> "Run":
        """A schedule to extend op by op (:meth:`Run.emit_op`), for planners."""
        return Run(self, plan)


class Run:
    """One schedule in progress: the VM clock and where every value is."""

    def __init__(self, sim: Simulator, plan: Plan):
        self.s, self.g, self.plan = sim, sim.g, plan
        self.host = plan.host
        cm = sim.cm
        self.clock = _Clock(plan, sim.per_device(plan, cm.launch_time), sim.entry_time(plan),
                            sim.per_device(plan, cm.view_time), sim.per_device(plan, cm.alloc_time),
                            sim.per_device(plan, cm.use_time), sim.per_device(plan, cm.gap_time))
        self.rank = {d.name: (0 if d.kind == "gpu" else 1, i) for i, d in enumerate(plan.devices)}
        self.whole: dict = {}  # value -> [devices holding it whole]
        self.parts: dict = {}  # value -> [(Region, device)]
        self.cache: set = set()
        self.read_parts: set = set()  # values whose parts something but their join read
        self.in_place: dict = {}  # value -> (its join's task index, bytes, parts): joined in place, no concat launched yet
        self.op_us: dict = {}
        self.op_sources: dict = {}
        self.journal: list = []  # undo steps, for planners trying decisions (:meth:`mark`, :meth:`rollback`)
        for p in self.g.data_params:
            self.whole[p] = [self.host]

    # ------------------------------------------------------------------ trial and undo
    def mark(self) -> tuple:
        c = self.clock
        return c.host, dict(c.stream), len(c.tasks), c.sum_us, len(self.journal), frozenset(c.used)

    def rollback(self, mark: tuple) -> None:
        c = self.clock
        c.host, stream, ntasks, c.sum_us, njournal, used = mark
        c.stream.update(stream)
        c.used = set(used)
        del c.tasks[ntasks:]
        while len(self.journal) > njournal:
            self.journal.pop()()

    def _add_whole(self, x, dev: str) -> None:
        x = self.s.source(x)  # the object get() looks it up by (no TVM Expr.__eq__ on a lookup)
        if x in self.whole:
            self.whole[x].append(dev)
            self.journal.append(self.whole[x].pop)
        else:
            self.whole[x] = [dev]
            self.journal.append(lambda: self.whole.pop(x))

    def _add_part(self, x, region: Region, dev: str) -> None:
        x = self.s.source(x)
        if x in self.parts:
            self.parts[x].append((region, dev))
            self.journal.append(self.parts[x].pop)
        else:
            self.parts[x] = [(region, dev)]
            self.journal.append(lambda: self.parts.pop(x))

    def _cache_add(self, key) -> bool:
        if key in self.cache:
            return False
        self.cache.add(key)
        self.journal.append(lambda: self.cache.discard(key))
        return True

    def _op_done(self, op_id: str, us: float, sources=()) -> None:
        self.op_us[op_id] = us
        self.journal.append(lambda: self.op_us.pop(op_id, None))
        if sources:
            self.op_sources[op_id] = "+".join(sorted(set(sources)))
            self.journal.append(lambda: self.op_sources.pop(op_id, None))

    # ------------------------------------------------------------------ values
    def get(self, x, dev: str, region: Region | None, joining: bool = False) -> None:
        """Account for making ``x`` (or its ``region``) available on ``dev``, as the pass does
        (``joining``: a part read by the join of ``x``)."""
        x = self.s.source(x)
        if not is_tensor(x) or (x not in self.whole and x not in self.parts):
            return  # a weight, constant or tuple: moved at load time / not a tensor copy
        if region is not None and not joining and any(r.covers(region) for r, _ in self.parts.get(x, [])):
            self._part_read(x)
        if not self._cache_add((x, region, dev)):
            return
        whole, parts = self.whole.get(x, []), self.parts.get(x, [])
        nbytes = self.s.nbytes(x)
        name = getattr(x, "name_hint", "value")
        if region is None:
            if dev in whole:
                return
            if whole:
                src = self.host if self.host in whole else whole[0]
                self.clock.copy(self.s.comm_time("copy", nbytes, src, dev), src, dev, name)
                self._add_whole(x, dev)
                return
            for r, _ in sorted(parts, key=lambda p: p[0].lo):
                self.get(x, dev, r, joining=True)
            if self._in_place(x, parts, dev):  # each part written through a view of x
                self.in_place[x] = (len(self.clock.tasks), nbytes, len(parts))
                self.journal.append(lambda: self.in_place.pop(x, None))
                self.clock.kernel(dev, 0.0, "concat", name, launch=False, views=len(parts))
            else:
                self.clock.kernel(dev, self.s.comm_time("concat", nbytes, dev), "concat", name)
            self._add_whole(x, dev)
            return
        rbytes = nbytes * region.size / max(1, self.s.extent(x, region.axis))
        for r, pdev in parts:
            if r.covers(region):
                if r != region:
                    self._slice(pdev, x, region, r)
                if pdev != dev:
                    self.clock.copy(self.s.comm_time("copy", rbytes, pdev, dev), pdev, dev, name)
                return
        if dev in whole:
            self._slice(dev, x, region)
            return
        if whole:
            src = self.host if self.host in whole else whole[0]
            self._slice(src, x, region)
            self.clock.copy(self.s.comm_time("copy", rbytes, src, dev), src, dev, name)
            return
        self.get(x, dev, None)
        self._slice(dev, x, region)

    def _in_place(self, x, parts, dev: str) -> bool:
        """Whether the build writes ``x``'s parts into their join (:func:`tvm_partition.passes.
        write_joins_in_place`): the join and every part on a CPU, every part an aligned block of
        ``x``, ``x`` no view op's (the concat then reads the view, which the pass leaves alone), and
        no part read by anything but the join so far (a reader after the join:
        :meth:`_part_read`)."""
        kind = self.clock.kind
        return x not in self.read_parts and self.s.written_in_place(
            x, [r for r, _ in parts], [kind[dev]] + [kind[d] for _, d in parts])

    def _part_read(self, x) -> None:
        """A part of ``x`` read by something but its join: the pass keeps that join's concat (a
        part must have one reader to be written in place), so a join priced in place before this
        read is launched after all, where it ran (:meth:`_Clock.launch_late`)."""
        if x not in self.read_parts:
            self.read_parts.add(x)
            self.journal.append(lambda: self.read_parts.discard(x))
        if x in self.in_place:
            index, nbytes, views = self.in_place.pop(x)
            tasks = self.clock.tasks
            old = self.clock.launch_late(index, self.s.comm_time("concat", nbytes, tasks[index].resource), views)

            def undo():  # after the clock's own rollback has cut its tasks back to the mark's
                tasks[index:] = old[:max(0, len(tasks) - index)]
                self.in_place[x] = (index, nbytes, views)

            self.journal.append(undo)

    def _slice(self, dev: str, x, region: Region, within: Region | None = None) -> None:
        """``region`` of ``x`` (of its part ``within``) taken on ``dev``: a kernel, or a view that
        launches nothing (:meth:`Simulator.slice_us`)."""
        us = self.s.slice_us(x, region, dev, within)
        self.clock.kernel(dev, us or 0.0, "slice", getattr(x, "name_hint", "value"), launch=us is not None,
                          views=int(us is None), storage=us is not None)

    def prefetch(self, x, dev: str, region: Region | None) -> None:
        """The copies and concats :meth:`get` needs, without its last slice on ``dev``
        (:meth:`tvm_partition.passes.apply_plan._Emitter.prefetch`: that slice is fused into
        the part that reads it, and runs where the part runs)."""
        x = self.s.source(x)
        if region is None or x not in self.whole and x not in self.parts:
            self.get(x, dev, region)
            return
        covering = [pdev for r, pdev in self.parts.get(x, []) if r.covers(region)]
        if covering:
            if covering[0] != dev:
                self.get(x, dev, region)
        elif dev not in self.whole.get(x, []):
            self.get(x, dev, region if self.whole.get(x) else None)

    # ------------------------------------------------------------------ ops
    def emit_op(self, op_id: str, dec=None) -> None:
        """Schedule one op with its decision (default: the plan's)."""
        op = self.g.ops[op_id]
        dec = dec or self.plan.ops.get(op_id)
        if dec is None and op.is_view:
            if self.view_follow(op):
                return
            dec = OnDevice(self.view_device(op))
        dec = dec or OnDevice(self.host)
        if isinstance(dec, Split):
            parts = dec.parts(op.output_shapes[-1][dec.dim], op.granules.get(dec.dim, 1))
            if len(parts) > 1:
                regions = [(dev, Region(dec.dim, lo, hi)) for dev, lo, hi in sorted(parts, key=lambda p: self.rank[p[0]])]
                fetches = [(x, dev, self.s.needs(op_id, region).get(x)) for dev, region in regions for x in op.inputs]
                for x, dev, region in fetches:  # all parts' copies first, then their own slices, as the pass does
                    self.prefetch(x, dev, region)
                for x, dev, region in fetches:
                    self.get(x, dev, region)
                longest = 0.0
                for dev, region in regions:
                    longest = max(longest, self.emit_part(op, dev, region))
                sources = [] if op.is_view else [self.s.estimate(op_id, dev, r).source for dev, r in regions]
                self._op_done(op_id, longest, sources)
                self.clock.sum_us += longest
                return
            dec = OnDevice(parts[0][0])
        for x in op.inputs:
            self.get(x, dec.device, None)
        self._kernel(op, dec.device)
        for o in op.outputs:
            self._add_whole(o, dec.device)

    def _kernel(self, op, dev: str) -> None:
        viewed = op.id in self.g.viewed_slices and self.clock.kind[dev] == "cpu"
        views = len(op.inputs) if self._joined_in_place(op, dev) else int(viewed)
        est = None if op.is_view or views else self.s.estimate(op.id, dev)
        us = 0.0 if est is None else est.us
        self.clock.kernel(dev, us, "op", op.id, est is not None, views=views)
        self._op_done(op.id, us, [] if est is None else [est.source])
        self.clock.sum_us += us

    def _joined_in_place(self, op, dev: str) -> bool:
        """Whether the build has the kernels of ``op``'s inputs write them into its output, no
        concat (:attr:`OpGraph.joined_in_place <tvm_partition.ir.graph.OpGraph.joined_in_place>`):
        the concat on a CPU, each input computed whole on a CPU (a join's output is no kernel's)."""
        if op.id not in self.g.joined_in_place or self.clock.kind[dev] != "cpu":
            return False
        for x in op.inputs:
            x = self.s.source(x)
            held = self.whole.get(x)
            if x in self.parts or not held or self.clock.kind[held[0]] != "cpu":
                return False
        return True

    def emit_member(self, i: int) -> None:
        """Binding ``i`` of an op placed whole, where the pass emits it (:func:`tvm_partition.ir.emission.units`):
        its operands fetched to the op's device there; the op's kernel runs after its last binding."""
        op = self.g.ops[self.g.op_of_binding[i]]
        dev = whole_device(self.g, self.plan, op.id)
        for v in self.g.free[i]:
            self.get(v, dev, None)
        var = self.g.bindings[i].var
        if any(var.__chandle__() == o.__chandle__() for o in op.outputs):  # not `in`: Expr.__eq__ per output
            self._add_whole(var, dev)
        if i == max(op.members):
            self._kernel(op, dev)

    def emit_part(self, op, dev: str, region: Region) -> float:
        needs = self.s.needs(op.id, region)
        for x in op.inputs:
            self.get(x, dev, needs.get(x))
        us = 0.0 if op.is_view else self.s.op_time(op.id, dev, region)
        self.clock.kernel(dev, us, "part", op.id, not op.is_view)
        for o in op.outputs:
            self._add_part(o, region, dev)
        return us

    def view_follow(self, op) -> bool:
        """A reshape with no decision keeps its input's parts where the axis survives (as the pass)."""
        srcs = [self.s.source(x) for x in op.inputs if is_tensor(x)]
        if len(srcs) != 1 or srcs[0] not in self.parts or srcs[0] in self.whole:
            return False
        src = srcs[0]
        x = next(x for x in op.inputs if is_tensor(x))
        follow = []
        for r, dev in self.parts[src]:
            for axis in range(len(op.output_shapes[-1])):
                try:
                    if self.s.needs(op.id, Region(axis, r.lo, r.hi)).get(x) == r:
                        follow.append((dev, Region(axis, r.lo, r.hi)))
                        break
                except IllegalSplit:
                    continue
            else:
                return False
        self._part_read(src)  # the reshape reads each part
        for dev, region in follow:
            for o in op.outputs:
                self._add_part(o, region, dev)
        self._op_done(op.id, 0.0)
        return True

    def view_device(self, op) -> str:
        for x in op.inputs:
            x = self.s.source(x)
            if x in self.whole:
                return self.host if self.host in self.whole[x] else self.whole[x][0]
            if x in self.parts:
                return max(self.parts[x], key=lambda p: p[0].size)[1]
        return self.host

    def finish(self) -> Simulation:
        """Bring the outputs to the host and return the schedule."""
        for v in self.g.returned:
            self.get(v, self.host, None)
        return Simulation(self.clock.makespan, self.clock.sum_us, list(self.clock.tasks), dict(self.op_us),
                          dict(self.op_sources))

    def run(self) -> Simulation:
        """The whole plan, unit by unit in the order the pass emits it (planners building a plan
        op by op call :meth:`emit_op` in :func:`emit_order` instead)."""
        for u in units(self.g, self.plan):
            if isinstance(u, str):
                self.emit_op(u)
            elif u[0] == "member":
                self.emit_member(u[1])
        return self.finish()


def simulate(graph: OpGraph, plan: Plan, cost_model) -> Simulation:
    """Predicted latency of ``plan`` on ``graph`` with ``cost_model`` (see the module docstring)."""
    return Simulator(graph, cost_model).run(plan)

