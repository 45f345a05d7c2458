"""The models of `mirrorlab train` as a student writes them in Python, for the tests that compare
the two faces (made inside the strategy's scope, compiled as the command's defaults)."""

import mirrorlab as ml


def mlp_with_adam():
    """`--model mlp --optimizer adam`: 784-256-128-10, Adam's defaults, accuracy reported."""
    model = ml.keras.Sequential([
        ml.keras.layers.Flatten(input_shape=(28, 28)),
        ml.keras.layers.Dense(256, activation="relu"),
        ml.keras.layers.Dense(128, activation="relu"),
        ml.keras.layers.Dense(10)])
    model.compile(optimizer=ml.keras.optimizers.Adam(),
                  loss=ml.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model
