"""mirrorlab.gui.watch: the window on a run trained from Python. Where no display is, it says why
and the notebook goes on; where one is (ctest runs this file under Xvfb), the window follows
model.fit step by step, takes pictures, never changes the run's numbers, and closes on request
or with the interpreter."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest

import numpy as np

import mirrorlab as ml

cpu = ml.config.list_physical_devices("CPU")[0]
ml.config.set_logical_device_configuration(
    cpu, [ml.config.LogicalDeviceConfiguration(memory_limit=256)] * 2)
(X, Y), _ = ml.datasets.fashion_mnist.load_data()
X, Y = X[:640] / 255.0, Y[:640]  # 10 global batches of 64
HAS_DISPLAY = bool(os.environ.get("DISPLAY"))
STRATEGY = ml.distribute.MirroredStrategy()


def make_model(strategy=STRATEGY, seed=4, optimizer="adam"):
    ml.keras.utils.set_random_seed(seed)
    with strategy.scope():
        model = ml.keras.Sequential([
            ml.keras.layers.Flatten(input_shape=(28, 28)),
            ml.keras.layers.Dense(32, activation="relu"),
            ml.keras.layers.Dense(10)])
        model.compile(optimizer=optimizer,
                      loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    return model


def run_python(code, env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)


class WhatIsWatched(unittest.TestCase):
    def test_a_strategy_without_a_built_model_or_another_object_is_refused(self):
        strategy = ml.distribute.MirroredStrategy()
        with self.assertRaisesRegex(ValueError, "no model built yet.*gui.watch\\(model\\)"):
            ml.gui.watch(strategy)
        with self.assertRaisesRegex(TypeError, "MirroredStrategy.*Sequential.*not int"):
            ml.gui.watch(42)

    @unittest.skipUnless(ml._mirrorlab._has_window, "built without the window")
    def test_a_window_of_no_sensible_size_is_refused_before_any_opens(self):
        model = make_model()
        with self.assertRaisesRegex(ValueError, "between 320x240"):
            ml.gui.watch(model, width=100, height=50)
        with self.assertRaisesRegex(ValueError, "font_scale"):
            ml.gui.watch(model, font_scale=0)
        with self.assertRaisesRegex(ValueError, "^panel='Nowhere': no such panel; the panels "
                                                "are Devices, "):
            ml.gui.watch(model, panel="Nowhere")


class WithoutADisplay(unittest.TestCase):
    def test_it_warns_why_and_the_run_goes_on(self):
        env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
        result = run_python("""
            import warnings
            import mirrorlab as ml
            (x, y), _ = ml.datasets.fashion_mnist.load_data()
            strategy = ml.distribute.MirroredStrategy()
            with strategy.scope():
                model = ml.keras.Sequential([ml.keras.layers.Flatten(input_shape=(28, 28)),
                                             ml.keras.layers.Dense(10)])
                model.compile(optimizer="adam", loss="sparse_categorical_crossentropy"
                              if False else ml.keras.losses.SparseCategoricalCrossentropy(
                                  from_logits=True))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                w = ml.gui.watch(strategy)
            print("WARNED", [str(c.message) for c in caught if c.category is RuntimeWarning])
            print("OPENED", w.opened, w.is_open)
            try:
                w.screenshot("never.png")
            except RuntimeError as e:
                print("PICTURE", e)
            w.close()
            h = model.fit(x[:256] / 255.0, y[:256], batch_size=64, epochs=1, verbose=0)
            print("TRAINED", len(h.history["loss"]))
            """, env)
        self.assertEqual(result.returncode, 0, result.stderr)
        out = result.stdout
        if ml._mirrorlab._has_window:
            self.assertRegex(out, r"WARNED \['mirrorlab.gui.watch opened no window: no display to "
                                  r"open it on \(.*DISPLAY.*\): run Python where a screen is, or "
                                  r"under a virtual one \(xvfb-run\)")
        else:
            self.assertIn("built without its window", out)
        self.assertIn("OPENED False False", out)
        self.assertIn("PICTURE no window to take a picture of", out)
        self.assertIn("TRAINED 1", out)


@unittest.skipUnless(HAS_DISPLAY and ml._mirrorlab._has_window,
                     "needs a display (ctest runs this under Xvfb) and the window built in")
class WithADisplay(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.addCleanup(self.folder.cleanup)

    def path(self, name):
        return os.path.join(self.folder.name, name)

    def test_the_window_follows_the_fit_and_takes_a_picture(self):
        model = make_model()
        with ml.gui.watch(STRATEGY, width=1280, height=720, font_scale=1.5,
                          report=self.path("report.json")) as window:
            self.assertTrue(window.opened)
            self.assertTrue(window.is_open)
            model.fit(X, Y, batch_size=64, epochs=2, verbose=0)  # 2 x 10 steps
            picture = window.screenshot(self.path("fit.png"))
        self.assertFalse(window.is_open)
        with open(picture, "rb") as f:
            head = f.read(24)
        self.assertEqual(head[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual(int.from_bytes(head[16:20], "big"), 1280)
        self.assertEqual(int.from_bytes(head[20:24], "big"), 720)
        with open(self.path("report.json")) as f:
            report = json.load(f)
        panels, words = report["panels"], report["words"]
        self.assertEqual(panels["Training"]["points"], 20)  # every step of the fit
        self.assertEqual(panels["Devices"]["rows"], 2)
        self.assertEqual(panels["Batch split"]["thumbnails"], 64)  # the last step's pictures
        self.assertEqual(panels["Controls"]["buttons"], 0)  # nothing to train it with
        self.assertGreater(panels["Timeline"]["spans"], 0)
        controls = " ".join(words["Controls"].split())  # as read, not as wrapped
        self.assertIn("waiting for Python", controls)
        self.assertIn("20 steps done (epoch 2/2, 10/10)", controls)
        self.assertIn("Global batch 64 = 32 x 2 replicas", controls)  # the fit's batch_size
        self.assertIn("this window only watches", controls)
        # The timing model knows no such model: it says so rather than predict another's step.
        compare = " ".join(words["Compare"].split())
        self.assertIn("Measuring the algorithms trains a model of each on these devices", compare)

    def test_a_custom_loops_steps_and_a_step_held_between_its_phases(self):
        model = make_model()
        batches = iter(STRATEGY.experimental_distribute_dataset(
            ml.data.Dataset.from_tensor_slices((X, Y)).batch(64)))
        with ml.gui.watch(model, width=1280, height=720, report=self.path("loop.json")) as window:
            for _ in range(3):
                STRATEGY.run(model.train_step, args=(next(batches),))
            step = ml.distribute.StepByStep(model, next(batches))
            step.backward()
            step.all_reduce_step()
            window.screenshot(self.path("held.png"))  # drawn while Python holds the step
            step.finish()
        with open(self.path("loop.json")) as f:
            words = {k: " ".join(v.split()) for k, v in json.load(f)["words"].items()}
        self.assertIn("4 steps done", words["Controls"])
        self.assertIn("Global batch 64 = 32 x 2 replicas", words["Controls"])
        self.assertIn("all-reduce step 1 of 2", words["Controls"])  # the held step's moments
        self.assertIn("4 steps so far. The curves draw the steps model.fit takes", words["Training"])
        self.assertGreater(os.path.getsize(self.path("held.png")), 10000)

    def test_watching_changes_nothing_and_closing_mid_fit_leaves_the_run_alone(self):
        alone = make_model(seed=9)
        alone.fit(X, Y, batch_size=64, epochs=3, verbose=0)
        watched = make_model(seed=9)
        window = ml.gui.watch(watched, width=800, height=600)
        closer = threading.Timer(0.05, window.close)  # closed by the user, as it were, mid-fit
        closer.start()
        watched.fit(X, Y, batch_size=64, epochs=3, verbose=0)
        closer.join()
        self.assertFalse(window.is_open)
        for a, b in zip(alone.get_weights(), watched.get_weights()):
            np.testing.assert_array_equal(a, b)
        with self.assertRaisesRegex(RuntimeError, "window is closed"):
            window.screenshot(self.path("late.png"))
        # Opened again, it shows the run from its first watched step on.
        with ml.gui.watch(watched, width=800, height=600, report=self.path("again.json")):
            watched.fit(X, Y, batch_size=64, epochs=1, verbose=0)
        with open(self.path("again.json")) as f:
            self.assertEqual(json.load(f)["panels"]["Training"]["points"], 40)

    def test_a_weights_file_loaded_changes_the_learning_rate_shown(self):
        # Keras' weights file holds the optimizer's learning rate: loaded, it is the run's, and a
        # window open on the run says so (it showed the one the model was compiled with).
        writer = make_model(seed=5, optimizer=ml.keras.optimizers.Adam(0.002))
        writer.fit(X[:64], Y[:64], batch_size=64, epochs=1, verbose=0)  # the slots made
        writer.save_weights(self.path("writer.weights.h5"))
        model = make_model()
        model.fit(X[:64], Y[:64], batch_size=64, epochs=1, verbose=0)
        with ml.gui.watch(model, width=800, height=600, report=self.path("before.json")) as window:
            window.screenshot(self.path("before.png"))  # a frame drawn
        with ml.gui.watch(model, width=800, height=600, report=self.path("open.json")) as window:
            window.screenshot(self.path("open.png"))
            model.load_weights(self.path("writer.weights.h5"))
            window.screenshot(self.path("loaded.png"))
        with ml.gui.watch(model, width=800, height=600, report=self.path("again.json")) as window:
            window.screenshot(self.path("again.png"))  # the run's watched session, kept
        for name, rate in (("before", "0.001"), ("open", "0.002"), ("again", "0.002")):
            with open(self.path(name + ".json")) as f:
                words = json.load(f)["words"]
            controls = " ".join(words["Controls"].split())
            self.assertIn("Optimizer: adam, learning rate " + rate, controls, name)
            # Opened after the fit, it shows the fit's batch (batch_size=64 on 2 replicas).
            self.assertIn("Global batch 64 = 32 x 2 replicas", controls, name)
        # No step watched yet: the step's panels say when one comes (no keys: Python drives).
        self.assertIn("The all-reduce appears here from the next step Python takes while this "
                      "window watches.", " ".join(words["All-reduce"].split()))

    def test_a_window_opened_after_a_custom_loop_shows_its_batch(self):
        model = make_model()
        batches = iter(STRATEGY.experimental_distribute_dataset(
            ml.data.Dataset.from_tensor_slices((X, Y)).batch(32)))
        STRATEGY.run(model.train_step, args=(next(batches),))
        with ml.gui.watch(model, width=800, height=600, report=self.path("after.json")) as window:
            window.screenshot(self.path("after.png"))  # a frame drawn
        with open(self.path("after.json")) as f:
            controls = " ".join(json.load(f)["words"]["Controls"].split())
        self.assertIn("1 step done", controls)
        self.assertIn("Global batch 32 = 16 x 2 replicas", controls)  # not the settings' 64 x 2

    def test_without_a_size_the_window_fits_the_screen(self):
        # ctest's virtual screen is 1280x800: the default 1600x1000 would not fit it.
        def size_of(picture):
            with open(picture, "rb") as f:
                head = f.read(24)
            return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        model = make_model()
        with ml.gui.watch(model) as window:
            self.assertEqual(size_of(window.screenshot(self.path("fitted.png"))), (1280, 800))
        with ml.gui.watch(model, width=900) as window:  # one given: the other is 1000
            self.assertEqual(size_of(window.screenshot(self.path("asked.png"))), (900, 1000))

    def test_one_window_at_a_time_and_a_picture_that_cannot_be_written(self):
        model = make_model()
        ml.gui.watch(model, width=800, height=600)  # kept open though nobody holds it
        (window,) = ml.gui._open
        with window:
            self.assertTrue(window.is_open)
            with self.assertRaisesRegex(RuntimeError, "open already: close it"):
                ml.gui.watch(make_model(seed=2))
            with self.assertRaisesRegex(RuntimeError,
                                        "^the picture was not written: /no/such/folder/x.png"):
                window.screenshot("/no/such/folder/x.png")
            # Why, in the exception (a notebook sees no C stderr), and the link left alone.
            target = self.path("target.txt")
            with open(target, "w") as f:
                f.write("kept")
            os.symlink(target, self.path("link.png"))
            with self.assertRaisesRegex(RuntimeError, "link.png.*is a symbolic link"):
                window.screenshot(self.path("link.png"))
            with open(target) as f:
                self.assertEqual(f.read(), "kept")
            # The picture its name asks for: .jpg a JPEG; another ending refused, nothing written.
            with open(window.screenshot(self.path("shot.jpg")), "rb") as f:
                self.assertEqual(f.read(3), b"\xff\xd8\xff")
            with self.assertRaisesRegex(ValueError, "shot.gif: mirrorlab saves pictures as PNG or "
                                        "JPEG: end the name in .png or .jpg"):
                window.screenshot(self.path("shot.gif"))
            self.assertFalse(os.path.exists(self.path("shot.gif")))
            self.assertTrue(window.is_open)
        # A report that could not be written as the window closes is said as it opens.
        with self.assertRaisesRegex(ValueError, "^report: .*link.png.*is a symbolic link"):
            ml.gui.watch(make_model(seed=3), width=800, height=600,
                         report=self.path("link.png"))

    def test_in_a_jupyter_kernel_as_a_notebook_runs_it(self):
        try:
            import nbformat
            from nbclient import NotebookClient
        except ImportError as e:
            self.skipTest(f"{e.name} is missing: apt-get install python3-nbclient python3-ipykernel")
        picture = self.path("notebook.png")
        cells = [
            "import mirrorlab as ml\n"
            "(x, y), _ = ml.datasets.fashion_mnist.load_data()\n"
            "strategy = ml.distribute.MirroredStrategy()\n"
            "with strategy.scope():\n"
            "    model = ml.keras.Sequential([ml.keras.layers.Flatten(input_shape=(28, 28)),\n"
            "                                 ml.keras.layers.Dense(10)])\n"
            "    model.compile(optimizer='adam', loss=ml.keras.losses."
            "SparseCategoricalCrossentropy(from_logits=True))",
            "window = ml.gui.watch(strategy, width=1024, height=640)\nprint('OPEN', window.is_open)",
            "model.fit(x[:512] / 255.0, y[:512], batch_size=64, epochs=2, verbose=0)\n"
            # "PICTURE <path>" in one write (print writes each argument, the space and the end
            # apart): the window's own "Screenshot written to ..." reaches the kernel's output
            # from another thread, and once came between them.
            f"shot = window.screenshot({picture!r})\nprint(f'PICTURE {{shot}}')",
            "window.close()\nprint('CLOSED', not window.is_open)",
        ]
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
        text = "".join(o.get("text", "") for c in notebook.cells for o in c.get("outputs", []))
        self.assertIn("OPEN True", text)
        self.assertIn(f"PICTURE {picture}", text)
        self.assertIn("CLOSED True", text)
        self.assertTrue(os.path.getsize(picture) > 10000)

    def test_the_interpreter_closes_an_open_window_as_it_ends(self):
        result = run_python("""
            import mirrorlab as ml
            (x, y), _ = ml.datasets.fashion_mnist.load_data()
            with ml.distribute.MirroredStrategy().scope():
                model = ml.keras.Sequential([ml.keras.layers.Flatten(input_shape=(28, 28)),
                                             ml.keras.layers.Dense(10)])
                model.compile(optimizer="adam",
                              loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            window = ml.gui.watch(model, width=640, height=480)
            model.fit(x[:256] / 255.0, y[:256], batch_size=64, epochs=1, verbose=0)
            print("OPEN", window.is_open, repr(window._window.error))
            """, dict(os.environ))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("OPEN True", result.stdout)


if __name__ == "__main__":
    unittest.main()
