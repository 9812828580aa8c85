import re, sys, statistics as st
def load(f):
    d={}
    for l in open(f):
        m = re.match(r"\s+([\d.]+)\s+[\d.]+%\s+(\d+)\s+(\S+)", l)
        if m: d[m.group(3)] = float(m.group(1))
    return d
groups = {"stride2_112": ["conv2d2_prepacked", "fused_concatenate_add2_llvm_relu2_llvm:0.5", "fused_conv2d2_add2_llvm_relu2_llvm_prepacked"],
          "s1_56": ["conv2d7_prepacked", "fused_concatenate_add2_llvm_relu2_llvm:0.5", "fused_conv2d7_add2_llvm_relu2_llvm_prepacked"],
          "s2_56": ["conv2d11_prepacked", "fused_concatenate1_add8_llvm_relu6_llvm:0.1667", "fused_conv2d11_add8_llvm_relu6_llvm_prepacked"],
          "s1_28": ["conv2d16_prepacked", "fused_concatenate1_add8_llvm_relu6_llvm:0.8333", "fused_conv2d16_add8_llvm_relu6_llvm_prepacked"]}
def val(d, names):
    s = 0
    for n in names:
        n, _, w = n.partition(":")
        s += d.get(n, 0) * float(w or 1)
    return s
allg = [n.split(":")[0] for v in groups.values() for n in v]
for i in sys.argv[1:]:
    a, b = load(f"k_base_{i}.txt"), load(f"k_g1_{i}.txt")
    common = [k for k in a if k in b and k not in allg and a[k] > 150 and "vm." not in k]
    norm = st.median(b[k]/a[k] for k in common)
    print(i, "norm", round(norm, 3), " ".join(f"{g}={val(b, n)/norm/val(a, n):.2f}" for g, n in groups.items()),
          "rest", round(sum(b[k] for k in common)/norm/sum(a[k] for k in common), 3))
