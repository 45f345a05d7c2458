"""MultiWorkerMirroredStrategy with 2 worker processes on this machine, for scripts/check-tensorflow.

Each worker is a Python process of its own with TF_CONFIG set, as in seed note 002, on CPU (no
GPU here): what TensorFlow logs as the strategy starts and trains, its num_replicas_in_sync, the
elements of each global batch every worker gets under each auto-shard policy (AUTO, DATA, FILE,
OFF) of an in-memory dataset, and the collective it uses for the all-reduce. The TF_CONFIG each
worker is given is the one mirrorlab prints for it (build/tests/mirrorlab_answers' "workers"
case), so the check also sees TensorFlow take mirrorlab's TF_CONFIG.
"""

import json
import logging
import os
import subprocess
import sys

WORKERS = 2
PER_REPLICA = 4
EXAMPLES = 20  # 2 full global batches of 8, then 4 left
POLICIES = ("AUTO", "DATA", "FILE", "OFF")


def worker_main(per_replica, examples, gpus_claimed):
    """In a worker process (TF_CONFIG set): what the strategy says and does, as JSON."""
    import numpy as np
    import tensorflow as tf
    import keras

    logged = []

    class Keep(logging.Handler):
        def emit(self, record):
            logged.append(f"{record.levelname}:tensorflow:{record.getMessage()}")

    tf.get_logger().addHandler(Keep())
    tf.get_logger().setLevel(logging.INFO)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if gpus_claimed:
        # TensorFlow's own code, told that each worker has this many GPUs (there are none here):
        # the same cluster and task, in a resolver that reports the GPUs (TFConfigClusterResolver
        # asks the machine). Only what the strategy counts from them is read; nothing runs there.
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            resolver.cluster_spec(), task_type=resolver.task_type, task_id=resolver.task_id,
            num_accelerators={"GPU": gpus_claimed}, rpc_layer="grpc")
        strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
        print(json.dumps({"replicas_in_sync": strategy.num_replicas_in_sync,
                          "worker_devices": list(strategy.extended.worker_devices),
                          "log": logged}))
        return
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    out = {"task": [resolver.task_type, resolver.task_id],
           "cluster": resolver.cluster_spec().as_dict(),
           "replicas_in_sync": strategy.num_replicas_in_sync,
           "worker_devices": list(strategy.extended.worker_devices),
           "shards": {}}
    global_batch = per_replica * strategy.num_replicas_in_sync
    out["global_batch"] = global_batch
    for policy in POLICIES:
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = getattr(
            tf.data.experimental.AutoShardPolicy, policy)
        ds = tf.data.Dataset.range(examples).batch(global_batch).with_options(options)
        try:
            steps = []
            for batch in strategy.experimental_distribute_dataset(ds):
                steps.append([int(x) for v in strategy.experimental_local_results(batch)
                              for x in v.numpy()])
            out["shards"][policy] = steps
        except Exception as e:  # noqa: BLE001 (what TensorFlow says is the answer)
            out["shards"][policy] = f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"
    # model.fit on NumPy arrays, as the single-machine check trains: what it does here.
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss="mse")
    x = np.ones((global_batch * 2, 4), np.float32)
    try:
        model.fit(x, np.zeros((global_batch * 2, 2), np.float32), batch_size=global_batch,
                  epochs=1, verbose=0)
        out["fit"] = "trained"
    except Exception as e:  # noqa: BLE001
        out["fit"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"
    # Two steps of a custom loop (seed note 001's shape), for what the all-reduce logs.
    with strategy.scope():
        w = tf.Variable(tf.ones((4, 2)))
        optimizer = keras.optimizers.SGD(0.1)
    data = tf.data.Dataset.from_tensor_slices(
        np.arange(global_batch * 8, dtype=np.float32).reshape(global_batch * 2, 4) / 100)

    @tf.function
    def step(xb):
        def replica_fn(xb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(tf.matmul(xb, w))) / global_batch
            optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
            return loss
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_fn, args=(xb,)),
                               axis=None)

    logged.append("(the custom loop starts)")
    losses = [float(step(xb)) for xb in strategy.experimental_distribute_dataset(
        data.batch(global_batch))]
    out["loop_losses"] = losses
    out["loop_w"] = [float(v) for v in w.numpy().ravel()]
    out["log"] = logged
    out["keras"] = keras.__version__
    print(json.dumps(out))


def run_workers(tf_configs, gpus_claimed=0, timeout=300):
    """Starts a Python per TF_CONFIG (worker i gets tf_configs[i]); each one's JSON and stderr."""
    procs = []
    for config in tf_configs:
        env = dict(os.environ, TF_CONFIG=json.dumps(config), TF_CPP_MIN_LOG_LEVEL="0",
                   # TensorFlow's C++ says which collective it assigns to each all-reduce.
                   TF_CPP_VMODULE="collective_param_resolver_local=2")
        procs.append(subprocess.Popen(
            [sys.executable, __file__, "--worker", str(PER_REPLICA), str(EXAMPLES),
             str(gpus_claimed)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            if p.returncode != 0:
                raise RuntimeError(f"a TensorFlow worker failed ({p.returncode}):\n{err[-3000:]}")
            results.append((json.loads(out.strip().splitlines()[-1]), err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return results


def collective_types(stderr):
    """The collectives TensorFlow's C++ assigned ("RingReduce"), each once, in order."""
    found = []
    for line in stderr.splitlines():
        if "AssignCollectiveType" in line:
            kind = line.rsplit(" ", 1)[-1].strip()
            if kind not in found:
                found.append(kind)
    return found


def steps_text(per_worker_steps):
    """[[w0's elements of step 0, ...], [w1's ...]] as "w0 [0, 1] w1 [2, 3]; ..."."""
    steps = max(len(s) for s in per_worker_steps)
    return "; ".join(" ".join(f"w{w} {s[k] if k < len(s) else []}"
                              for w, s in enumerate(per_worker_steps)) for k in range(steps))


def check(mirrorlab, row):
    """Adds the multi-worker rows; `mirrorlab(cases)` answers through mirrorlab_answers. Returns
    what TensorFlow logged, for the record."""
    ml_one, ml_two = mirrorlab({"workers": [
        {"workers": WORKERS, "gpus": gpus, "examples": EXAMPLES, "batch_per_replica": PER_REPLICA}
        for gpus in (1, 2)]})["workers"]
    configs = [w["tf_config"] for w in ml_one]
    tf_runs = run_workers(configs)
    tf_out = [r[0] for r in tf_runs]
    two = f"{WORKERS} worker processes on this machine's CPU"
    for w in range(WORKERS):
        row("multi-worker: TF_CONFIG as mirrorlab prints it, read by TensorFlow",
            f"worker {w}: {json.dumps(configs[w])}",
            f"task {tuple(tf_out[w]['task'])}, cluster {tf_out[w]['cluster']}",
            f"task ('worker', {w}), cluster {configs[w]['cluster']}",
            agree=tf_out[w]["task"] == ["worker", w] and
            tf_out[w]["cluster"] == configs[w]["cluster"])
    row("multi-worker: num_replicas_in_sync", f"{two}, 1 device each (TensorFlow: its CPU)",
        tf_out[0]["replicas_in_sync"], ml_one[0]["replicas_in_sync"])
    row("multi-worker: the devices a worker mirrors on", f"{two}, no GPU",
        ", ".join(tf_out[0]["worker_devices"]), "--gpus N virtual GPUs per worker",
        known="on CPU, MultiWorkerMirroredStrategy takes one device per worker, its CPU; "
              "mirrorlab's workers have --gpus N virtual GPUs each, as workers with N GPUs")
    claimed = run_workers(configs, gpus_claimed=2)[0][0]
    row("multi-worker: num_replicas_in_sync", f"{WORKERS} workers that report 2 GPUs each "
        "(TensorFlow's own count from a resolver saying so; nothing runs on them)",
        f"{claimed['replicas_in_sync']} ({', '.join(claimed['worker_devices'])})",
        ml_two[0]["replicas_in_sync"],
        agree=claimed["replicas_in_sync"] == ml_two[0]["replicas_in_sync"])
    row("multi-worker: global batch", f"{PER_REPLICA} per replica, {WORKERS} workers of 1 device",
        tf_out[0]["global_batch"], ml_one[0]["global_batch"])
    ml_text = steps_text([w["steps"] for w in ml_one])
    for policy in POLICIES:
        shards = [t["shards"][policy] for t in tf_out]
        case = (f"Dataset.range({EXAMPLES}).batch({tf_out[0]['global_batch']}), {WORKERS} workers "
                "of 1 device")
        what = f"multi-worker: each worker's elements of each global batch, {policy} sharding"
        if isinstance(shards[0], str):
            row(what, case, shards[0].split("{{")[0] + shards[0].split("}}")[-1].strip(), ml_text,
                known="TensorFlow refused FILE sharding of this in-memory dataset; mirrorlab "
                      "splits the batch, as DATA does")
        elif policy == "OFF":
            row(what, case, steps_text(shards), ml_text,
                known="OFF: TensorFlow gave every worker every element, in batches of the "
                      "global batch / workers; mirrorlab always splits the batch")
        else:
            row(what, case, steps_text(shards), ml_text)
    tf_log = [l for l in tf_out[0]["log"] if "Collective all_reduce" in l]
    row("multi-worker: the all-reduce's log line on CPU", f"{two}, a custom loop",
        tf_log[0] if tf_log else "none", "(none: mirrorlab prints its own line about the "
        "workers, not TensorFlow's)", known="what mirrorlab prints for several workers is not "
        "TensorFlow's log line (group_size = 2 here: every worker's replica)")
    row("multi-worker: the collective TensorFlow assigns on CPU", f"{two}, a custom loop",
        ", ".join(collective_types(tf_runs[0][1])) or "none logged",
        "ring within each worker, then across workers, then back",
        known="mirrorlab's all-reduce of several workers is hierarchical (within, across, "
              "back); TensorFlow, with one CPU per worker, ran one ring over the group of "
              "every worker's replica")
    same_w = all(t["loop_w"] == tf_out[0]["loop_w"] for t in tf_out)
    row("multi-worker: every worker's weights after the custom loop's steps", f"{two}, SGD",
        "equal" if same_w else "differ", "equal (every worker's fingerprint compared after "
        "every step)", agree=same_w)
    row("multi-worker: model.fit on NumPy arrays", f"{two}, Keras {tf_out[0]['keras']}",
        tf_out[0]["fit"], "trains (mirrorlab's fit loop)",
        known="TensorFlow's Keras fails here; its custom loop (strategy.run) trains")
    return {"log": tf_out[0]["log"], "workers": tf_out, "gpus_claimed": claimed}


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        worker_main(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
