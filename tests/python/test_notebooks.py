"""The notebooks in notebooks/ run headless in a real Jupyter kernel (nbclient, ipykernel), each
cell in order, and say what they teach: the devices made, the replicas in sync, the accuracy
reached, the error text TensorFlow gives, the plots drawn."""

import os
import unittest

try:
    import nbformat
    from nbclient import NotebookClient
    MISSING = ""
except ImportError as e:  # scripts/setup installs them
    MISSING = f"{e.name} is missing: apt-get install python3-nbclient python3-ipykernel " \
              "python3-matplotlib"

os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # the kernel's debugger notes
NOTEBOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "notebooks")


def run(name):
    """The notebook's cells after a run: (all text printed, the number of images drawn)."""
    path = os.path.join(NOTEBOOKS, name)
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": NOTEBOOKS}}).execute()
    text, images = [], 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                text.append(output["text"])
            elif output.get("output_type") in ("display_data", "execute_result"):
                images += "image/png" in output.get("data", {})
                text.append(output.get("data", {}).get("text/plain", ""))
    return "".join(text), images


@unittest.skipIf(MISSING, MISSING)
class Notebooks(unittest.TestCase):
    def test_two_logical_gpus_and_model_fit(self):
        text, _ = run("two_logical_gpus.ipynb")
        self.assertRegex(text, r"1 Physical (CPU|GPU), 2 Logical GPUs")
        self.assertIn("num_replicas_in_sync: 2", text)
        self.assertIn("Using MirroredStrategy with devices ('/job:localhost/replica:0/task:0/"
                      "device:GPU:0', '/job:localhost/replica:0/task:0/device:GPU:1')", text)
        self.assertIn("Epoch 2/2", text)
        accuracy = float(text.split("test accuracy: ")[1].split()[0])
        self.assertGreater(accuracy, 0.75)
        self.assertIn("Virtual devices cannot be modified after being initialized", text)

    def test_step_by_step(self):
        text, images = run("step_by_step.ipynb")
        self.assertIn("num_replicas_in_sync: 4", text)
        self.assertIn("step 1: after split", text)
        self.assertIn("all-reduce step 6 of 6 (all-gather)", text)
        self.assertIn("in sync: True", text)
        self.assertIn("ReplicasOutOfSyncError:", text)
        self.assertIn("evaluate refused: model.evaluate: replicas out of sync after step 2", text)
        self.assertIn("loss after set_weights: ", text)
        self.assertIn("predicted: [", text)
        first = float(text.split("first step's loss ")[1].split(",")[0])
        last = float(text.split(", last ")[1].split()[0])
        self.assertLess(last, first)
        self.assertGreaterEqual(images, 5)

    def test_loss_scaling(self):
        text, images = run("loss_scaling.ipynb")
        self.assertIn("shards: [6, 6, 4]", text)
        off = {gb: float(text.split(f"global_batch_size={gb}:")[1].split("% off")[0].split()[-1])
               for gb in ("None", "24", "16")}
        self.assertLess(off["16"], 0.01)  # this batch's examples: one device's gradient
        self.assertAlmostEqual(off["24"], 100 / 3, places=1)  # 16/24 of it
        self.assertGreater(off["None"], 1)  # model.fit's: the short replica weighs too much
        self.assertEqual(images, 1)

    def test_fit_and_custom_loop(self):
        text, images = run("fit_and_custom_loop.ipynb")
        self.assertIn("replicas: 2 and 3", text)
        self.assertIn("16/16", text)  # model.fit's epoch of 1000 on 2 x 32
        if not os.environ.get("DISPLAY"):  # ctest's: the window says why it did not open
            self.assertIn("mirrorlab.gui.watch opened no window: no display", text)
        self.assertIn("steps per epoch: 16; the last batch: 40 = 20 + 20", text)
        full, short = [l for l in text.splitlines() if l.startswith("shards [")]
        self.assertIn("shards [16, 16, 16]", full)
        self.assertNotIn("nan", full)
        # The note's loop on the empty replica: a nan loss and metric, a gradient of 0, in sync.
        self.assertRegex(short, r"^shards \[1, 1, 0\]: replica losses [\d.]+, [\d.]+, nan; "
                                r"metric \(their mean\) nan; gradient norms [\d.]+, [\d.]+, "
                                r"0\.0000; in sync: True$")
        self.assertIn("every weight finite after the epoch: True", text)
        weight = float(text.split("summed gradient = ")[1].split()[0])
        self.assertAlmostEqual(weight, 2 / 3, places=4)
        self.assertEqual(images, 1)


if __name__ == "__main__":
    unittest.main()
