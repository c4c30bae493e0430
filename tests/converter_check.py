#!/usr/bin/env python3
# tests/converter_check.py: tools/nanogpt_to_safetensors.py keeps the programs' promises. The
# files it reads run no code: a crafted meta.pkl and a crafted ckpt.pt whose payload (a command
# that creates a file) runs under plain pickle.load / torch.load, shown here first, are refused
# and the payload does not run. Every error is one line (a bad pickle, a missing file, an output
# onto a directory or through a symbolic link, a model_args without a key, FIFOs as inputs or
# output: refused without waiting); the output goes through a temporary file and a rename (a
# hard link to the old file keeps its bytes, killed runs' temporary files are removed); the
# script has its run bit. The checks that need PyTorch skip, saying so, when it is not installed.
# Run from the repository's top: python3 tests/converter_check.py [CONVERTER]; prints one line per
# check and ends "N passed, N failed".
import os
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile

CONVERTER = sys.argv[1] if len(sys.argv) > 1 else "tools/nanogpt_to_safetensors.py"
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, ": " + detail if detail and not ok else ""))


def convert(*args, timeout=60):
    try:
        p = subprocess.run([sys.executable, CONVERTER] + list(args), capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % timeout


def one_line_error(name, r, *needles, code=1):
    rc, _, err = r
    ok = rc == code and err.count("\n") == 1 and "Traceback" not in err and all(n in err for n in needles)
    check(name, ok, "exit %s, stderr: %r" % (rc, err[-600:]))


class Payload:
    """Unpickling this runs `touch PATH` (os.system through __reduce__)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, ("touch '%s'" % self.path,))


def payload_refused(kind, marker, loader, crafted, convert_args, needle):
    """The crafted file's payload runs under the plain loader (python code reading sys.argv[1]),
    and the converter refuses the file with one line and runs nothing."""
    subprocess.run([sys.executable, "-c", loader, crafted], capture_output=True)
    check("converter_%s_payload_is_live" % kind, os.path.exists(marker),
          "the crafted %s ran nothing under the plain loader" % os.path.basename(crafted))
    if os.path.exists(marker):
        os.unlink(marker)
    one_line_error("converter_%s_payload_refused" % kind, convert(*convert_args), os.path.basename(crafted), needle)
    out = convert_args[-1]
    check("converter_%s_payload_not_run" % kind, not os.path.exists(marker) and not os.path.exists(out))


def good_meta(path, chars):
    with open(path, "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}, f)


def main():
    d = tempfile.mkdtemp(prefix="tgpt_convcheck_")
    try:
        run_checks(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    failed = results.count(False)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


def run_checks(d):
    j = lambda *p: os.path.join(d, *p)
    chars = "\nabc"
    good_meta(j("meta.pkl"), chars)
    open(j("ckpt.pt"), "wb").write(b"not read when meta.pkl is refused")

    # the run bit, as the README runs it
    check("converter_run_bit", os.access(CONVERTER, os.X_OK), "%s is not executable" % CONVERTER)
    if os.access(CONVERTER, os.X_OK):
        p = subprocess.run([CONVERTER, "--help"], capture_output=True, text=True)
        check("converter_runs_as_a_program", p.returncode == 0 and "usage" in p.stdout, "exit %d %s" % (p.returncode, p.stderr))

    # meta.pkl: the payload runs under pickle.load; the converter refuses it and runs nothing
    marker = j("meta_payload_ran")
    open(j("evil_meta.pkl"), "wb").write(pickle.dumps({"itos": Payload(marker)}))
    payload_refused("meta", marker, "import pickle,sys; pickle.load(open(sys.argv[1], 'rb'))", j("evil_meta.pkl"),
                    (j("ckpt.pt"), j("evil_meta.pkl"), j("out.safetensors")), "system")

    # damaged and missing inputs, FIFOs, outputs that are no regular file: one line each, no wait
    open(j("bad.pkl"), "wb").write(b"\x80\x04\x95garbage")
    one_line_error("converter_bad_pickle", convert(j("ckpt.pt"), j("bad.pkl"), j("out.safetensors")), "bad.pkl",
                   "not a readable pickle")
    one_line_error("converter_missing_file", convert(j("nope.pt"), j("meta.pkl"), j("out.safetensors")), "nope.pt",
                   "No such file")
    os.mkdir(j("adir"))
    one_line_error("converter_output_onto_a_directory", convert(j("ckpt.pt"), j("meta.pkl"), j("adir")), "adir",
                   "a directory")
    open(j("victim"), "w").write("precious\n")
    os.symlink(j("victim"), j("link.safetensors"))
    one_line_error("converter_output_through_a_link", convert(j("ckpt.pt"), j("meta.pkl"), j("link.safetensors")),
                   "link.safetensors", "symbolic link")
    check("converter_link_target_untouched", open(j("victim")).read() == "precious\n")
    os.mkfifo(j("fifo"))
    one_line_error("converter_fifo_checkpoint", convert(j("fifo"), j("meta.pkl"), j("out.safetensors"), timeout=20),
                   "fifo", "FIFO")
    one_line_error("converter_fifo_meta", convert(j("ckpt.pt"), j("fifo"), j("out.safetensors"), timeout=20), "fifo",
                   "FIFO")
    one_line_error("converter_fifo_output", convert(j("ckpt.pt"), j("meta.pkl"), j("fifo"), timeout=20), "fifo", "FIFO")
    one_line_error("converter_wrong_arguments", convert(j("ckpt.pt")), "usage", code=2)

    # a list that holds one list twice, 40 levels deep: 2^40 paths through a pickle of a few
    # hundred bytes; the walk counts what it visits and ends at once
    shared = []
    for _ in range(40):
        shared = [shared, shared]
    open(j("shared.pkl"), "wb").write(pickle.dumps({"itos": shared}))
    one_line_error("converter_shared_pickle", convert(j("ckpt.pt"), j("shared.pkl"), j("out.safetensors"), timeout=20),
                   "shared.pkl", "itos")
    cyclic = []
    cyclic.append(cyclic)
    open(j("cyclic.pkl"), "wb").write(pickle.dumps({"itos": cyclic}))
    one_line_error("converter_cyclic_pickle", convert(j("ckpt.pt"), j("cyclic.pkl"), j("out.safetensors"), timeout=20),
                   "cyclic.pkl")

    try:
        import torch
    except ImportError:
        print("skip converter_ckpt_payload_refused, converter_model_args_key, converter_output_replaced_by_rename: "
              "PyTorch is not installed (apt-get install python3-torch)")
        return

    # ckpt.pt: the payload runs under torch.load as the converter called it (weights_only off)
    marker = j("ckpt_payload_ran")
    torch.save({"model": {}, "model_args": Payload(marker)}, j("evil_ckpt.pt"))
    payload_refused("ckpt", marker, "import torch,sys; torch.load(sys.argv[1], map_location='cpu')", j("evil_ckpt.pt"),
                    (j("evil_ckpt.pt"), j("meta.pkl"), j("out.safetensors")), "weights_only")
    # the same after a float (PyTorch 1.13's weights-only unpickler stops at the float: the
    # converter's allow-list then refuses the payload)
    torch.save({"model": {}, "model_args": {"dropout": 0.0, "n_head": Payload(marker)}}, j("evil_float.pt"))
    r = convert(j("evil_float.pt"), j("meta.pkl"), j("out.safetensors"))
    one_line_error("converter_ckpt_payload_after_float_refused", r, "evil_float.pt", "system")
    check("converter_ckpt_payload_after_float_not_run", not os.path.exists(marker))

    # a valid nanoGPT checkpoint (bias=False, the compiled model's prefix, the mask buffers)
    V, T, L, H, C = len(chars), 8, 1, 2, 8
    g = torch.Generator().manual_seed(3)
    w = lambda *s: 0.1 * torch.randn(*s, generator=g)
    sd = {"transformer.wte.weight": w(V, C), "transformer.wpe.weight": w(T, C), "transformer.ln_f.weight": 1 + w(C)}
    for l in range(L):
        p = "transformer.h.%d." % l
        sd.update({p + "ln_1.weight": 1 + w(C), p + "attn.c_attn.weight": w(3 * C, C), p + "attn.c_proj.weight": w(C, C),
                   p + "ln_2.weight": 1 + w(C), p + "mlp.c_fc.weight": w(4 * C, C), p + "mlp.c_proj.weight": w(C, 4 * C),
                   p + "attn.bias": torch.tril(torch.ones(T, T)).view(1, 1, T, T)})
    sd["lm_head.weight"] = sd["transformer.wte.weight"]
    args = dict(n_layer=L, n_head=H, n_embd=C, block_size=T, bias=False, vocab_size=V, dropout=0.0)
    model = {"_orig_mod." + k: v for k, v in sd.items()}
    torch.save({"model": model, "model_args": args, "iter_num": 0, "best_val_loss": torch.tensor(1.5),
                "config": {"batch_size": 4, "compile": True}}, j("ckpt_good.pt"))
    short = dict(args)
    del short["n_head"]
    torch.save({"model": model, "model_args": short}, j("ckpt_short.pt"))
    one_line_error("converter_model_args_key", convert(j("ckpt_short.pt"), j("meta.pkl"), j("out.safetensors")),
                   "ckpt_short.pt", "has no 'n_head'")

    # the crafted meta.pkl beside a valid checkpoint (the meta.pkl is then read in any order)
    marker = j("meta_payload_ran")
    one_line_error("converter_meta_payload_refused_with_a_valid_checkpoint",
                   convert(j("ckpt_good.pt"), j("evil_meta.pkl"), j("out.safetensors")), "evil_meta.pkl", "system")
    check("converter_meta_payload_not_run_with_a_valid_checkpoint", not os.path.exists(marker))

    # the output replaces the old file by a rename: a hard link to the old file keeps its bytes
    out = j("m.safetensors")
    open(j("old"), "w").write("old bytes\n")
    os.link(j("old"), out)
    os.chmod(out, 0o640)
    open(out + ".tmp.999999999.0", "w").write("a killed run's")
    open(out + ".tmp.%d.0" % os.getpid(), "w").write("a live run's")
    rc, so, err = convert(j("ckpt_good.pt"), j("meta.pkl"), out)
    check("converter_converts", rc == 0 and "wrote" in so, "exit %s: %s" % (rc, err))
    check("converter_output_replaced_by_rename", open(j("old"), "rb").read() == b"old bytes\n" and
          os.stat(out).st_ino != os.stat(j("old")).st_ino and stat.S_IMODE(os.stat(out).st_mode) == 0o640)
    left = sorted(n for n in os.listdir(d) if n.startswith("m.safetensors.tmp."))
    check("converter_temps", left == ["m.safetensors.tmp.%d.0" % os.getpid()], "left: %s" % left)
    if os.access("./sample", os.X_OK):
        p = subprocess.run(["./sample", out, "--tokens", "5"], capture_output=True, text=True)
        check("converter_output_reads", p.returncode == 0, p.stderr)


if __name__ == "__main__":
    sys.exit(main())
