"""Hold 1's six finished runs: the launcher's measured / estimated ratio by the sharing each run
started with (the launcher before c1d45cf) and by the sharing its GPU had over its life (since).
GPU placement: the launcher's order (least shared GPU first, GPU 0 on ties); ends: launch.log.
Run from the repository root: python docs/bench/2026-11-28-x2-r10-findings/replay_ratios.py"""
import json
from playground.sweep.launch import plan
from playground.sweep.cost import estimate
P="results/mini/runs/probe_mini/"
g="brevo1_N20_8L512D_gla_canon-ABCD_lr0.001_s"; m="mano_L4_8L512D_mlpnone_mamba2-noconv1d_canon-AB-nores_lr0.001_s"
names={"g0":g+"0","g1":g+"1","g2":g+"2","m0":m+"0","m1":m+"1","m2":m+"2"}
cfg={k:plan([json.load(open(P+v+"/summary.json"))["overrides"]])[0].config for k,v in names.items()}
est=lambda k,n: estimate(cfg[k],n).gpu_s*n
gpu={"0":["g0","g2","m1"],"1":["g1","m0","m2"]}
end={"g1":996,"g2":1024,"g0":1025,"m2":1120,"m0":1120,"m1":1131}
startsh={"g0":1,"g1":1,"g2":2,"m0":2,"m1":3,"m2":3}
for G,runs in gpu.items():
    for r in runs:
        t=0; ratio=0; 
        cuts=sorted(set([0]+[end[x] for x in runs if end[x]<=end[r]]))
        for a,b in zip(cuts,cuts[1:]):
            n=sum(1 for x in runs if end[x]>=b)
            ratio+=(b-a)/est(r,n)
        print(G,r,"new",round(ratio,2),"old",round(end[r]/est(r,startsh[r]),2))
