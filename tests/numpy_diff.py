#!/usr/bin/python3
"""tests/numpy_diff.py DIR - recomputes with NumPy every case tests/numpy_diff.c
wrote to DIR (manifest.tsv, case<N>_in<i>.npy, case<N>_out<j>.npy) and compares.

What is compared how:
  bit for bit   data movement: transpose, concat (and their gradients),
                _copy, reshape, cast to the same dtype, and the outputs
                written over their input
  value exact   integer arithmetic (computed in int64, wrapping, then cast
                to the dtype keeping the low bits, as NumPy's astype), max,
                min, argmax, maximum, minimum, clip, relu, sign, abs,
                negative, one_hot, casts, and the float add, sub, mul, div
                (NumPy computes float16 in float32, as depeng does); NaN
                equals NaN, -0 equals 0
  tolerance     the transcendental functions, power, sums, means, softmax,
                dot, FullyConnected, the optimizer updates and the gradient
                operators (float32 and float64, at smooth points): within a
                few units in the last place of the dtype (the relative
                tolerances in TOL, scaled by the sum of magnitudes for sums);
                such a float truncated into an integer dtype may differ by
                that much and 1 more
The scalar of the _scalar operators stays a double (depeng keeps it one; NumPy
would round it to the array's dtype first), so those references compute in
float64 and convert, as depeng's rule says: a float into an integer dtype
truncates, saturates at the ends and gives 0 for NaN; into bool is x != 0.
Prints FAIL lines and "numpy_diff: N passed, M failed"; exits 1 on a failure.
"""
import os
import sys

import warnings

import numpy as np

warnings.simplefilter("ignore", RuntimeWarning)   # NumPy on empty slices and NaN; the comparisons decide

DIR = sys.argv[1]
TOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 4e-7, np.dtype(np.float64): 4e-15}


def is_int(dt):
    return np.dtype(dt).kind in "iub"


def wrap(v, dt):
    """int64 results into an integer dtype: the low bits (bool: non-zero)."""
    v = np.asarray(v, dtype=np.int64)
    return v != 0 if np.dtype(dt) == np.bool_ else v.astype(dt)


def to_int(v, dt):
    """depeng's float-to-integer rule: truncate, saturate, NaN gives 0."""
    v = np.asarray(v, dtype=np.float64)
    if np.dtype(dt) == np.bool_:
        return v != 0
    info = np.iinfo(dt)
    hi = 2.0 ** 63 if np.dtype(dt) == np.int64 else float(info.max)
    lo = -(2.0 ** 63) if np.dtype(dt) == np.int64 else float(info.min)
    t = np.trunc(np.where(np.isnan(v), 0.0, v))
    out = np.empty(v.shape, dt)
    big, small = t >= hi, t <= lo
    mid = ~(big | small)
    out[big], out[small], out[mid] = info.max, info.min, t[mid].astype(dt)
    return out


def conv(v, dt):
    """A float64 result stored into dt (float16 through float32, as computed)."""
    dt = np.dtype(dt)
    v = np.asarray(v, dtype=np.float64)
    if dt == np.float16:
        return v.astype(np.float32).astype(np.float16)
    if dt.kind == "f":
        return v.astype(dt)
    return to_int(v, dt)


def f64(x):
    return np.asarray(x).astype(np.float64)


def int_power(a, b):
    """a ** b modulo 2^64 as int64; a negative exponent truncates the real power."""
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    out = np.empty(a.shape, np.int64)
    for idx in np.ndindex(a.shape):
        x, y = int(a[idx]), int(b[idx])
        if y < 0:
            r = 1 if x == 1 else ((-1 if y & 1 else 1) if x == -1 else 0)
        else:
            r = pow(x, y, 2 ** 64)
            r = r - 2 ** 64 if r >= 2 ** 63 else r
        out[idx] = r
    return out


INT_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "maximum": np.maximum, "minimum": np.minimum, "power": int_power,
    "rsub": lambda a, b: b - a, "rpower": lambda a, b: int_power(b, a),
}
FLOAT_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
    "minimum": np.minimum, "power": np.power, "rsub": lambda a, b: b - a, "rdiv": lambda a, b: b / a,
    "rpower": lambda a, b: np.power(b, a),
}
INT_UNARY = {
    "negative": np.negative, "abs": np.abs, "sign": np.sign, "square": lambda x: x * x,
    "relu": lambda x: np.maximum(x, 0),
}
FLOAT_UNARY = {
    "negative": np.negative, "abs": np.abs, "sign": np.sign, "sqrt": np.sqrt, "square": np.square, "exp": np.exp,
    "log": np.log, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "relu": lambda x: np.where(np.isnan(x) | (x > 0), x, np.zeros_like(x)),
}
EXACT_FLOAT = {"negative", "abs", "sign", "square", "relu", "add", "sub", "mul", "div", "maximum", "minimum", "rsub", "rdiv"}


def axes_of(text, ndim):
    t = tuple(int(v) for v in text.strip("()").replace(" ", "").split(",") if v != "")
    return tuple(range(ndim)) if not t else tuple(a % ndim for a in t) if ndim else ()


def unbroadcast(g, shape):
    """g summed back over the axes an input of this shape was broadcast along."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for ax, n in enumerate(shape):
        if n == 1 and g.shape[ax] != 1:
            g = g.sum(axis=ax, keepdims=True)
    return g.reshape(shape)


D_UNARY = {
    "negative": lambda x: -np.ones_like(x), "abs": np.sign, "sign": np.zeros_like, "sqrt": lambda x: 0.5 / np.sqrt(x),
    "square": lambda x: 2 * x, "exp": np.exp, "log": lambda x: 1 / x, "sin": np.cos, "cos": lambda x: -np.sin(x),
    "tanh": lambda y: 1 - y ** 2, "sigmoid": lambda y: y * (1 - y),
    "relu": lambda y: (y > 0).astype(np.float64), "_copy": np.ones_like,
}
# relu, tanh and sigmoid's gradient operators read the forward output y
# (numpy_diff.c passes it): their derivatives above are written in y
D_BINARY = {   # (d/da, d/db)
    "add": lambda a, b: (np.ones_like(a * b), np.ones_like(a * b)), "sub": lambda a, b: (np.ones_like(a * b), -np.ones_like(a * b)),
    "mul": lambda a, b: (b + 0 * a, a + 0 * b), "div": lambda a, b: (1 / b + 0 * a, -a / b ** 2),
    "maximum": lambda a, b: ((a >= b) * 1.0, (a < b) * 1.0), "minimum": lambda a, b: ((a <= b) * 1.0, (a > b) * 1.0),
    "power": lambda a, b: (b * a ** (b - 1), a ** b * np.log(a)),
}
D_SCALAR = {   # d/dx of the _scalar form at scalar s
    "add": lambda x, s: np.ones_like(x), "sub": lambda x, s: np.ones_like(x), "mul": lambda x, s: s + 0 * x,
    "div": lambda x, s: 1 / s + 0 * x, "maximum": lambda x, s: (x >= s) * 1.0, "minimum": lambda x, s: (x <= s) * 1.0,
    "power": lambda x, s: s * x ** (s - 1), "rsub": lambda x, s: -np.ones_like(x), "rdiv": lambda x, s: -s / x ** 2,
    "rpower": lambda x, s: s ** x * np.log(s),
}


def softmax(v, axis):
    e = np.exp(v - np.max(v, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def gradient_reference(fwd, p, scalar, og, xs):
    """The inputs' gradients of forward operator fwd, given output gradient og."""
    o = f64(og)
    x = xs[0]
    if fwd in D_UNARY:   # 1 - tanh^2 and the like cancel: an error of the order of 1 ulp of 1
        d = D_UNARY[fwd](f64(x))
        return [conv(o * d, x.dtype)], ("sum", np.abs(o) * (np.abs(d) + 1))
    if fwd in ("reshape", "cast"):
        return [conv(o.reshape(x.shape), x.dtype)], "tol"
    if fwd == "clip":
        v = f64(x)
        return [conv(np.where((v >= float(p["a_min"])) & (v <= float(p["a_max"])), o, 0.0), x.dtype)], "tol"
    if fwd.endswith("_scalar"):
        return [conv(o * D_SCALAR[fwd[:-7]](f64(x), scalar), x.dtype)], "tol"
    if fwd in D_BINARY:
        a, b = f64(xs[0]), f64(xs[1])
        da, db = D_BINARY[fwd](a, b)
        out = [conv(unbroadcast(o * da, a.shape), xs[0].dtype), conv(unbroadcast(o * db, b.shape), xs[1].dtype)]
        mags = [unbroadcast(np.abs(o * da), a.shape), unbroadcast(np.abs(o * db), b.shape)]
        return out, [("sum", m) for m in mags]
    if fwd in ("sum", "mean", "max", "min"):
        v = f64(x)
        axes = axes_of(p["axis"], x.ndim)
        keep = tuple(1 if ax in axes else n for ax, n in enumerate(x.shape))
        ob = np.broadcast_to(o.reshape(keep), x.shape)
        if fwd == "mean":
            ob = ob * (o.size / max(1, x.size))
        if fwd in ("max", "min"):
            best = (np.max if fwd == "max" else np.min)(v, axis=axes, keepdims=True) if x.size else v
            ob = np.where(v == best, ob, 0.0)
        return [conv(ob, x.dtype)], "tol"
    if fwd in ("softmax", "log_softmax"):
        axis = int(p.get("axis", -1))
        y = softmax(f64(x), axis)
        g = y * (o - np.sum(o * y, axis=axis, keepdims=True)) if fwd == "softmax" else o - y * np.sum(o, axis=axis, keepdims=True)
        return [conv(g, x.dtype)], ("sum", np.abs(o) + np.sum(np.abs(o), axis=axis, keepdims=True))
    if fwd == "softmax_cross_entropy":
        v, lab = f64(x), xs[1].astype(np.int64)
        hot = np.zeros_like(v)
        hot[np.arange(v.shape[0]), lab] = 1
        return [conv(o[0] * (softmax(v, 1) - hot), x.dtype), np.zeros_like(xs[1])], "tol"
    if fwd == "transpose":
        perm = axes_of(p["axes"], x.ndim) if p["axes"].strip("() ") else tuple(reversed(range(x.ndim)))
        return [np.array(np.transpose(og, np.argsort(perm)), order="C").astype(x.dtype)], "bits"
    if fwd == "concat":
        dim = int(p["dim"])
        cuts = np.cumsum([v.shape[dim] for v in xs])[:-1]
        return [np.array(part, order="C") for part in np.split(og, cuts, axis=dim)], "bits"
    if fwd == "dot":
        ta, tb = p["transpose_a"] == "1", p["transpose_b"] == "1"
        a = f64(xs[0]).T if ta else f64(xs[0])
        b = f64(xs[1]).T if tb else f64(xs[1])
        ga, gb = o @ b.T, a.T @ o
        ma, mb = np.abs(o) @ np.abs(b).T, np.abs(a).T @ np.abs(o)
        if ta:
            ga, ma = ga.T, ma.T
        if tb:
            gb, mb = gb.T, mb.T
        return [conv(ga, xs[0].dtype), conv(gb, xs[1].dtype)], [("sum", ma), ("sum", mb)]
    if fwd == "FullyConnected":
        d, w = f64(xs[0]), f64(xs[1])
        out = [conv(o @ w, xs[0].dtype), conv(o.T @ d, xs[1].dtype), conv(o.sum(axis=0), xs[2].dtype)]
        mags = [np.abs(o) @ np.abs(w), np.abs(o).T @ np.abs(d), np.abs(o).sum(axis=0)]
        return out, [("sum", m) for m in mags]
    raise KeyError("no gradient reference for " + fwd)


def reference(op, p, scalar, ins):
    """(expected outputs, how to compare: 'bits', 'exact' or a tolerance kind,
    or a list of those, one per output)."""
    if op.startswith("_backward_"):
        return gradient_reference(op[len("_backward_"):], p, scalar, ins[0], ins[1:])
    x = ins[0] if ins else None
    dt = x.dtype if x is not None else None
    if op in ("transpose",):
        axes = axes_of(p["axes"], x.ndim) if p["axes"].strip("() ") else None
        return [np.array(np.transpose(x, axes), order="C")], "bits"
    if op == "concat":
        return [np.concatenate(ins, axis=int(p["dim"]))], "bits"
    if op == "_copy":
        return [x.copy()], "bits"
    if op == "reshape":
        return [x.reshape(-1)], "bits"
    if op == "cast":
        to = np.dtype(p["dtype"])
        if to == dt:
            return [x.copy()], "bits"
        if is_int(dt) and is_int(to):
            return [wrap(x.astype(np.int64), to)], "exact"
        if is_int(to):
            return [to_int(f64(x), to)], "exact"
        return [x.astype(to)], "exact"
    if op == "one_hot":
        depth = int(p["depth"])
        idx = x.astype(np.int64) if is_int(dt) else f64(x)
        hit = idx[..., None] == np.arange(depth)
        return [conv(np.where(hit, float(p.get("on_value", 1)), float(p.get("off_value", 0))), p.get("dtype", "float32"))], "exact"
    if op == "clip":
        lo, hi = float(p["a_min"]), float(p["a_max"])
        if is_int(dt):
            info = (0, 1) if dt == np.bool_ else (np.iinfo(dt).min, np.iinfo(dt).max)
            ilo = min(max(int(to_int(lo, np.int64)), info[0]), info[1])
            ihi = min(max(int(to_int(hi, np.int64)), info[0]), info[1])
            return [wrap(np.clip(x.astype(np.int64), ilo, ihi), dt)], "exact"
        return [conv(np.clip(f64(x), lo, hi), dt)], "exact"
    if op in ("sum", "mean", "max", "min", "argmax"):
        axes = axes_of(p["axis"], x.ndim)
        keep = p["keepdims"] in ("1", "true", "True")
        if op == "argmax":
            axis = axes[0] if p["axis"].strip("() ") else None
            return [np.asarray(np.argmax(x, axis=axis, keepdims=keep), dtype=np.int64)], "exact"
        if op in ("max", "min"):
            f = np.max if op == "max" else np.min
            return [np.asarray(f(x, axis=axes, keepdims=keep)).astype(dt)], "exact"
        if op == "sum" and is_int(dt):
            return [wrap(np.sum(x.astype(np.int64), axis=axes, keepdims=keep), dt)], "exact"
        f = np.sum if op == "sum" else np.mean
        ref = f(f64(x), axis=axes, keepdims=keep)
        mag = np.sum(np.abs(f64(x)), axis=axes, keepdims=keep) / (1 if op == "sum" else max(1, x.size // max(1, ref.size)))
        return [conv(ref, dt)], ("sum", mag)
    base = op[:-7] if op.endswith("_scalar") else op
    if op.endswith("_scalar"):
        integral = -(2.0 ** 63) <= scalar < 2.0 ** 63 and scalar == int(scalar) if np.isfinite(scalar) else False
        if is_int(dt) and base in INT_BINARY and integral:
            return [wrap(INT_BINARY[base](x.astype(np.int64), np.int64(int(scalar))), dt)], "exact"
        ref = FLOAT_BINARY[base](f64(x), scalar)
        return [conv(ref, dt)], "exact" if base in EXACT_FLOAT else "tol"
    if base in INT_BINARY and len(ins) == 2 or base == "div":
        a, b = ins
        if is_int(dt) and base in INT_BINARY:
            return [wrap(INT_BINARY[base](a.astype(np.int64), b.astype(np.int64)), dt)], "exact"
        if is_int(dt):
            return [conv(FLOAT_BINARY[base](f64(a), f64(b)), dt)], "exact"
        if base in EXACT_FLOAT:
            return [FLOAT_BINARY[base](a, b)], "exact"
        return [conv(FLOAT_BINARY[base](f64(a), f64(b)), dt)], "tol"
    if base in FLOAT_UNARY:
        if is_int(dt) and base in INT_UNARY:
            return [wrap(INT_UNARY[base](x.astype(np.int64)), dt)], "exact"
        if is_int(dt):
            return [conv(FLOAT_UNARY[base](f64(x)), dt)], "int1"
        if base in EXACT_FLOAT:
            return [conv(FLOAT_UNARY[base](f64(x)), dt)], "exact"
        return [conv(FLOAT_UNARY[base](f64(x)), dt)], "tol"
    if op in ("softmax", "log_softmax"):
        axis = int(p["axis"])
        v = f64(x)
        e = v - np.max(v, axis=axis, keepdims=True)
        s = np.sum(np.exp(e), axis=axis, keepdims=True)
        return [conv(np.exp(e) / s if op == "softmax" else e - np.log(s), dt)], "tol"
    if op == "softmax_cross_entropy":
        v, lab = f64(x), ins[1].astype(np.int64)
        mx = np.max(v, axis=1, keepdims=True)
        lse = np.log(np.sum(np.exp(v - mx), axis=1)) + mx[:, 0]
        return [conv([np.sum(lse - v[np.arange(v.shape[0]), lab])], dt)], ("sum", np.sum(np.abs(lse)) + np.sum(np.abs(v)))
    if op == "dot":
        a = f64(ins[0]).T if p["transpose_a"] == "1" else f64(ins[0])
        b = f64(ins[1]).T if p["transpose_b"] == "1" else f64(ins[1])
        return [conv(a @ b, dt)], ("sum", np.abs(a) @ np.abs(b))
    if op == "FullyConnected":
        d, w, b = (f64(v) for v in ins)
        return [conv(d @ w.T + b, dt)], ("sum", np.abs(d) @ np.abs(w).T + np.abs(b))
    if op in ("sgd_update", "sgd_mom_update", "adam_update"):
        q = {"wd": 0.0, "rescale_grad": 1.0, "clip_gradient": -1.0, "momentum": 0.0, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}
        q.update({k: float(v) for k, v in p.items()})
        w, g = f64(ins[0]), f64(ins[1])
        clip = (lambda v: np.clip(v, -q["clip_gradient"], q["clip_gradient"])) if q["clip_gradient"] > 0 else (lambda v: v)
        if op == "adam_update":
            gi = clip(g * q["rescale_grad"] + q["wd"] * w)
            m = q["beta1"] * f64(ins[2]) + (1 - q["beta1"]) * gi
            v = q["beta2"] * f64(ins[3]) + (1 - q["beta2"]) * gi * gi
            return [conv(w - q["lr"] * m / (np.sqrt(v) + q["epsilon"]), dt), conv(m, dt), conv(v, dt)], "tol"
        gi = clip(g * q["rescale_grad"]) + q["wd"] * w
        if op == "sgd_update":
            return [conv(w - q["lr"] * gi, dt)], "tol"
        mom = q["momentum"] * f64(ins[2]) - q["lr"] * gi
        return [conv(w + mom, dt), conv(mom, dt)], "tol"
    raise KeyError("no reference for operator " + op)


def close(got, want, how):
    if got.shape != want.shape or got.dtype != want.dtype:
        return "is %s %s, expected %s %s" % (got.dtype, got.shape, want.dtype, want.shape)
    if how == "bits":
        return None if got.tobytes() == want.tobytes() else "bytes differ"
    if is_int(got.dtype):
        # a float result truncated into integers: the float's last-place
        # difference (libm against NumPy's), then 1 for the truncation
        d = np.abs(got.astype(np.float64) - want.astype(np.float64))
        slack = 0
        if how == "int1":
            slack = 1 + 4e-16 * np.abs(want.astype(np.float64))
        elif isinstance(how, tuple):
            slack = 1 + 1e-12 * np.abs(want.astype(np.float64))
        bad = d > slack
    else:
        g, w = f64(got), f64(want)
        both_nan = np.isnan(g) & np.isnan(w)
        if how == "exact":
            bad = ~(both_nan | (g == w))
        else:
            eps = TOL[got.dtype]
            scale = np.abs(w) if not isinstance(how, tuple) else np.broadcast_to(np.abs(how[1]), w.shape)
            tiny = np.finfo(got.dtype).tiny
            with np.errstate(invalid="ignore"):
                near = np.abs(g - w) <= 4 * eps * scale + 4 * eps * np.abs(w) + tiny
                bad = ~(both_nan | (g == w) | near)
                if isinstance(how, tuple):   # a sum that overflows in one order and not the other
                    bad &= ~(np.isinf(g) & (np.abs(w) > np.finfo(got.dtype).max / 4))
    if np.any(bad):
        i = tuple(np.argwhere(bad)[0])
        return "at %s: got %r, expected %r (%d of %d differ)" % (i, got[i], want[i], int(np.sum(bad)), bad.size)
    return None


def main():
    passed = failed = 0
    shown = 0
    per_op = {}
    with open(os.path.join(DIR, "manifest.tsv")) as f:
        lines = [ln.rstrip("\n").split("\t") for ln in f if ln.strip()]
    for n, op, params, scalar, nin, nout in lines:
        p = dict(kv.split("=", 1) for kv in params.split(";") if kv)
        ins = [np.load(os.path.join(DIR, "case%s_in%d.npy" % (n, i))) for i in range(int(nin))]
        outs = [np.load(os.path.join(DIR, "case%s_out%d.npy" % (n, j))) for j in range(int(nout))]
        for i in range(2, int(nin)):
            path = os.path.join(DIR, "case%s_mutated%d.npy" % (n, i))
            if os.path.exists(path):
                outs.append(np.load(path))
        with np.errstate(all="ignore"):
            try:
                want, how = reference(op, p, float(scalar), ins)
                hows = how if isinstance(how, list) else [how] * len(want)
                why = None
                for j, (g, w) in enumerate(zip(outs, want)):
                    why = why or (lambda r: r and "output %d %s" % (j, r))(close(g, np.asarray(w), hows[j]))
                if len(outs) != len(want):
                    why = why or "%d outputs, expected %d" % (len(outs), len(want))
            except Exception as e:  # a reference that cannot run is a failure too
                why = "reference raised %r" % (e,)
        key = "%s/%s" % (op, ins[0].dtype if ins else "-")
        ok_fail = per_op.setdefault(key, [0, 0])
        if why:
            failed += 1
            ok_fail[1] += 1
            if shown < 40:
                shown += 1
                print("FAIL case %s %s(%s) scalar %s on %s: %s" % (n, op, params, scalar,
                      ", ".join("%s%s" % (a.dtype, a.shape) for a in ins), why))
        else:
            passed += 1
            ok_fail[0] += 1
    print("operators x input dtypes covered: %d" % len(per_op))
    print("numpy_diff: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
