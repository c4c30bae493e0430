#!/usr/bin/env python3
# tests/safetensors_check.py: the safetensors files checked outside the C code, with NumPy only:
# its own reader of the format, and nanoGPT's forward pass (bias=False; LayerNorm biases when
# present) written here in float64.
#   1. export: a model trained by ./train, exported by ./sample --export, read here; the logits
#      this forward pass computes on the first training batch match the program's own
#      (./train --resume CKPT --dump-state) to 1e-5 relative, and every exported tensor is the
#      checkpoint's parameter in nanoGPT's layout;
#   2. import: random weights written here under nanoGPT's names, read by ./train --init-from;
#      the program's logits (--dump-state) match this forward pass of the same weights;
#   2b. generation: random weights under nanoGPT's names, block_size 16; ./sample's greedy text
#      (--temperature 0) of 48 characters after a 14-character prompt is, character by character,
#      nanoGPT's generate in float64 on the same weights (the argmax after the last block_size
#      characters, recomputed), and --context restart's text is not;
#   3. when PyTorch is installed: a nanoGPT-style ckpt.pt and meta.pkl made here, converted by
#      tools/nanogpt_to_safetensors.py, give the same logits too;
#   4. QK-norm and z-loss: models with model.qk_norm layernorm and rmsnorm on odd shapes (head
#      dimensions 6 and 5), attn_scale sqrt and 0.3, train.z_loss 1e-2, trained a few steps so the
#      norms' gains are not their initial values, exported, and this forward pass with the norms
#      read from the file: its logits match --dump-state's to 1e-5 relative, and so do the loss
#      (cross-entropy) and the objective (cross-entropy + z_loss * mean(log(Z)^2)); the dump's
#      dlogits match (softmax - onehot)/N + 2 z_loss log(Z) softmax/N, and its gradients of the
#      norms' gains and biases match central differences of this float64 objective; the export
#      says that nanoGPT has no such tensors, and imports whose norms disagree with the config
#      are refused in one line.
#   5. the induction scores (run/induction.c, docs/FORMAT.md): models trained a few steps on
#      repeated random letters (tools/gencorpus --repeat 100) with seeds 5 and 9, attn_scale sqrt
#      and none, exported; the probe rebuilt here from its definition (xoshiro256** seeded with
#      seed * 7919 + 103, the vocabulary's letters, L = block_size / 2 letters twice), this float64
#      forward's weights and losses on it give each head's previous-token and induction scores and
#      the two copies' losses, which must be attention.csv's and metrics.csv's at the last step.
# Run from the repository's top (make check-safetensors); prints one line per check and ends
# "N passed, N failed".
import json
import os
import pickle
import struct
import subprocess
import sys
import tempfile

import numpy as np

TINY = ["--model.n_layer=2", "--model.n_head=2", "--model.n_embd=16", "--model.block_size=16",
        "--train.batch_size=4", "--data.val_fraction=0.02", "--log.eval_interval=20", "--log.eval_steps=1",
        "--sample.tokens=0", "--train.threads=1"]
RTOL = 1e-5
# TINY without its shape, which the QK-norm checks give their own
UNSHAPED = [o for o in TINY if not o.startswith(("--model.n_", "--model.block_size", "--train.batch_size"))]
results = []


def check(name, ok, detail):
    results.append(ok)
    print("%s %s: %s" % ("ok  " if ok else "FAIL", name, detail))


def run(*cmd, stderr=False):
    p = subprocess.run(list(cmd), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("command failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return (p.stdout, p.stderr) if stderr else p.stdout


def read_safetensors(path):
    buf = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", buf, 0)
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    dt = {"F32": "<f4", "F64": "<f8", "F16": "<f2"}
    out = {}
    for k, v in header.items():
        b, e = v["data_offsets"]
        out[k] = np.frombuffer(buf, dt[v["dtype"]], (e - b) // np.dtype(dt[v["dtype"]]).itemsize,
                               8 + n + b).reshape(v["shape"]).astype(np.float64)
    return out, meta


def write_safetensors(path, tensors, meta):
    header, blobs, off = {"__metadata__": meta}, [], 0
    for k, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    text = json.dumps(header).encode("utf-8")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_tensor_file(path):  # the program's own format (docs/FORMAT.md)
    buf = open(path, "rb").read()
    dtypes = {0: "<f4", 1: "<i4", 2: "u1", 3: "<f8", 4: "<u8", 5: "<i8"}
    pos, out = 12, {}
    while pos < len(buf) - 4:
        n = buf[pos]
        name = buf[pos + 1:pos + 1 + n].decode()
        pos += 1 + n
        dt, nd = buf[pos], buf[pos + 1]
        pos += 2
        shape = struct.unpack_from("<%dI" % nd, buf, pos)
        pos += 4 * nd
        a = np.frombuffer(buf, dtypes[dt], int(np.prod(shape)), pos).reshape(shape)
        pos += a.nbytes
        out[name] = a
    return out


def layernorm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * w + (0 if b is None else b)


def gelu(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


QK_NORM_EPS = 1e-5  # attention.h's QK_NORM_EPS


def qk_norm(x, w, b, kind):
    """QK-norm of each head's row x (..., hd), as attention.c's qk_norm_forward defines it:
    LayerNorm y = w (x - mean(x)) / sqrt(var(x) + eps) + b; RMSNorm y = w x / sqrt(mean(x^2) + eps)."""
    mu = x.mean(-1, keepdims=True) if kind == "layernorm" else 0
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return w * (x - mu) / np.sqrt(var + QK_NORM_EPS) + (b if kind == "layernorm" else 0)


def nanogpt_logits(sd, n_head, idx, scale=None, norm="none", weights=None):
    """nanoGPT's GPT.forward for every position, in float64 (dropout 0, bias=False); with norm
    "layernorm" or "rmsnorm", each head's q and k normalised (attn.q_norm, attn.k_norm) before the
    scores, and the scores scaled by `scale` (None: nanoGPT's 1/sqrt(hd)). A list as `weights`
    receives every layer's attention weights (B, NH, T, T)."""
    B, T = idx.shape
    x = sd["transformer.wte.weight"][idx] + sd["transformer.wpe.weight"][:T]
    C = x.shape[-1]
    hd = C // n_head
    scale = 1 / np.sqrt(hd) if scale is None else scale
    L = 1 + max(int(k.split(".")[2]) for k in sd if k.startswith("transformer.h."))
    mask = np.triu(np.ones((T, T), bool), 1)
    for l in range(L):
        p = "transformer.h.%d." % l
        h = layernorm(x, sd[p + "ln_1.weight"], sd.get(p + "ln_1.bias"))
        q, k, v = np.split(h @ sd[p + "attn.c_attn.weight"].T, 3, axis=-1)
        q, k, v = (a.reshape(B, T, n_head, hd).transpose(0, 2, 1, 3) for a in (q, k, v))
        if norm != "none":
            q = qk_norm(q, sd[p + "attn.q_norm.weight"], sd.get(p + "attn.q_norm.bias"), norm)
            k = qk_norm(k, sd[p + "attn.k_norm.weight"], sd.get(p + "attn.k_norm.bias"), norm)
        s = q @ k.transpose(0, 1, 3, 2) * scale
        s[..., mask] = -np.inf
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        if weights is not None:
            weights.append(w)
        y = (w @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + y @ sd[p + "attn.c_proj.weight"].T
        h = layernorm(x, sd[p + "ln_2.weight"], sd.get(p + "ln_2.bias"))
        x = x + gelu(h @ sd[p + "mlp.c_fc.weight"].T) @ sd[p + "mlp.c_proj.weight"].T
    x = layernorm(x, sd["transformer.ln_f.weight"], sd.get("transformer.ln_f.bias"))
    return x @ sd.get("lm_head.weight", sd["transformer.wte.weight"]).T


def nanogpt_weights_and_losses(sd, n_head, idx, targets, scale=None):
    """nanogpt_logits' forward (no QK-norm) with every layer's attention weights (B, NH, T, T),
    and the cross-entropy of each position against targets (B, T), in float64."""
    weights = []
    logits = nanogpt_logits(sd, n_head, idx, scale, weights=weights)
    m = logits.max(-1, keepdims=True)
    lse = m[..., 0] + np.log(np.exp(logits - m).sum(-1))
    return weights, lse - np.take_along_axis(logits, targets[..., None], -1)[..., 0]


class Xoshiro:
    """base/rng.c's xoshiro256** seeded through splitmix64, and its rng_below."""
    M = (1 << 64) - 1

    def __init__(self, seed):
        x, self.s = seed & self.M, []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & self.M
            z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & self.M
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.M
            self.s.append(z ^ (z >> 31))

    def next(self):
        s, M = self.s, self.M
        rotl = lambda v, k: ((v << k) | (v >> (64 - k))) & M
        result = (rotl((s[1] * 5) & M, 7) * 9) & M
        t = (s[1] << 17) & M
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(self, n):
        threshold = ((1 << 64) - n) % n
        x = self.next()
        for _ in range(63):
            if x >= threshold:
                break
            x = self.next()
        return x % n


def induction_probe(vocab, seed, B, T):
    """run/induction.c's probe: B rows of L = T // 2 letters of the vocabulary (every character when
    it has fewer than 8 letters), each row's letters drawn in turn, repeated; targets shifted by one."""
    alphabet = [i for i, c in enumerate(vocab) if "a" <= c <= "z"]
    if len(alphabet) < 8:
        alphabet = list(range(len(vocab)))
    rng, L = Xoshiro(seed * 7919 + 103), T // 2
    x, y = np.zeros((B, T), int), np.zeros((B, T), int)
    for b in range(B):
        r = [alphabet[rng.below(len(alphabet))] for _ in range(L)]
        x[b] = [r[t % L] for t in range(T)]
        y[b] = [r[(t + 1) % L] for t in range(T)]
    return x, y


def check_induction(d):
    B, T, steps = 4, 16, 40
    for seed in (5, 9):
        for scale in ("sqrt", "none"):
            out = "%s/ind_%d_%s" % (d, seed, scale)
            run("./tools/gencorpus", "--seed", str(seed), "--repeat", "100", "--bytes", "60000", "-o", out + ".txt")
            run("./train", "configs/induction.json", *TINY, "--data.path=" + out + ".txt", "--train.seed=%d" % seed,
                "--model.attn_scale=" + scale, "--train.max_steps=%d" % steps, "--log.attn_interval=20",
                "--train.out_dir=" + out)
            run("./sample", out + "/checkpoint.bin", "--export", out + ".safetensors", stderr=True)
            sd, meta = read_safetensors(out + ".safetensors")
            NH = int(meta["n_head"])
            x, y = induction_probe(meta["vocab"], seed, B, T)
            weights, losses = nanogpt_weights_and_losses(sd, NH, x, y, 1.0 if scale == "none" else None)
            L = T // 2
            rows = [r.split(",") for r in open(out + "/attention.csv").read().split("\n")[1:] if r]
            head = open(out + "/attention.csv").readline().strip().split(",")
            ip, ii = head.index("prev_token"), head.index("induction")
            err, n = 0.0, 0
            for r in rows:
                if int(r[0]) != steps:
                    continue
                w = weights[int(r[1])][:, int(r[2])]
                prev = np.mean([w[:, t, t - 1] for t in range(1, T)])
                ind = np.mean([w[:, t, t - L + 1] for t in range(L, 2 * L)])
                err = max(err, abs(prev - float(r[ip])), abs(ind - float(r[ii])))
                n += 1
            check("induction_head_scores_float64_seed%d_%s" % (seed, scale), n == 2 * NH and err <= 2e-6,
                  "%d heads at step %d, max |float64 - attention.csv| = %.2e (bound 2e-6)" % (n, steps, err))
            mhead = open(out + "/metrics.csv").readline().strip().split(",")
            last = [r.split(",") for r in open(out + "/metrics.csv").read().split("\n")[1:] if r][-1]
            first, second = losses[:, :L - 1].mean(), losses[:, L:2 * L - 1].mean()
            got = [float(last[mhead.index(c)]) for c in ("first_copy_loss", "second_copy_loss", "in_context")]
            e = max(abs(first - got[0]), abs(second - got[1]), abs(second - first - got[2]))
            check("induction_copy_losses_float64_seed%d_%s" % (seed, scale), int(last[0]) == steps and e <= 2e-6,
                  "step %s: first copy %.6f, second %.6f, in-context %.6f; max |float64 - metrics.csv| = %.2e (bound 2e-6)"
                  % (last[0], first, second, second - first, e))


def compare_logits(name, ours, dump):
    ref = dump["logits"].astype(np.float64)
    err = np.abs(ours - ref).max() / np.abs(ref).max()
    check(name, err <= RTOL, "max |difference| / max |logit| = %.2e (bound %g) over %s logits" % (err, RTOL, ref.shape))


def check_export(d):
    run("./train", "configs/default.json", *TINY, "--train.max_steps=30", "--train.out_dir=%s/run" % d)
    _, err = run("./sample", "%s/run/checkpoint.bin" % d, "--export", "%s/m.safetensors" % d, stderr=True)
    run("./train", "--resume", "%s/run/checkpoint.bin" % d, "--dump-state", "%s/dump.bin" % d)
    check("export_without_qk_norm_says_nothing_of_it", "q_norm" not in err and "such tensors" not in err,
          "stderr: %s" % " / ".join(err.strip().splitlines()))
    sd, meta = read_safetensors("%s/m.safetensors" % d)
    dump = read_tensor_file("%s/dump.bin" % d)
    C = sd["transformer.wte.weight"].shape[1]
    same = True
    for l in range(int(meta["n_layer"])):
        p, q = "transformer.h.%d." % l, "param.layer%d." % l
        qkv = np.concatenate([dump[q + w].T for w in ("wq", "wk", "wv")])
        same &= np.array_equal(sd[p + "attn.c_attn.weight"], qkv)
        same &= np.array_equal(sd[p + "mlp.c_fc.weight"], dump[q + "w_fc"].T)
        same &= np.array_equal(sd[p + "mlp.c_proj.weight"], dump[q + "w_proj"].T)
        same &= np.array_equal(sd[p + "attn.c_proj.weight"], dump[q + "wo"].T)
        same &= np.array_equal(sd[p + "ln_1.bias"], dump[q + "ln1_b"])
    same &= np.array_equal(sd["lm_head.weight"], dump["param.wte"]) and sd["lm_head.weight"].shape[1] == C
    check("export_tensors_in_nanogpt_layout", bool(same),
          "%d tensors; c_attn = [Wq^T; Wk^T; Wv^T], Linear weights transposed, lm_head = wte" % len(sd))
    check("export_metadata", meta["vocab"] == "".join(sorted(set(open("data/default.txt", encoding="utf-8").read())))
          and meta["attention_as_nanogpt"] == "true",
          "vocab of %d characters, n_head %s, layernorm_bias %s" % (len(meta["vocab"]), meta["n_head"], meta["layernorm_bias"]))
    compare_logits("export_logits_match_float64_nanogpt", nanogpt_logits(sd, int(meta["n_head"]), dump["inputs"]), dump)


def cross_entropy_z(logits, targets, z_loss):
    """The mean cross-entropy, the objective cross-entropy + z_loss * mean(log(Z)^2), and
    d(objective)/dlogits = (softmax - onehot)/N + 2 z_loss log(Z) softmax/N, all in float64."""
    m = logits.max(-1, keepdims=True)
    lse = m[..., 0] + np.log(np.exp(logits - m).sum(-1))
    ce = np.mean(lse - np.take_along_axis(logits, targets[..., None], -1)[..., 0])
    N = lse.size
    p = np.exp(logits - lse[..., None])
    d = p.copy()
    np.put_along_axis(d, targets[..., None], np.take_along_axis(d, targets[..., None], -1) - 1, -1)
    d = d / N + 2 * z_loss * lse[..., None] * p / N
    return ce, ce + z_loss * np.mean(lse ** 2), d


def max_rel(ours, ref):
    return np.abs(ours - ref).max() / np.abs(ref).max()


# QK-norm's tensors in a layer: nanoGPT-style name (after "transformer.h.N.attn.") and the model's
NORM_TENSORS = [("q_norm.weight", "q_norm_w"), ("k_norm.weight", "k_norm_w"), ("q_norm.bias", "q_norm_b"),
                ("k_norm.bias", "k_norm_b")]
GRAD_RTOL = 1e-3  # the float32 gradients against central differences of the float64 objective
# central differences' steps, in the logits and in the norms' parameters (O(step^2) truncation,
# O(eps |objective| / step) rounding)
FD_STEP, PARAM_STEP = 1e-5, 1e-4


def refused(name, cmd, expect):
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    check(name, p.returncode != 0 and len(lines) == 1 and expect in p.stderr,
          "exit %d, %d line(s) on stderr: %s" % (p.returncode, len(lines), p.stderr.strip()[:200]))


def check_qk_norm(d):
    chars = "".join(sorted(set(open("data/default.txt", encoding="utf-8").read())))
    # (n_layer, n_head, n_embd, block_size, batch_size): head dimensions 6 and 5
    shapes = [(2, 3, 18, 13, 3), (1, 4, 20, 7, 2)]
    z_loss = 1e-2
    for norm in ("layernorm", "rmsnorm"):
        for si, (L, H, C, T, B) in enumerate(shapes):
            for scale_text in ("sqrt", "0.3"):
                tag = "%s_L%dH%dC%dT%dB%d_scale_%s" % (norm, L, H, C, T, B, scale_text)
                out = "%s/%s" % (d, tag)
                shape = ["--model.n_layer=%d" % L, "--model.n_head=%d" % H, "--model.n_embd=%d" % C,
                         "--model.block_size=%d" % T, "--train.batch_size=%d" % B]
                # a high rate and no warm-up, so that 20 steps move the gains and biases off 1 and 0
                run("./train", "configs/default.json", *UNSHAPED, *shape, "--model.qk_norm=" + norm,
                    "--model.attn_scale=" + scale_text, "--train.z_loss=%g" % z_loss, "--train.lr=3e-2",
                    "--train.warmup_steps=0", "--train.max_steps=20", "--train.out_dir=" + out)
                _, err = run("./sample", out + "/checkpoint.bin", "--export", out + ".safetensors", stderr=True)
                run("./train", "--resume", out + "/checkpoint.bin", "--dump-state", out + ".dump")
                sd, meta = read_safetensors(out + ".safetensors")
                dump = read_tensor_file(out + ".dump")
                if si == 0 and scale_text == "sqrt":
                    check("export_says_nanogpt_has_no_%s_tensors" % norm,
                          "nanoGPT has no such tensors" in err and meta.get("qk_norm") == norm
                          and meta["attention_as_nanogpt"] == "false",
                          "stderr: %s; metadata qk_norm %s" % (err.strip().splitlines()[-1], meta.get("qk_norm")))
                scale = 1 / np.sqrt(C // H) if scale_text == "sqrt" else float(scale_text)
                names = ["transformer.h.%d.attn.%s" % (l, t) for l in range(L) for t, _ in NORM_TENSORS
                         if norm == "layernorm" or t.endswith("weight")]
                ours = {n: "layer%s.%s" % (n.split(".")[2], dict(NORM_TENSORS)[n.split("attn.")[1]]) for n in names}
                same = all(np.array_equal(sd[n], dump["param." + ours[n]]) for n in names)
                # the key bias's true gradient is 0 (it shifts all of a query's scores by the same q.b,
                # which the softmax ignores): training leaves it where rounding puts it
                moved = min(np.abs(sd[n] - (1 if n.endswith("weight") else 0)).max() for n in names
                            if not n.endswith("k_norm.bias"))
                present = sorted(k for k in sd if "_norm." in k) == sorted(names)
                check("export_%s_norm_tensors" % tag, same and present and moved > 1e-2,
                      "%d norm tensors, the checkpoint's values; the least moved is %.3g off its initial value"
                      % (len(names), moved))
                idx, tgt = dump["inputs"], dump["targets"].astype(np.int64)
                logits = nanogpt_logits(sd, H, idx, scale, norm)
                compare_logits("logits_%s" % tag, logits, dump)
                # the comparison sees the norms: without them (gains 1, biases 0) the logits differ
                plain = dict(sd)
                for n in names: plain[n] = np.ones_like(sd[n]) if n.endswith("weight") else np.zeros_like(sd[n])
                far = max_rel(nanogpt_logits(plain, H, idx, scale, norm), dump["logits"].astype(np.float64))
                ce, obj, dlogits = cross_entropy_z(logits, tgt, z_loss)
                e_ce = abs(ce - dump["loss"][0]) / abs(ce)
                e_obj = abs(obj - dump["objective"][0]) / abs(obj)
                check("loss_and_z_loss_%s" % tag, e_ce <= RTOL and e_obj <= RTOL and obj - ce > 1e2 * RTOL * obj
                      and far > 1e2 * RTOL,
                      "cross-entropy %.6f (relative difference %.1e), with z-loss %.6f (%.1e), bound %g; logits "
                      "with the norms at their initial values %.1e off" % (ce, e_ce, obj, e_obj, RTOL, far))
                # dlogits: the formula against the dump, and against central differences of the
                # objective along a random direction of the logits
                D = np.random.default_rng(si).normal(size=logits.shape)
                fd = (cross_entropy_z(logits + FD_STEP * D, tgt, z_loss)[1]
                      - cross_entropy_z(logits - FD_STEP * D, tgt, z_loss)[1]) / (2 * FD_STEP)
                e_dir = abs(fd - (dlogits * D).sum()) / abs(fd)
                e_dl = max_rel(dump["dlogits"].astype(np.float64), dlogits)
                check("dlogits_%s" % tag, e_dl <= RTOL and e_dir <= 1e-6,
                      "dump against the formula %.1e (bound %g); the formula against differences of the objective %.1e"
                      % (e_dl, RTOL, e_dir))
                # the gradients of the norms' gains and biases: central differences of the float64
                # objective, each tensor's difference measured against the largest gradient of its
                # layer's norms (the key bias's, 0 in exact arithmetic, has no scale of its own)
                fd = {}
                for n in names:
                    g = np.zeros_like(sd[n])
                    for i in range(g.size):
                        f = []
                        for h in (PARAM_STEP, -PARAM_STEP):
                            w = sd[n].copy()
                            w.flat[i] += h
                            f.append(cross_entropy_z(nanogpt_logits(dict(sd, **{n: w}), H, idx, scale, norm), tgt,
                                                     z_loss)[1])
                        g.flat[i] = (f[0] - f[1]) / (2 * PARAM_STEP)
                    fd[n] = g
                worst, worst_name = 0.0, ""
                for n in names:
                    layer_scale = max(np.abs(fd[m]).max() for m in names if m.split(".")[2] == n.split(".")[2])
                    e = np.abs(dump["grad." + ours[n]].astype(np.float64) - fd[n]).max() / layer_scale
                    if e >= worst: worst, worst_name = e, ours[n]
                check("grad_norms_%s" % tag, worst <= GRAD_RTOL,
                      "%d tensors, worst %s: max |difference| / max |gradient of its layer's norms| = %.1e (bound %g)"
                      % (len(names), worst_name, worst, GRAD_RTOL))
                if si == 0 and scale_text == "sqrt":
                    check_qk_import_refusals(out, sd, meta, norm, shape)


def check_qk_import_refusals(out, sd, meta, norm, shape):
    """./train --init-from refuses, in one line, a file whose norms disagree with the configuration."""
    base = ["./train", "configs/default.json", *UNSHAPED, *shape, "--dump-state", out + ".refused"]
    other = "rmsnorm" if norm == "layernorm" else "layernorm"
    refused("import_%s_with_qk_norm_none_refused" % norm,
            base + ["--init-from", out + ".safetensors", "--model.qk_norm=none"], "model.qk_norm 'none' differs")
    refused("import_%s_with_qk_norm_%s_refused" % (norm, other),
            base + ["--init-from", out + ".safetensors", "--model.qk_norm=" + other], "model.qk_norm '%s' differs" % other)
    # the norms' tensors in a file whose configuration has none
    cfg = json.loads(meta["config"])
    cfg["model"]["qk_norm"] = "none"
    m2 = {k: v for k, v in meta.items() if k != "qk_norm"}
    m2["config"] = json.dumps(cfg)
    write_safetensors(out + ".extra.safetensors", sd, m2)
    refused("import_%s_tensors_without_qk_norm_refused" % norm, base + ["--init-from", out + ".extra.safetensors"],
            "that its model.qk_norm 'none' does not have")
    # a configuration with the norms in a file without their key tensors
    write_safetensors(out + ".missing.safetensors", {k: v for k, v in sd.items() if "k_norm" not in k}, meta)
    refused("import_%s_without_k_norm_refused" % norm, base + ["--init-from", out + ".missing.safetensors"],
            "which its model.qk_norm '%s' needs" % norm)
    if norm == "rmsnorm":  # RMSNorm has no bias
        extra = dict(sd, **{"transformer.h.0.attn.q_norm.bias": np.zeros_like(sd["transformer.h.0.attn.q_norm.weight"])})
        write_safetensors(out + ".bias.safetensors", extra, meta)
        refused("import_rmsnorm_with_a_bias_refused", base + ["--init-from", out + ".bias.safetensors"],
                "that its model.qk_norm 'rmsnorm' does not have")


def random_nanogpt(rng, V, T, L, C, ln_bias):
    sd = {"transformer.wte.weight": rng.normal(0, 0.3, (V, C)), "transformer.wpe.weight": rng.normal(0, 0.3, (T, C))}
    for l in range(L):
        p = "transformer.h.%d." % l
        sd[p + "ln_1.weight"] = 1 + rng.normal(0, 0.1, C)
        sd[p + "attn.c_attn.weight"] = rng.normal(0, 0.3, (3 * C, C))
        sd[p + "attn.c_proj.weight"] = rng.normal(0, 0.3, (C, C))
        sd[p + "ln_2.weight"] = 1 + rng.normal(0, 0.1, C)
        sd[p + "mlp.c_fc.weight"] = rng.normal(0, 0.3, (4 * C, C))
        sd[p + "mlp.c_proj.weight"] = rng.normal(0, 0.15, (C, 4 * C))
        if ln_bias:
            sd[p + "ln_1.bias"] = rng.normal(0, 0.1, C)
            sd[p + "ln_2.bias"] = rng.normal(0, 0.1, C)
    sd["transformer.ln_f.weight"] = 1 + rng.normal(0, 0.1, C)
    if ln_bias:  # nanoGPT's bias=True gives every LayerNorm a bias, the final one too
        sd["transformer.ln_f.bias"] = rng.normal(0, 0.1, C)
    sd["lm_head.weight"] = sd["transformer.wte.weight"]
    return {k: v.astype(np.float32) for k, v in sd.items()}


def check_import(d):
    chars = "".join(sorted(set(open("data/default.txt", encoding="utf-8").read())))
    rng = np.random.default_rng(1)
    V, T, L, H, C = len(chars), 16, 2, 2, 16
    for ln_bias in (False, True):
        sd = random_nanogpt(rng, V, T, L, C, ln_bias)
        meta = {"vocab": chars, "n_head": str(H), "n_layer": str(L), "n_embd": str(C), "block_size": str(T),
                "vocab_size": str(V)}
        write_safetensors("%s/r.safetensors" % d, sd, meta)
        run("./train", "configs/default.json", *TINY, "--init-from", "%s/r.safetensors" % d, "--dump-state",
            "%s/rdump.bin" % d)
        dump = read_tensor_file("%s/rdump.bin" % d)
        sd64 = {k: v.astype(np.float64) for k, v in sd.items()}
        compare_logits("import_random_nanogpt_weights%s" % ("_with_layernorm_bias" if ln_bias else ""),
                       nanogpt_logits(sd64, H, dump["inputs"]), dump)


def greedy_float64_crop(sd, n_head, T, ids, n):
    """nanoGPT's generate at temperature 0, in float64: each next character the argmax of the
    logits after the last T characters (the crop), recomputed whole for every character."""
    ids, margins = list(ids), []
    for _ in range(n):
        logits = nanogpt_logits(sd, n_head, np.array([ids[-T:]]))[0, -1]
        top = np.sort(logits)[-2:]
        margins.append(top[1] - top[0])
        ids.append(int(logits.argmax()))
    return ids, margins


def check_greedy_crop(d):
    """./sample's greedy text past block_size, character by character, against nanoGPT's crop in
    float64 on the same weights; --context restart must differ from it (or the check could not
    tell the policies apart)."""
    chars = "".join(sorted(set(open("data/default.txt", encoding="utf-8").read())))
    V, T, L, H, C, N = len(chars), 16, 2, 2, 16, 48
    sd = random_nanogpt(np.random.default_rng(14), V, T, L, C, True)  # a text of 12 distinct characters
    meta = {"vocab": chars, "n_head": str(H), "n_layer": str(L), "n_embd": str(C), "block_size": str(T),
            "vocab_size": str(V)}
    write_safetensors("%s/g.safetensors" % d, sd, meta)
    prompt = "copy: abc | ab"
    sd64 = {k: v.astype(np.float64) for k, v in sd.items()}
    ids, margins = greedy_float64_crop(sd64, H, T, [chars.index(c) for c in prompt], N)
    want = "".join(chars[i] for i in ids[len(prompt):])
    got = {}
    for policy in ("crop", "restart"):
        out = run("./sample", "%s/g.safetensors" % d, "--prompt", prompt, "--tokens", str(N), "--temperature", "0",
                  "--context", policy)
        got[policy] = out[len(prompt):len(prompt) + N]
    # the first character where the program and float64 part, unless float64's top two logits
    # there are within float32's rounding (a tie either may break)
    first = next((i for i in range(N) if got["crop"][i:i + 1] != want[i]), N)
    tie = first < N and margins[first] < 1e-4
    check("greedy_past_block_size_matches_float64_nanogpt_crop", first == N or tie,
          "%d characters after a %d-character prompt, block_size %d: %s%r (float64: %r)"
          % (N, len(prompt), T, "equal, " if first == N else "first difference at %d (float64 margin %.2e), "
             % (first, margins[first]), got["crop"], want))
    check("greedy_restart_differs_from_the_crop", got["restart"] != want,
          "--context restart: %r" % got["restart"])


def check_converter(d):
    try:
        import torch
    except ImportError:
        print("skip converter_nanogpt_ckpt: PyTorch is not installed (apt-get install python3-torch)")
        return
    chars = "".join(sorted(set(open("data/default.txt", encoding="utf-8").read())))
    V, T, L, H, C = len(chars), 16, 2, 2, 16
    sd = random_nanogpt(np.random.default_rng(2), V, T, L, C, False)
    model = {"_orig_mod." + k: torch.tensor(v) for k, v in sd.items()}
    for l in range(L):  # the mask buffer of nanoGPT without flash attention, and zero Linear biases
        model["_orig_mod.transformer.h.%d.attn.bias" % l] = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
        model["_orig_mod.transformer.h.%d.attn.c_attn.bias" % l] = torch.zeros(3 * C)
    args = dict(n_layer=L, n_head=H, n_embd=C, block_size=T, bias=True, vocab_size=V, dropout=0.0)
    torch.save({"model": model, "model_args": args, "iter_num": 0}, "%s/ckpt.pt" % d)
    with open("%s/meta.pkl" % d, "wb") as f:
        pickle.dump({"vocab_size": V, "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}, f)
    run(sys.executable, "tools/nanogpt_to_safetensors.py", "%s/ckpt.pt" % d, "%s/meta.pkl" % d, "%s/c.safetensors" % d)
    run("./train", "configs/default.json", *TINY, "--init-from", "%s/c.safetensors" % d, "--dump-state", "%s/cdump.bin" % d)
    dump = read_tensor_file("%s/cdump.bin" % d)
    compare_logits("converter_nanogpt_ckpt", nanogpt_logits({k: v.astype(np.float64) for k, v in sd.items()}, H,
                                                             dump["inputs"]), dump)


def main():
    with tempfile.TemporaryDirectory(prefix="tgpt_stcheck_") as d:
        check_export(d)
        check_import(d)
        check_greedy_crop(d)
        check_converter(d)
        check_qk_norm(d)
        check_induction(d)
    failed = results.count(False)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
