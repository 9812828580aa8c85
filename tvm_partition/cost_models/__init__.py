"""Cost models: what an op costs on a device, and what a copy costs between two (EOP Sec. 2.3, 3.2).

:class:`CostModel` is the interface every planner uses (:mod:`.base`); :class:`ProfiledCostModel`
answers from this machine's profile (:mod:`.profiled`; ``tvm-partition profile``);
:class:`AnalyticCostModel` is a roofline estimate for machines never profiled.
"""

from .base import AnalyticCostModel, CostModel, DeviceRoofline, Estimate, cut_axes, part_fraction
from .profiled import CostModelError, ProfiledCostModel


def open_cost_model(devices, logs: str | None = None, fallback: CostModel | None = None) -> ProfiledCostModel:
    """The profiled cost model of ``logs`` (default: the shipped ``tuning_logs/``) for this machine's
    fingerprint, or ``logs`` itself when it is a fingerprint folder."""
    import os

    from ..devices import DEFAULT_LOGS, database_dir

    logs = logs or DEFAULT_LOGS
    folder = logs if os.path.exists(os.path.join(logs, "profile.jsonl")) else database_dir(logs)
    return ProfiledCostModel(folder, devices, fallback)


#: Assumed roofline figures where nothing was profiled (not measured): CPU ~100 GFLOP/s and
#: 20 GB/s, GPU ~20 TFLOP/s and 1.5 TB/s.
ROOFLINE = {"cpu": DeviceRoofline(100.0, 20.0, 2.0), "gpu": DeviceRoofline(20000.0, 1500.0, 5.0)}


def _gpu_profile_rank(folder: str) -> tuple[int, int, str] | None:
    """``(newest rule choice its GPU samples ran under, how many ops and sizes ran under it, when
    the last GPU sample was logged)`` of ``folder``'s profile (a GPU sample's ``schedules`` stamp ends in
    ``+gpu`` and ``build.gpu_schedules.GPU_RULE_CHOICE``, read from the stamp: cost models import no build;
    a GPU machine's samples are logged when imported here); None where it has no GPU sample."""
    import collections
    import json
    import os
    import re

    path = os.path.join(folder, "profile.jsonl")
    if not os.path.exists(path):
        return None
    latest, versions = None, collections.defaultdict(set)
    # the GPU lines alone, parsed: a ProfileLog of every shipped folder took 0.35 s, this 0.03
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if '"device": "gpu"' in line:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                latest = max(latest or "", rec.get("time") or "")
                m = re.search(r"\+gpu(\d+)$", str(rec.get("schedules", "")))
                # an op and size timed again counts once
                versions[int(m.group(1)) if m else 0].add((rec.get("sig"), rec.get("dim"), rec.get("size")))
    if latest is None:
        return None
    newest = max(versions)
    return newest, len(versions[newest]), latest


def gpu_logs(logs: str | None = None) -> str | None:
    """A fingerprint folder under ``logs`` (default: the shipped ``tuning_logs/``) whose profile
    has GPU samples: what a machine without a GPU plans ``cpu,gpu`` with. Of several, the one whose
    GPU samples ran under the newest choice among dlight's rules (``gpu_schedules.GPU_RULE_CHOICE``), of
    those the one with the most such samples, then the one that logged a GPU sample last. Why: the H100's
    profile (first by name) priced ResNet-18 at 64 px on the GPU at 2.5 ms from convolutions timed
    under dlight's ``Matmul``; the H200's, timed after the rule choice changed, at 0.40 ms, and it
    ran 0.485 there (2026-11-27), so ``auto`` planned the CPU (1.05 ms) with the first. And the
    fifth GPU run's profile, the newest, holds 164 of the 395 GPU ops (its step's deadline): the
    ops it lacks would be priced by roofline (2026-11-28)."""
    import os

    from ..devices import DEFAULT_LOGS

    logs = logs or DEFAULT_LOGS
    if _gpu_profile_rank(logs) is not None:
        return logs
    folders = sorted(os.path.join(logs, d) for d in os.listdir(logs)) if os.path.isdir(logs) else []
    ranked = [(r, f) for f in folders if (r := _gpu_profile_rank(f)) is not None]
    return max(ranked)[1] if ranked else None


def default_cost_model(devices, logs: str | None = None) -> tuple[CostModel, str]:
    """The cost model planners use, and a line saying where its times come from.

    This machine's profile (``logs``: a tuning-logs folder, default the shipped one), falling back
    per op to :data:`ROOFLINE`. Planning for a GPU on a machine whose profile has none takes the
    shipped logs of a GPU machine (:func:`gpu_logs`) where there are some."""
    roofline = AnalyticCostModel({d.name: ROOFLINE[d.kind] for d in devices})
    folder = None
    local = open_cost_model(devices, logs, fallback=roofline)
    if any(d.kind == "gpu" for d in devices) and not local.log.ops("gpu"):
        folder = gpu_logs(logs)
    if folder is not None:
        return ProfiledCostModel(folder, devices, roofline), f"cost model: GPU-machine profile {folder}"
    if not len(local.log):
        return roofline, "cost model: roofline estimates (no profile: tvm-partition profile MODEL)"
    note = f"cost model: profile {local.folder}"
    factors = sorted(set(local.context.by_sig.values()))
    if factors:
        note += (f" (CPU kernels priced {factors[0]:.2f}-{factors[-1]:.2f}x their time alone, as measured "
                 f"in its models; {local.context.default:.2f}x for other models' ops)")
    if any(d.kind == "gpu" for d in devices) and not local.log.ops("gpu"):
        note += ("; no GPU profile in the tuning logs, GPU times are roofline estimates "
                 "(profile one: tvm-partition profile MODEL --devices cpu,gpu --export-bundle DIR)")
    return local, note


__all__ = ["ROOFLINE", "AnalyticCostModel", "CostModel", "CostModelError", "DeviceRoofline", "Estimate",
           "ProfiledCostModel", "cut_axes", "default_cost_model", "gpu_logs", "open_cost_model", "part_fraction"]
