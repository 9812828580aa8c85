"""Each convolution kernel of MODEL (GROUPED=1: the grouped and depthwise ones) whose schedule changes
under PATCH (NAME=python value;...), timed alone against the build's schedule in alternating rounds,
cold and warm: `PATCH="tensorized=lambda *a: False"` is the copy a vector of channels at a time."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from conv_kernels import convolutions, cold_and_warm, cold_and_warm_line, patched
from tvm_partition.build import templates
from tvm_partition.build.tuning import tuning_target
from tvm_partition.devices import parse_devices
target = tuning_target(parse_devices("cpu", cpu_mcpu=os.environ.get("TARGET_CPU"))[0])  # TARGET_CPU: another -mcpu, run here
patch = {k: eval(v) for k, v in (a.split("=", 1) for a in os.environ["PATCH"].split(";"))}
for label, kmod, nest in convolutions(os.environ.get("MODEL", "resnet50").split(","), target, grouped=bool(os.environ.get("GROUPED"))):
    g = templates.schedule(kmod, target)
    with patched(**patch):
        f = templates.schedule(kmod, target)
    if f is None or g is None or f.script() == g.script():
        continue
    n, oc, oh, ow, rc, ry, rx = nest.extents
    print(f"{label} {oc}<-{rc} {oh}x{ow} {ry}x{rx} ep={len(nest.epilogue)}", cold_and_warm_line(cold_and_warm(f, g, target, int(os.environ.get("ROUNDS", 3)))), flush=True)
