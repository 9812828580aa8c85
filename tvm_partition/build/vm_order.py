"""The order of a compiled VM program, read back and compared with the schedule the simulator priced.

TVM 0.27's Relax VM runs ``main`` on one host thread; a kernel on a GPU is queued on its stream
and the VM goes on, and every cross-device copy (``vm.builtin.to_device``) synchronises the GPU
(docs/ARCHITECTURE.md, "TVM 0.27 facts"). So CPU/GPU overlap comes only from the order of the
program: for a split op, the inputs of all its parts are copied first, the GPU part is launched,
the CPU part runs, and only then does a copy bring the GPU part back (EOP Sec. 3.1, Eq. 2). The
simulator (:mod:`tvm_partition.planners.simulate`) prices exactly that order.

This module reads the program the build really made, ``VMExecutable.as_text()`` (one
``call NAME in: ... dst: ...`` line per instruction of ``main``'s bytecode twin: builds compile
``main`` to native code, :func:`tvm_partition.build.executable.link`), as kernel launches per device
and copies, and aligns it with the simulator's tasks: every copy, and every kernel of an op or a
part, must appear in the same order on the same device. Slices and concats the pass emits may be
missing, fused by TVM's ``FuseOps`` into a kernel next to them, and so may a part of the model's own
concat whose inputs were written into it in place; a view never stands for an op that computes.
Where they align, what the simulator says about a split op's parts (GPU part first, no copy
between its parts) holds for the program too.
"""

from __future__ import annotations

import dataclasses
import re

from ..errors import TvmPartitionError
from ..ir.graph import COMPUTE_KINDS
from ..runtime.artifact import KERNELS_MAIN

_CALL = re.compile(r"^\s*call\s+(\S+)\s+in:\s*(.*?)\s+dst:\s*(\S+)\s*$")
#: The builtins that make a view: a reshape, and ``R.memory.view`` (a slice that is one block of
#: memory, :func:`tvm_partition.ir.split_rules.view_offset`; its ``vm.builtin.ensure_zero_offset``
#: that follows moves the data pointer and is not a step of its own).
_CREATE_VIEW = "runtime.TVMTensorCreateView"
_VIEWS = ("vm.builtin.reshape", _CREATE_VIEW)
#: DLPack device types ``vm.builtin.to_device`` takes: kDLCPU, kDLCUDA.
_DL_KIND = {1: "cpu", 2: "gpu"}


class OrderMismatch(TvmPartitionError, AssertionError):
    """The compiled program does not run in the order the simulator priced."""


@dataclasses.dataclass(frozen=True)
class Step:
    """A kernel launched on a device (``where``: its name), a view made there, or a copy
    (``where``: ``src->dst``)."""

    kind: str  # "kernel", "view" or "copy"
    where: str
    label: str  # program: the kernel or register; simulator: the op id or value
    task: str = ""  # simulator: op, part, slice, concat, copy
    op_kind: str = ""  # simulator: the kind of the op of an op or part (matmul, strided_slice ...)

    def __str__(self) -> str:
        what = f"{self.task} {self.label}" if self.task else self.label
        return f"{self.kind} {what} on {self.where}"


def main_instructions(text: str) -> list[tuple[str, list[str], str]]:
    """``(callee, args, dst)`` of every ``call`` of ``main`` in ``as_text()``: the block of its
    bytecode twin (:data:`~tvm_partition.runtime.artifact.KERNELS_MAIN`, the same calls in the same
    order; ``main`` itself is compiled code, ``as_text()`` shows no instruction of it), or of
    ``main`` in a bytecode-only executable."""
    header = f"@{KERNELS_MAIN}:" if f"@{KERNELS_MAIN}:" in text else "@main:"
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("@"):
            inside = line.strip() == header
            continue
        m = _CALL.match(line) if inside else None
        if m:
            out.append((m.group(1), [a.strip() for a in m.group(2).split(",") if a.strip()], m.group(3)))
    return out


def program_steps(executable, kernel_devices: dict[str, str], devices) -> list[Step]:
    """The kernel launches and copies of ``executable``'s ``main``, in program order.
    ``kernel_devices``: kernel name -> device name (``BuildResult.kernel_devices``); ``devices``:
    the plan's :class:`DeviceSpec` list, in vdevice order (how ``alloc_storage`` numbers them)."""
    by_dl = {(d.kind, d.index): d.name for d in devices}
    host = devices[0].name
    where: dict[str, str] = {}  # register -> device holding it

    def device_of(reg: str) -> str:
        return where.get(reg, host)  # the parameters of main are on the host

    steps = []
    for callee, args, dst in main_instructions(executable.as_text()):
        if callee in kernel_devices:
            steps.append(Step("kernel", kernel_devices[callee], callee))
        elif callee == "vm.builtin.to_device":
            dst_dev = by_dl[(_DL_KIND[int(args[1][1:])], int(args[2][1:]))]
            steps.append(Step("copy", f"{device_of(args[0])}->{dst_dev}", args[0]))
            where[dst] = dst_dev
        elif callee in _VIEWS:  # a kernel TVM found to be a mere reshape, or a slice the pass made a view
            steps.append(Step("view", device_of(args[0]), callee))
            where[dst] = device_of(args[0])
        elif callee == "vm.builtin.alloc_storage":
            where[dst] = devices[int(args[2][1:])].name
        elif args and args[0].startswith("%") and args[0] != "%vm":
            where[dst] = device_of(args[0])  # alloc_tensor, reshape, tuple access: where the source is
    return steps


def simulated_steps(graph, simulation) -> list[Step]:
    """The simulator's tasks as steps, in the order the pass emits them (views launch nothing)."""
    out = []
    for t in simulation.tasks:
        if t.kind == "copy":
            out.append(Step("copy", t.resource, t.label, t.kind))
        elif t.kind in ("slice", "concat"):
            out.append(Step("kernel", t.resource, t.label, t.kind))
        elif not graph.ops[t.label].is_view:
            out.append(Step("kernel", t.resource, t.label, t.kind, graph.ops[t.label].kind))
    return out


def _fusable(step: Step) -> bool:
    return step.task in ("slice", "concat")


def _may_vanish(step: Step) -> bool:
    """A simulated step the program may run no kernel for: a slice or concat the pass emits (fused
    by ``FuseOps``, or a view), or an op or part that is a concat of the model, whose inputs
    :mod:`tvm_partition.passes.in_place_joins` wrote in place (Inception-v3's joined branches on
    cpu,gpu: each branch's CPU part writes into a view of the concat's, made before the first)."""
    return _fusable(step) or step.op_kind == "concat"


#: The name LegalizeOps gives a slice or concat left alone (``_join``: :mod:`tvm_partition.passes.joins`).
_MOVEMENT = re.compile(r"^(strided_slice|concatenate)\d*_(llvm|cuda)(_join)?$")


def _runs(simulated: Step, program: Step) -> bool:
    """Can the program's kernel (or view) be the simulated one? A slice or concat the pass emits
    is a lone ``strided_slice``/``concatenate`` kernel, or the slice a view; an op's kernel is any
    other (or a lone one, for an op that is a slice or concat of the model; or a view TVM made of it,
    unless the op computes: a view that stood for a convolution's part let Inception-v3's joined
    branches, whose CPU part is a view made before the last branch's CPU part writes into it, read
    as a CPU part run before its GPU part, 2026-11-30)."""
    if program.kind == "view":
        if _fusable(simulated):
            return simulated.task == "slice" and program.label == _CREATE_VIEW
        return simulated.op_kind not in COMPUTE_KINDS
    movement = _MOVEMENT.match(program.label)
    if _fusable(simulated):
        return bool(movement) and movement.group(1).startswith("strided" if simulated.task == "slice" else "concat")
    return not movement or simulated.op_kind in ("strided_slice", "concat")


def _align_kernels(simulated: list[tuple[int, Step]], program: list[tuple[int, Step]]) -> dict[int, int] | None:
    """Order-preserving match of the kernels of one device between two copies; None if none."""
    def views_from(j: int) -> int:  # program views may stand for nothing the simulator runs
        while j < len(program) and program[j][1].kind == "view":
            j += 1
        return j

    reach: list[dict[int, tuple[int, bool]]] = [{}]  # per i: j -> (previous j, matched)
    for j in range(views_from(0) + 1):
        reach[0][j] = (j - 1, False)
    for _, s in simulated:
        nxt: dict[int, tuple[int, bool]] = {}
        for j in reach[-1]:
            if j < len(program) and _runs(s, program[j][1]):
                for k in range(j + 1, views_from(j + 1) + 1):
                    nxt.setdefault(k, (j, True))
            if _may_vanish(s):
                nxt.setdefault(j, (j, False))
        if not nxt:
            return None
        reach.append(nxt)
    if len(program) not in reach[-1]:
        return None
    matched, j = {}, len(program)
    for i in range(len(simulated), 0, -1):
        prev, hit = reach[i][j]
        if hit:
            matched[simulated[i - 1][0]] = program[prev][0]
        j = prev
    return matched


def _segments(steps: list[Step]) -> list[list[tuple[int, Step]]]:
    """The kernels between consecutive copies, with their indices."""
    out: list[list[tuple[int, Step]]] = [[]]
    for k, s in enumerate(steps):
        if s.kind == "copy":
            out.append([])
        else:
            out[-1].append((k, s))
    return out


def align(simulated: list[Step], program: list[Step]) -> dict[int, int]:
    """``{simulated index: program index}``. The copies must be the same, in the same order; between
    two copies, each device must run the simulated kernels in the simulated order, where only
    slices and concats may be missing (fused by ``FuseOps`` into a kernel beside them, or written
    in place: :func:`_may_vanish`). The order of kernels of different devices between two copies
    is free: ``FuseOps`` launches a fused kernel where its first member stood, which can move a GPU
    kernel ahead of a CPU one, and neither device waits for the other there. Raises
    :class:`OrderMismatch` where they part."""
    sim_copies = [(k, s) for k, s in enumerate(simulated) if s.kind == "copy"]
    prog_copies = [(k, s) for k, s in enumerate(program) if s.kind == "copy"]
    for n, ((i, s), (j, p)) in enumerate(zip(sim_copies, prog_copies)):
        if s.where != p.where:
            raise OrderMismatch(f"copy {n}: the simulator copies {s.where} (step {i}) where the program copies "
                                f"{p.where} (step {j})")
    if len(sim_copies) != len(prog_copies):
        raise OrderMismatch(f"the simulator makes {len(sim_copies)} copies, the program {len(prog_copies)}")
    matched = {i: j for (i, _), (j, _) in zip(sim_copies, prog_copies)}
    for n, (sim_seg, prog_seg) in enumerate(zip(_segments(simulated), _segments(program))):
        for dev in sorted({s.where for _, s in sim_seg} | {s.where for _, s in prog_seg}):
            mine = [(k, s) for k, s in sim_seg if s.where == dev]
            theirs = [(k, s) for k, s in prog_seg if s.where == dev]
            got = _align_kernels(mine, theirs)
            if got is None:
                raise OrderMismatch(_mismatch(n, dev, mine, theirs))
            matched.update(got)
    return matched


def _mismatch(segment: int, dev: str, simulated, program) -> str:
    where = "before the first copy" if segment == 0 else f"after copy {segment - 1}"
    return (f"{where}, the simulator runs {len(simulated)} kernels on {dev} "
            f"({', '.join(str(s) for _, s in simulated[:4])}{' ...' if len(simulated) > 4 else ''}) "
            f"and the program {len(program)} ({', '.join(s.label for _, s in program[:4])}"
            f"{' ...' if len(program) > 4 else ''})")


def split_parts(steps: list[Step], devices) -> dict[str, list[int]]:
    """``{op id: indices of its part kernels}`` for every op split over more than one device."""
    parts: dict[str, list[int]] = {}
    for k, s in enumerate(steps):
        if s.task == "part" and s.kind in ("kernel", "view"):
            parts.setdefault(s.label, []).append(k)
    return {op: ks for op, ks in parts.items() if len({steps[k].where for k in ks}) > 1}


def overlap_problems(steps: list[Step], devices) -> list[str]:
    """Split ops whose parts cannot overlap in this order: a GPU part after a CPU part, or a copy
    (which waits for the GPU) between the op's first and last part."""
    gpus = {d.name for d in devices if d.kind == "gpu"}
    out = []
    for op, ks in split_parts(steps, devices).items():
        first, last = ks[0], ks[-1]
        on_gpu = [k for k in ks if steps[k].where in gpus]
        if on_gpu and any(steps[k].where not in gpus for k in ks if k < on_gpu[0]):
            out.append(f"{op}: a CPU part runs before its GPU part is launched")
        copies = [steps[k] for k in range(first, last) if steps[k].kind == "copy"]
        if copies:
            out.append(f"{op}: {copies[0]} runs between its parts, so they cannot overlap")
    return out


def program_order(build, graph, simulation) -> list[Step]:
    """The program of ``build`` (a :class:`tvm_partition.build.executable.BuildResult`), each step
    labelled with the op, part, slice, concat or copy of ``simulation`` (of ``build.plan`` on
    ``graph``) it runs: :func:`align` of the two, so it raises :class:`OrderMismatch` where the
    program departs from the simulated order."""
    program = program_steps(build.executable, build.kernel_devices, build.plan.devices)
    return label_program(simulated_steps(graph, simulation), program)


def label_program(simulated: list[Step], program: list[Step]) -> list[Step]:
    """The steps of ``program`` that :func:`align` matches, in program order, each labelled with the
    simulated op, part, slice, concat or copy it runs."""
    return [dataclasses.replace(program[j], label=simulated[i].label, task=simulated[i].task)
            for i, j in sorted(align(simulated, program).items(), key=lambda kv: kv[1])]

