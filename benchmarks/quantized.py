"""The onnx package's light models quantized by onnxruntime's quantizer, compiled and timed against
onnxruntime running the same quantized model (and the float one).

    TVM_NUM_THREADS=2 python benchmarks/quantized.py [--models squeezenet,resnet50] [--forms qoperator,qdq,dynamic]
        [--out build/quantized] [--repeat 30] [--processes 3]

Each model (:mod:`tvm_partition.frontend.zoo.onnx_light`'s seeded copy) is quantized by
``onnxruntime.quantization``: ``qoperator`` (static, per channel, its QOperator form), ``qdq`` (the
same in its QDQ form), ``dynamic`` (``quantize_dynamic``); calibrated on 4 seeded normal inputs.
Each is compiled on this machine's CPU (``compile --devices cpu,cpu --strategy cpu --check``) and its
largest difference from onnxruntime printed; then, in a process of its own each, the artifact
(``run --repeat``), onnxruntime on the quantized model and on the float one (2 threads, graph
optimizations on) are timed: the median of ``--repeat`` runs, each the median over ``--processes``
processes taken in turn. One line of JSON a model and form.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's package, not another installed copy
FORMS = ("qoperator", "qdq", "dynamic")


def quantize(source: str, form: str, out: str) -> None:
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_dynamic, quantize_static

    if form == "dynamic":
        quantize_dynamic(source, out)
        return
    name, shape = data_input(source)

    class Calibration(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.batches = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    fmt = QuantFormat.QOperator if form == "qoperator" else QuantFormat.QDQ
    quantize_static(source, out, Calibration(), quant_format=fmt, per_channel=True)


def _opset13(path: str) -> str:
    """``path`` at opset 13 (onnx's version converter): the light models are of opset 8 or 9, where
    ``DequantizeLinear`` has no ``axis``, which the quantizer's per-channel QDQ form writes."""
    import onnx
    from onnx import version_converter

    out = path.replace(".onnx", "_opset13.onnx")
    if not os.path.exists(out):
        onnx.save(version_converter.convert_version(onnx.load(path), 13), out)
    return out


def data_input(path: str) -> tuple[str, list[int]]:
    """The one input of ``path`` that is not an initializer (the light models list those too)."""
    import onnx

    from tvm_partition.frontend import onnx_shapes

    gi = onnx_shapes.data_inputs(onnx.load(path).graph)[0]
    return gi.name, [d.dim_value or 1 for d in gi.type.tensor_type.shape.dim]


ORT_TIMER = """
import sys, time, statistics, numpy as np, onnxruntime as ort
o = ort.SessionOptions(); o.intra_op_num_threads = 2; o.inter_op_num_threads = 1; o.log_severity_level = 3
s = ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
x = {sys.argv[3]: np.random.default_rng(0).standard_normal([int(d) for d in sys.argv[4].split(",")]).astype(np.float32)}
for _ in range(5): s.run(None, x)
ts = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); s.run(None, x); ts.append(time.perf_counter() - t)
print(statistics.median(ts) * 1e6)
"""


def _ort_us(path: str, repeat: int) -> float:
    name, shape = data_input(path)
    return float(subprocess.run([sys.executable, "-c", ORT_TIMER, path, str(repeat), name, ",".join(map(str, shape))],
                                check=True,
                                capture_output=True, text=True).stdout.split()[-1])


def _ours_us(art: str, repeat: int) -> float:
    out = subprocess.run([sys.executable, "-m", "tvm_partition", "run", art, "--repeat", str(repeat)], check=True,
                         capture_output=True, text=True, cwd=REPO).stdout
    return float(re.search(r"median_us[=: ]+([0-9.]+)", out).group(1))


def one(name: str, form: str, folder: str, repeat: int, processes: int) -> dict:
    from tvm_partition.frontend.zoo import onnx_light

    source = _opset13(onnx_light.reseed(onnx_light.light_path(name), os.path.join(folder, f"light_{name}_seed0.onnx"), 0))
    path = os.path.join(folder, f"{name}_{form}.onnx")
    if not os.path.exists(path):
        quantize(source, form, path)
    art = os.path.join(folder, f"{name}_{form}")
    t = time.time()
    done = subprocess.run([sys.executable, "-m", "tvm_partition", "compile", path, "--devices", "cpu,cpu",
                           "--strategy", "cpu", "--check", "--out", art], capture_output=True, text=True, cwd=REPO)
    row = {"model": name, "form": form, "compile_s": round(time.time() - t, 1), "exit": done.returncode}
    if done.returncode:
        row["error"] = (done.stderr.strip().splitlines() or ["?"])[-1][:300]
        return row
    err = re.search(r"max_abs_err_onnxruntime=(\S+)", done.stdout)
    row["max_abs_err_onnxruntime"] = float(err.group(1)) if err else None
    times = {"ours_us": [], "ort_quantized_us": [], "ort_float_us": []}
    for _ in range(processes):  # in turn, so a phase of the machine weighs on all three alike
        times["ours_us"].append(_ours_us(art, repeat))
        times["ort_quantized_us"].append(_ort_us(path, repeat))
        times["ort_float_us"].append(_ort_us(source, repeat))
    row.update({k: round(statistics.median(v), 1) for k, v in times.items()})
    row["spread"] = {k: [round(min(v), 1), round(max(v), 1)] for k, v in times.items()}
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="squeezenet,resnet50,shufflenet,inception_v1")
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--out", default=os.path.join("build", "quantized"))
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--processes", type=int, default=3)
    args = ap.parse_args(argv)
    forms = args.forms.split(",")
    if set(forms) - set(FORMS):
        print(f"error: --forms takes {','.join(FORMS)}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    failed = 0
    for name in args.models.split(","):
        for form in forms:
            row = one(name, form, os.path.abspath(args.out), args.repeat, args.processes)
            failed += row["exit"] != 0
            print(json.dumps(row), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
