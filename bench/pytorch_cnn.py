#!/usr/bin/env python3
"""PyTorch baseline for `mirrorlab train --backend cuda`: the same model, batch and data, on the
same GPU, in images per second.

The model is mirrorlab's "cnn" (Keras' example CNN): Conv2D(32, 3x3) -> ReLU -> MaxPool 2x2 ->
Flatten -> Dense(128) -> ReLU -> Dense(10), softmax cross-entropy averaged over the batch, Adam
(lr 1e-3, eps 1e-7 as Keras), float32 throughout. "mlp" is 784-256-128-10.

To compare like with like, by default each step does what a mirrorlab step does:
  - the batch is gathered on the host from the uint8 images and copied to the GPU (pinned memory,
    asynchronous copy), as mirrorlab's "split" phase does; --data-on device keeps the whole
    training set on the GPU instead (faster for PyTorch, and says so in the output);
  - the loss is read back to the host once per step (`loss.item()`), as mirrorlab reads its loss
    statistics once per step;
  - TF32 is off for matrix products and convolutions (true float32, as mirrorlab's cuBLAS calls).
Each repeat times --steps steps after --warmup steps, with the GPU synchronised around the timed
loop; the median over --repeats is reported, with the spread.

  python3 bench/pytorch_cnn.py --data /usr/share/datasets/fashion-mnist --batch 64
  python3 bench/pytorch_cnn.py --json result.json     # also writes the numbers as JSON

Needs only PyTorch and the gzipped IDX files (Debian's dataset-fashion-mnist, or the copy that
`scripts/gpu-check --pack` carries).
"""
import argparse
import gzip
import json
import os
import statistics
import struct
import sys
import time


def read_idx(path):
    """Reads a gzipped IDX file: returns (dims, raw bytes of the data)."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    body = data[4 + 4 * ndim:]
    count = 1
    for d in dims:
        count *= d
    if len(body) != count:
        raise ValueError(f"{path}: expected {count} bytes of data for dims {dims}, got {len(body)}")
    return dims, body


def load_training_set(data_dir):
    images_path = os.path.join(data_dir, "train-images-idx3-ubyte.gz")
    labels_path = os.path.join(data_dir, "train-labels-idx1-ubyte.gz")
    for p in (images_path, labels_path):
        if not os.path.exists(p):
            sys.exit(f"pytorch_cnn: {p} not found: install dataset-fashion-mnist or pass --data DIR")
    image_dims, images = read_idx(images_path)
    label_dims, labels = read_idx(labels_path)
    if len(image_dims) != 3 or label_dims[0] != image_dims[0]:
        sys.exit(f"pytorch_cnn: images {image_dims} and labels {label_dims} do not match")
    return image_dims, images, labels


def build_model(torch, kind):
    nn = torch.nn
    if kind == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(32 * 13 * 13, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
        nn.Linear(128, 10))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                        help="folder with Fashion-MNIST's gzipped IDX files")
    parser.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    parser.add_argument("--batch", type=int, default=64, help="examples per step (one GPU)")
    parser.add_argument("--steps", type=int, default=400, help="timed steps per repeat")
    parser.add_argument("--warmup", type=int, default=50, help="untimed steps before each repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cuda", help="cuda, cuda:1, or cpu")
    parser.add_argument("--data-on", choices=["host", "device"], default="host",
                        help="gather batches on the host and copy them (as mirrorlab does), or "
                             "keep the training set on the GPU")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", help="also write the result as JSON to this file")
    args = parser.parse_args()
    if args.batch < 1 or args.steps < 1 or args.warmup < 0 or args.repeats < 1:
        parser.error("--batch, --steps and --repeats must be at least 1, --warmup at least 0")

    try:
        import torch
    except ImportError:
        sys.exit("pytorch_cnn: PyTorch is not installed (pip install torch)")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("pytorch_cnn: no CUDA GPU visible to PyTorch; use --device cpu to run on the CPU")
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # pick the fastest convolution algorithm for the shape

    dims, image_bytes, label_bytes = load_training_set(args.data)
    n, rows, cols = dims
    images_u8 = torch.frombuffer(bytearray(image_bytes), dtype=torch.uint8).reshape(n, 1, rows, cols)
    labels_all = torch.frombuffer(bytearray(label_bytes), dtype=torch.uint8).to(torch.int64)
    if args.data_on == "device":
        images_u8 = images_u8.to(device)
        labels_all = labels_all.to(device)
    pinned = device.type == "cuda" and args.data_on == "host"

    model = build_model(torch, args.model).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(args.seed)
    order = torch.randperm(n, generator=generator)
    cursor = 0

    def next_batch():
        nonlocal cursor, order
        if cursor + args.batch > n:
            order = torch.randperm(n, generator=generator)
            cursor = 0
        idx = order[cursor:cursor + args.batch]
        cursor += args.batch
        if args.data_on == "device":
            idx = idx.to(device)
            return images_u8[idx].float().div_(255.0), labels_all[idx]
        x = images_u8[idx].float().div_(255.0)
        y = labels_all[idx]
        if pinned:
            x, y = x.pin_memory(), y.pin_memory()
        return x.to(device, non_blocking=True), y.to(device, non_blocking=True)

    def step():
        x, y = next_batch()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()  # one read-back per step, as mirrorlab's loss statistics

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    rates = []
    last_loss = float("nan")
    for r in range(args.repeats):
        for _ in range(args.warmup):
            step()
        synchronize()
        start = time.perf_counter()
        for _ in range(args.steps):
            last_loss = step()
        synchronize()
        seconds = time.perf_counter() - start
        rates.append(args.steps * args.batch / seconds)
        print(f"repeat {r + 1}/{args.repeats}: {rates[-1]:.0f} images/s "
              f"({1e3 * seconds / args.steps:.3f} ms/step), loss {last_loss:.4f}", flush=True)

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    median = statistics.median(rates)
    result = {
        "framework": f"pytorch {torch.__version__}",
        "device": name,
        "model": args.model,
        "batch": args.batch,
        "data_on": args.data_on,
        "steps_per_repeat": args.steps,
        "repeats": args.repeats,
        "images_per_second_median": median,
        "images_per_second_min": min(rates),
        "images_per_second_max": max(rates),
        "final_loss": last_loss,
        "tf32": False,
    }
    print(f"pytorch {torch.__version__} {args.model} batch {args.batch} on {name} "
          f"(data on {args.data_on}, float32, no TF32): {median:.0f} images/s median "
          f"(min {min(rates):.0f}, max {max(rates):.0f}) over {args.repeats} repeats")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
