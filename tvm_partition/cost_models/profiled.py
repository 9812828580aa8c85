"""The cost model planners use on real hardware: EOP patterns where an op was profiled, XGBoost
elsewhere (the issue's "composite"), each answer saying which it used.

* ``op_time(op, device, shape)``: the op's signature (:func:`samples.op_signature`) and the axis
  ``shape`` cuts pick a series of samples (one op, one device kind, one axis); a size measured
  with a tuned or a transferred schedule is answered by its measurement (a transferred kernel's
  time is not smooth in its size: its tiles are re-fitted to divide each size, and patterns fitted
  over them missed held-out sizes by 21% on the 2026-11-23 profile; the planners cut only at the
  sizes the profiler samples, :mod:`tvm_partition.build.align`), and so is the whole op, whatever
  its schedule; any other size by the series' pattern fit (:mod:`.patterns`, over the
  default-schedule samples: :func:`fit_records`). A part never costs less than its share of the
  whole (:meth:`ProfiledCostModel.estimate`), so a noisy whole measurement cannot make a split
  "gain" on one CPU (seen before that floor: an LSTM matmul measured 679 us whole on a busy
  machine while its fit gave halves summing to 330 us; the plan ran 6x slower than the CPU
  alone). Fitted instead, the whole LSTM gate kernels came out 21-50% above their own measurement
  (a linear fit over batch 1-1024, its parts' transferred schedules among the points; 2026-11-25).
  Ops or axes never profiled go to the device's XGBoost
  regressor (:mod:`.xgb`), but never under the time streaming their bytes takes
  (:meth:`ProfiledCostModel.stream_floor`) nor under their FLOPs at the fastest rate a sample
  reached (:meth:`ProfiledCostModel.compute_floor`), labelled ``analytic`` where a floor decides;
  and if the device has no samples at all, to ``fallback``.
* Every CPU sample is scaled by how much slower its model's kernels ran in the VM than alone
  (:class:`Context`, :mod:`tvm_partition.profiling.context`).
* ``comm_time(bytes, src, dst)``: measured copies between the two device kinds (cpu->cpu is the
  copy between two CPU virtual devices), interpolated between the measured sizes
  (:func:`interpolate`); ``slice_time`` / ``concat_time`` likewise from measured slice and concat
  kernels (EOP Sec. 2.2: *Split*, *Device_copy*, *Concatenate*). Not a pattern fit: a byte costs
  several times more once a transfer leaves the cache, and the fit that leave-one-out relative
  error picks follows the many small sizes (a linear copy fit put 4 MB at 118 us, measured 339,
  16 MB at 470 us, measured 1267; slices 10x under at 4-64 MB; intel, 2026-11-25), which priced
  a BERT-tiny matmul run on the second virtual CPU 49% under its measurement. A series measured
  only below :data:`BANDWIDTH_MIN_BYTES` prices the bytes past its largest size with the fallback's
  bandwidth: its slope there is a latency's noise, not a bandwidth.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import statistics
from collections import defaultdict

from . import patterns, xgb
from ..errors import TvmPartitionError
from .base import CostModel, Estimate, cut_axes, full_shape, part_fraction
from .logs import ProfileLog, read_once
from .timing import context_launch
from ..ir.graph import GATHERS, op_signature


FITS_FILE = "fits.json"

#: Samples that set :meth:`ProfiledCostModel.compute_floor`'s peak compute at least this many FLOPs:
#: a kernel of a few hundred FLOP times its call, not its arithmetic.
PEAK_MIN_FLOPS = 1e6


def interpolate(points: list[tuple[int, float]], x: float) -> float:
    """Time at size ``x`` from measured ``(size, us)`` points: linear between the two measured
    sizes around it (the median where a size was measured more than once), the smallest size's time
    below them, and past the largest the slope of the two largest (the bandwidth out of cache)."""
    by_size = defaultdict(list)
    for size, us in points:
        by_size[int(size)].append(float(us))
    xs = sorted(by_size)
    ys = [sorted(by_size[v])[len(by_size[v]) // 2] for v in xs]
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2]) if len(xs) > 1 else 0.0
        return ys[-1] + max(slope, 0.0) * (x - xs[-1])
    i = next(k for k in range(1, len(xs)) if xs[k] >= x)
    return ys[i - 1] + (ys[i] - ys[i - 1]) * (x - xs[i - 1]) / (xs[i] - xs[i - 1])


#: A copy, slice or concat series measured up to fewer bytes than this has not seen its bandwidth:
#: past its largest size the fallback's bandwidth prices the bytes, not the series' last slope.
#: The H100 machine's first profile (2026-11-26) held copies of 4-64 B only (6.6-7.6 us), whose
#: slope put a 1 MB copy at 15 ms (a BERT-tiny op on the GPU predicted 102 ms, measured 0.69).
BANDWIDTH_MIN_BYTES = 1 << 20


def _measured_span(points: list[tuple[int, float]]) -> float:
    """The size up to which ``points`` price a transfer: any size where the series reaches
    :data:`BANDWIDTH_MIN_BYTES` (its last slope is then a bandwidth), else its largest size."""
    top = max(int(size) for size, _ in points)
    return float("inf") if top >= BANDWIDTH_MIN_BYTES else float(top)


def _priced(points: list[tuple[int, float]], nbytes: float, fallback) -> tuple[float, bool]:
    """``(us, past)``: a transfer of ``nbytes`` priced by its measured ``points``
    (:func:`interpolate`) up to :func:`_measured_span`, past it the span's time plus what
    ``fallback(bytes) -> us`` adds for the bytes beyond (``past`` True); ``fallback`` None: the
    points alone, at any size."""
    top = _measured_span(points)
    if fallback is None or nbytes <= top:
        return interpolate(points, nbytes), False
    return interpolate(points, top) + max(fallback(nbytes) - fallback(top), 0.0), True


def _fit_key(key: tuple) -> str:
    return "|".join(str(k) for k in key)


def _read_fits(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    for v in data.values():  # points as tuples, to compare with the log's
        v["points"] = [tuple(p) for p in v["points"]]
    return data


def _load_fits(folder: str) -> dict:
    """The saved fits beside the log (read once per version of the file: ``logs.read_once``;
    only read here, never changed)."""
    try:
        return read_once(os.path.join(folder, FITS_FILE), _read_fits)
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def fit_records(records: list[dict]) -> list[dict]:
    """The samples of one series a pattern is fitted on: those running the schedule a build gives
    the sizes in between. A tuning database holds schedules for a few exact shapes (the model's
    own, the ratios ``tune`` was given), so a series mixes a fast tuned kernel at those sizes with
    other kernels everywhere else: two curves no single pattern fits. Tuned sizes are answered
    exactly from their measurement (``measured``); the pattern covers the rest, which a build runs
    with a transferred schedule (:mod:`tvm_partition.build.transfer`) where one replays. Samples taken
    since transfer (``transfer`` set) are what builds run now; older ones ran TVM's default
    schedule at every untuned size and only count where nothing newer was measured."""
    current = [r for r in records if r.get("transfer")] or records
    untuned = [r for r in current if not r.get("tuned")]
    return untuned or current


def training_records(records: list[dict]) -> list[dict]:
    """The samples the XGBoost regressor learns from: those taken since schedule transfer (where
    there are any), each series' :func:`fit_records`: what builds launch now. Trained on every
    sample, it learned TVM's default schedule from the samples profiled before transfer (7,812 of
    this machine's 9,884): after a re-profile its held-out MAPE on ResNet-18 and BERT-tiny kernels
    was 310%, and it predicted the onnx package's ResNet-50 at 3.9 s, measured 139 ms (amd-epyc-2c,
    2026-11-23)."""
    by_series = defaultdict(list)
    for r in [r for r in records if r.get("transfer")] or records:
        by_series[(r["sig"], r["device"], int(r["dim"]))].append(r)
    return [r for recs in by_series.values() for r in fit_records(recs)]


@dataclasses.dataclass(frozen=True)
class Context:
    """How much slower CPU kernels run in a model than timed alone (``context`` records,
    :mod:`tvm_partition.profiling.context`): per op signature, the median factor of the models that
    have the op (what samples are scaled by, :meth:`ProfiledCostModel.in_model_us`); ``default``,
    the median over every model measured, for ops of the others; ``by_graph``, each measured
    model's own factor by its :func:`graph_signature <tvm_partition.ir.graph.graph_signature>`
    (:meth:`ProfiledCostModel.for_graph`), and ``launch_by_graph`` what a kernel launch costs in
    it, where the record was timed with the model's split build too (both solved from the two
    builds: :func:`tvm_partition.cost_models.timing.context_launch`; its factor is then the solved
    one). A model of one op (``bench --split-ops``' op rows, profiled as such) prices its
    own graph alone: its factor is that of a kernel with nothing else in the model to evict its
    data, which says nothing of the models having its op (ResNet-18's last convolutions alone in
    the VM 0.9x their samples, in the model 1.49x; znver4, 2026-11-27). Nor is its launch solved
    from its split build: that build's extra work is its slices of the model's inputs, not its
    parts' launches; solved as 0.35-0.38 us a launch (the chain's 0.11), the RNNs' split op rows
    were priced +4% to +8% over in a phase of the machine that put every other row at -7% to -10%
    (intel-r-xeon-r-processor-rocketlake-2c, 2026-12-04)."""

    by_sig: dict
    default: float = 1.0
    by_graph: dict = dataclasses.field(default_factory=dict)
    launch_by_graph: dict = dataclasses.field(default_factory=dict)
    #: each measured model's kernels timed alone in the rounds its factor was read in (``warm_us``,
    #: the median over its records): what :meth:`ProfiledCostModel.for_graph` anchors its factor to
    alone_by_graph: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, comms: list[dict]) -> "Context":
        recs = [r for r in comms if r["comm"] == "context" and r["src"] == "cpu" and float(r["mean_us"]) > 0]
        by_sig, by_graph, solved = defaultdict(list), defaultdict(list), defaultdict(list)
        alone = defaultdict(list)
        models = [r for r in recs if not one_op(r)]
        for r in models:
            for sig in r.get("sigs", ()):
                by_sig[sig].append(float(r["mean_us"]))
        for r in recs:
            if r.get("graph"):
                by_graph[r["graph"]].append(float(r["mean_us"]))
                if float(r.get("warm_us") or 0) > 0:
                    alone[r["graph"]].append(float(r["warm_us"]))
                pair = None if one_op(r) else context_launch(r)
                if pair is not None:
                    solved[r["graph"]].append(pair)
        default = statistics.median(float(r["mean_us"]) for r in models) if models else 1.0
        graphs = {k: statistics.median(v) for k, v in by_graph.items()}
        graphs.update({k: statistics.median(f for f, _ in v) for k, v in solved.items()})
        return cls({k: statistics.median(v) for k, v in by_sig.items()}, default, graphs,
                   {k: statistics.median(us for _, us in v) for k, v in solved.items()},
                   {k: statistics.median(v) for k, v in alone.items()})

    def factor(self, sig: str) -> float:
        return self.by_sig.get(sig, self.default)

    def tag(self) -> str:
        """A digest of the factors samples are scaled by (regressors trained on scaled times are
        stale when it changes); empty where no model was measured (times as timed)."""
        import hashlib

        if not self.by_sig and self.default == 1.0:
            return ""
        text = json.dumps([sorted((k, round(v, 6)) for k, v in self.by_sig.items()), round(self.default, 6)])
        return hashlib.sha1(text.encode()).hexdigest()[:12]


@dataclasses.dataclass(frozen=True)
class GpuContext:
    """A model's ``gpu`` plan run from the host in the VM against its GPU kernels alone
    (:func:`tvm_partition.profiling.context.gpu_context`), and its copies as the profile prices
    them (None where it prices no copy between the CPU and the GPU)."""

    model: str
    vm_us: float
    entry_us: float
    alone_us: float
    launches: int
    copies_us: float | None

    @property
    def left_us(self) -> float:
        """The run less its entry, its copies (none where not priced) and its kernels alone."""
        return self.vm_us - self.entry_us - (self.copies_us or 0.0) - self.alone_us


def fit_use_gap(points: list[tuple[int, float]]) -> tuple[float, float]:
    """``(use, gap)``, neither negative, that least-squares fit ``left = use + gap x launches`` to
    ``points`` (``(launches, left)`` of each GPU context: :meth:`ProfiledCostModel._gpu_overheads`).
    Points of one launch count cannot tell the two apart: their mean is ``use``. ``(0, 0)`` for
    none."""
    if not points:
        return 0.0, 0.0
    ns, ys = [float(n) for n, _ in points], [y for _, y in points]
    mean_n, mean_y = statistics.fmean(ns), statistics.fmean(ys)
    var = sum((n - mean_n) ** 2 for n in ns)
    gap = sum((n - mean_n) * (y - mean_y) for n, y in zip(ns, ys)) / var if var > 0 else 0.0
    use = mean_y - gap * mean_n
    if gap < 0:
        return max(0.0, mean_y), 0.0
    if use < 0:
        return 0.0, max(0.0, sum(n * y for n, y in zip(ns, ys)) / sum(n * n for n in ns))
    return use, gap


def one_op(rec: dict) -> bool:
    """Whether a ``context`` record timed a model of one op (:class:`Context`; records from before
    the count: models)."""
    return int(rec.get("ops", 0)) == 1


class CostModelError(TvmPartitionError, LookupError):
    """No profile answers the question; the message says which profile to run."""


def device_kind(name: str, devices=None) -> str:
    """``cpu``/``gpu`` for a plan device name (``cpu1`` -> ``cpu``) or a DeviceSpec list lookup."""
    for d in devices or ():
        if d.name == name:
            return d.kind
    m = re.fullmatch(r"(cpu|gpu)\d*", name)
    if not m:
        raise CostModelError(f"cannot tell the kind of device {name!r}: name it cpu, cpu1, gpu, gpu1...")
    return m.group(1)


def _in_model_us(context: Context, rec: dict) -> float:
    """:meth:`ProfiledCostModel.in_model_us` under ``context``."""
    us = float(rec["mean_us"])
    return us * context.factor(rec["sig"]) if rec["device"] == "cpu" else us


@dataclasses.dataclass(frozen=True)
class _Tables:
    """What a :class:`ProfiledCostModel` reads off its log (the attributes of the same names; see
    there): computed once per version of a log file (:meth:`ProfiledCostModel.__init__`), then
    only read. A process opens a cost model for every build: 203 of them in the suite, 0.12-0.27 s
    each here for the Zen 3's 10,552 samples (2026-11-29)."""

    context: Context
    names: dict
    measured: dict
    threads: list
    series: dict
    comm: dict
    launch: dict
    run: dict
    gpu_floor: float | None
    view: dict
    arg: dict
    alloc: dict

    @classmethod
    def of(cls, log: ProfileLog) -> "_Tables":
        context = Context.of(log.comms())
        names: dict[str, dict] = {}
        measured: dict[tuple, float] = {}
        by_series = defaultdict(list)
        for r in log.ops():
            by_series[(r["sig"], r["device"], int(r["dim"]))].append(r)
            if r.get("tuned") or (r.get("transfer") and (r.get("schedule") in ("transferred", "template") or int(r["size"]) == int(r["full"]))):
                measured[(r["sig"], r["device"], int(r["dim"]), int(r["size"]))] = _in_model_us(context, r)
            names.setdefault(r["sig"], {"kind": r["kind"], "fused": r.get("fused", ""),
                                        "full_shape": r["full_shape"], "dims": {}})["dims"][int(r["dim"])] = \
                r.get("dim_name", f"axis{r['dim']}")
        series = {key: [(int(r["size"]), _in_model_us(context, r)) for r in fit_records(recs)]
                  for key, recs in by_series.items()}
        measured, series = _whole_at_median(measured, series, by_series)
        comm: dict[tuple, list[tuple[int, float]]] = defaultdict(list)
        launch: dict[str, float] = {}
        run: dict[str, float] = {}
        view: dict[str, float] = {}
        arg: dict[str, tuple[float, int]] = {}  # per device kind: the argument chain's run, its extra arguments
        alive: dict[str, float] = {}  # the storage chains, per device kind: outputs alive at once, taking turns
        turns: dict[str, float] = {}
        chains = {"launch": launch, "run": run, "view": view, "alloc": alive, "alloc0": turns}
        for r in log.comms():
            if r["comm"] in chains:  # one figure per device kind, the latest
                chains[r["comm"]][r["src"]] = float(r["mean_us"])
                continue
            if r["comm"] == "arg":
                arg[r["src"]] = (float(r["mean_us"]) * int(r["kernels"]), int(r["kernels"]))
                continue
            if r["comm"] == "context":
                continue
            comm[(r["comm"], r["src"], r["dst"])].append((int(r["bytes"]), float(r["mean_us"])))
        gpu_floor = min([float(r["mean_us"]) for r in log.ops() if r["device"] == "gpu"]
                        + [us for (kind, src, _), pts in comm.items() if src == "gpu" and kind != "copy" for _, us in pts],
                        default=None)
        return cls(context, names, measured, sorted({int(r["threads"]) for r in log.ops() if r.get("threads")}),
                   series, dict(comm), launch, run, gpu_floor, view, arg,
                   {k: max(0.0, alive[k] - turns[k]) for k in alive.keys() & turns.keys()})


def _whole_at_median(measured: dict, series: dict, by_series: dict) -> tuple[dict, dict]:
    """``(measured, series)`` with each whole op at the lower median of its timings. An op's series
    along each of its axes all end at the whole op: one kernel, timed once per series. Each such
    point (in ``measured`` and in every series' fit) becomes the lower median of them (of two, the
    quicker). Why not the first series' timing: the first kernel a timing process runs can read
    several times its steady time, and bundles are not timed again. The H200 host's profile
    (2026-11-28, twice: 05:45 and 20:43) timed BERT-tiny's FFN matmul + GELU whole at 2,344 us
    (std 1,062) on its batch series, first in the bundle, and at 366-370 us on its other two;
    whole ops were priced from their first series, so the ``cpu`` row of BERT-tiny read 11.2 ms
    against 6.4 measured. Why not the quickest: this VM's phases run in both directions, and the
    quickest of three timings is the luckiest. The Zen 5's profile (2026-12-02) timed the same
    kernel at 854 us (std 173), 911 and 943; priced at 854, its op rows read -12% (whole, 974 us
    measured the next day) and -15% (split), where the kernel timed as the profile times it read
    960-982 us that day: -6% and -9% at the median, 911 (2026-12-03)."""
    full = {(sig, kind, dim): int(recs[0]["full"]) for (sig, kind, dim), recs in by_series.items()}

    def at_median(points: dict) -> dict:  # (sig, kind, dim, size) -> us, each whole op at its median
        timings: dict[tuple, list[float]] = defaultdict(list)
        for (sig, kind, dim, size), us in points.items():
            if size == full[(sig, kind, dim)]:
                timings[(sig, kind)].append(us)
        median = {key: statistics.median_low(times) for key, times in timings.items()}
        return {(sig, kind, dim, size): median[(sig, kind)] if size == full[(sig, kind, dim)] else us
                for (sig, kind, dim, size), us in points.items()}

    # the tuned samples (measured) and the fitted ones apart: a build runs one or the other
    fitted = at_median({(*key, n): us for key, pts in series.items() for n, us in pts})
    return at_median(measured), {key: [(n, fitted[(*key, n)]) for n, _ in pts] for key, pts in series.items()}


class ProfiledCostModel(CostModel):
    """Cost model over one fingerprint folder of profile logs (see module docstring)."""

    def __init__(self, folder: str, devices=None, fallback: CostModel | None = None, log: ProfileLog | None = None):
        self.folder = folder
        self.devices = devices
        self.fallback = fallback
        self.log = log or ProfileLog(folder)
        # a log read here from its file: its tables as read_once keeps them, for this version of the
        # file; a log given (it may hold what its file does not): its own
        tables = (read_once(self.log.path, lambda _: _Tables.of(self.log), kind="tables")
                  if log is None and os.path.exists(self.log.path) else _Tables.of(self.log))
        #: how much slower CPU kernels run in models than alone (:meth:`in_model_us`)
        self.context: Context = tables.context
        self.names: dict[str, dict] = tables.names
        #: tuned samples, looked up exactly: (sig, device, dim, size) -> us
        self.measured: dict[tuple, float] = tables.measured
        #: the CPU pools the samples were timed with (older samples did not record it)
        self.threads: list[int] = tables.threads
        #: the points each pattern is fitted on (see :func:`fit_records`)
        self.series: dict[tuple, list] = tables.series
        self.comm: dict[tuple, list[tuple[int, float]]] = tables.comm
        self.launch: dict[str, float] = tables.launch
        self.run: dict[str, float] = tables.run  # a run of one kernel, per device kind (run_time)
        self.view: dict[str, float] = tables.view  # a view in a chain of them, per device kind (view_time)
        #: per device kind: a run of one kernel given ``n`` more arguments, and ``n`` (arg_time)
        self.arg: dict[str, tuple[float, int]] = tables.arg
        #: per device kind: what a storage allocated in a run costs (alloc_time)
        self.alloc: dict[str, float] = tables.alloc
        #: the quickest GPU sample (a kernel or a slice/concat kernel): :meth:`launch_time`'s floor
        self.gpu_floor: float | None = tables.gpu_floor
        #: the priced graph's own in-model factor (:meth:`for_graph`), and why: ``"measured"`` (the
        #: graph ran in the VM when profiled) or ``"one kernel"`` (nothing runs between its launches)
        self.graph_factor: float | None = None
        self.graph_factor_from: str | None = None
        #: what a CPU kernel launch costs in the priced graph, where its context solved it (launch_time)
        self.graph_launch: float | None = None
        #: the bytes of weights a run of the priced graph reads (:meth:`for_graph`; stream_floor)
        self.run_bytes: float = 0.0
        self._fits: dict = {}
        self._peak: dict[str, float] = {}  # FLOP per microsecond: compute_floor
        self._xgb: dict = {}
        self._xgb_whole: dict = {}
        self._dims: dict = {}  # (sig, kind) -> the dims it has series along: _series_dims
        self._cached = _load_fits(folder)
        self._gpu_use_gap: tuple[float, float] | None = None  # use_time, gap_time: _gpu_overheads

    def in_model_us(self, rec: dict) -> float:
        """A sample's time as a model runs it: a CPU sample's time alone scaled by the
        :class:`Context` factor of its op (1.0 on a machine where no model was run in the VM);
        GPU samples as timed (their launches are asynchronous: not measured here yet)."""
        return _in_model_us(self.context, rec)

    # ------------------------------------------------------------------ fits
    def _fit(self, key: tuple, pts: list) -> patterns.Fit | None:
        if key not in self._fits:
            pts = sorted(pts)
            cached = self._cached.get(_fit_key(key))
            # a fit saved under another set of patterns is fitted again (the points alone would
            # keep a profile's fits from before the hinge pattern forever)
            if cached is not None and cached["points"] == pts and cached.get("patterns") == list(patterns.PATTERNS):
                self._fits[key] = patterns.Fit.from_json(cached["fit"])
            else:
                self._fits[key] = patterns.fit(*zip(*pts)) if pts else None
        return self._fits[key]

    def fit(self, sig: str, device: str, dim: int) -> patterns.Fit | None:
        return self._fit((sig, device, dim), self.series.get((sig, device, dim), []))

    def save_fits(self) -> str:
        """Fit every series and save the fits (with the points they were fitted on) beside the log:
        loading a cost model then costs no fitting unless samples changed."""
        out = {}
        for key, pts in self.series.items():
            f = self._fit(key, pts)
            if f is not None:
                out[_fit_key(key)] = {"points": [list(p) for p in sorted(pts)], "fit": f.to_json(),
                                      "patterns": list(patterns.PATTERNS)}
        path = os.path.join(self.folder, FITS_FILE)
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(out, fh)
        os.replace(path + ".tmp", path)
        return path

    def regressor(self, device: str):
        """The device's XGBoost model: loaded if saved for the current samples, else trained."""
        if device not in self._xgb:
            recs = [dict(r, mean_us=self.in_model_us(r)) for r in training_records(self.log.ops(device))]
            model = None
            if recs:
                model = xgb.load(self.folder, device, len(recs), self.context.tag()) or xgb.train(recs)
            self._xgb[device] = model
        return self._xgb[device]

    def save_regressors(self) -> list[str]:
        """Train (if needed) and save every device's regressor beside the log."""
        paths = []
        for device in sorted({r["device"] for r in self.log.ops()}):
            model = self.regressor(device)
            paths.append(xgb.save(model, self.folder, device, len(training_records(self.log.ops(device))),
                                  self.context.tag()))
        return paths

    # ------------------------------------------------------------------ CostModel
    def for_graph(self, graph, same_as: dict | None = None) -> "ProfiledCostModel":
        """This cost model pricing ``graph`` (an OpGraph): where the profile ran that very model in
        the VM (a ``context`` record of its :func:`graph_signature`), its CPU kernels take that
        model's factor instead of their ops' median over the models having them. Why: the
        sequence-100 LSTM ran its kernels 1.49-1.81x their time alone, the sequence-10 one 1.06x
        with the same gate matmuls (znver4, 2026-11-27): keyed by op, a profile of both priced each
        at their median, and one of the sequence-10 LSTM priced the longer one -20% to -32%.

        That factor is the model's time in the VM over its kernels timed alone in the same rounds;
        the samples it scales were timed at another hour, and the factor is taken relative to them
        (:meth:`_anchor`): the model's one-CPU build is then priced at what its context read. Why:
        this VM runs one build 1.27-1.5x apart within an hour (BENCHMARKS.md), and the samples of
        the sequence-10 LSTM's kernels (timed 15:00-16:59) summed 162.6 us where its context (17:19)
        timed them alone at 179.8: its one-CPU build was priced 188.7 us against the 206.5 its
        context read (-8.6%), the GRU's 148.7 against 156.8 (samples 5.5% under), BERT-tiny's and
        ResNet-18's within 1.2% (intel-r-xeon-r-processor-rocketlake-2c, 2026-12-04). Only where
        every device is a CPU: a context is a one-CPU build in a VM of CPUs, and on the H200 host
        the same models' ``cpu`` plans in a ``cpu,gpu`` build ran up to 44% over their contexts'
        median rounds (the sequence-10 LSTM 319 us against 221; 2026-12-04, 12:30-12:49), which
        its samples (1.5-1.65x the contexts' kernels alone for the RNNs) happened to price:
        anchored, that host's ``bench --quick`` model rows within 10% went from 13 of 27 to 4
        (``benchmarks/predict_again.py`` on the kit's artifacts). ``same_as``:
        ``{op signature: op}``, the graph's ops whose samples are another op's (an op model's op is
        its model's: :class:`tvm_partition.bench.ops.AsParent`).

        A graph of one compute op runs it as it ran alone (factor 1.0): nothing runs between its
        launches to take its weights out of the cache. ResNet-18's (64 px) last convolutions alone
        in the VM (``bench --split-ops``) ran 117-119 us, their profile samples alone 127-137, and
        priced at the model's factor (1.49) they were predicted 189-204 us, +58% to +88%
        (znver4, 2026-11-27).

        Its weights' bytes go to :meth:`stream_floor` (:attr:`run_bytes`). Shares this model's
        samples and fits; ``self`` where the graph changes nothing."""
        import copy

        from ..ir.graph import graph_signature

        sig = graph_signature(graph)
        measured = self.context.by_graph.get(sig)
        factor, why = None, None
        if measured is not None:
            cpus_only = not any(d.kind == "gpu" for d in self.devices or ())
            anchor = self._anchor(graph, sig, same_as or {}) if cpus_only else 1.0
            factor, why = measured * anchor, "measured"
        elif sum(1 for op in graph.ops.values() if not op.is_view) == 1:
            factor, why = 1.0, "one kernel"
        run_bytes = float(getattr(graph, "weight_bytes", 0))
        if factor is None and not run_bytes:
            return self
        priced = copy.copy(self)
        priced.graph_factor, priced.graph_factor_from = factor, why
        priced.graph_launch = self.context.launch_by_graph.get(sig)  # solved only where measured
        priced.run_bytes = run_bytes
        return priced

    def _anchor(self, graph, sig: str, same_as: dict) -> float:
        """The measured ``graph``'s kernels timed alone in its context over what its samples sum
        them to, each op as ``same_as`` says (:meth:`for_graph`); 1.0 where its context kept no
        such time (records from before it) or the samples price nothing."""
        alone = self.context.alone_by_graph.get(sig)
        if not alone:
            return 1.0
        ops = [same_as.get(op_signature(op), op) for op in graph.ops.values() if not op.is_view]
        sampled = sum(self._shared(op, "cpu").us / self.context.factor(op_signature(op)) for op in ops)
        return alone / sampled if sampled > 0 else 1.0

    def estimate(self, op, device: str, shape=None) -> Estimate:
        """:meth:`_shared`, a CPU kernel's in-model factor its graph's own where :meth:`for_graph`
        found one (samples are scaled by their op's: :meth:`in_model_us`)."""
        est = self._shared(op, device, shape)
        if self.graph_factor is None or op.is_view or device_kind(device, self.devices) != "cpu":
            return est
        return Estimate(est.us * self.graph_factor / self.context.factor(op_signature(op)), est.source)

    def _shared(self, op, device: str, shape=None) -> Estimate:
        """:meth:`_estimate`, but a part of an op never costs less than its share of the whole op.

        Standalone samples of transferred parts can time below their share (a ResNet-18 conv at
        288 of 512 channels 276 us, at 224 channels 232, the whole 605: a "split" of 508 us), but
        in the model they did not: EOP split ResNet-18 (64 px) on cpu,cpu where two CPU devices
        never overlap, predicted 16% faster than one CPU, and ran 1.9x slower (2026-11-23)."""
        est = self._estimate(op, device, shape)
        if shape is None or op.is_view or not cut_axes(op, shape):
            return est
        share = self._estimate(op, device, None).us * part_fraction(op, shape)
        return est if est.us >= share else Estimate(share, est.source)

    def _estimate(self, op, device: str, shape=None) -> Estimate:
        if op.is_view:
            return Estimate(0.0, "view")
        kind = device_kind(device, self.devices)
        full = full_shape(op)
        diff = cut_axes(op, shape)
        sig = op_signature(op)
        if len(diff) <= 1:
            dims = diff or self._series_dims(sig, kind)
            for dim in dims:
                size = full[dim] if not diff else shape[dim]
                if (sig, kind, dim, size) in self.measured:
                    return Estimate(self.measured[(sig, kind, dim, size)], "measured")
                f = self.fit(sig, kind, dim)
                if f is not None:
                    return Estimate(f.predict(size), "pattern")
        model = self.regressor(kind)
        if model is not None:
            # Trees do not extrapolate: past the sizes they were trained on, a part can come out
            # slower than its whole op. XGBoost answers the whole op; a part gets that time scaled
            # by its fraction (the linear pattern, which fits 254 of 311 measured series).
            key = (sig, kind)
            if key not in self._xgb_whole:
                self._xgb_whole[key] = float(xgb.predict(model, [xgb.op_features(op, None)])[0])
            fraction = part_fraction(op, shape)
            us = self._xgb_whole[key] * fraction
            floor = max(0.0 if op.kind in GATHERS else self.stream_floor(op.bytes * fraction, kind),
                        self.compute_floor(op.flops * fraction, kind))
            return Estimate(us, "xgboost") if us >= floor else Estimate(floor, "analytic")
        if self.fallback is not None:
            return self.fallback.estimate(op, device, shape)
        raise CostModelError(f"no profile of any op on a {kind} in {self.folder}: run "
                             f"tvm-partition profile MODEL --devices cpu,{kind}")

    def _series_dims(self, sig: str, kind: str) -> list[int]:
        """The axes ``sig`` was sampled along on a ``kind`` device, sorted. Looked up once per
        (sig, kind): a scan of every series per estimate was the largest single cost of ``auto``
        planning the README's LSTM (36,578 scans, 0.84 of 15.3 s under cProfile, 2026-11-29)."""
        key = (sig, kind)
        if key not in self._dims:
            self._dims[key] = sorted(d for (s, k, d) in self.series if s == sig and k == kind)
        return self._dims[key]

    def compute_floor(self, flops: float, kind: str) -> float:
        """The least time ``flops`` can take on a ``kind`` device: at the highest rate any profiled
        sample of this machine reached (in the model, :meth:`in_model_us`; samples of at least
        :data:`PEAK_MIN_FLOPS`). XGBoost answers an op it never saw from the ops it did, and put
        VGG-19's convolutions (39 GFLOP, none profiled) at 43 ms where the model ran 100.6; the
        fastest samples on this Zen 5 ran 500-511 GFLOP/s (amd-epyc-znver5-2c, 2026-11-26). 0
        where no sample computes."""
        if kind not in self._peak:
            samples = ((float(r.get("op_flops") or 0) * int(r["size"]) / int(r["full"]), r) for r in self.log.ops(kind))
            self._peak[kind] = max((flops / self.in_model_us(r) for flops, r in samples
                                    if flops >= PEAK_MIN_FLOPS and float(r["mean_us"]) > 0), default=0.0)
        return flops / self._peak[kind] if self._peak[kind] > 0 and flops > 0 else 0.0

    def stream_floor(self, nbytes: float, kind: str) -> float:
        """The least time a CPU kernel reading and writing ``nbytes`` in all can take: the quicker
        of two measured streams of as many bytes, interpolated, so cache-resident sizes cost cache
        bandwidth and larger ones the memory's (each series' last slope), less each one's own fixed
        cost (its smallest size's time: a bound on bandwidth, not on a call; with it, a 5 KB
        matmul's floor beat XGBoost's answer): half this machine's copy of as many bytes (the
        runtime's copy reads and writes each byte), and its ``slice`` kernel's (built as builds
        build kernels, threads and all, reading half its bytes and writing them: as many bytes in
        all). XGBoost learned from kernels whose operands fit in cache, and put ZFNet-512's fully
        connected layer (1x9216 by 9216x4096: 302 MB of weights read once per run, 21.6 ms
        measured) at a tenth of its time; 0 where neither stream was measured.

        The slice, because a copy is one thread: on the Rocket Lake VM the 64 MB copy streams 14.7
        GB/s read and written, the 64 MB slice 29.0, and AlexNet's first fully connected layer (151
        MB of weights) ran 4.5 ms, 33.5 GB/s, where half a copy priced it at 10.0 ms: AlexNet and
        ZFNet-512 (the onnx package's light models) were predicted +64.5% and +65.9% on builds
        measured there that hour, at the slice's +2.1% and +11.8% (``predict_again.py --bench
        --onnx-dir``, 2026-12-04, 23:35). Where the copy is the quicker (the Ice Lake VM's, 25.6
        GB/s against its slice's 20.6) it stays the floor.

        Each byte is priced as a copy of the priced graph's weights prices it where those outgrow
        ``nbytes`` (:attr:`run_bytes`, :meth:`for_graph`): a copy timed alone again and again keeps
        its bytes in the cache, and so does a kernel in a small model, but a run of a model whose
        weights outgrow the cache reads each kernel's weights from memory. GPT-2's decoder step
        (497 MB of weights; its matrix-vector products 3-9 MB each, never profiled) was priced at
        the 4-16 MB copies' bandwidth, 78 GB/s, 4.8 ms for a run measured at 11.8; its 9.4 MB products
        ran 236 us, as a 9.4 MB copy's half at the 64 MB copies' slope, 238 (amd-epyc-znver5-2c,
        2026-12-02)."""
        if kind != "cpu" or nbytes <= 0:
            return 0.0
        span = max(nbytes, self.run_bytes)
        floors = [(interpolate(pts, span) - interpolate(pts, 0)) * nbytes / span / moved
                  for comm, moved in (("copy", 2), ("slice", 1)) if (pts := self.comm.get((comm, kind, kind)))]
        return min((t for t in floors if t > 0), default=0.0)

    def comm_estimate(self, nbytes: float, src: str, dst: str) -> Estimate:
        """A copy between two devices of the profile's copy series; none between two CPUs: builds
        bind it to its source (:mod:`tvm_partition.passes.host_copies`). Their measured copies
        still give the CPU's memory bandwidth (:meth:`stream_floor`)."""
        kinds = (device_kind(src, self.devices), device_kind(dst, self.devices))
        if kinds == ("cpu", "cpu"):
            return Estimate(0.0, "one memory")
        pts = self.comm.get(("copy", *kinds))
        fallback = None if self.fallback is None else (lambda n: self.fallback.comm_estimate(n, src, dst).us)
        if pts:
            us, past = _priced(pts, nbytes, fallback)
            return Estimate(us, "interpolated, fallback bandwidth" if past else "interpolated")
        if fallback is not None:
            return self.fallback.comm_estimate(nbytes, src, dst)
        raise CostModelError(f"no measured {src}->{dst} copies in {self.folder}: profile with both devices")

    def _kernel_time(self, comm: str, nbytes: float, device: str) -> float:
        kind = device_kind(device, self.devices)
        pts = self.comm.get((comm, kind, kind))
        at = getattr(self.fallback, f"{comm}_time", None)
        fallback = None if at is None else (lambda n: at(n, device))
        if pts:
            return _priced(pts, nbytes, fallback)[0]
        return fallback(nbytes) if fallback is not None else 0.0

    def slice_time(self, nbytes: float, device: str) -> float:
        return self._kernel_time("slice", nbytes, device) if nbytes > 0 else 0.0

    def launch_time(self, device: str) -> float:
        """The profile's launch chain of the device's kind; on a GPU without one, its quickest
        sample: a kernel timed alone back to back runs at the rate the host launches it when it
        does next to nothing (the H100 machine's: 3.2 us, slices and concats of 4 B included). A
        GPU launch priced at nothing let the simulator overlap ~900 launches with the CPU's half
        of a batch: the README's first command planned `fixed` at 3.24 ms, which ran 9.14 on the
        H100 machine, 1.83x its GPU alone (2026-11-27). A CPU launch in a graph whose context
        solved its own (:meth:`for_graph`, :attr:`graph_launch`) costs that: the LSTM's at
        sequence 100 0.31 us on a Zen 4, against the chain's 0.11 (2026-11-30)."""
        kind = device_kind(device, self.devices)
        if kind == "cpu" and self.graph_launch is not None:
            return self.graph_launch
        if kind in self.launch:
            return self.launch[kind]
        if kind == "gpu" and self.gpu_floor is not None:
            return self.gpu_floor
        return self.fallback.launch_time(device) if self.fallback is not None else 0.0

    def concat_time(self, nbytes: float, device: str) -> float:
        return self._kernel_time("concat", nbytes, device) if nbytes > 0 else 0.0

    def view_time(self, device: str) -> float:
        """The profile's chain of views (``R.memory.view`` + ``ensure_zero_offset``, no kernel) per
        view: 0.16 us in this Zen 4's profile (0.18 in a chain of 32 timed by hand) against 0.11 a
        kernel launch (2026-11-30); priced at nothing, the splits' views were part of why the RNNs'
        split-op rows read -11% to -18%. 0 where no chain was timed (profiles from before it)."""
        kind = device_kind(device, self.devices)
        if kind in self.view:
            return self.view[kind]
        return self.fallback.view_time(device) if self.fallback is not None else 0.0

    def run_time(self, device: str) -> float:
        """The profile's run of one kernel less that kernel's launch: what a run costs beyond its
        launches (the call from Python, the arguments' checks, the return). 0.66 us a run on this
        Zen 4 (0.77 the run, 0.11 its launch), ~1 us of the 4-7 us RNN gate matmuls alone in the VM
        (``bench --split-ops``), which without it were predicted -12% to -27% (znver4, 2026-11-27).
        0 where no run was timed (profiles from before it) or on a device of no launch chain."""
        kind = device_kind(device, self.devices)
        if kind not in self.run or kind not in self.launch:
            return self.fallback.run_time(device) if self.fallback is not None else 0.0
        return max(0.0, self.run[kind] - self.launch[kind])

    def arg_time(self, device: str) -> float:
        """What each argument of ``main`` beyond the first costs a run called from Python on host
        ``device`` (its conversion in the call, the VM's check of its type and shape): the profile's
        run of one kernel given ``n`` more arguments (:func:`~tvm_partition.profiling.samples.
        args_function`), less its run of one argument, over ``n``. 0.105 us an argument on a Zen 4,
        where a run of one costs 0.77 (2026-11-30). 0 where either was not timed."""
        kind = device_kind(device, self.devices)
        if kind not in self.arg or kind not in self.run:
            return self.fallback.arg_time(device) if self.fallback is not None else 0.0
        total, n = self.arg[kind]
        return max(0.0, (total - self.run[kind]) / n)

    def alloc_time(self, device: str) -> float:
        """What a storage allocated in a run costs on ``device``: the profile's chain of kernels
        whose outputs all live at once (a storage each) less the same kernels whose storages take
        turns, over the storages (:func:`~tvm_partition.profiling.samples.alloc_function`). 0.175 us
        in this Zen 4's profile (2026-11-30). 0 where the two were not timed."""
        kind = device_kind(device, self.devices)
        if kind in self.alloc:
            return self.alloc[kind]
        return self.fallback.alloc_time(device) if self.fallback is not None else 0.0

    def use_time(self, device: str) -> float:
        """What a run costs once it uses a GPU, beyond its copies as the profile prices them, its
        launches and its kernels alone: fitted to the profile's GPU contexts with
        :meth:`gap_time` (:meth:`_gpu_overheads`); 0 on a CPU, or where no GPU context was timed."""
        return self._gpu_overheads()[0] if device_kind(device, self.devices) == "gpu" else 0.0

    def gap_time(self, device: str) -> float:
        """What a GPU's stream takes after each kernel of a model beyond the kernel alone (fitted
        with :meth:`use_time`); 0 on a CPU, or where no GPU context was timed."""
        return self._gpu_overheads()[1] if device_kind(device, self.devices) == "gpu" else 0.0

    def gpu_contexts(self) -> list[GpuContext]:
        """The profile's GPU contexts, the latest of each model, by model."""
        latest = {r["model"]: r for r in self.log.comms() if r["comm"] == "context" and r["src"] == "gpu"}
        out = []
        for model, r in sorted(latest.items()):
            try:
                copies = self.comm_time(float(r.get("in_bytes", 0)), "cpu", "gpu") \
                    + self.comm_time(float(r.get("out_bytes", 0)), "gpu", "cpu")
            except CostModelError:  # no copy series (a profile cut before its copies)
                copies = None
            out.append(GpuContext(model, float(r["vm_us"]), float(r.get("entry_us", 0.0)), float(r["warm_us"]),
                                  int(r["kernels"]), copies))
        return out

    def _gpu_overheads(self) -> tuple[float, float]:
        """``(use, gap)`` fitted (:func:`fit_use_gap`) to the profile's GPU contexts
        (:func:`tvm_partition.profiling.context.gpu_context`, the latest of each model): each
        model's ``gpu`` plan run from the host in the VM, less its entry, its copies priced by the
        profile's series and its kernels alone, against its launches. Why: the H200 host's ``gpu``
        rows of ``bench --quick`` ran 10-21% over their prediction (2026-12-04, predicted again at
        fec9fd6), its one-op models' 10-34%, where one time a run and one a kernel on the GPU's
        stream put the five models' rows within 5% (``benchmarks/gpu_forms.py``: a fit to those
        rows themselves, which says the form; the figures are the contexts' to measure)."""
        if self._gpu_use_gap is None:
            self._gpu_use_gap = fit_use_gap([(c.launches, c.left_us) for c in self.gpu_contexts()
                                             if c.copies_us is not None])  # else nothing tells its copies apart
        return self._gpu_use_gap

    # ------------------------------------------------------------------ explain
    def explain(self, sigs=None) -> str:
        """Every fit: op kind, TVM kernel, axis, pattern and its formula and error (``--explain``)."""
        lines = []
        for (sig, dev, dim) in sorted(self.series):
            if sigs is not None and sig not in sigs:
                continue
            info = self.names[sig]
            name = info["dims"].get(dim, f"axis{dim}")
            lines.append(f"{sig} {info['fused'][:50]} {info['full_shape']} on {dev}, {name}: "
                         f"{self.fit(sig, dev, dim).explain(name)}")
        for (comm, src, dst), pts in sorted(self.comm.items()):
            sizes = sorted({int(b) for b, _ in pts})
            lines.append(f"{comm} {src}->{dst}: interpolated between {len(sizes)} measured sizes, "
                         f"{sizes[0]}-{sizes[-1]} bytes ({interpolate(pts, sizes[-1]):.1f} us at the largest)")
        return "\n".join(lines)
