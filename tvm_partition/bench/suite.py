"""End-to-end benchmark: every strategy side by side, planned, compiled, saved and measured in one run.

For each model setting (``--sweep KEY=V,V`` repeats each model at each value, like EOP Fig. 9) and
each strategy: plan and compile with :func:`tvm_partition.cli.compile.compile_model` (the cost model
of :func:`tvm_partition.cost_models.default_cost_model`, this machine's tuning database), save the
artifact, and measure it end to end with the TVM runtime alone in fresh processes
(:mod:`tvm_partition.bench.runtime`: :class:`~tvm_partition.runtime.run.Runner`, median and p90 as
``run --repeat``). Default models: EOP Table 3's workloads at the zoo defaults (lstm and gru: input
80, hidden 64, 2 layers, seq 100, batch 16; bert: seq 128, batch 16; inception_v3 299;
mobilenetv2 224; resnet50 224). Default strategies: cpu, gpu, equal, fixed, eop, auto, milp (those
in :data:`tvm_partition.planners.STRATEGIES`), plus the reference ``tvm-cpu``: the unpartitioned
model built by TVM's own CPU flow (:func:`tvm_partition.build.executable.build_reference`), and for a model
given as an .onnx file the reference ``onnxruntime``: the same file on onnxruntime's CPU execution
provider with our CPU build's threads, checked against TVM's outputs before it is measured
(:mod:`tvm_partition.bench.ort`; it also travels in bundles, whose machine then needs
onnxruntime). A zoo model has no ONNX file: ``onnxruntime`` is left out for it (with a note
where ``--strategies`` names it). On a device set with a GPU a zoo model gets the references
``pytorch`` and ``pytorch-graph`` instead: its twin in PyTorch on the GPU, eager and replayed as
one CUDA graph, checked against TVM's outputs before it is measured
(:mod:`tvm_partition.bench.torch_ref`; the measuring machine needs torch). There is no
separate ``tvm-gpu`` row: the ``gpu`` strategy already is the unpartitioned model on the GPU with
dlight schedules (plus tuned records where the database has CUDA ones), inputs copied in and
outputs back as any deployment does. ``--quick``: small settings that run in minutes on 2 cores.
``--split-ops N`` adds each model's ``N`` heaviest key ops alone (:mod:`tvm_partition.bench.ops`),
whole on each device and split, to compare a split with the ideal co-execution bound
``1 / (1/t_cpu + 1/t_gpu)``, which every row group carries as ``ideal_us``.

Rows go to ``--out`` (default ``benchmarks/results/<fingerprint>/bench/``) as ``results.json``
and ``results.csv``, rewritten after every row; a rerun skips measured rows unless ``--force``. A
strategy that fails is a row with ``error``. A device set naming a GPU is only measured where one
exists; elsewhere ``--export-bundle DIR`` compiles every row (CUDA cross-compiles) into DIR with
``DIR/run_bench.py``, which measures them there with the runtime-only TVM, and ``--import DIR``
brings the results back. ``--update-benchmarks`` rewrites the end-to-end section of BENCHMARKS.md
from the results (:mod:`tvm_partition.bench.report`). ``--import`` and ``--update-benchmarks``
measure nothing unless ``--models`` or ``--quick`` is given too.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import shutil
import sys
import tempfile
import time

from . import load as bench_load, ops as bench_ops, ort as bench_ort, torch_ref as bench_torch
from .. import flags
from ..devices import usable_cpus
from . import results
from .runtime import BUNDLE_SPEC, RESULTS, measure_isolated
from ..errors import TvmPartitionError
from ..runtime.ort import agreement, own_difference, spread

REPO = results.workspace()
#: EOP Table 3's workloads; their zoo defaults are the paper's settings.
DEFAULT_MODELS = {"lstm": {}, "gru": {}, "bert": {}, "inception_v3": {}, "mobilenetv2": {}, "resnet50": {}}
#: Small settings; lstm, gru and bert-tiny keep the kernel shapes of the shipped tuning database.
QUICK_MODELS = {"lstm": {"seq_len": 10}, "gru": {"seq_len": 10}, "bert-tiny": {}, "resnet18": {"image_size": 64}}
DEFAULT_STRATEGIES = ("cpu", "gpu", "equal", "fixed", "eop", "auto", "milp")
QUICK_STRATEGIES = ("cpu", "gpu", "equal", "fixed", "eop", "auto")
#: The reference rows that are not one of our planners: TVM's own CPU flow, onnxruntime (.onnx
#: models only) and PyTorch on the GPU, eager and as a CUDA graph (zoo models with a twin, device
#: sets with a GPU).
REFERENCE = "tvm-cpu"
REFERENCES = (REFERENCE, bench_ort.NAME, *bench_torch.NAMES)
#: The modules of the bundle's runner (the runtime half of tvm_partition).
BUNDLE_MODULES = ("bench/__init__.py", "bench/runtime.py", "bench/results.py", "bench/ort.py", "bench/torch_ref.py",
                  "bench/torch_twins.py")


class BenchError(TvmPartitionError, ValueError):
    """Bad arguments; the message names the thing and the fix."""


def parser():
    ap = flags.parser("bench", __doc__, epilog=flags.ZOO_EPILOG)
    ap.add_argument("--models", metavar="M,...", help=f"comma-separated zoo names or .onnx paths (default: {','.join(DEFAULT_MODELS)})")
    flags.add_devices(ap, "cpu,cpu", "device set: cpu,cpu (default), cpu,gpu, ...")
    ap.add_argument("--strategies", metavar="S,...", help=f"comma-separated (default: {','.join(DEFAULT_STRATEGIES + REFERENCES)}; "
                                         f"those the planner registry has; {bench_ort.NAME} for .onnx models only, "
                                         f"{' and '.join(bench_torch.NAMES)} for zoo models on a GPU)")
    ap.add_argument("--quick", action="store_true", help=f"small settings ({', '.join(QUICK_MODELS)}; "
                                                         f"{', '.join(QUICK_STRATEGIES)}; 10 repeats)")
    ap.add_argument("--sweep", metavar="KEY=V,V", help="repeat each model at each value, e.g. batch=8,16,32")
    ap.add_argument("--split-ops", type=flags.at_least(0), default=0, metavar="N",
                    help="also the N heaviest key ops of each model alone: whole on each device and split, "
                         "against the ideal co-execution bound (see tvm_partition.bench.ops)")
    ap.add_argument("--repeat", type=flags.at_least(1), metavar="N",
                    help="timed end-to-end runs per row, at least (default 20, --quick 10; more where a "
                         "block of them lasts under 20 ms)")
    flags.add_out(ap, "results folder (default: benchmarks/results/<fingerprint>/bench/)")
    ap.add_argument("--force", action="store_true", help="measure rows measured before again")
    flags.add_tuning_logs(ap)
    ap.add_argument("--no-tuning", action="store_true", help="build without the tuning database")
    flags.add_time_limit(ap, "milp: solver seconds (default 10)")
    ap.add_argument("--load", type=flags.at_least(0), default=0, metavar="N",
                    help="measure every row again beside N busy processes (started and stopped here) and report "
                         "median, p90 and p99 beside the quiet run")
    ap.add_argument("--cpu-quota", type=flags.positive(float), metavar="F",
                    help="measure every row again inside a cgroup limited to F CPUs (created and removed here; "
                         "needs a writable cgroup cpu controller, e.g. root)")
    ap.add_argument("--timeout", type=flags.positive(float), default=1800, metavar="S",
                    help="seconds to measure one artifact (default 1800)")
    flags.add_threads(ap, "CPU threads the runner uses (default: all cores here; give the measuring machine's "
                          "with --export-bundle)")
    flags.add_targets(ap, "LLVM -mcpu of the measuring machine's CPU (default: this machine's)")
    ap.add_argument("--artifacts", metavar="DIR", help="keep the compiled artifacts in this folder (default: deleted after measuring)")
    flags.add_model_args(ap)
    ap.add_argument("--export-bundle", metavar="DIR", help="compile every row into DIR with DIR/run_bench.py for a "
                                                           "machine without a compiler; measure nothing here")
    ap.add_argument("--import", dest="import_", metavar="DIR", help="read the results of a bundle measured elsewhere")
    ap.add_argument("--update-benchmarks", action="store_true", help="regenerate the end-to-end section of "
                                                                     "BENCHMARKS.md from the results")
    ap.add_argument("--benchmarks", default=os.path.join(REPO, "BENCHMARKS.md"), help=argparse.SUPPRESS)
    return ap


def _split(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def settings(args) -> list[tuple[str, dict]]:
    """``(model, options)`` per model and sweep value; flags apply to the models they fit."""
    from ..frontend import zoo
    from ..frontend import MODEL_OPTIONS, model_shapes

    base = QUICK_MODELS if args.quick else DEFAULT_MODELS
    names = _split(args.models) or list(base)
    for n in names:
        if n not in zoo.NAMES and not (n.endswith(".onnx") and os.path.exists(n)):
            raise BenchError(f"unknown model {n!r}: give an existing .onnx file or one of {', '.join(zoo.NAMES)}")
    key, values = None, [None]
    if args.sweep:
        key, _, text = args.sweep.partition("=")
        key = key.strip().replace("-", "_")
        try:
            values = [int(v) for v in _split(text)]
        except ValueError:
            values = []
        sizes = [k for k in MODEL_OPTIONS if k != "dims"]  # the integer ones
        if key not in sizes or not values or min(values) < 1:
            raise BenchError(f"--sweep {args.sweep!r}: expected KEY=V,V,... with KEY one of "
                             f"{', '.join(sizes)} and positive integers, e.g. batch=8,16,32")
    flags = {k: getattr(args, k) for k in MODEL_OPTIONS if getattr(args, k) is not None}
    out = []
    for n in names:
        fits, named = model_shapes(n)
        if key is not None and key not in fits:
            print(f"note: --sweep {key} does not apply to {n}; {n} left out", file=sys.stderr)
            continue
        opts = {k: v for k, v in {**base.get(n, {}), **flags}.items() if k in fits}
        if opts.get("dims"):  # the names this model has: --dim past_sequence_length=... fits a decoder only
            opts["dims"] = {k: v for k, v in opts["dims"].items() if k in named}
            if not opts["dims"]:
                del opts["dims"]
        out += [(n, opts if v is None else {**opts, key: v}) for v in values]
    return out


def strategies(args) -> list[str]:
    from ..planners import STRATEGIES

    if args.strategies:
        names = _split(args.strategies)
        if "tvm-gpu" in names:
            raise BenchError("tvm-gpu is the gpu strategy (the unpartitioned model on the GPU with dlight "
                             "schedules): ask for gpu")
        bad = [s for s in names if s not in STRATEGIES and s not in REFERENCES]
        if bad:
            raise BenchError(f"unknown strategy {bad[0]!r}: choose from {', '.join([*STRATEGIES, *REFERENCES])}")
        return names
    wanted = QUICK_STRATEGIES if args.quick else DEFAULT_STRATEGIES
    absent = [s for s in wanted if s not in STRATEGIES]
    if absent:
        print(f"note: strategies {', '.join(absent)} are not in the planner registry; left out", file=sys.stderr)
    return [s for s in wanted if s in STRATEGIES] + list(REFERENCES)


def applicable(names: list[str], model, explicit: bool, say, gpu: bool = False) -> list[str]:
    """``names`` less the rows ``model`` cannot have (onnxruntime: an .onnx file only; PyTorch: a
    zoo model with a twin, on a device set with a GPU, ``gpu``); ``say`` notes one left out where
    ``--strategies`` asked for it."""
    why = {}
    if bench_ort.source(model) is None:
        why[bench_ort.NAME] = f"{bench_ort.NAME} runs .onnx models only"
    for s in bench_torch.NAMES:
        if not gpu:
            why[s] = f"{s} times PyTorch on a GPU"
        elif not bench_torch.has_twin(model):
            why[s] = f"{s} runs the zoo models with a PyTorch twin ({', '.join(bench_torch.TWINS)})"
    if explicit:
        for s in names:
            if s in why:
                say(f"note: {why[s]}; left out for {model.name}")
    return [s for s in names if s not in why]


@dataclasses.dataclass
class Bench:
    """One device set: compiles rows and measures (or exports) them."""

    devices: list
    label: str
    cost_model: object
    tuning_db: str | None
    repeat: int
    timeout: float
    time_limit: float
    command: str
    artifacts: str
    export: str | None = None
    keep: bool = False
    threads: int | None = None
    conditions: list = dataclasses.field(default_factory=list)  # bench_load.Condition: measured too
    shared_params: dict = dataclasses.field(default_factory=dict)  # bundle: sha256 -> params.npz
    #: the schedules the model's kernels took, while its op rows compile (:func:`model_schedules`)
    schedules: object | None = None
    #: ``(model, TVM's unpartitioned outputs)`` of the last model a PyTorch row asked for: its two
    #: rows (eager, graph) use the one reference build (:meth:`save_torch`)
    reference: tuple | None = None

    def compile(self, model, strategy: str, plan=None, cost_model=None):
        from ..cli.compile import Compiled, compile_model

        if strategy != REFERENCE:
            return compile_model(model, self.devices, strategy, plan, tuning_db=self.tuning_db,
                                 schedules=self.schedules, num_threads=self.threads, cost_model=cost_model or self.cost_model,
                                 time_limit=self.time_limit)
        from ..build.executable import build_reference
        from ..plan import Plan
        from ..build.databases import open_best

        plan = Plan([self.devices[0]], {}, strategy=REFERENCE)
        db = None
        if self.tuning_db:  # a machine never tuned: TVM's flow finds nothing to apply (fused, TVM's defaults)
            from tvm.s_tir.meta_schedule.database import MemoryDatabase

            # TVM's flow applies each workload's best record, all open_best keeps: the shipped
            # Zen 3 database as tuned (3,927 records) took 22 s to parse whole, its cached best 0.3 s
            db = open_best(self.tuning_db) or MemoryDatabase()
        return Compiled(model, None, plan, build_reference(model.mod, plan, db), 0.0, self.tuning_db,
                        self.threads or usable_cpus())

    def share_params(self, art: str) -> None:
        """In a bundle, make ``art``'s weights a hard link to an identical ``params.npz`` of an
        earlier row (every strategy of a model setting has the same weights; ``tar`` and
        ``rsync -H`` keep the links). Earlier rows are found in the bundle's other artifacts."""
        from ..runtime.artifact import read_manifest

        if not self.shared_params:
            root = os.path.dirname(art)
            for name in sorted(os.listdir(root)):
                if name != os.path.basename(art) and os.path.exists(os.path.join(root, name, "manifest.json")):
                    digest = read_manifest(os.path.join(root, name))["sha256"]["params.npz"]
                    self.shared_params.setdefault(digest, os.path.join(root, name, "params.npz"))
        path = os.path.join(art, "params.npz")
        digest = read_manifest(art)["sha256"]["params.npz"]
        first = self.shared_params.setdefault(digest, path)
        if first != path and os.path.exists(first):
            try:
                os.link(first, path + ".tmp")
                os.replace(path + ".tmp", path)
            except OSError:  # no hard links on this file system: keep the copy
                pass

    def save_compiled(self, model, strategy: str, plan, cost_model, art: str, row: dict, results_dir: str | None) -> None:
        """Plan (or take ``plan``), compile and save one of our strategies or tvm-cpu into ``art``;
        its plan also into ``results_dir``'s plans (:func:`results.save_plan`)."""
        compiled = self.compile(model, strategy, plan, cost_model)
        plan = compiled.plan
        row.update(predicted_us=_round(plan.predicted_latency_us), compile_s=round(compiled.build.compile_s, 3),
                   plan_s=None if strategy == REFERENCE else round(compiled.plan_s, 3))
        from ..build.executable import run_kernel_schedules

        labels = run_kernel_schedules(compiled.build.module)  # the weight packing runs at load: not counted
        row["tuned_kernels"] = f"{list(labels.values()).count('tuned')}/{len(labels)}"
        row["template_kernels"] = f"{sum(v.startswith('template') for v in labels.values())}/{len(labels)}"
        row["transferred_kernels"] = f"{sum(v.startswith('transferred') for v in labels.values())}/{len(labels)}"
        row["default_compute_kernels"] = default_compute_kernels(compiled.build.module, labels)
        if plan.meta.get("auto"):
            row["chosen"] = plan.meta["auto"]["chosen"]
        compiled.save(art)
        del compiled
        if results_dir:
            with open(os.path.join(art, "plan.json"), encoding="utf-8") as f:
                results.save_plan(results_dir, row, f.read())
        if self.export:
            self.share_params(art)

    def save_ort(self, model, art: str, row: dict) -> None:
        """The onnxruntime row's folder in ``art``, its outputs checked against TVM's unpartitioned
        model on the same inputs (``max_abs_err_vs_ort``; a float model beyond the tolerance held to
        onnxruntime's own difference, :data:`tvm_partition.runtime.ort.NOISE_FACTOR`): one that disagrees
        is not measured."""
        from ..cli.compile import reference_outputs
        from ..ir.relax_utils import quantizes

        row["tuned_kernels"] = None
        threads = self.threads or usable_cpus()
        bench_ort.save(model, art, threads)
        agreed = agreement(bench_ort.run(art), reference_outputs(model), quantizes(model.mod),
                           lambda: spread(model, threads), lambda: own_difference(model, threads))
        row["max_abs_err_vs_ort"] = float(f"{agreed.err:.3g}") if agreed.err != float("inf") else None
        if not agreed.ok:
            raise bench_ort.OrtError(f"outputs differ from TVM's unpartitioned model by {agreed.err:.3g} (tolerance "
                                     f"{agreed.tol:.3g}) on the same inputs: not the same model, not measured")

    def save_torch(self, model, art: str, row: dict, strategy: str) -> None:
        """A PyTorch row's folder in ``art`` (:mod:`tvm_partition.bench.torch_ref`), the twin's outputs
        checked here on the CPU against TVM's unpartitioned model where torch is installed (and
        on the GPU before it is timed, wherever it is measured)."""
        from ..cli.compile import reference_outputs

        row["tuned_kernels"] = None
        if self.reference is None or self.reference[0] is not model:
            self.reference = (model, reference_outputs(model))
        bench_torch.save(model, art, strategy, self.reference[1])
        if bench_torch.available():  # else the measuring machine checks it, before it times it
            row["max_abs_err_vs_torch"] = float(f"{bench_torch.check(art):.3g}")

    def row(self, model, config: dict, strategy: str, results_dir: str | None, plan=None, extra: dict | None = None,
            cost_model=None) -> tuple[dict, str | None]:
        """Plan (or take ``plan``), compile and save (or export) one row, its plan kept in
        ``results_dir`` (None: not kept); ``extra``: more fields of the row; ``cost_model``: instead
        of the bench's. Returns the row and the artifact folder
        :meth:`measure` measures (None: exported, or failed, the row saying why). Never raises for a
        failing strategy."""
        row = {"model": model.name, "config": config, "devices": self.label, "strategy": strategy,
               "measured_median_us": None, "measured_p90_us": None, "predicted_us": None, "plan_s": None,
               "compile_s": None, "device_names": None, "ideal_us": None, "command": self.command, **(extra or {})}
        art = os.path.join(self.artifacts, results.row_id(row))
        try:
            if strategy == bench_ort.NAME:
                self.save_ort(model, art, row)
            elif strategy in bench_torch.NAMES:
                self.save_torch(model, art, row, strategy)
            else:
                self.save_compiled(model, strategy, plan, cost_model, art, row, results_dir)
            if self.export:
                row.update(id=results.row_id(row), artifact=os.path.relpath(art, self.export))
                return row, None
            return row, art
        except Exception as e:  # noqa: BLE001 - a failing strategy is a row, never the end of the run
            row["error"] = _error_line(e)
            if not (self.export or self.keep):
                shutil.rmtree(art, ignore_errors=True)
            return self.stamped(row), None

    def measure(self, pending: list[tuple[dict, str | None]]) -> list[dict]:
        """Measure the compiled rows of one model setting together, in rounds
        (:func:`tvm_partition.bench.runtime.measure_interleaved`), then each under
        :attr:`conditions`; remove the artifacts (unless kept). Returns the rows."""
        from ..devices import fingerprint_id
        from .runtime import measure_interleaved

        arts = [art for _, art in pending if art is not None]
        got = measure_interleaved(arts, self.repeat, self.timeout) if arts else {}
        for row, art in pending:
            if art is None:
                continue
            try:
                row.update(got[art])
                row["machine"] = fingerprint_id()  # this one: the measuring child's runtime-only TVM has no LLVM to name its CPU
                if "error" not in row and self.conditions:
                    row["under"] = self.measure_under(art)
            except Exception as e:  # noqa: BLE001 - a failing measurement is a row, never the end of the run
                row["error"] = _error_line(e)
            finally:
                if not self.keep:
                    shutil.rmtree(art, ignore_errors=True)
            self.stamped(row)
        return [row for row, _ in pending]

    @staticmethod
    def stamped(row: dict) -> dict:
        """``row`` with the machine (this one) and the date, where it has none."""
        from ..devices import fingerprint_id

        row.setdefault("machine", fingerprint_id())
        row.setdefault("date", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        return row

    def measure_under(self, art: str) -> dict:
        """The artifact measured again under each of :attr:`conditions`: ``{name: {median_us,
        p90_us, p99_us, process_medians_us} or {error}}``."""
        out = {}
        for cond in self.conditions:
            with bench_load.applied(cond) as enter:
                res = measure_isolated(art, self.repeat, self.timeout, enter)
            out[cond.name] = {"error": res["error"]} if "error" in res else {
                k.replace("measured_", ""): res.get(k) for k in
                ("measured_median_us", "measured_p90_us", "measured_p99_us", "process_medians_us")}
        return out


def model_schedules(model, devices, tuning_db: str | None):
    """The schedules of ``tuning_db`` (None: none) after scheduling ``model``'s kernels for the host,
    as its builds do: an op row then runs its kernel on the schedule the model runs it on, and the
    op's parts on that one's (:meth:`tvm_partition.build.tuning.Schedules._from_sibling`). Opened
    afresh, BERT-tiny's FFN output matmul took the record of its own shape (1,179 us) where the
    model's build had given it the schedule of the attention output matmul, one axis apart, that
    it ran first (672 us; znver5, 2026-11-25): the op rows measured another kernel than the
    profile's (predicted -41%)."""
    if not tuning_db:
        return None
    from ..build.align import align_splits
    from ..build.executable import lower
    from ..build.tuning import open_schedules
    from ..ir.graph import OpGraph
    from ..planners.baselines import plan_cpu

    schedules = open_schedules(tuning_db)
    graph = OpGraph(model.mod)
    align_splits(graph, devices, schedules)
    lower(model.mod, plan_cpu(graph, devices), graph, schedules)
    return schedules


def default_compute_kernels(module, labels: dict[str, str]) -> int:
    """How many kernels that do arithmetic run TVM's default schedule (data movement always does)."""
    from ..build.tuning import kernel_flops, kernel_module

    return sum(1 for name, label in labels.items()
               if label == "default" and kernel_flops(kernel_module(module[module.get_global_var(name)])) > 0)


def _error_line(e: Exception) -> str:
    """A failing row's ``error``: the exception's type and the first line of its message."""
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:300]}"


def _round(us):
    return None if us is None else round(float(us), results.US_DIGITS)


def _bundle_rows(export: str) -> list[dict]:
    path = os.path.join(export, BUNDLE_SPEC)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return json.load(f)["rows"]


def start_bundle(export: str) -> None:
    """The bundle's runner: ``export/run_bench.py`` and the runtime modules under ``export/site``."""
    from ..cli.deploy import RUNTIME_MODULES, copy_runtime_package, write_script

    copy_runtime_package(os.path.join(export, "site"), RUNTIME_MODULES + BUNDLE_MODULES)
    doc = ("Measure every artifact of this benchmark bundle with the TVM runtime alone (a runtime-only TVM "
           "on PYTHONPATH, e.g. from ../shared/tools/device-bundle.sh): python3 run_bench.py [--repeat N] "
           "[--force]; writes results.json here")
    body = "from tvm_partition.bench.runtime import bundle_main\n\nsys.exit(bundle_main(HERE, sys.argv[1:]))"
    write_script(os.path.join(export, "run_bench.py"), doc, body)


def run(args, out: str) -> tuple[list[tuple], int]:
    """Measure (or export) every requested row; returns (keys of the rows, number of failed rows)."""
    from tqdm import tqdm

    from .. import frontend
    from ..build.databases import local_database
    from ..cost_models import default_cost_model
    from ..devices import gpu_available, parse_devices
    from ..frontend import MODEL_OPTIONS

    devices = parse_devices(args.devices, gpu_arch=args.gpu_arch, cpu_mcpu=args.target_cpu)
    label = ",".join(d.kind for d in devices)
    if any(d.kind == "gpu" for d in devices) and not gpu_available() and not args.export_bundle:
        raise BenchError(f"this machine has no CUDA GPU to measure --devices {args.devices} on: compile the rows "
                         "with --export-bundle DIR, run `python3 DIR/run_bench.py` on the GPU machine, then "
                         "--import DIR here")
    todo, names = settings(args), strategies(args)
    tuning_db = None if args.no_tuning else local_database(args.tuning_logs)
    cost_model, note = default_cost_model(devices, args.tuning_logs)
    command = "python -m tvm_partition bench " + shlex.join(args.argv)
    conditions = bench_load.conditions(args.load, args.cpu_quota)
    if conditions and args.export_bundle:
        raise BenchError("--load and --cpu-quota measure on this machine; a bundle is measured elsewhere")
    if args.cpu_quota:
        with bench_load.quota(args.cpu_quota):  # refuse here, before hours of rows, if it cannot be set up
            pass
    existing = _bundle_rows(args.export_bundle) if args.export_bundle else results.load(out)
    done = {results.row_key(r) for r in existing if ("artifact" in r if args.export_bundle else results.measured(r))
            and all(c.name in r.get("under", {}) for c in conditions)}
    artifacts = (os.path.join(args.export_bundle, "artifacts") if args.export_bundle
                 else args.artifacts or tempfile.mkdtemp(prefix="tvmp-bench-"))
    bench = Bench(devices, label, cost_model, tuning_db, args.repeat, args.timeout, args.time_limit, command,
                  artifacts, args.export_bundle, keep=bool(args.artifacts), threads=args.threads,
                  conditions=conditions)
    if args.export_bundle:
        start_bundle(args.export_bundle)
    rows, keys, failed = existing, [], 0
    with tqdm(total=len(todo) * len(names), unit="row", dynamic_ncols=True) as bar:
        def say(line: str) -> None:
            bar.write(line, file=sys.stderr)

        say(f"{len(todo)} model settings x {len(names)} strategies on {label}"
            + "".join(f", then {c.name}" for c in conditions) + f"; {note}; "
                  + (f"bundle {args.export_bundle}" if args.export_bundle else f"results {out}"))
        for name, opts in todo:
            try:
                model = frontend.load(name, seed=0, **opts)
            except frontend.ModelError as e:
                say(f"{name}: {e}; left out")
                bar.update(len(names))
                continue
            config = {k: model.config[k] for k in MODEL_OPTIONS if k in model.config} or opts

            pending: list[tuple[dict, str | None]] = []

            def one(model, strategy, plan=None, extra=None, cost_model=None):
                """Compile one row; :func:`flush` measures the rows compiled since the last flush."""
                bar.set_description(f"{model.name}/{strategy}")
                key = (model.name, json.dumps(config, sort_keys=True), label, strategy)
                keys.append(key)
                if key in done and not args.force:
                    say(f"{model.name} {strategy}: done before, skipped (--force measures it again)")
                    bar.update(1)
                    return
                pending.append(bench.row(model, config, strategy, None if args.export_bundle else out,
                                         plan, extra, cost_model))

            def flush():
                """Measure the pending rows together (rows of one model compare with each other), save them."""
                nonlocal rows, failed
                if not pending:
                    return
                bar.set_description(f"measuring {len(pending)} rows")
                for row in bench.measure(pending):
                    rows = results.merge(rows, row)
                    failed += "error" in row
                    say(f"{row['model']} {row['strategy']}: " + (
                        row["error"] if "error" in row else "compiled" if args.export_bundle else
                        f"median {row['measured_median_us'] / 1e3:.3f} ms"
                        + (f", predicted {row['predicted_us'] / 1e3:.3f} ms" if row["predicted_us"] is not None else "")))
                    bar.update(1)
                if args.export_bundle:
                    results.write_json(os.path.join(args.export_bundle, BUNDLE_SPEC),
                                       {"format": 1, "repeat": args.repeat, "mcpu": bench.devices[0].target.get("mcpu"),
                                        "rows": rows})
                else:
                    results.save(out, rows)
                pending.clear()

            wanted = applicable(names, model, bool(args.strategies), say, any(d.kind == "gpu" for d in devices))
            bar.update(len(names) - len(wanted))
            for strategy in wanted:
                one(model, strategy)
            flush()
            if args.split_ops:
                bench.schedules = model_schedules(model, devices, tuning_db)
                selected = []
                for op_model, split_plan, extra, op_cost in bench_ops.op_rows(model, devices, cost_model, args.split_ops):
                    bar.total += len(bench_ops.OP_STRATEGIES)
                    for strategy in bench_ops.OP_STRATEGIES:
                        one(op_model, strategy, split_plan if strategy == bench_ops.SPLIT else None, extra, op_cost)
                    flush()
                    selected.append({"model": op_model.name, "config": config, "devices": label, "op": extra["op"]})
                bench.schedules = None
                if selected and not args.export_bundle:
                    rows = results.retire_ops(rows, selected)
                    results.save(out, rows)
    if not (args.export_bundle or args.artifacts):
        shutil.rmtree(artifacts, ignore_errors=True)
    return keys, failed


def import_bundle(bundle: str, out: str | None) -> dict[str, list[tuple]]:
    """Merge a measured bundle's rows into results folders; returns {folder: keys imported}."""
    from ..devices import fingerprint_id

    path = os.path.join(bundle, RESULTS)
    if not os.path.exists(path):
        raise BenchError(f"{path}: no results (run python3 {os.path.join(bundle, 'run_bench.py')} there first)")
    with open(path, encoding="utf-8") as f:
        measured = {r["id"]: r for r in json.load(f)}
    imported: dict[str, list[tuple]] = {}
    new_rows: dict[str, list[dict]] = {}
    for row in _bundle_rows(bundle):
        res = measured.get(row.get("id"), {}) if "error" not in row else {}  # failed to compile: an error row
        if "error" not in row and not res:
            print(f"note: {row['id']} was not measured there; left out", file=sys.stderr)
            continue
        new = {k: v for k, v in row.items() if k not in ("id", "artifact")}
        new.update({k: v for k, v in res.items() if k != "id"})
        folder = out or os.path.join(REPO, "benchmarks", "results", new.get("machine") or fingerprint_id(), "bench")
        results.save(folder, results.merge(results.load(folder), new))
        imported.setdefault(folder, []).append(results.row_key(new))
        new_rows.setdefault(folder, []).append(new)
    for folder, rows in new_rows.items():  # the bundle's op rows replace the selection of an earlier one
        results.save(folder, results.retire_ops(results.load(folder), [r for r in rows if "op" in r]))
    return imported


def report_folders(args) -> list[str]:
    """The results ``--update-benchmarks`` writes the end-to-end section from: every machine's in the
    repository, and ``--out`` too where it is elsewhere. ``--out`` alone regenerated the section
    from that one folder: ``bench --quick --out benchmarks/results/intel-r-xeon-r-processor-2c/bench
    --update-benchmarks`` (the command of that machine's section) dropped the nine other machines'
    tables from BENCHMARKS.md (2026-12-04)."""
    folders = results_folders()
    known = {os.path.abspath(f) for f in folders}
    if args.out and os.path.abspath(args.out) not in known:
        folders.append(args.out)
    return folders


def results_folders(repo: str = REPO) -> list[str]:
    """Every ``benchmarks/results/<machine>/bench`` of ``repo`` that holds results."""
    root = os.path.join(repo, "benchmarks", "results")
    found = [os.path.join(root, d, "bench") for d in sorted(os.listdir(root))] if os.path.isdir(root) else []
    return [f for f in found if os.path.exists(os.path.join(f, results.RESULTS_JSON))]


def _print_summary(folder: str, keys: list[tuple]) -> None:
    wanted = set(keys)
    rows = [r for r in results.load(folder) if results.row_key(r) in wanted]
    if rows:
        counts = results.within(rows)
        ratios = f"; within 10% of their cpu row's ratio: {'%d of %d' % counts['vs_cpu']}" if counts["vs_cpu"][1] else ""
        print(f"\n{results.summary(rows)}\n\n(speedup: over the faster of the cpu and gpu rows; "
              f"pred err: (predicted - measured) / measured; err vs cpu: the same, of the time over "
              f"the cpu row's; results in {folder})\npredicted within 10%: {'%d of %d rows' % counts['pred']}{ratios}")


@flags.command
def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.argv = argv
    from ..devices import fingerprint_id

    measure_requested = bool(args.models or args.quick) or not (args.import_ or args.update_benchmarks)
    args.repeat = args.repeat if args.repeat is not None else (10 if args.quick else 20)
    out = args.out or os.path.join(REPO, "benchmarks", "results", fingerprint_id(), "bench")
    t0, failed = time.monotonic(), 0
    try:
        if args.import_:
            for folder, keys in import_bundle(args.import_, args.out).items():
                print(f"imported {len(keys)} rows into {folder}")
                _print_summary(folder, keys)
        if measure_requested:
            keys, failed = run(args, out)
            if args.export_bundle:
                print(f"bundle {args.export_bundle}: {len(keys)} rows; there: python3 "
                      f"{os.path.join(args.export_bundle, 'run_bench.py')} (runtime-only TVM on PYTHONPATH); "
                      f"here: tvm-partition bench --import {args.export_bundle}")
            else:
                _print_summary(out, keys)
            print(f"{len(keys)} rows, {failed} failed, in {time.monotonic() - t0:.0f} s")
        if args.update_benchmarks:
            from .report import update

            folders = report_folders(args)
            update(args.benchmarks, folders)
            print(f"updated {args.benchmarks} from {', '.join(folders) or 'no results'}")
    except (ValueError, OSError) as e:  # unreadable results or bundle files
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
