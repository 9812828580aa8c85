import re, subprocess, sys, collections
rep = subprocess.run(["perf", "report", "-i", "perf.data", "--stdio", "--dsos", sys.argv[1], "--sort", "sym"], capture_output=True, text=True).stdout
samples = {}
for l in rep.splitlines():
    m = re.match(r"\s*([\d.]+)%\s+\[\.\]\s+0x([0-9a-f]+)", l)
    if m: samples[int(m.group(2), 16)] = float(m.group(1))
ins = {}
for l in open(sys.argv[2]):
    m = re.match(r"\s+([0-9a-f]+):\s+(\S+)", l)
    if m: ins[int(m.group(1), 16)] = m.group(2)
addrs = sorted(ins)
W = int(sys.argv[3], 16) if len(sys.argv) > 3 else 0x100
tot = sum(samples.values())
buckets = collections.defaultdict(float)
for a, p in samples.items(): buckets[a // W * W] += p
for b in sorted(buckets):
    mn = collections.Counter(ins[a] for a in addrs if b <= a < b + W)
    print(f"{b:6x} {100*buckets[b]/tot:5.1f}%  " + " ".join(f"{k}:{v}" for k, v in mn.most_common(6)))
