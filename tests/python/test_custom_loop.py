"""The custom loop: a data set distributed among the replicas as the core splits it, strategy.run
with model.train_step or a function of the student's, reduce, and one training step taken phase
by phase, every replica's values as NumPy, ending with the weights the whole step gives."""

import os
import tempfile
import unittest

import numpy as np

import mirrorlab as ml

REPLICAS = 3
cpu = ml.config.list_physical_devices("CPU")[0]
ml.config.set_logical_device_configuration(
    cpu, [ml.config.LogicalDeviceConfiguration(memory_limit=256)] * REPLICAS)
(X, Y), _ = ml.datasets.fashion_mnist.load_data()
X, Y = X[:40], Y[:40]  # global batches of 24, then 16 (shards of 6, 6, 4: the core's split)


def make_model(strategy, seed=5):
    ml.keras.utils.set_random_seed(seed)
    with strategy.scope():
        model = ml.keras.Sequential([
            ml.keras.layers.Flatten(input_shape=(28, 28)),
            ml.keras.layers.Dense(16, activation="relu"),
            ml.keras.layers.Dense(10)])
        model.compile(optimizer=ml.keras.optimizers.SGD(0.1),
                      loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def batches(strategy):
    dataset = ml.data.Dataset.from_tensor_slices((X / 255.0, Y)).batch(24)
    return list(strategy.experimental_distribute_dataset(dataset))


class CustomLoop(unittest.TestCase):
    def setUp(self):
        self.strategy = ml.distribute.MirroredStrategy(
            cross_device_ops=ml.distribute.RingAllReduce())

    def test_a_distributed_batch_is_split_as_the_core_splits_it(self):
        first, second = batches(self.strategy)
        self.assertEqual([len(y) for _, y in first.values], [8, 8, 8])
        self.assertEqual(first.global_batch_size, 24)
        self.assertEqual(sum(len(y) for _, y in second.values), 16)
        np.testing.assert_array_equal(np.concatenate([y for _, y in second.values]), Y[24:])
        self.assertIs(self.strategy.experimental_local_results(first), first.values)
        self.assertIn("PerReplica:{\n  0: ", repr(first))
        empty = ml.data.Dataset.from_tensor_slices((X[:0] / 255.0, Y[:0])).batch(24)
        self.assertEqual(list(self.strategy.experimental_distribute_dataset(empty)), [])

    def test_phase_by_phase_ends_with_the_weights_of_the_whole_step(self):
        stepped, whole = make_model(self.strategy), make_model(self.strategy)
        for batch in batches(self.strategy):
            losses = self.strategy.run(whole.train_step, args=(batch,))
            self.assertEqual(len(self.strategy.experimental_local_results(losses)), REPLICAS)
            with ml.distribute.StepByStep(stepped, batch) as step:
                step.forward()
                step.backward()
                step.all_reduce()
                prints = step.update()
            self.assertEqual(len(set(prints.values)), 1)
        for a, b in zip(stepped.get_weights(), whole.get_weights()):
            np.testing.assert_array_equal(a, b)

    def test_every_replicas_values_come_back_between_the_phases(self):
        model = make_model(self.strategy)
        batch = batches(self.strategy)[0]
        step = ml.distribute.StepByStep(model, batch)
        self.assertEqual(step.where, "step 1: after split")
        for (images, labels), (x, y) in zip(step.shards.values, batch.values):
            self.assertEqual(images.shape, (8, 28, 28, 1))
            np.testing.assert_allclose(images[..., 0], x, atol=1e-7)
            np.testing.assert_array_equal(labels, y)
        logits = step.forward()
        self.assertEqual(logits.values[0].shape, (8, 10))
        losses = step.losses.values
        for z, (_, y), loss in zip(logits.values, batch.values, losses):
            z = z.astype(np.float64)
            expected = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1) - \
                z[np.arange(len(y)), y]
            np.testing.assert_allclose(loss, expected, rtol=1e-9)
        before = step.backward()
        self.assertEqual([g.shape for g in before.values[0]], [w.shape for w in model.get_weights()])
        phases = []
        while True:
            try:
                step.all_reduce_step()
            except RuntimeError:
                break
            phases.append(step.all_reduce_phase)
            if len(phases) == 2 * (REPLICAS - 1):
                break
        self.assertEqual(phases, ["reduce-scatter"] * 2 + ["all-gather"] * 2)
        after = step.gradients.values
        for r in range(REPLICAS):
            for a, b in zip(after[r], after[0]):
                np.testing.assert_array_equal(a, b)
        for i, g in enumerate(after[0]):
            np.testing.assert_allclose(g, sum(before.values[r][i] for r in range(REPLICAS)),
                                       rtol=1e-5, atol=1e-7)
        weights_before = step.weights.values[0]
        step.update()
        self.assertTrue(step.ended)
        moved = [not np.array_equal(a, b) for a, b in zip(weights_before, model.get_weights())]
        self.assertTrue(all(moved))

    def test_a_gradient_changed_before_the_all_reduce_is_summed_in_sync(self):
        model = make_model(self.strategy)
        step = ml.distribute.StepByStep(model, batches(self.strategy)[0])
        own = step.backward().values
        step.set_gradients(1, [np.zeros_like(g) for g in own[1]])
        summed = step.all_reduce().values[2]
        for i, g in enumerate(summed):
            np.testing.assert_allclose(g, own[0][i] + own[2][i], rtol=1e-5, atol=1e-7)
        prints = step.update()
        self.assertEqual(len(set(prints.values)), 1)

    def test_a_gradient_changed_after_the_all_reduce_takes_the_replicas_out_of_sync(self):
        model = make_model(self.strategy)
        step = ml.distribute.StepByStep(model, batches(self.strategy)[0])
        summed = step.all_reduce().values[1]
        step.set_gradients(1, [2 * g for g in summed])
        with self.assertRaisesRegex(ml.distribute.ReplicasOutOfSyncError, "1"):
            step.update()
        self.assertTrue(issubclass(ml.distribute.ReplicasOutOfSyncError, RuntimeError))
        # Each replica would score its shard with other weights: refused until set_weights puts
        # every replica back in step (evaluate gave a number of mixed weights).
        # Nor is replica 0's saved as every replica's.
        for call in (lambda: model.evaluate(X / 255.0, Y, batch_size=24, verbose=0),
                     lambda: model.predict(X / 255.0, batch_size=24),
                     lambda: model.save_weights(os.path.join(tempfile.gettempdir(),
                                                             "never.weights.h5"))):
            with self.assertRaisesRegex(ml.distribute.ReplicasOutOfSyncError,
                                        r"^model\.(evaluate|predict|save_weights): replicas out "
                                        r"of sync .* "
                                        r"back in step with model\.set_weights"):
                call()
        model.set_weights(model.get_weights())
        self.assertGreater(model.evaluate(X / 255.0, Y, batch_size=24, verbose=0), 0)
        prints = self.strategy.run(model.train_step, args=(batches(self.strategy)[0],))
        self.assertEqual(len(prints.values), REPLICAS)  # a step in sync again

    def test_a_nan_gradient_ends_the_step_before_the_all_reduce(self):
        model = make_model(self.strategy)
        step = ml.distribute.StepByStep(model, batches(self.strategy)[0])
        grads = step.backward().values[0]
        grads[0].flat[3] = np.nan
        step.set_gradients(0, grads)
        with self.assertRaises(ml.distribute.DivergedError) as caught:
            step.all_reduce()
        self.assertIsInstance(caught.exception, FloatingPointError)
        self.assertTrue(step.ended)

    def test_an_exception_in_the_with_block_ends_the_step_and_goes_on(self):
        model = make_model(self.strategy)
        with self.assertRaisesRegex(ValueError, "the block's own"):
            with ml.distribute.StepByStep(model, batches(self.strategy)[0]) as step:
                step.forward()
                raise ValueError("the block's own")
        self.assertTrue(step.ended)
        model.fit(X, Y, batch_size=24, verbose=0)  # the devices are free

    def test_a_step_that_fails_to_end_leaves_the_blocks_exception_noted(self):
        model = make_model(self.strategy)
        with self.assertRaisesRegex(KeyError, "the block's own") as caught:
            with ml.distribute.StepByStep(model, batches(self.strategy)[0]) as step:
                summed = step.all_reduce().values[1]
                step.set_gradients(1, [2 * g for g in summed])  # out of sync at the update
                raise KeyError("the block's own")
        self.assertTrue(step.ended)
        if hasattr(caught.exception, "__notes__"):
            self.assertIn("ending the StepByStep", caught.exception.__notes__[0])

    def test_what_a_user_calls_says_what_it_does(self):
        step, strategy = ml.distribute.StepByStep, ml.distribute.MirroredStrategy
        for thing in (step.ended, step.local_replicas, strategy.extended,
                      ml.distribute.ReplicaContext.num_replicas_in_sync):
            with self.subTest(thing=thing):
                self.assertTrue((thing.__doc__ or "").strip())

    def test_wrong_uses_say_what_to_do(self):
        model = make_model(self.strategy)
        batch = batches(self.strategy)[0]
        step = ml.distribute.StepByStep(model, batch)
        step.backward()
        with self.assertRaisesRegex(RuntimeError, "past it"):
            step.forward()
        with self.assertRaisesRegex(RuntimeError, "end it first"):
            model.fit(X, Y, batch_size=24, verbose=0)
        with self.assertRaisesRegex(RuntimeError, "end it first"):
            ml.distribute.StepByStep(model, batch)
        with self.assertRaisesRegex(ValueError, "the replicas are 0 to 2"):
            step.set_gradients(3, [])
        with self.assertRaisesRegex(ValueError, "give 4 arrays"):
            step.set_gradients(0, [np.zeros(3)])
        step.finish()
        with self.assertRaisesRegex(RuntimeError, "has ended"):
            step.gradients
        other = ml.distribute.MirroredStrategy(devices=["/gpu:0", "/gpu:1"])
        with self.assertRaisesRegex(ValueError, "distributed by"):
            ml.distribute.StepByStep(model, batches(other)[0])
        data = ml.data.Dataset.from_tensor_slices((X, Y))
        with self.assertRaisesRegex(ValueError, "batch the data set first"):
            self.strategy.experimental_distribute_dataset(data)
        with self.assertRaisesRegex(ValueError, "does not split over 3 replicas"):
            self.strategy.experimental_distribute_dataset(data.batch(10))
        with self.assertRaises(TypeError):
            self.strategy.experimental_distribute_dataset((X, Y))
        with self.assertRaises(TypeError):
            ml.distribute.StepByStep(model, (X, Y))

    def test_a_held_step_holds_every_models_devices_and_says_so(self):
        other = make_model(self.strategy)
        model = make_model(self.strategy)
        step = ml.distribute.StepByStep(model, batches(self.strategy)[0])
        step.backward()
        for attempt in (lambda: make_model(self.strategy),
                        lambda: other.fit(X, Y, batch_size=24, verbose=0),
                        lambda: other.evaluate(X, Y, batch_size=24, verbose=0),
                        lambda: ml.distribute.StepByStep(other, batches(self.strategy)[0])):
            with self.assertRaisesRegex(RuntimeError, r"while a StepByStep holds the devices "
                                                      r"between its phases \(step 1: after "
                                                      r"backward\): end it first"):
                attempt()
        del other  # its strategy ends once the step has (its end waits for the devices)
        self.assertEqual(step.where, "step 1: after backward")
        step.update()
        make_model(self.strategy).fit(X, Y, batch_size=24, verbose=0)

    def test_run_gives_each_replica_its_shard_and_reduce_combines_them(self):
        batch = batches(self.strategy)[1]  # 16 examples: 6, 6, 4

        def count(shard):
            context = ml.distribute.get_replica_context()
            return np.array([context.replica_id_in_sync_group, len(shard[1])], dtype=float)

        counts = self.strategy.run(count, args=(batch,))
        self.assertEqual([int(c[0]) for c in counts.values], [0, 1, 2])
        self.assertIsNone(ml.distribute.get_replica_context())
        np.testing.assert_array_equal(self.strategy.reduce("SUM", counts), [3, 16])
        np.testing.assert_array_equal(
            self.strategy.reduce(ml.distribute.ReduceOp.MEAN, counts), [1, 16 / 3])
        labels = self.strategy.run(lambda shard: shard[1].astype(float), args=(batch,))
        self.assertAlmostEqual(float(self.strategy.reduce("MEAN", labels, axis=0)),
                               float(Y[24:].mean()))
        with self.assertRaisesRegex(ValueError, "ReduceOp.SUM or ReduceOp.MEAN"):
            self.strategy.reduce("MAX", counts)
        # One value per replica, or none: a PerReplica short of values was summed as it was.
        with self.assertRaisesRegex(ValueError, "holds 2 values, but the strategy has 3 replicas"):
            self.strategy.reduce("SUM", ml.distribute.PerReplica(counts.values[:2]))
        # A value of no replica: its sum over 3 replicas is refused, as TensorFlow refuses it
        # (ValueError: A non-DistributedValues value ... cannot be reduced with the given reduce
        # op ReduceOp.SUM); its mean is itself.
        with self.assertRaisesRegex(ValueError, "non-DistributedValues value 2.5 cannot be "
                                    "reduced with ReduceOp.SUM"):
            self.strategy.reduce("SUM", 2.5)
        self.assertEqual(self.strategy.reduce("MEAN", 2.5), 2.5)

    def test_train_steps_losses_reduce_to_the_batchs_loss(self):
        model = make_model(self.strategy)
        batch = batches(self.strategy)[0]
        step = ml.distribute.StepByStep(model, batch)
        step.forward()
        mean_of_means = np.mean([l.mean() for l in step.losses.values])
        step.finish()
        again = make_model(self.strategy)
        losses = self.strategy.run(again.train_step, args=(batch,))
        self.assertAlmostEqual(float(self.strategy.reduce("SUM", losses)), mean_of_means, places=9)

    def test_global_batch_size_scales_the_loss_as_compute_average_loss(self):
        batch = batches(self.strategy)[1]  # 16 examples of a data set batched by 24: 6, 6, 4
        self.assertEqual([len(y) for _, y in batch.values], [6, 6, 4])
        grads = {}
        for gb in (None, 24, 16):
            model = make_model(self.strategy)
            step = ml.distribute.StepByStep(model, batch, global_batch_size=gb)
            step.forward()
            shares = self.strategy.run(
                lambda losses: ml.nn.compute_average_loss(losses, global_batch_size=gb),
                args=(step.losses,))
            grads[gb] = step.backward().values[0]
            step.finish()
            losses = self.strategy.run(make_model(self.strategy).train_step, args=(batch, gb))
            self.assertAlmostEqual(float(self.strategy.reduce("SUM", losses)),
                                   float(self.strategy.reduce("SUM", shares)), places=9)
        self.assertEqual(step.loss_scaling, "batch-mean")
        # Replica 0's 6 examples: its mean over 3 replicas scales by 1/18; the data set's global
        # batch by 1/24 (0.75 of it), this batch's 16 examples by 1/16 (1.125 of it).
        for a, b, c in zip(grads[None], grads[24], grads[16]):
            np.testing.assert_allclose(b, 0.75 * a, rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(c, 1.125 * a, rtol=1e-5, atol=1e-7)
        with self.assertRaisesRegex(ValueError, r"data set's global batch \(24\) or by this "
                                                r"batch's examples \(16\)"):
            ml.distribute.StepByStep(make_model(self.strategy), batch, global_batch_size=32)
        self.assertAlmostEqual(ml.nn.compute_average_loss([1.0, 2.0, 3.0], 6), 1.0)
        with self.strategy.scope():  # without global_batch_size: the mean over the 3 replicas
            self.assertAlmostEqual(ml.nn.compute_average_loss([1.0, 2.0, 3.0]), 2.0 / 3)


if __name__ == "__main__":
    unittest.main()
