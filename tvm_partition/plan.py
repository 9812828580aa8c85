"""The Plan: the one contract between planners (which decide) and passes (which rewrite).

::

    Plan {version, devices: [DeviceSpec], ops: {op_id: Decision}, predicted_latency_us, strategy, meta}
    Decision = OnDevice(device) | Split(dim, ratios, devices)

``op_id`` names a fused kernel of :class:`tvm_partition.ir.graph.OpGraph`. ``Split.dim`` is an axis of
the op's output tensor; the OpGraph says which axes are legal and how they are named (batch,
channel, H, M, N...). Ops a plan does not mention run on the plan's first device (the host CPU).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import TYPE_CHECKING, Union

from .devices import DeviceError, DeviceSpec
from .errors import TvmPartitionError

if TYPE_CHECKING:  # pragma: no cover
    from .ir.graph import OpGraph

PLAN_VERSION = 1
_RATIO_TOL = 1e-6


class PlanError(TvmPartitionError, ValueError):
    """A plan that cannot be applied; the message names the op and the problem."""


@dataclasses.dataclass(frozen=True)
class OnDevice:
    """Run the whole op on one device."""

    device: str

    def to_json(self) -> dict:
        return {"kind": "on_device", "device": self.device}


@dataclasses.dataclass(frozen=True)
class Split:
    """Split the op's output along axis ``dim``: part ``i`` (``ratios[i]`` of it) runs on ``devices[i]``."""

    dim: int
    ratios: tuple[float, ...]
    devices: tuple[str, ...]

    def __post_init__(self):
        object.__setattr__(self, "ratios", tuple(float(r) for r in self.ratios))
        object.__setattr__(self, "devices", tuple(str(d) for d in self.devices))
        object.__setattr__(self, "dim", int(self.dim))

    def to_json(self) -> dict:
        return {"kind": "split", "dim": self.dim, "ratios": list(self.ratios), "devices": list(self.devices)}

    def check(self) -> None:
        if len(self.ratios) != len(self.devices) or len(self.ratios) < 2:
            raise PlanError(f"split needs one ratio per device and at least two devices, got {self.to_json()}")
        if len(set(self.devices)) != len(self.devices):
            raise PlanError(f"split names a device twice: {list(self.devices)}")
        for r in self.ratios:
            if not (0.0 <= r <= 1.0) or math.isnan(r):
                raise PlanError(f"split ratio {r} is outside [0, 1]")
        if abs(sum(self.ratios) - 1.0) > _RATIO_TOL:
            raise PlanError(f"split ratios {list(self.ratios)} sum to {sum(self.ratios):.6g}, not 1")

    def parts(self, size: int, granule: int = 1) -> list[tuple[str, int, int]]:
        """``[(device, lo, hi), ...]`` covering ``[0, size)``; empty parts are dropped.

        Boundaries are rounded to multiples of ``granule`` (e.g. the channel group size of a
        grouped convolution). Uneven sizes are fine (batch 3 at 0.5/0.5 gives 2 + 1).
        """
        self.check()
        granule = max(1, int(granule))
        units = size // granule
        out, acc, lo = [], 0.0, 0
        for i, (dev, r) in enumerate(zip(self.devices, self.ratios)):
            acc += r
            hi = size if i == len(self.ratios) - 1 else min(size, int(round(acc * units)) * granule)
            if hi > lo:
                out.append((dev, lo, hi))
                lo = hi
        return out

    def exact(self, size: int, granule: int = 1) -> "Split":
        """The same cut with each ratio the exact fraction of its part (:meth:`parts` at ``granule``),
        so the parts come out the same at any granule that divides the boundaries (ApplyPlan on a
        graph analysed afresh) and in a plan file."""
        parts = self.parts(size, granule)
        if len(parts) != len(self.devices):
            return self
        return Split(self.dim, tuple((hi - lo) / size for _, lo, hi in parts), tuple(d for d, _, _ in parts))


Decision = Union[OnDevice, Split]


def devices_of(decision: Decision) -> set[str]:
    """The devices a decision runs its op on."""
    return {decision.device} if isinstance(decision, OnDevice) else set(decision.devices)


def decision_from_json(d: dict) -> Decision:
    kind = d.get("kind") if isinstance(d, dict) else None
    try:
        if kind == "on_device":
            return OnDevice(str(d["device"]))
        if kind == "split":
            return Split(int(d["dim"]), tuple(d["ratios"]), tuple(d["devices"]))
    except (KeyError, TypeError, ValueError) as e:
        raise PlanError(f"bad decision {d!r}: {e}") from e
    raise PlanError(f"bad decision {d!r}: kind must be 'on_device' or 'split'")


@dataclasses.dataclass
class Plan:
    devices: list[DeviceSpec]
    ops: dict[str, Decision] = dataclasses.field(default_factory=dict)
    strategy: str = "manual"
    predicted_latency_us: float | None = None
    meta: dict = dataclasses.field(default_factory=dict)
    version: int = PLAN_VERSION

    @property
    def host(self) -> str:
        return self.devices[0].name

    def device(self, name: str) -> DeviceSpec:
        for d in self.devices:
            if d.name == name:
                return d
        raise PlanError(f"unknown device {name!r}: the plan has {[d.name for d in self.devices]}")

    def with_cpu_only_on_host(self, graph: "OpGraph") -> "Plan":
        """This plan with every op of ``graph.cpu_only`` that it places off the CPUs on the host."""
        cpus = {d.name for d in self.devices if d.kind == "cpu"}
        moved = {op_id: OnDevice(self.host) for op_id in graph.cpu_only if not devices_of(self.decision(op_id)) <= cpus}
        return dataclasses.replace(self, ops={**self.ops, **moved}) if moved else self

    def decision(self, op_id: str) -> Decision:
        return self.ops.get(op_id, OnDevice(self.host))

    # --- JSON
    def to_json(self) -> dict:
        return {
            "version": self.version,
            "strategy": self.strategy,
            "devices": [d.to_json() for d in self.devices],
            "predicted_latency_us": self.predicted_latency_us,
            "ops": {k: v.to_json() for k, v in self.ops.items()},
            "meta": self.meta,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2)

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.dumps() + "\n")

    @staticmethod
    def from_json(d: dict) -> "Plan":
        if not isinstance(d, dict):
            raise PlanError("a plan must be a JSON object")
        version = d.get("version")
        if version != PLAN_VERSION:
            raise PlanError(f"plan version {version!r} is not supported (this tvm_partition reads version {PLAN_VERSION})")
        try:
            devices = [DeviceSpec.from_json(x) for x in d["devices"]]
        except (KeyError, TypeError, DeviceError) as e:
            raise PlanError(f"plan has no valid 'devices' list: {e}") from e
        if not devices:
            raise PlanError("plan has no devices")
        ops = d.get("ops", {})
        if not isinstance(ops, dict):
            raise PlanError("plan 'ops' must be an object {op_id: decision}")
        if not isinstance(d.get("meta") or {}, dict):
            raise PlanError("plan 'meta' must be an object")
        return Plan(
            devices=devices,
            ops={str(k): decision_from_json(v) for k, v in ops.items()},
            strategy=str(d.get("strategy", "manual")),
            predicted_latency_us=d.get("predicted_latency_us"),
            meta=dict(d.get("meta") or {}),
            version=version,
        )

    @staticmethod
    def loads(text: str) -> "Plan":
        try:
            return Plan.from_json(json.loads(text))
        except json.JSONDecodeError as e:
            raise PlanError(f"plan is not valid JSON: {e}") from e

    @staticmethod
    def load(path) -> "Plan":
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise PlanError(f"cannot read plan {path}: {e.strerror or e}") from e
        return Plan.loads(text)

    # --- validation
    def validate(self, graph: "OpGraph") -> None:
        """Raise :class:`PlanError` naming the first problem: unknown op or device, bad ratios, illegal dim."""
        names = [d.name for d in self.devices]
        if len(set(names)) != len(names):
            raise PlanError(f"plan lists a device twice: {names}")
        if self.devices[0].kind != "cpu":
            raise PlanError("the plan's first device must be the host cpu")
        for d in self.devices:
            try:
                d.tvm_target()
            except Exception as e:  # noqa: BLE001 - TVM reports a bad target with several error types
                raise PlanError(f"device {d.name!r}: TVM rejects target {d.target}: {str(e).splitlines()[0]}") from None
        for op_id, dec in self.ops.items():
            if op_id not in graph.ops:
                raise PlanError(f"plan names op {op_id!r}, which this model does not have (see --explain for op ids)")
            for dev in sorted(devices_of(dec)):
                if dev not in names:
                    raise PlanError(f"op {op_id!r}: unknown device {dev!r} (the plan has {names})")
                if op_id in graph.cpu_only and self.device(dev).kind != "cpu":
                    raise PlanError(f"op {op_id!r} runs on a CPU only: its shape depends on the data")
            if isinstance(dec, Split):
                try:
                    dec.check()
                except PlanError as e:
                    raise PlanError(f"op {op_id!r}: {e}") from None
                reason = graph.split_refusal(op_id, dec.dim)
                if reason:
                    raise PlanError(f"op {op_id!r} cannot be split on dim {dec.dim}: {reason}")
