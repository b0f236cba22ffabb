#!/usr/bin/python3
"""bench/train_torch.py - PyTorch's side of make bench-train (bench/README.md,
"Training against PyTorch").

The same networks as bench/train.c, trained the same way, timed the same way:
  mlp    Linear 784-128, ReLU, Linear 128-64, ReLU, Linear 64-10
  lenet  Conv2d 1->20 5x5, tanh, MaxPool 2, Conv2d 20->50 5x5, tanh, MaxPool 2,
         flatten, Linear 800-500, tanh, Linear 500-10
cross-entropy loss averaged over the batch (SoftmaxOutput's gradient with
rescale_grad 1/batch), torch.optim.SGD with momentum 0.9, weight decay 1e-4,
lr 0.1 (MLP) / 0.05 (LeNet); PyTorch's default initialisation (the time per
step does not depend on it). Fashion-MNIST's training images are read from
Debian's dataset-fashion-mnist (the gzipped idx files), normalised by the
data set's mean and standard deviation, and 16 shuffled batches are made
before timing and used in turn. A step is zero_grad, forward, loss,
backward, optimizer.step; PyTorch runs synchronously on the CPU, so the
step has ended when step() returns. torch.set_num_threads(T) sets the
intra-op threads (oneDNN's convolutions and OpenBLAS's products included).

Prints, as bench/train.c does:
  train system=torch blas=torch net=N batch=B mode=eager threads=T
        ms_per_step=MEDIAN min=.. p90=.. mean=.. steps=S cpu_util=U
Exit 3 with a SKIP line when torch or the data set is missing.
Usage: train_torch.py [--net mlp|lenet] [--batch B] [--threads T]
                      [--steps S] [--warmup W] [--set train|test] [--data DIR]
(--set test: the 10,000 test images, as bench_train's --set test)
"""
import argparse
import gzip
import os
import resource
import struct
import sys
import time

BATCHES = 16
PIXEL_MEAN, PIXEL_STD = 72.94, 90.02


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--net", choices=["mlp", "lenet"], default="mlp")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--set", choices=["train", "test"], default="train")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    if a.batch < 1 or a.threads < 1 or a.steps < 1 or a.warmup < 0:
        ap.error("--batch, --threads and --steps must be positive, --warmup not negative")
    try:
        import torch
        from torch import nn
    except ImportError as e:
        print("SKIP train_torch: PyTorch cannot be imported (%s; tests/torch_deps.sh installs python3-torch)" % e)
        return 3
    prefix = "t10k" if a.set == "test" else "train"
    images = os.path.join(a.data, prefix + "-images-idx3-ubyte.gz")
    labels = os.path.join(a.data, prefix + "-labels-idx1-ubyte.gz")
    if not os.path.exists(images) or not os.path.exists(labels):
        print("SKIP train_torch: %s is missing (Debian's dataset-fashion-mnist; tests/fashion_mnist_deps.sh installs it)" % images)
        return 3
    torch.set_num_threads(a.threads)
    torch.manual_seed(42)
    with gzip.open(images, "rb") as f:
        raw = f.read()
    magic, n, rows, cols = struct.unpack(">IIII", raw[:16])
    if magic != 2051 or rows != 28 or cols != 28:
        print("FAIL train_torch: %s is not an idx file of 28x28 images" % images)
        return 1
    with gzip.open(labels, "rb") as f:
        lraw = f.read()
    x = torch.frombuffer(bytearray(raw[16:16 + n * 784]), dtype=torch.uint8).float().view(n, 784)
    y = torch.frombuffer(bytearray(lraw[8:8 + n]), dtype=torch.uint8).long()
    x = (x - PIXEL_MEAN) / PIXEL_STD
    if a.net == "lenet":
        x = x.view(n, 1, 28, 28)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(7))
    batches = [(x[perm[i * a.batch:(i + 1) * a.batch]].contiguous(), y[perm[i * a.batch:(i + 1) * a.batch]].contiguous())
               for i in range(BATCHES)]
    if a.net == "mlp":
        model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
        lr = 0.1
    else:
        model = nn.Sequential(nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2, 2), nn.Conv2d(20, 50, 5), nn.Tanh(), nn.MaxPool2d(2, 2),
                              nn.Flatten(), nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, 10))
        lr = 0.05
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()

    def step(bx, by):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(bx), by)
        loss.backward()
        opt.step()
        return time.perf_counter() - t0

    for i in range(a.warmup):
        step(*batches[i % BATCHES])
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    times = []
    for i in range(a.steps):
        times.append(step(*batches[i % BATCHES]) * 1e3)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    wall = sum(times) * 1e-3
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    mean = sum(times) / len(times)
    times.sort()
    p90 = times[min(len(times) - 1, (len(times) * 9) // 10)]
    print("train system=torch blas=torch net=%s batch=%d mode=eager threads=%d ms_per_step=%.3f min=%.3f p90=%.3f mean=%.3f steps=%d cpu_util=%.3f"
          % (a.net, a.batch, a.threads, times[len(times) // 2], times[0], p90, mean, a.steps, cpu / wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
