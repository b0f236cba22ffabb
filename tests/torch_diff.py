#!/usr/bin/python3
"""tests/torch_diff.py DIR - recomputes with PyTorch every case tests/torch_diff.c
wrote to DIR (manifest.txt, case<N>_<array>.npy) and compares depeng's
forward output and input gradients with PyTorch's, in float32.

MXNet's parameters map to PyTorch's functions: Convolution to conv1d/conv2d
(stride, padding, dilation, groups), Deconvolution to conv_transpose1d/2d
(adj is output_padding), Pooling to max_pool / avg_pool (count_include_pad;
pooling_convention full is ceil_mode; sum is avg_pool2d with
divisor_override 1; global_pool a window over the whole plane), LeakyReLU to
leaky_relu, elu, selu, gelu (erf form) and prelu, Activation softrelu to
softplus (both return x above 20), softsign, sigmoid, tanh and relu to theirs, Embedding to
embedding. The regression outputs' data gradients (which ignore the head
gradient, as MXNet's) are those of losses whose gradient MXNet's is: half
the squared error, the logistic loss, the absolute error, each times
grad_scale over the elements per row. The gradients MXNet defines as 0 (an
Embedding's indices, a regression's label, BatchNorm's moving statistics,
gamma's with fix_gamma) are compared with zeros.

BatchNorm is batch_norm with PyTorch's momentum = 1 - MXNet's, the channel
axis moved to 1, gamma ones with fix_gamma, training = is_train and not
use_global_stats; the moving mean after it against PyTorch's running mean,
the moving variance against MXNet's rule with the biased batch variance
(PyTorch's running_var uses the unbiased one). Dropout: p 0 is the
identity; p > 0 is checked through depeng's own mask (every element 0 or
1 / (1 - p); the output data * mask, the gradient og * mask), as PyTorch's
draws differ.

Tolerance: every element within 1e-4 relative of PyTorch's, where relative
means to the larger of the element's magnitude and a tenth of the array's
root mean square (a sum of float32 products that cancels to near 0 carries
the rounding of its terms, not of its result).
Prints FAIL lines and "torch_diff: N passed, M failed"; exits 1 on a failure.
"""
import sys

import numpy as np
import torch
import torch.nn.functional as F

DIR = sys.argv[1]
TOL = 1e-4
CASE = 0


def tup(v):
    v = v.strip("()").replace(" ", "")
    return tuple(int(x) for x in v.split(",") if x != "")


def load(case, name):
    return torch.from_numpy(np.load("%s/case%d_%s.npy" % (DIR, case, name)))


def to2d(t):
    """(n, c, w) as (n, c, 1, w)"""
    return t.unsqueeze(2)


def reference(op, kw, x):
    nd = x["data"].dim() - 2
    if op in ("Convolution", "Deconvolution"):
        k = tup(kw["kernel"])
        st, pd, dl = tup(kw["stride"]), tup(kw["pad"]), tup(kw["dilate"])
        g = int(kw["num_group"])
        b = x.get("bias")
        if op == "Convolution":
            fn = F.conv2d if nd == 2 else F.conv1d
            return fn(x["data"], x["weight"], b, stride=st, padding=pd, dilation=dl, groups=g)
        fn = F.conv_transpose2d if nd == 2 else F.conv_transpose1d
        return fn(x["data"], x["weight"], b, stride=st, padding=pd, output_padding=tup(kw["adj"]), groups=g, dilation=dl)
    if op == "Pooling":
        d = x["data"] if nd == 2 else to2d(x["data"])
        ptype = kw["pool_type"]
        if kw.get("global_pool") == "True":
            k, st, pd, ceil, incl = d.shape[2:], (1, 1), (0, 0), False, True
        else:
            k, st, pd = tup(kw["kernel"]), tup(kw["stride"]), tup(kw["pad"])
            if nd == 1:
                k, st, pd = (1,) + k, (1,) + st, (0,) + pd
            ceil = kw["pooling_convention"] == "full"
            incl = kw.get("count_include_pad", "True") == "True"
        if ptype == "max":
            y = F.max_pool2d(d, k, st, pd, ceil_mode=ceil)
        elif ptype == "avg":
            y = F.avg_pool2d(d, k, st, pd, ceil_mode=ceil, count_include_pad=incl)
        else:
            y = F.avg_pool2d(d, k, st, pd, ceil_mode=ceil, count_include_pad=True, divisor_override=1)
        return y if nd == 2 else y.squeeze(2)
    if op == "LeakyReLU":
        a = kw["act_type"]
        d = x["data"]
        if a == "leaky":
            return F.leaky_relu(d, float(kw["slope"]))
        if a == "elu":
            return F.elu(d, float(kw["slope"]))
        if a == "selu":
            return F.selu(d)
        if a == "gelu":
            return F.gelu(d)
        return F.prelu(d, x["gamma"])
    if op == "Activation":
        fn = {"softrelu": F.softplus, "softsign": F.softsign, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "relu": F.relu}
        return fn[kw["act_type"]](x["data"])
    if op == "Embedding":
        return F.embedding(x["data"].detach().long(), x["weight"])
    if op == "Dropout":
        return x["data"] * load(CASE, "mask")
    raise ValueError("unknown operator " + op)


def regression(op, kw, x):
    """The output, and the loss whose gradient MXNet's regression output
    gives the data: grad_scale / (elements per row) times (out - label)
    (the squared error's half, the logistic loss) or sign(out - label)."""
    d, lab = x["data"], x["label"].detach()
    scale = float(kw.get("grad_scale", "1")) / (d[0].numel() if d.shape[0] else 1)
    if op == "LinearRegressionOutput":
        return d, scale * 0.5 * ((d - lab) ** 2).sum()
    if op == "LogisticRegressionOutput":
        return torch.sigmoid(d), scale * F.binary_cross_entropy_with_logits(d, lab, reduction="sum")
    return d, scale * (d - lab).abs().sum()


def batch_norm(kw, x, case):
    """BatchNorm's output, and the moving statistics expected after it."""
    d = x["data"]
    axis = int(kw["axis"]) % d.dim()
    train = kw["is_train"] == "True" and kw["use_global_stats"] == "False"
    mom, eps = float(kw["momentum"]), float(kw["eps"])
    g = torch.ones_like(x["gamma"]) if kw["fix_gamma"] == "True" else x["gamma"]
    rm, rv = load(case, "moving_mean0").clone(), load(case, "moving_var0").clone()
    dm = d.movedim(axis, 1)
    y = F.batch_norm(dm, rm, rv, g, x["beta"], training=train, momentum=1 - mom, eps=eps).movedim(1, axis)
    if train:
        dims = [i for i in range(dm.dim()) if i != 1]
        want_var = load(case, "moving_var0") * mom + dm.detach().var(dim=dims, unbiased=False) * (1 - mom)
        return y, rm, want_var
    return y, load(case, "moving_mean0"), load(case, "moving_var0")


def close(got, want):
    got, want = got.double(), want.double()
    if got.shape != want.shape:
        return "shape %s, PyTorch %s" % (tuple(got.shape), tuple(want.shape))
    if want.numel() == 0:
        return None
    rms = float(want.pow(2).mean().sqrt())
    scale = torch.clamp(want.abs(), min=0.1 * rms)
    err = (got - want).abs() / scale
    worst = int(err.argmax())
    if float(err.max()) > TOL or not torch.isfinite(got).all():
        return "element %d: depeng %.9g, PyTorch %.9g (relative error %.3g)" % (worst, float(got.flatten()[worst]), float(want.flatten()[worst]), float(err.max()))
    return None


def main():
    passed = failed = 0
    for line in open("%s/manifest.txt" % DIR):
        parts = line.split()
        case, op = int(parts[0]), parts[1]
        # "key=value" pieces; a tuple's value holds spaces ("(2, 3)"), so a
        # piece without "=" continues the value before it
        kw, inputs, last = {}, [], None
        for chunk in parts[2:]:
            if "=" in chunk:
                last, _, val = chunk.partition("=")
                if last == "input":
                    inputs.append(val)
                else:
                    kw[last] = val
            else:
                kw[last] += " " + chunk
        x = {n: load(case, n).requires_grad_(True) for n in inputs}
        # inputs without a gradient in MXNet (indices, labels): depeng's is 0
        zero_grad = {"Embedding": ["data"], "BatchNorm": ["moving_mean", "moving_var"]}.get(op, ["label"] if op.endswith("RegressionOutput") else [])
        if op == "BatchNorm" and kw["fix_gamma"] == "True":
            zero_grad.append("gamma")
        global CASE
        CASE = case
        extra = []
        if op == "BatchNorm":
            y, want_mean, want_var = batch_norm(kw, x, case)
            y.backward(load(case, "og"))
            extra = [("moving_mean after", load(case, "moving_mean"), want_mean), ("moving_var after", load(case, "moving_var"), want_var)]
        elif op.endswith("RegressionOutput"):
            y, loss = regression(op, kw, x)
            loss.backward()            # the head gradient is ignored, as MXNet's
        else:
            y = reference(op, kw, x)
            y.backward(load(case, "og"))
        for n in zero_grad:
            x[n].grad = torch.zeros_like(x[n])
        what = "case %d %s %s" % (case, op, " ".join(parts[2:]))
        problems = []
        msg = close(load(case, "y"), y.detach())
        if msg:
            problems.append("output: " + msg)
        for name, got, want in extra:
            msg = close(got, want.detach())
            if msg:
                problems.append(name + ": " + msg)
        if op == "Dropout":
            m, p = load(case, "mask"), float(kw["p"])
            if not ((m == 0) | (m == torch.tensor(1 / (1 - p), dtype=torch.float32))).all() or (p == 0 and not (m == 1).all()):
                problems.append("mask: values other than 0 and 1 / (1 - p)")
        for n in inputs:
            msg = close(load(case, "d_" + n), x[n].grad)
            if msg:
                problems.append("d " + n + ": " + msg)
        if problems:
            failed += 1
            print("FAIL %s: %s" % (what, "; ".join(problems)))
        else:
            passed += 1
    print("torch_diff: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
