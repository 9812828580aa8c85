"""Profile ops and copies on this machine's devices; fit and check the cost models.

Every fused op of the models is timed on each device while each legal split axis varies (batch
1..1024, H, N... within the model's extent; EOP Sec. 2.3), built as the compiler builds it: the
tuned schedule where the tuning database has one, a transferred one where a record of the same
computation replays (:mod:`tvm_partition.build.transfer`), part sizes cut where builds cut them
(:mod:`tvm_partition.build.align`). Split, copy (each direction) and concat
are timed over tensor sizes. Samples go to ``<tuning logs>/<hardware fingerprint>/profile.jsonl``
(append-only JSON Lines; a rerun skips what is there). Then each model, built for the CPU, runs in
the VM against its kernels timed alone (a few seconds a model; kernels run slower in a model than
alone, :mod:`tvm_partition.profiling.context`), with ``--devices`` of two or more its heaviest key
ops alone too (the op rows of ``bench --split-ops``, :func:`_op_contexts`; an exported bundle's
too), and the XGBoost regressors are trained and saved beside the log. ``--budget-s`` caps the
time of the samples: every op is first timed at its full size, finer sizes follow while time is
left.

``--rpc`` / ``--tracker --key`` profile a remote edge server over TVM RPC: the samples are built
here, uploaded and timed there with TVM's time evaluator (RPC latency is not in the figures;
copies between devices are not timed remotely), and written to ``<tuning logs>/<NAME>/`` here
(``--machine NAME``, default ``rpc-<key or host>``; give ``--target-cpu`` when its CPU differs).
``--export-bundle DIR`` builds the samples for a machine this one cannot reach (an air-gapped edge
server, the GPU machine): ``python DIR/time_samples.py DIR`` there needs only numpy and the
runtime-only TVM; ``--import DIR`` (or its results.jsonl) merges the results into the logs of that
machine's fingerprint. ``--explain`` prints every pattern fit; ``--evaluate`` reports held-out
accuracy (MAPE) of the patterns, XGBoost and a linear-only model, with a PNG, and ends with
``mape_pattern=<f> mape_xgboost=<f> mape_linear=<f>``.
"""

from __future__ import annotations

import os
import re
import sys

from .. import flags


def parser():
    ap = flags.parser("profile", __doc__, epilog=flags.ZOO_EPILOG)
    ap.add_argument("models", nargs="*", help="zoo names or paths to .onnx files")
    flags.add_devices(ap, "cpu", "devices to profile: cpu (default), cpu,gpu or cpu,cpu")
    ap.add_argument("--budget-s", type=flags.at_least(0, float), metavar="S",
                    help="stop after about this many seconds (default: no limit)")
    flags.add_tuning_logs(ap)
    flags.add_targets(ap, "LLVM -mcpu of the CPU (default: this machine's)")
    flags.add_model_args(ap)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--export-bundle", metavar="DIR", help="build the samples into DIR for another machine")
    mode.add_argument("--import", dest="import_", metavar="RESULTS",
                      help="merge a bundle's results (the bundle folder or its results.jsonl) into the logs")
    mode.add_argument("--explain", action="store_true", help="print the pattern fit of every profiled op")
    mode.add_argument("--evaluate", action="store_true", help="held-out accuracy of the cost models")
    flags.add_rpc(ap, "time")
    ap.add_argument("--machine", metavar="NAME", help="with --rpc/--tracker: the name of the remote machine's tuning-logs folder")
    flags.add_out(ap, "--evaluate: folder for the report and PNG (default benchmarks/results/<fingerprint>)")
    return ap


def _models(args, devices=None) -> list:
    """The models named, in the form a build for ``devices`` compiles them
    (:func:`tvm_partition.cli.compile.for_devices`: a quantized model's byte matmuls), so their
    samples time the kernels builds run."""
    from .. import frontend
    from .compile import for_devices

    models = [frontend.load_from_args(name, args) for name in args.models]
    return [for_devices(m, devices) for m in models] if devices else models


def _graphs(args, models=None):
    from ..ir.graph import OpGraph

    return [OpGraph(m.mod) for m in (models if models is not None else _models(args))]


@flags.command
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from ..devices import DEFAULT_LOGS, database_dir, parse_devices

    logs = args.tuning_logs or DEFAULT_LOGS
    remote = bool(args.rpc or args.tracker or args.key)
    if remote:
        name = args.machine or "rpc-" + re.sub(r"[^a-z0-9]+", "-", (args.key or args.rpc or "").lower()).strip("-")
        folder = os.path.join(logs, name)
    else:
        folder = database_dir(logs)
    try:
        if args.import_:
            from ..profiling.profiler import import_results

            n, where = import_results(args.import_, logs)
            print(f"imported {n} samples into {where}")
            return 0
        if args.evaluate:
            from ..cost_models.evaluate import evaluate

            out = args.out or os.path.join("benchmarks", "results", os.path.basename(folder.rstrip("/")))
            print(evaluate(folder, out))
            return 0
        text = args.devices if args.devices.split(",")[0].strip() == "cpu" else "cpu," + args.devices
        devices = parse_devices(text, gpu_arch=args.gpu_arch, cpu_mcpu=args.target_cpu)
        if args.explain:
            from ..cost_models.profiled import ProfiledCostModel
            from ..ir.graph import op_signature

            sigs = None
            if args.models:  # the ops of the form a build for the devices compiles
                sigs = {op_signature(op) for g in _graphs(args, _models(args, devices)) for op in g.ops.values()}
            print(ProfiledCostModel(folder).explain(sigs) or f"no profile in {folder}")
            return 0
        if not args.models:
            raise flags.UsageError("name at least one model (e.g. lstm), or use --import / --explain / --evaluate")
        return _profile(args, devices, folder)
    except (ValueError, OSError) as e:  # unreadable results or logs (JSON, files)
        print(f"error: {e}", file=sys.stderr)
        return 2


#: Key ops of each model run alone in the VM after its profile: the op rows ``bench --split-ops N``
#: measures (its ``--quick`` runs 2), heaviest first.
OP_CONTEXTS = 2


def op_models(models: list, devices: list, logs: str | None, n: int = OP_CONTEXTS) -> list:
    """The op models of each of ``models``' ``n`` heaviest key ops
    (:func:`tvm_partition.bench.ops.op_rows`, chosen with the cost model ``bench`` plans ``devices``
    with from ``logs``: :func:`tvm_partition.cost_models.default_cost_model`); none with fewer than
    two devices (no split to choose); a model whose ops cannot be cut out is said and left out.
    ``profile`` runs them in the VM here (:func:`_op_contexts`) or in its exported bundle, as does
    the GPU kit's (``benchmarks/gpu_proof/kit.py``)."""
    from ..bench import ops as bench_ops
    from ..cost_models import default_cost_model

    if len(devices) < 2:
        return []
    cost_model = default_cost_model(devices, logs)[0]
    ops = []
    for m in models:
        try:
            ops += [om for om, *_ in bench_ops.op_rows(m, devices, cost_model, n)]
        except Exception as e:  # noqa: BLE001 - an op row refines its own pricing only: the profile is done
            print(f"warning: {m.name}'s key ops not run alone in the VM: {e}", file=sys.stderr)
    return ops


def _op_contexts(models: list, devices: list, folder: str, schedules) -> list[dict]:
    """:func:`op_models` (chosen by the profile just taken in ``folder``) each run in the VM
    against its kernel alone, as the models are (:func:`tvm_partition.profiling.profiler.measure_contexts`).
    Why: a model of one kernel was priced at its kernel's time alone, and the RNNs' gate matmuls
    alone in the VM (4-8 us, whole and split) read 9% to 17% over their predictions
    (intel-r-xeon-r-processor-rocketlake-2c, 2026-12-04)."""
    from ..profiling.profiler import measure_contexts

    ops = op_models(models, devices, folder)
    return measure_contexts(ops, devices, folder, schedules, say=lambda line: print(line, file=sys.stderr)) if ops else []


def _profile(args, devices, folder) -> int:
    from ..profiling import profiler
    from ..devices import DeviceError, check_local
    from ..build.align import align_splits
    from ..build.tuning import open_schedules

    models = _models(args, devices)
    graphs = _graphs(args, models)
    schedules = open_schedules(folder)
    for g in graphs:  # sample the part sizes builds cut (multiples of the kernels' inner tiles)
        align_splits(g, devices, schedules)
    session = fingerprint = None
    if args.rpc or args.tracker or args.key:
        from ..runtime.remote import Endpoint, connect

        session = connect(Endpoint(args.rpc, args.tracker, args.key))
        fingerprint = {"cpu": os.path.basename(folder), "cores": None, "gpu": None, "driver": None,
                       "rpc": args.rpc or f"{args.tracker} key {args.key}"}
    if args.export_bundle:
        # the op rows bench chooses for these devices here (a GPU machine's shipped profile for a GPU)
        ops = op_models(models, devices, args.tuning_logs)
        spec = profiler.export_bundle(args.export_bundle, graphs, devices, schedules,
                                      progress=lambda m: print(m, file=sys.stderr), models=models + ops)
        n = sum(len(lib["samples"]) for lib in spec["libraries"]) + len(spec["copies"])
        print(f"bundle {args.export_bundle}: {n} samples ({spec['skipped']} sizes that cannot be built left out), "
              f"{len(spec.get('contexts', []))} models run in the VM against their kernels; "
              f"there: python time_samples.py {os.path.basename(os.path.abspath(args.export_bundle))}; "
              f"here: tvm-partition profile --import RESULTS")
        return 0
    try:
        if session is None:
            check_local(devices)
    except DeviceError:
        raise DeviceError(f"this machine has no CUDA GPU to time --devices {args.devices} on: build the samples "
                          "with --export-bundle DIR, run `python DIR/time_samples.py DIR` on the GPU machine, "
                          "then --import DIR here") from None
    where = "" if session is None else f" of {fingerprint['rpc']}"
    stats = profiler.profile_with_progress(graphs, devices, folder, schedules, args.budget_s, session, fingerprint, where,
                                           models=models)
    if session is None:
        stats["contexts"] += _op_contexts(models, devices, folder, schedules)
    print(f"measured {stats['measured']} samples ({stats['retimed']} timed again, the quicker kept: "
          f"{stats['quicker']} over {1 - profiler.QUICKER:.0%} quicker; {stats['in_order']} of "
          f"{stats['out_of_order']} slower than a larger size of their series in order after timing "
          f"them again) in "
          f"{stats['seconds']:.0f} s, {stats['left']} left for a later "
          f"run, {stats['skipped']} sizes that cannot be built; models: {', '.join(stats['models'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
