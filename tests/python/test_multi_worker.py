"""MultiWorkerMirroredStrategy: two workers started by mpirun (with TF_CONFIG or without) train
the MLP as one, ending with the same weights, and with the losses `mpirun -np 2 mirrorlab train`
reports for the same run; the custom loop's shards and reduce span both workers. Without mpirun,
TF_CONFIG naming two workers says how to start them."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

MPIEXEC = os.environ.get("MIRRORLAB_MPIEXEC", "")
MIRRORLAB = os.path.join(os.environ.get("MIRRORLAB_BINARY_DIR", ""), "app", "mirrorlab")
HERE = os.path.dirname(os.path.abspath(__file__))


def workers(*flags):
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "worker")
        run = subprocess.run([MPIEXEC, "--oversubscribe", "-np", "2", sys.executable,
                              os.path.join(HERE, "multi_worker_fit.py"), out, *flags],
                             capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            raise AssertionError(f"mpirun failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
        results = []
        for r in range(2):
            with open(f"{out}.{r}") as f:
                results.append(json.load(f))
        return results, run.stderr


@unittest.skipUnless(MPIEXEC, "no mpirun in this build (Debian: openmpi-bin, libopenmpi-dev)")
class MultiWorker(unittest.TestCase):
    def test_two_workers_train_as_one_and_as_the_command_line(self):
        (w0, w1), log = workers()
        self.assertEqual((w0["workers"], w0["replicas"]), (2, 2))
        self.assertEqual(w0["weights"], w1["weights"])
        self.assertEqual(w0["after_step"], w1["after_step"])
        self.assertIn("TF_CONFIG='{\"cluster\":{\"worker\":", log)
        with tempfile.TemporaryDirectory() as folder:
            history = os.path.join(folder, "history.json")
            subprocess.run([MPIEXEC, "--oversubscribe", "-np", "2", MIRRORLAB, "train",
                            "--model", "mlp", "--gpus", "1", "--batch-per-replica", "32",
                            "--train-examples", "1024", "--epochs", "1", "--seed", "7",
                            "--optimizer", "adam", "--history", history],
                           check=True, capture_output=True, timeout=300)
            with open(history) as f:
                cli = json.load(f)
        epochs = cli["epochs"] if "epochs" in cli else cli
        self.assertEqual(w0["loss"][0], epochs[0]["loss"], cli)
        self.assertEqual(w0["val_loss"][0], epochs[0]["val_loss"], cli)

    def test_a_callbacks_stop_on_one_worker_stops_every_worker(self):
        (w0, w1), _ = workers()
        self.assertEqual((w0["stopped_epochs"], w1["stopped_epochs"]), (1, 1))
        self.assertTrue(all(w0["checkpoint"]) and all(w1["checkpoint"]))

    def test_the_custom_loop_spans_the_workers(self):
        (w0, w1), _ = workers("--tf-config")
        self.assertEqual([len(s) for s in w0["shard_labels"] + w1["shard_labels"]], [4, 4])
        self.assertNotEqual(w0["shard_labels"], w1["shard_labels"])
        self.assertEqual(w0["label_sum"], w0["expected_label_sum"])
        self.assertEqual(w1["label_sum"], w0["label_sum"])
        self.assertAlmostEqual(w0["step_loss"], w1["step_loss"], places=12)
        # model.predict: every row on both workers, each worker's shards' and the other's.
        self.assertEqual(w0["predicted"], w1["predicted"])
        np.testing.assert_allclose(w0["predicted"], w0["forward"], rtol=1e-4, atol=1e-5)

    def test_a_second_strategy_in_a_process_uses_its_workers_and_ends_once(self):
        # A notebook's cell run again makes a second strategy: each made its own workers and
        # ended MPI at exit, the second end aborting the job ("MPI_Barrier ... after
        # MPI_FINALIZE"). The process's workers are made once and serve both.
        # Each rank writes its sum to a file of its own: mpirun interleaves the ranks' output.
        program = ("import sys, mirrorlab as ml, numpy as np\n"
                   "first = ml.distribute.MultiWorkerMirroredStrategy()\n"
                   "again = ml.distribute.MultiWorkerMirroredStrategy(worker_timeout=30)\n"
                   "assert again._workers is first._workers\n"
                   "total = again._workers.all_reduce_sum(np.array([1.0]))[0]\n"
                   "with open(f'{sys.argv[1]}/sum.{again._workers.rank}', 'w') as f:\n"
                   "    f.write(repr(float(total)))\n")
        with tempfile.TemporaryDirectory() as folder:
            run = subprocess.run([MPIEXEC, "--oversubscribe", "-np", "2", sys.executable, "-c",
                                  program, folder], capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            for rank in range(2):
                with open(os.path.join(folder, f"sum.{rank}")) as f:
                    self.assertEqual(f.read(), "2.0")
        self.assertNotIn("MPI_FINALIZE", run.stderr)
        self.assertIn("which they keep (worker_timeout=30 is not used)", run.stderr)

    def test_tf_config_naming_two_workers_without_mpirun_says_how_to_start_them(self):
        env = dict(os.environ, TF_CONFIG=json.dumps(
            {"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 0}}))
        for name in ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK"):
            env.pop(name, None)
        run = subprocess.run(
            [sys.executable, "-c", "import mirrorlab as ml; ml.distribute.MultiWorkerMirroredStrategy()"],
            capture_output=True, text=True, env=env)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("ValueError: TF_CONFIG names 2 workers, but this process was not started "
                      "by mpirun", run.stderr)
        self.assertIn("mpirun -np 2 python3", run.stderr)
        env["TF_CONFIG"] = json.dumps({"cluster": {"worker": ["a:1"]},
                                       "task": {"type": "worker", "index": 3}})
        run = subprocess.run(
            [sys.executable, "-c", "import mirrorlab as ml; ml.distribute.MultiWorkerMirroredStrategy()"],
            capture_output=True, text=True, env=env)
        self.assertIn("ValueError: TF_CONFIG's task index 3 is not one of its 1 workers (0 to 0)",
                      run.stderr)
        for timeout in ("-1", "0", "float('nan')", "float('inf')"):
            run = subprocess.run(
                [sys.executable, "-c", "import mirrorlab as ml; "
                 f"ml.distribute.MultiWorkerMirroredStrategy(worker_timeout={timeout})"],
                capture_output=True, text=True, env=env)
            self.assertIn("ValueError: worker_timeout=", run.stderr)
            self.assertIn("a number above 0", run.stderr)


if __name__ == "__main__":
    unittest.main()
