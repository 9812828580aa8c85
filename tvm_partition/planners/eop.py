"""The EOP planner: key operators, dynamic CPU/GPU split ratios, collaborative tuning (VEE '22).

Follows EOP Sec. 3.2-3.3 and Alg. 1-3, on a :class:`tvm_partition.cost_models.CostModel`:

1. **Pattern matching (Alg. 1).** For every key op and every legal split dimension ``d`` the
   cost model gives the part times (its fitted pattern per op, dim and device, Sec. 3.2), and
   the dimension with the least time is kept.
2. **Partition (Eq. 1-3, 5).** For a ratio (alpha on the CPU, beta on the GPU) on the 0.01 grid
   of Step 3, T(p(op, d), R) is the two parts' time plus the Split / Device_copy / Concatenate it
   needs (Eq. 2), written in the order the VM runs them: slice and copy the GPU input, launch the
   GPU part, run the CPU part meanwhile, copy the GPU part back, concatenate. We keep the ratio
   with the least T, which is Eq. 5's balance point when copies are negligible, and split only
   where T beats the whole op on either device, counting the copies a whole GPU op needs (Eq. 3).
3. **Key operators (Sec. 3.3).** The smallest set of ops taking ``threshold`` (default 95%) of
   the model's time on its faster single device; only they get ratio searches.
4. **Collaborative tuning (Alg. 2, applied through the graph as in Alg. 3).** Beyond EOP, which
   sums per-op times (AT(G, R), Eq. 4) and ignores the copies between adjacent ops and the
   overlap of GPU and CPU work, every decision here is scored on the list schedule of
   :mod:`tvm_partition.planners.simulate` (the program the pass emits): ops are decided in emission
   order, each candidate is tried on the schedule so far, and the one ending earliest wins. A
   key op's candidates are its whole placements, its Eq. 2 optimum and neighbouring ratios, and
   the split of its producer (so adjacent ops split the same way stay split, with no concat in
   between); with ``collaborative`` each candidate is also scored with its next key consumer's
   best answer to it (Alg. 2: tuning two adjacent ops' ratios together). Non-key ops (Alg. 3
   line 10) go to the device, or follow the producer's split, that ends earliest counting the
   copies they cause.

The result is the best, in simulated latency, of the separate plan (each key op at its own Eq. 2
optimum), the collaborative walks (the last ones pricing each output's copies to where an earlier
plan put its consumers), the uniform plan (every split key op at the balance ratio of all of them
together, which keeps a chain's parts in place: on Fig. 1's toy it is what the list schedule
prefers) and the two single-device plans (Eq. 3 for the whole model), so collaboration never
makes a plan worse and EOP never predicts worse than one device; a single-device plan is kept
unless the best is predicted :data:`~tvm_partition.planners.roles.MIN_GAIN` faster. ``meta``
records every candidate's simulated latency and which was chosen.
"""

from __future__ import annotations

import dataclasses
import time

from ..ir.graph import op_signature
from ..ir.graph import OpGraph
from ..plan import OnDevice, Plan, PlanError, Split
from .simulate import Simulator
from ..ir.split_rules import IllegalSplit, Region, is_tensor
from .roles import accelerator, pick

#: Ratio step of the search (EOP Sec. 3.2, Step 3).
STEP = 0.01


@dataclasses.dataclass
class Choice:
    """The Eq. 2 optimum of one op on its own (inputs on the host, output wanted there)."""

    op_id: str
    decision: object  # OnDevice | Split
    t_us: float  # T(p(op, d), R) with its copies
    cpu_us: float  # the whole op on the CPU
    gpu_us: float  # the whole op on the GPU, with the copies in and out
    dim: int | None = None
    gpu_ratio: float | None = None
    part_us: tuple = ()  # (GPU part, CPU part) at that ratio

    @property
    def split(self) -> bool:
        return isinstance(self.decision, Split)


class EOP:
    """Plans one graph for ``devices`` (host CPU first; the first GPU, or second device, is the
    accelerator) on ``cost_model``; ``simulator`` may be shared with other strategies."""

    def __init__(self, graph: OpGraph, devices, cost_model, threshold: float = 0.95,
                 simulator: Simulator | None = None):
        if not 0 < threshold <= 1:
            raise ValueError(f"key-operator threshold {threshold} must be in (0, 1]")
        self.g = graph
        self.devices = list(devices)
        self.host = self.devices[0].name
        self.acc = accelerator(self.devices).name
        self.kind = {d.name: d.kind for d in self.devices}
        self.sim = simulator or Simulator(graph, cost_model)
        self.threshold = threshold
        self.ops = [v for v in self.sim.order if not graph.ops[v].is_view]
        self._inputs_of: dict = {}
        self.hint: dict | None = None
        self._choices: dict = {}  # op signature -> Choice: repeated layers and steps share one search

    # ------------------------------------------------------------------ key operators
    def whole_us(self, op_id: str, dev: str) -> float:
        """The op computed whole on ``dev``, its inputs there: nothing where a CPU build launches
        no kernel for it (:attr:`OpGraph.views_on_cpu <tvm_partition.ir.graph.OpGraph.views_on_cpu>`)."""
        if self.kind[dev] == "cpu" and op_id in self.g.views_on_cpu:
            return 0.0
        return self.sim.op_time(op_id, dev)

    def whole_times(self, op_id: str) -> tuple[float, float]:
        return self.whole_us(op_id, self.host), self.whole_us(op_id, self.acc)

    def key_ops(self) -> list[str]:
        """Smallest set of ops taking ``threshold`` of the time on the faster single device."""
        times = {v: self.whole_times(v) for v in self.ops}
        dev = 0 if sum(t[0] for t in times.values()) <= sum(t[1] for t in times.values()) else 1
        ranked = sorted(self.ops, key=lambda v: -times[v][dev])
        total = sum(times[v][dev] for v in ranked)
        keys, acc = [], 0.0
        for v in ranked:
            if acc >= self.threshold * total:
                break
            keys.append(v)
            acc += times[v][dev]
        return keys

    # ------------------------------------------------------------------ Eq. 2 for one op
    def _inputs(self, op_id: str) -> list[tuple[object, float]]:
        """Tensor inputs computed at run time (not weights) and their bytes."""
        if op_id not in self._inputs_of:
            out = []
            for x in self.g.ops[op_id].inputs:
                src = self.sim.source(x)
                if is_tensor(src) and (self.g.producers(src) or src in self.sim.data):
                    out.append((x, self.sim.nbytes(src)))
            self._inputs_of[op_id] = out
        return self._inputs_of[op_id]

    def _copy(self, nbytes: float, src: str, dst: str) -> float:
        return self.sim.comm_time("copy", nbytes, src, dst)

    def _kernel(self, kind: str, nbytes: float, dev: str) -> float:
        return self.sim.comm_time(kind, nbytes, dev)

    def whole_gpu_us(self, op_id: str) -> float:
        op = self.g.ops[op_id]
        cin = sum(self._copy(b, self.host, self.acc) for _, b in self._inputs(op_id))
        out = sum(self.sim.nbytes(o) for o in op.outputs)
        return cin + self.whole_us(op_id, self.acc) + self._copy(out, self.acc, self.host)

    def split_time(self, op_id: str, split: Split) -> tuple[float, float, float] | None:
        """T(p(op, d), R) of ``split`` (Eq. 2 in VM order), with the GPU and CPU part times."""
        op = self.g.ops[op_id]
        parts = split.parts(op.output_shapes[-1][split.dim], op.granules.get(split.dim, 1))
        if len(parts) != 2:
            return None
        reg = {dev: Region(split.dim, lo, hi) for dev, lo, hi in parts}
        if set(reg) != {self.host, self.acc}:
            return None
        size = op.output_shapes[-1][split.dim]
        t_gpu = self.sim.op_time(op_id, self.acc, reg[self.acc])
        t_cpu = self.sim.op_time(op_id, self.host, reg[self.host])
        pre_gpu = pre_cpu = 0.0
        for dev in (self.acc, self.host):
            needs = self.sim.needs(op_id, reg[dev])
            for x, nbytes in self._inputs(op_id):
                r = needs.get(x)
                b = nbytes if r is None else nbytes * r.size / max(1, self.sim.extent(x, r.axis))
                cost = (self.sim.slice_us(self.sim.source(x), r, self.host) or 0.0) if r is not None else 0.0
                if dev == self.acc:
                    pre_gpu += cost + self._copy(b, self.host, self.acc)
                else:
                    pre_cpu += cost
        out = sum(self.sim.nbytes(o) for o in op.outputs)
        gpu_out = out * reg[self.acc].size / size
        join = 0.0 if self._joined_in_place(op, reg.values()) else self._kernel("concat", out, self.host)
        post = self._copy(gpu_out, self.acc, self.host) + join
        return pre_gpu + max(t_gpu, pre_cpu + t_cpu) + post, t_gpu, t_cpu

    def _joined_in_place(self, op, regions) -> bool:
        """Whether the build writes the parts into their join (:meth:`Simulator.written_in_place`:
        both devices CPUs, each part an aligned block of the output). Why Eq. 2 asks: on
        ``cpu,cpu`` the LSTM's gate matmul split by columns keeps its concat, by rows it does not;
        ``bench --split-ops`` split it by columns (17 us against 10 whole) where rows ran 13
        (amd-epyc-znver3-2c, 2026-11-28)."""
        return len(op.outputs) == 1 and self.sim.written_in_place(op.outputs[0], regions,
                                                                  [self.kind[self.host], self.kind[self.acc]])

    def ratio_candidates(self, op_id: str, dim: int) -> list[Split]:
        """One Split per distinct part size on the 0.01 grid (EOP Step 3)."""
        op = self.g.ops[op_id]
        size, granule = op.output_shapes[-1][dim], op.granules.get(dim, 1)
        seen, out = set(), []
        for k in range(1, round(1 / STEP)):
            beta = round(k * STEP, 4)
            s = Split(dim, (beta, round(1 - beta, 4)), (self.acc, self.host))
            parts = tuple(s.parts(size, granule))
            if len(parts) == 2 and parts not in seen:
                seen.add(parts)
                out.append(s)
        return out

    def op_key(self, op_id: str) -> tuple:
        """What decides an op's split: its kernel and shapes, and its run-time inputs' bytes. Ops
        alike in it (repeated layers, RNN steps) get one decision (:meth:`best_choice`)."""
        return op_signature(self.g.ops[op_id]), tuple(b for _, b in self._inputs(op_id))

    def best_choice(self, op_id: str) -> Choice:
        """Alg. 1 + Eq. 2/3/5: the best dimension and ratio of one op, or its best whole device.
        Ops with the same kernel, shapes and run-time inputs (repeated layers, RNN steps) share it."""
        key = self.op_key(op_id)
        if key not in self._choices:
            self._choices[key] = self._search(op_id)
        return dataclasses.replace(self._choices[key], op_id=op_id)

    def _search(self, op_id: str) -> Choice:
        cpu_us = self.whole_us(op_id, self.host)
        gpu_us = self.whole_gpu_us(op_id)
        best = Choice(op_id, OnDevice(self.host), cpu_us, cpu_us, gpu_us)
        if gpu_us < cpu_us:
            best = Choice(op_id, OnDevice(self.acc), gpu_us, cpu_us, gpu_us)
        for dim in sorted(self.g.ops[op_id].split_dims):
            for s in self.ratio_candidates(op_id, dim):
                try:
                    res = self.split_time(op_id, s)
                except IllegalSplit:
                    break
                if res is not None and res[0] < best.t_us:  # Eq. 3: only a split that gains
                    best = Choice(op_id, s, res[0], cpu_us, gpu_us, dim, s.ratios[0], res[1:])
        return best

    # ------------------------------------------------------------------ through the graph
    def follow_split(self, run, op_id: str) -> Split | None:
        """The split of a producer, if this op can be cut so every part reads a producer part in place."""
        op = self.g.ops[op_id]
        for x in op.inputs:
            parts = run.parts.get(self.sim.source(x))
            if not parts or len(parts) != 2 or self.sim.source(x) in run.whole:
                continue
            pr = {dev: r for r, dev in parts}
            if set(pr) != {self.host, self.acc}:
                continue
            for dim in op.split_dims:
                size = op.output_shapes[-1][dim]
                frac = pr[self.acc].size / (pr[self.acc].size + pr[self.host].size)
                s = Split(dim, (frac, 1 - frac), (self.acc, self.host))
                parts_v = s.parts(size, op.granules.get(dim, 1))
                if len(parts_v) != 2:
                    continue
                try:
                    if all(self.sim.needs(op_id, Region(dim, lo, hi)).get(x) == pr[dev] for dev, lo, hi in parts_v):
                        return s
                except IllegalSplit:
                    continue
        return None

    def _score(self, run) -> tuple[float, float]:
        c = run.clock
        return c.makespan, c.host + sum(c.stream.values())

    def _try(self, run, op_id: str, dec) -> tuple[float, float]:
        mark = run.mark()
        try:
            run.emit_op(op_id, dec)
            score = self._score(run)
        finally:
            run.rollback(mark)
        ahead = self._ahead(op_id, dec)
        return score[0] + ahead, score[1] + ahead

    def _ahead(self, op_id: str, dec) -> float:
        """Copies the op's output will need to reach its consumers where ``self.hint`` (the previous
        pass's plan) puts them: what a decision in emission order cannot see yet."""
        if not self.hint:
            return 0.0
        have = {dec.device} if isinstance(dec, OnDevice) else set(dec.devices)
        out = sum(self.sim.nbytes(o) for o in self.g.ops[op_id].outputs)
        cost = 0.0
        for c in self.g.graph.successors(op_id):
            h = self.hint.get(c, OnDevice(self.host))
            want = {h.device} if isinstance(h, OnDevice) else set(h.devices)
            if want == have and (isinstance(h, OnDevice) or h == dec):
                continue
            src = next(iter(have))
            cost += sum(self._copy(out, src, d) for d in want - have) or self._copy(out / 2, src, next(iter(want)))
        return cost

    def _candidates(self, run, op_id: str, choice: Choice | None) -> list:
        cands = [OnDevice(self.host), OnDevice(self.acc)]
        follow = self.follow_split(run, op_id)
        if follow is not None:
            cands.append(follow)
        if choice is not None and choice.split:
            s = choice.decision
            cands.append(s)
            for delta in (-5, -3, -2, -1, 1, 2, 3, 5):
                beta = round(s.ratios[0] + delta * STEP, 4)
                if 0 < beta < 1:
                    cands.append(Split(s.dim, (beta, round(1 - beta, 4)), s.devices))
        return cands

    def _lookahead(self, run, op_id: str, dec, nxt: str | None, choices: dict) -> tuple[float, float]:
        """Alg. 2: ``dec`` scored with the best answer of the next key op that reads it."""
        if nxt is None:
            return self._try(run, op_id, dec)
        mark = run.mark()
        try:
            run.emit_op(op_id, dec)
            return min(self._try(run, nxt, d) for d in self._candidates(run, nxt, choices.get(nxt)))
        finally:
            run.rollback(mark)

    def walk(self, choices: dict, collaborative: bool, hint: dict | None = None) -> dict:
        """Alg. 3: decide ops in emission order on the growing schedule; returns op -> decision.
        ``hint``: a previous plan whose consumer placements price the copies an output will need."""
        self.hint = hint
        run = self.sim.start(Plan(self.devices, {}))
        decided = {}
        consumers = {v: set(self.g.graph.successors(v)) for v in self.ops}
        order = self.sim.order
        after = dict(zip(self.ops, self.ops[1:]))
        # Alg. 2 tunes adjacent ops: the next op emitted, when it is a key op reading this one
        next_key = {v: after.get(v) if after.get(v) in choices and after.get(v) in consumers[v] else None
                    for v in choices}
        for op_id in order:
            op = self.g.ops[op_id]
            if op.is_view:
                run.emit_op(op_id)
                continue
            choice = choices.get(op_id)
            if choice is not None and not collaborative:
                dec = choice.decision
            else:
                cands = self._candidates(run, op_id, choice)
                if choice is not None:
                    scores = [self._lookahead(run, op_id, d, next_key[op_id], choices) for d in cands]
                else:
                    scores = [self._try(run, op_id, d) for d in cands]
                dec = cands[min(range(len(cands)), key=scores.__getitem__)]
            run.emit_op(op_id, dec)
            decided[op_id] = dec
        return decided

    def plan(self, collaborative: bool = True) -> Plan:
        t0 = time.perf_counter()
        keys = self.key_ops()
        choices = {v: self.best_choice(v) for v in keys}  # an op without legal dims: its Eq. 3 device
        plans = {"separate": self._plan(self.walk(choices, False))}
        if collaborative:
            plans["collaborative"] = self._plan(self.walk(choices, True))
            uniform = self.uniform(choices)
            if uniform is not None:
                plans["uniform"] = self._plan(self.walk(uniform, False))
        sims = {k: self.sim.run(p) for k, p in plans.items()}
        if collaborative:  # walk again, pricing each output's copies to where the best plans so far put its consumers
            for start in ("cpu", "gpu", min(sims, key=lambda k: sims[k].latency_us)):
                hint = plans[start].ops if start in plans else {v: OnDevice(self.host if start == "cpu" else self.acc)
                                                                 for v in self.ops}
                plans[f"collaborative+{start}"] = self._plan(self.walk(choices, True, hint))
                sims[f"collaborative+{start}"] = self.sim.run(plans[f"collaborative+{start}"])
        for dev in (self.host, self.acc):  # Eq. 3 for the whole model: a split plan must beat one device
            plans[f"{dev}-only"] = self._plan({v: OnDevice(dev) for v in self.ops})
            sims[f"{dev}-only"] = self.sim.run(plans[f"{dev}-only"])
        kind = pick({k: s.latency_us for k, s in sims.items()}, (f"{self.host}-only", f"{self.acc}-only"))
        plan, sim = plans[kind], sims[kind]
        plan.predicted_latency_us = sim.latency_us
        plan.meta = {
            "eop": {
                "threshold": self.threshold,
                "key_ops": keys,
                "collaborative": collaborative,
                "chosen": kind,
                "simulated_us": {k: s.latency_us for k, s in sims.items()},
                "sum_us": sim.sum_us,
                "plan_s": round(time.perf_counter() - t0, 4),
                "table": [self._row(choices[v], plan.ops.get(v), sim) for v in keys],
            }
        }
        return plan

    def uniform(self, choices: dict) -> dict | None:
        """The split key ops all at one ratio: the Eq. 5 balance of their whole times together
        (Fig. 1(c)'s Fixed ratio with the model as one subgraph). Split alike, a chain of ops
        keeps its parts where they are and the GPU runs ahead of the CPU without waiting; the
        walks, which decide op by op, can miss that when the ops' own balance points differ."""
        split = [v for v, c in choices.items() if c.split]
        if not split:
            return None
        cpu = sum(self.sim.op_time(v, self.host) for v in split)
        gpu = sum(self.sim.op_time(v, self.acc) for v in split)
        beta = round(cpu / (cpu + gpu), 2) if cpu + gpu > 0 else 0.5
        if not 0 < beta < 1:
            return None
        out = dict(choices)
        for v in split:
            s = choices[v].decision
            out[v] = dataclasses.replace(choices[v], decision=Split(s.dim, (beta, round(1 - beta, 2)), s.devices),
                                         gpu_ratio=beta)
        return out

    def _plan(self, decisions: dict) -> Plan:
        return Plan(self.devices, dict(decisions), strategy="eop")

    def _row(self, choice: Choice, dec, sim) -> dict:
        """One line of the EOP Table 5 style explanation."""
        op = self.g.ops[choice.op_id]
        row = {"op": choice.op_id, "kind": op.kind, "cpu_us": choice.cpu_us, "gpu_us": choice.gpu_us,
               "eq2_us": choice.t_us, "simulated_us": sim.op_us.get(choice.op_id)}
        if isinstance(dec, Split):
            beta = dec.ratios[dec.devices.index(self.acc)]
            row.update(decision="split", dim=self.g.dim_name(op, dec.dim), alpha=round(1 - beta, 4), beta=beta)
        else:
            row.update(decision=f"on {dec.device if dec else self.host}")
        return row


def plan_eop(graph: OpGraph, devices, cost_model, threshold: float = 0.95, collaborative: bool = True,
             simulator: Simulator | None = None) -> Plan:
    """The EOP plan of ``graph`` (see the module docstring)."""
    if cost_model is None:
        raise PlanError("the eop strategy needs a cost model")
    return EOP(graph, devices, cost_model, threshold, simulator).plan(collaborative)
