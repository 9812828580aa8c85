"""Tune the kernels a model's builds launch with MetaSchedule; append them to the tuning logs.

The kernels are TVM's fused PrimFuncs of the builds: the whole model on each device, and, for
two devices, the part shapes of splits at each ratio of ``--ratios`` (or exactly the kernels of
``--plan``). Heaviest kernels go first; with ``--budget-s`` the kernels with most to gain go first instead
(each timed with the schedule a build gives it now, default or transferred, against what a tuned
kernel of its FLOPs should take: :func:`tvm_partition.build.tuning.rank_by_gain`) and the session in
flight ends after its next measured round once the budget is spent. ``--trials`` counts a
kernel's trials in all: a kernel with that many on record is skipped and one with fewer gets the
rest, its search seeded by its records, so a rerun resumes a killed run (records are appended as
trials are measured) and a rerun with more trials tunes further; ``--trials 0`` tunes nothing and
only measures what builds choose between (:func:`tvm_partition.build.tuning.race_templates`: a
database tuned before the matmul template existed races it so). Kernels that do no arithmetic
(slices, reshapes, transposes: TVM estimates 0 FLOPs) are pure data movement and keep TVM's
default schedule: an LSTM over 100 steps launches 100 distinct slice kernels, and tuning them
would cost an hour for nothing.
"""

from __future__ import annotations

import sys

from .. import flags
from ..devices import database_dir, parse_devices
from ..plan import OnDevice, Plan, PlanError, Split


def extraction_plans(graph, devices, plan_file: str | None = None, ratios=(0.25, 0.5, 0.75)) -> list[Plan]:
    """The plans whose kernels are tuned: ``plan_file``, or each device alone plus a ratio grid."""
    from ..planners.baselines import preferred_dim

    if plan_file:
        plan = Plan.load(plan_file)
        plan.validate(graph)
        return [plan]
    plans = [Plan(devices, {i: OnDevice(d.name) for i, op in graph.ops.items() if not op.is_view}, strategy=d.name)
             for d in devices]
    if len(devices) >= 2:
        acc, host = devices[1].name, devices[0].name
        for r in ratios:
            ops = {}
            for i, op in graph.ops.items():
                dim = None if op.is_view else preferred_dim(graph, i)
                if dim is not None:
                    ops[i] = Split(dim, (r, 1 - r), (acc, host))
            plans.append(Plan(devices, ops, strategy=f"split-{r:g}"))
    return plans


def extract_kernels(model, devices, plan_file=None, ratios=(0.25, 0.5, 0.75)):
    """Distinct kernels (per device) of every extraction plan, heaviest first."""
    import tvm_ffi

    from ..build.executable import lower
    from ..ir.graph import OpGraph
    from ..build.tuning import kernels_of

    graph = OpGraph(model.mod)
    seen, out = set(), []
    for plan in extraction_plans(graph, devices, plan_file, ratios):
        lowered, placed = lower(model.mod, plan, graph)
        for k in kernels_of(lowered, placed, plan.devices):
            key = (tvm_ffi.structural_hash(k.mod), k.device.name)
            if key not in seen:
                seen.add(key)
                out.append(k)
    return sorted(out, key=lambda k: -k.flops)


def parse_ratios(text: str) -> tuple[float, ...]:
    try:
        ratios = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise PlanError(f"--ratios {text!r}: expected numbers like 0.25,0.5,0.75") from None
    if not ratios or any(not 0 < r < 1 for r in ratios):
        raise PlanError(f"--ratios {text!r}: each ratio must be strictly between 0 and 1")
    return ratios


def parser():
    ap = flags.parser("tune", __doc__, epilog=flags.ZOO_EPILOG)
    ap.add_argument("model", help="zoo name or path to an .onnx file")
    flags.add_devices(ap, "cpu", "cpu (default), gpu or cpu,gpu")
    ap.add_argument("--trials", type=flags.at_least(0), default=64, metavar="N",
                    help="MetaSchedule trials per kernel in all (default 64): a kernel with fewer "
                         "on record gets the rest, so a rerun with more continues; 0 tunes nothing "
                         "and only times what is on record (default schedules, the matmul template "
                         "against the records)")
    ap.add_argument("--budget-s", type=flags.at_least(0, float), metavar="S",
                    help="tune the kernels with most to gain first and stop after this "
                         "many seconds (plus the round of trials in flight)")
    flags.add_tuning_logs(ap)
    flags.add_targets(ap, "LLVM -mcpu of the CPU to tune for (default: this machine's)")
    ap.add_argument("--plan", metavar="FILE", help="tune exactly the kernels of this plan")
    ap.add_argument("--ratios", default="0.25,0.5,0.75", metavar="R,R", help="split ratios whose part shapes are tuned")
    flags.add_model_args(ap)
    ap.add_argument("--list", action="store_true",
                    help="list the kernels: tuned, untuned, or copy (data movement, never tuned); tune nothing")
    return ap


@flags.command
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from .. import frontend
    from ..build.databases import open_database
    from ..build.tuning import (
        is_tuned,
        open_schedules,
        tune_with_progress,
        tuning_target,
    )

    text = args.devices if args.devices.split(",")[0].strip() == "cpu" else "cpu," + args.devices
    devices = parse_devices(text, gpu_arch=args.gpu_arch, cpu_mcpu=args.target_cpu)
    model = frontend.load_from_args(args.model, args)
    ratios = parse_ratios(args.ratios)
    kernels = extract_kernels(model, devices, args.plan, ratios)
    wanted = {k.strip() for k in args.devices.split(",")}
    kernels = [k for k in kernels if k.device.kind in wanted]
    movers = [k for k in kernels if not k.computes]
    kernels = [k for k in kernels if k.computes]
    db_path = database_dir(args.tuning_logs)
    db = open_database(db_path)
    if args.list:
        schedules = open_schedules(db_path)
        for k in kernels:
            label = schedules.schedule(k.mod, tuning_target(k.device))[1].split()[0]
            if label != "template" and is_tuned(db, k):  # tuned, even where its best is the default
                label = "tuned"
            print(f"{label:<11} {k.device.name:<5} {k.flops / 1e6:10.2f} MFLOP  {k.name}")
        for k in movers:
            print(f"{'copy':<11} {k.device.name:<5} {0:10.2f} MFLOP  {k.name}")
        return 0
    print(f"{len(kernels)} kernels of {model.name} on {args.devices} ({len(movers)} data-movement kernels "
          f"keep TVM's default schedule); database {db_path}")
    stats = tune_with_progress(kernels, db_path, args.trials, args.budget_s)
    print(f"tuned {stats['tuned']}, already tuned {stats['skipped']}, left for a later run {stats['left']}; "
          f"transferred schedules picked by measurement {stats['searched']}; "
          f"default schedules measured {stats['defaults']}; kernels left to the templates {stats['template']}; "
          f"records raced by the matmul template {stats['raced']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
