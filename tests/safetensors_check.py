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
#   3. when PyTorch is installed: a nanoGPT-style ckpt.pt and meta.pkl made here, converted by
#      tools/nanogpt_to_safetensors.py, give the same logits too.
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
results = []


def check(name, ok, detail):
    results.append(ok)
    print("%s %s: %s" % ("ok  " if ok else "FAIL", name, detail))


def run(*cmd):
    p = subprocess.run(list(cmd), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("command failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return p.stdout


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


def nanogpt_logits(sd, n_head, idx):
    """nanoGPT's GPT.forward for every position, in float64 (dropout 0, bias=False)."""
    B, T = idx.shape
    x = sd["transformer.wte.weight"][idx] + sd["transformer.wpe.weight"][:T]
    C = x.shape[-1]
    hd = C // n_head
    L = 1 + max(int(k.split(".")[2]) for k in sd if k.startswith("transformer.h."))
    mask = np.triu(np.ones((T, T), bool), 1)
    for l in range(L):
        p = "transformer.h.%d." % l
        h = layernorm(x, sd[p + "ln_1.weight"], sd.get(p + "ln_1.bias"))
        q, k, v = np.split(h @ sd[p + "attn.c_attn.weight"].T, 3, axis=-1)
        q, k, v = (a.reshape(B, T, n_head, hd).transpose(0, 2, 1, 3) for a in (q, k, v))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
        s[..., mask] = -np.inf
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        y = (w @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + y @ sd[p + "attn.c_proj.weight"].T
        h = layernorm(x, sd[p + "ln_2.weight"], sd.get(p + "ln_2.bias"))
        x = x + gelu(h @ sd[p + "mlp.c_fc.weight"].T) @ sd[p + "mlp.c_proj.weight"].T
    x = layernorm(x, sd["transformer.ln_f.weight"], sd.get("transformer.ln_f.bias"))
    return x @ sd.get("lm_head.weight", sd["transformer.wte.weight"]).T


def compare_logits(name, ours, dump):
    ref = dump["logits"].astype(np.float64)
    err = np.abs(ours - ref).max() / np.abs(ref).max()
    check(name, err <= RTOL, "max |difference| / max |logit| = %.2e (bound %g) over %s logits" % (err, RTOL, ref.shape))


def check_export(d):
    run("./train", "configs/default.json", *TINY, "--train.max_steps=30", "--train.out_dir=%s/run" % d)
    run("./sample", "%s/run/checkpoint.bin" % d, "--export", "%s/m.safetensors" % d)
    run("./train", "--resume", "%s/run/checkpoint.bin" % d, "--dump-state", "%s/dump.bin" % d)
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
        check_converter(d)
    failed = results.count(False)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
