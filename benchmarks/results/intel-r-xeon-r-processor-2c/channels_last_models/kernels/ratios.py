import re, sys, statistics as st
def load(p):
    d={}
    for l in open(p):
        m=re.match(r"\s+([\d.]+)\s+[\d.]+%\s+(\d+)\s+(\S+)",l)
        if m: d[m.group(3)]=float(m.group(1))
    return d
m=sys.argv[1]
B=[load(f"k_{m}_base_{i}.kern") for i in (1,2,3,4)]; E=[load(f"k_{m}_e256_{i}.kern") for i in (1,2,3,4)]
ratios={k:[e.get(k,0)/b[k] for b,e in zip(B,E)] for k in B[0] if min(b[k] for b in B)>150}
# per-round normaliser: median ratio over all kernels of the round
norm=[st.median(r[i] for r in ratios.values()) for i in range(4)]
print("round medians", [round(x,3) for x in norm], "totals", [round(sum(e.values())/sum(b.values()),3) for b,e in zip(B,E)])
for k,r in ratios.items():
    n=[x/y for x,y in zip(r,norm)]
    if abs(st.median(n)-1)>0.06: print(f"{st.mean(b[k] for b in B):8.1f} norm {' '.join(f'{x:.2f}' for x in n)}  {k[:55]}")
