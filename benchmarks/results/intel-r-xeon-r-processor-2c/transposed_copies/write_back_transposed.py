"""Scratch: the back transposition (k x lanes local tile -> lanes x 1 x k), stores masked for k < 8."""
import functools
from tvm_partition.build.templates.transposed import _butterfly

def source(lanes, k, masked):
    def header(strided):
        a_s, b_s = (", strides=[sa0, 1]", ", strides=[sb0, sb1, 1]") if strided else ("", "")
        return (f"    a = T.match_buffer(a_handle, ({k}, {lanes}), 'float32', offset_factor=1, scope='local'{a_s})\n"
                f"    b = T.match_buffer(b_handle, ({lanes}, 1, {k}), 'float32', offset_factor=1, scope='local'{b_s})\n"
                f"    with T.sblock('root'):\n        T.reads(a[0:{k}, 0:{lanes}])\n        T.writes(b[0:{lanes}, 0, 0:{k}])\n")
    sig = "(a_handle: T.handle, b_handle: T.handle) -> None:\n"
    desc = (f"@T.prim_func(s_tir=True)\ndef description{sig}" + header(False)
            + f"        for x, c in T.grid({k}, {lanes}):\n            with T.sblock('transposed'):\n"
              f"                vx, vc = T.axis.remap('SS', [x, c])\n                b[vc, 0, vx] = a[vx, vc]\n")
    vec = f"T.float32x{lanes}"
    lines = []
    for r in range(lanes):
        lines.append(f"r{r}: T.let[{vec}] = " + (f"a[{r}, T.Ramp(0, 1, {lanes})]" if r < k else f"T.Broadcast(T.float32(0), {lanes})"))
    names = {r: f"r{r}" for r in range(lanes)}
    for n, (i, j, low, high) in enumerate(_butterfly(lanes)):
        new = {i: f"s{n}_0", j: f"s{n}_1"}
        for row, idx in ((i, low), (j, high)):
            lines.append(f"{new[row]}: T.let[{vec}] = T.Shuffle([{names[i]}, {names[j]}], {idx})")
        names.update(new)
    for c in range(lanes):
        if k == lanes:
            lines.append(f"b[{c}, 0, T.Ramp(0, 1, {k})] = {names[c]}")
        elif masked and k < 8:
            mask = f"T.Shuffle([T.Broadcast(-1, {k}), " + ("0" if 8 - k == 1 else f"T.Broadcast(0, {8 - k})") + f"], {list(range(8))})"
            lines.append(f"T.evaluate(T.call_llvm_intrin('void', 'llvm.x86.avx.maskstore.ps.256', T.address_of(b[{c}, 0, 0]), {mask}, T.Shuffle([{names[c]}], {list(range(8))})))")
        else:
            lines.append(f"b[{c}, 0, T.Ramp(0, 1, {k})] = T.Shuffle([{names[c]}], {list(range(k))})")
    impl = (f"@T.prim_func(s_tir=True)\ndef implementation{sig}    sa0 = T.int32()\n    sb0 = T.int32()\n    sb1 = T.int32()\n"
            + header(True) + "".join(f"        {l}\n" for l in lines))
    return desc, impl

@functools.cache
def intrinsic(lanes, k, masked=True):
    from tvm.s_tir import TensorIntrin
    from tvm.script import from_source
    d, i = source(lanes, k, masked)
    name = f"scratch_back_{lanes}x{k}_{masked}"
    TensorIntrin.register(name, from_source(d), from_source(i), override=True)
    return name
