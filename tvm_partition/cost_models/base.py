"""The cost-model interface every planner uses (DESIGN.md data flow: ``cost_models`` -> planners).

A cost model answers two questions, both in microseconds:

* ``op_time(op, device, shape=None)``: one fused kernel (:class:`tvm_partition.ir.graph.Op`) on a
  device, computing an output of ``shape`` (``None``: the op's whole output; a split part has
  the whole shape with one axis shrunk);
* ``comm_time(nbytes, src, dst)``: moving ``nbytes`` from device ``src`` to device ``dst``
  (0 when they are the same device).

Devices are named as in plans (``cpu``, ``gpu``, ``cpu1``...). Every answer can say where it came
from (``source``): ``pattern`` (an EOP fit of measured samples), ``xgboost`` (the regressor over op
features), ``analytic`` (a roofline estimate, for tests and machines never profiled).
"""

from __future__ import annotations

import abc
import dataclasses
import math
import re


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A predicted time and which model produced it."""

    us: float
    source: str


class CostModel(abc.ABC):
    """Predicted times of ops and copies; see the module docstring for units and names."""

    @abc.abstractmethod
    def estimate(self, op, device: str, shape: tuple[int, ...] | None = None) -> Estimate:
        """Predicted time of ``op`` on ``device`` for an output of ``shape``, and its source."""

    @abc.abstractmethod
    def comm_estimate(self, nbytes: float, src: str, dst: str) -> Estimate:
        """Predicted time to move ``nbytes`` from ``src`` to ``dst``, and its source."""

    def for_graph(self, graph, same_as: dict | None = None) -> "CostModel":
        """This cost model as it prices ``graph`` (planners and the simulator get it from
        :func:`tvm_partition.planners.plan_and_simulate`); itself unless it knows the graph.
        ``same_as``: ``{op signature: op}``, the graph's ops to price as another op."""
        return self

    def op_time(self, op, device: str, shape: tuple[int, ...] | None = None) -> float:
        return self.estimate(op, device, shape).us

    def comm_time(self, nbytes: float, src: str, dst: str) -> float:
        if src == dst or nbytes <= 0:
            return 0.0
        return self.comm_estimate(nbytes, src, dst).us

    def slice_time(self, nbytes: float, device: str) -> float:
        """Cutting a part of ``nbytes`` out of a tensor on ``device`` (the *Split* of EOP Eq. 2)."""
        return 0.0

    def concat_time(self, nbytes: float, device: str) -> float:
        """Joining parts into a tensor of ``nbytes`` on ``device`` (the *Concatenate* of EOP Eq. 2)."""
        return 0.0

    def launch_time(self, device: str) -> float:
        """What the VM spends per kernel it launches on ``device`` beyond the kernel itself
        (dispatch, output allocation, the call): the VM thread is busy for it."""
        return 0.0

    def run_time(self, device: str) -> float:
        """What one run costs on host ``device`` beyond its launches and kernels: the call into the
        VM, its arguments' checks, the return; once a run, before its first kernel."""
        return 0.0

    def view_time(self, device: str) -> float:
        """What the VM spends on a view of a tensor on ``device`` (a split's rows, a part written
        into its join: no kernel, two calls)."""
        return 0.0

    def arg_time(self, device: str) -> float:
        """What each argument of ``main`` beyond the first adds to a run on host ``device`` (the
        call's conversion of it, the VM's check of it): once a run, with :meth:`run_time`."""
        return 0.0

    def alloc_time(self, device: str) -> float:
        """What the VM spends on a storage it allocates in a run on ``device`` (one per tensor the
        static memory plan cannot give a dead tensor's: a slice of the model's inputs)."""
        return 0.0

    def use_time(self, device: str) -> float:
        """What a run costs the host once it uses ``device`` (a GPU: beyond its copies and
        launches), at its first copy or kernel there."""
        return 0.0

    def gap_time(self, device: str) -> float:
        """What the stream of ``device`` (a GPU) takes after each kernel it runs in a model beyond
        the kernel's time alone."""
        return 0.0


def full_shape(op) -> tuple[int, ...]:
    """The op's output shape; ``()`` for an op whose output is a tuple."""
    return tuple(op.output_shapes[-1]) if op.output_shapes else ()


def cut_axes(op, shape: tuple[int, ...] | None) -> list[int]:
    """The axes along which ``shape`` (a part of ``op``'s output; None: the whole) is cut."""
    if shape is None:
        return []
    return [a for a, (s, f) in enumerate(zip(shape, full_shape(op))) if s != f]


def part_fraction(op, shape: tuple[int, ...] | None) -> float:
    """Fraction of the op's output that ``shape`` covers (1.0 for ``None``)."""
    if shape is None:
        return 1.0
    full = math.prod(full_shape(op)) or 1
    return min(1.0, math.prod(shape) / full)


@dataclasses.dataclass(frozen=True)
class DeviceRoofline:
    """A device described by peak compute and memory bandwidth, plus a fixed launch overhead."""

    gflops: float
    gbytes_per_s: float
    launch_us: float = 2.0


class AnalyticCostModel(CostModel):
    """Roofline estimate: ``launch + max(flops / peak, bytes / bandwidth)``, scaled to the part.

    Not a measurement: it lets planners and tests run on a machine never profiled, and is the
    model of last resort. ``devices`` maps device names to :class:`DeviceRoofline`; ``links``
    maps ``(src, dst)`` to ``(bandwidth GB/s, latency us)`` (default: 10 GB/s, 10 us).
    """

    def __init__(self, devices: dict[str, DeviceRoofline], links: dict | None = None,
                 default_link: tuple[float, float] = (10.0, 10.0)):
        self.devices = dict(devices)
        self.links = dict(links or {})
        self.default_link = default_link

    def estimate(self, op, device: str, shape=None) -> Estimate:
        if device not in self.devices:
            raise KeyError(f"the cost model knows no device {device!r} (it has {sorted(self.devices)})")
        d = self.devices[device]
        f = part_fraction(op, shape)
        if getattr(op, "is_view", False):
            return Estimate(0.0, "analytic")
        compute = op.flops * f / (d.gflops * 1e3)
        memory = op.bytes * f / (d.gbytes_per_s * 1e3)
        return Estimate(d.launch_us + max(compute, memory), "analytic")

    def slice_time(self, nbytes: float, device: str) -> float:
        return self.devices[device].launch_us + 2 * nbytes / (self.devices[device].gbytes_per_s * 1e3)

    concat_time = slice_time

    def launch_time(self, device: str) -> float:
        """A GPU's ``launch_us`` costs the VM thread as well as the stream: the call returns before
        the kernel runs, not before it is made (3.2 us a launch on the H100 machine's host, which
        runs the CPU's kernels too). A CPU's is inside the kernel time that thread runs."""
        on_gpu = device in self.devices and re.fullmatch(r"gpu\d*", device)
        return self.devices[device].launch_us if on_gpu else 0.0

    def comm_estimate(self, nbytes: float, src: str, dst: str) -> Estimate:
        if src == dst or nbytes <= 0:
            return Estimate(0.0, "analytic")
        gbps, lat = self.links.get((src, dst), self.default_link)
        return Estimate(lat + nbytes / (gbps * 1e3), "analytic")


class ServersCostModel(CostModel):
    """Edge servers measured through Ray (issue 20; FlexPie / MOIRAI place over such servers): an
    op on server device ``D`` takes the ``local`` device's time in ``base`` (this machine's profile)
    times ``factors[D]``, D's measured time for a probe artifact over what ``base`` predicts for it
(so a plan of every op on D is priced at D's measured time); a copy between
    two servers takes the measured link, ``latency_us[src][dst] + nbytes / bandwidth_Bps[src][dst]``
    (ping-pong of a tensor through Ray's object store). Devices are named as in plans (``cpu``,
    ``cpu1``, ... for the servers in order)."""

    def __init__(self, base: CostModel, factors: dict[str, float], bandwidth_Bps: dict, latency_us: dict,
                 local: str = "cpu"):
        self.base, self.factors, self.local = base, dict(factors), local
        self.bandwidth_Bps, self.latency_us = bandwidth_Bps, latency_us

    def _factor(self, device: str) -> float:
        if device not in self.factors:
            raise KeyError(f"no measured server for device {device!r} (have {sorted(self.factors)})")
        return self.factors[device]

    def for_graph(self, graph, same_as: dict | None = None) -> "ServersCostModel":
        return ServersCostModel(self.base.for_graph(graph, same_as), self.factors, self.bandwidth_Bps, self.latency_us,
                                self.local)

    def estimate(self, op, device: str, shape=None) -> Estimate:
        e = self.base.estimate(op, self.local, shape)
        return Estimate(e.us * self._factor(device), f"servers:{e.source}")

    def comm_estimate(self, nbytes: float, src: str, dst: str) -> Estimate:
        if src == dst or nbytes <= 0:
            return Estimate(0.0, "measured")
        return Estimate(self.latency_us[src][dst] + nbytes / self.bandwidth_Bps[src][dst] * 1e6, "measured")

    def slice_time(self, nbytes: float, device: str) -> float:
        return self.base.slice_time(nbytes, self.local) * self._factor(device)

    def concat_time(self, nbytes: float, device: str) -> float:
        return self.base.concat_time(nbytes, self.local) * self._factor(device)

    def launch_time(self, device: str) -> float:
        return self.base.launch_time(self.local) * self._factor(device)

    def run_time(self, device: str) -> float:
        return self.base.run_time(self.local) * self._factor(device)

    def view_time(self, device: str) -> float:
        return self.base.view_time(self.local) * self._factor(device)

    def arg_time(self, device: str) -> float:
        return self.base.arg_time(self.local) * self._factor(device)

    def alloc_time(self, device: str) -> float:
        return self.base.alloc_time(self.local) * self._factor(device)
