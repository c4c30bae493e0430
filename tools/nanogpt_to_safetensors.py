#!/usr/bin/env python3
# tools/nanogpt_to_safetensors.py: a nanoGPT character model (its out_dir/ckpt.pt and the data
# set's meta.pkl) as a safetensors file that ./sample and ./train --init-from read.
#
#   python3 tools/nanogpt_to_safetensors.py out-shakespeare-char/ckpt.pt data/shakespeare_char/meta.pkl model.safetensors
#
# Needs PyTorch only to unpickle ckpt.pt (Debian: apt-get install python3-torch); the project
# itself never needs Python. The file holds nanoGPT's state_dict under its own names, float32,
# with n_layer, n_head, n_embd, block_size, vocab_size and the vocabulary (meta.pkl's itos in
# token order) in the metadata (docs/FORMAT.md). Left out: torch.compile's "_orig_mod." prefix
# and the causal-mask buffers (transformer.h.N.attn.bias) that nanoGPT registers without flash
# attention. A bias=True model is converted only when its Linear biases are all zero: this
# architecture has none.
import json
import pickle
import struct
import sys


def fail(msg):
    sys.exit("nanogpt_to_safetensors: error: " + msg)


def main(argv):
    if len(argv) != 4 or argv[1] in ("-h", "--help"):
        print("usage: nanogpt_to_safetensors.py CKPT.pt META.pkl OUT.safetensors\n"
              "writes nanoGPT's ckpt.pt (with the data set's meta.pkl) as a safetensors file for ./sample and\n"
              "./train --init-from (docs/FORMAT.md)")
        return 0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2
    ckpt_path, meta_path, out_path = argv[1:]
    try:
        import torch
    except ImportError:
        fail("reading %s needs PyTorch (Debian: apt-get install python3-torch)" % ckpt_path)
    ckpt = torch.load(ckpt_path, map_location="cpu")
    if not isinstance(ckpt, dict) or "model" not in ckpt or "model_args" not in ckpt:
        fail("%s is not a nanoGPT checkpoint (no 'model' and 'model_args')" % ckpt_path)
    with open(meta_path, "rb") as f:
        meta = pickle.load(f)
    itos = meta.get("itos") if isinstance(meta, dict) else None
    if not isinstance(itos, dict):
        fail("%s has no 'itos' (a character data set's meta.pkl)" % meta_path)
    args = ckpt["model_args"]
    V = int(args["vocab_size"])
    if sorted(itos) != list(range(V)):
        fail("%s's itos has %d entries but the model's vocab_size is %d" % (meta_path, len(itos), V))
    chars = [itos[i] for i in range(V)]
    if any(len(c) != 1 for c in chars) or chars != sorted(set(chars)):
        fail("%s's itos is not the sorted distinct characters of a text" % meta_path)

    sd = {}
    for k, v in ckpt["model"].items():
        if k.startswith("_orig_mod."):
            k = k[len("_orig_mod."):]
        if k.endswith(".attn.bias") and v.dim() == 4:
            continue  # the causal-mask buffer, not a weight
        sd[k] = v.detach().to(torch.float32).contiguous()
    linear_biases = [k for k in sd if k.endswith((".c_attn.bias", ".c_proj.bias", ".c_fc.bias")) or k == "lm_head.bias"]
    for k in linear_biases:
        if torch.count_nonzero(sd[k]).item():
            fail("%s: %s is a Linear bias other than 0 (bias=True); this architecture has none" % (ckpt_path, k))
        del sd[k]

    header = {"__metadata__": {
        "format": "pt",
        "source": "nanoGPT ckpt.pt",
        "vocab": "".join(chars),
        "vocab_size": str(V),
        "block_size": str(int(args["block_size"])),
        "n_layer": str(int(args["n_layer"])),
        "n_head": str(int(args["n_head"])),
        "n_embd": str(int(args["n_embd"])),
    }}
    blobs, offset = [], 0
    for k, v in sd.items():
        b = v.numpy().astype("<f4").tobytes()
        header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(out_path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    print("wrote %s: %d tensors, n_layer %s, n_head %s, n_embd %s, block_size %s, vocab %d" % (
        out_path, len(sd), args["n_layer"], args["n_head"], args["n_embd"], args["block_size"], V))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
