import sys, glob
from tensorflow.tsl.profiler.protobuf import xplane_pb2
f = glob.glob(sys.argv[1] + "/plugins/profile/*/*.xplane.pb")[0]
xs = xplane_pb2.XSpace(); xs.ParseFromString(open(f, "rb").read())
p = [p for p in xs.planes if p.name == "/host:CPU"][0]
ev = []
for l in p.lines:
    for e in l.events:
        n = p.event_metadata[e.metadata_id].name
        t0 = l.timestamp_ns * 1000 + e.offset_ps; t1 = t0 + e.duration_ps
        ev.append((t0, t1, n, l.name))
steps = sorted([e for e in ev if e[2] == "multi_step_on_iterator"])
KEYS = ("gradient_tape", "CollectiveReduceV2", "Collective", "sgd/concat", "sgd/split", "sgd/update", "RunClosure", "ExecuteAsync", "CollectiveOpV2Kernel")
for si, (s0, s1, _, _) in enumerate(steps):
    print("=== step %d: multi_step_on_iterator %.3f ms" % (si, (s1 - s0) / 1e9))
    inside = sorted(e for e in ev if e[0] >= s0 and e[1] <= s1 and any(k in e[2] for k in KEYS))
    grads = [e for e in inside if "gradient_tape" in e[2]]
    colls = [e for e in inside if e[2].endswith(":CollectiveReduceV2")]
    closures = [e for e in inside if e[2] == "CollectiveExecutor::RunClosure"]
    if "full" in sys.argv:
        for t0, t1, n, ln in inside:
            print("  %9.3f-%9.3f us  %-28s %s" % ((t0 - s0) / 1e6, (t1 - s0) / 1e6, ln[:28], n[:130]))
    lastg = max(grads, key=lambda e: e[1]); firstc = min(colls, key=lambda e: e[0])
    print("  last gradient op ends   at %9.3f us: %s" % ((lastg[1] - s0) / 1e6, lastg[2]))
    print("  first CollectiveReduceV2 starts at %9.3f us: %s" % ((firstc[0] - s0) / 1e6, firstc[2]))
    for c in colls:
        print("    coll %9.3f-%9.3f us %s" % ((c[0]-s0)/1e6, (c[1]-s0)/1e6, c[2]))
    for c in closures:
        print("    RunClosure %9.3f-%9.3f us" % ((c[0]-s0)/1e6, (c[1]-s0)/1e6))
    n_before = sum(1 for c in colls if c[0] < lastg[1])
    print("  CollectiveReduceV2 ops starting before the last gradient op ends: %d of %d" % (n_before, len(colls)))
    gl = [g for g in grads if g[1] > firstc[0]]
    print("  gradient ops still running/starting after first collective start: %d: %s" % (len(gl), [g[2].split('/')[-3:] for g in gl][:12]))

# ---- per-replica check: does replica r's all-reduce start before replica r's own last gradient op ends?
import re
npacks = int([a for a in sys.argv if a.startswith("npacks=")][0].split("=")[1]) if any(a.startswith("npacks=") for a in sys.argv) else None
if npacks:
    print("#### per-replica view (collective CollectiveReduceV2_i belongs to replica i // npacks, npacks=%d)" % npacks)
    for si, (s0, s1, _, _) in enumerate(steps):
        inside = [e for e in ev if e[0] >= s0 and e[1] <= s1]
        for r in (0, 1):
            grads = [e for e in inside if "gradient_tape" in e[2] and (("replica_1/" in e[2]) == (r == 1))]
            colls = []
            for e in inside:
                mm = re.search(r"sgd/CollectiveReduceV2(?:_(\d+))?:CollectiveReduceV2$", e[2])
                if mm and int(mm.group(1) or 0) // npacks == r: colls.append(e)
            lastg = max(grads, key=lambda e: e[1])
            print(" step %d replica %d: last own gradient op ends %9.3f us (%s)" % (si, r, (lastg[1]-s0)/1e6, lastg[2].split("StatefulPartitionedCall/")[-1]))
            for c in sorted(colls):
                print("      %-45s %9.3f-%9.3f us  starts before own backward ends: %s; finishes before: %s" % (c[2].split("/")[-1], (c[0]-s0)/1e6, (c[1]-s0)/1e6, c[0] < lastg[1], c[1] < lastg[1]))
