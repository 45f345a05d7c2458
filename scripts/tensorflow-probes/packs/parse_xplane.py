import sys, glob, collections
from tensorflow.tsl.profiler.protobuf import xplane_pb2
f = glob.glob(sys.argv[1] + "/plugins/profile/*/*.xplane.pb")[0]
xs = xplane_pb2.XSpace(); xs.ParseFromString(open(f, "rb").read())
mode = sys.argv[2] if len(sys.argv) > 2 else "summary"
for p in xs.planes:
    print("PLANE", p.name, "lines", len(p.lines), "events", sum(len(l.events) for l in p.lines))
    if mode == "summary":
        names = collections.Counter()
        for l in p.lines:
            for e in l.events: names[p.event_metadata[e.metadata_id].name] += 1
        for n, c in names.most_common(400):
            if any(k in n for k in ("Collective", "gradient", "MatMul", "BiasAdd", "sgd", "Concat", "Split", "Reshape", "Iterator", "multi_step", "train")):
                print("   ", c, n[:160])
