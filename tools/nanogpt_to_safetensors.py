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
#
# The files it reads run no code: ckpt.pt is loaded with torch.load(weights_only=True) (tensors
# and plain containers only), meta.pkl with an unpickler that admits no class or function at all
# (nanoGPT writes a dict of str, int and their dicts and lists there). Like the programs, it reads
# and writes regular files only (a FIFO or a device is refused, never opened to wait), says what
# is wrong in one line (exit 1; a usage error exits 2), and writes its output to a temporary file
# beside it (OUT.tmp.<pid>.<n>, never a symbolic link's target) that replaces OUT by a rename: OUT
# holds the old file or the whole new one, whatever happens; a temporary file that a killed run
# left is removed by the next one writing OUT.
import errno
import io
import json
import os
import pickle
import re
import signal
import stat
import struct
import sys

PROG = "nanogpt_to_safetensors"


class Refused(Exception):
    pass


def fail(msg):
    sys.exit("%s: error: %s" % (PROG, msg))


def what_is(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path):
    """A regular file opened for reading; a FIFO, a device or a directory is refused without
    waiting (opened non-blocking, then checked)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise Refused("cannot read '%s': %s" % (path, e.strerror))
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise Refused("cannot read '%s': it is %s, not a regular file" % (path, what_is(st.st_mode)))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_regular(path):
    with open_regular(path) as f:
        try:
            return f.read()
        except OSError as e:
            raise Refused("cannot read '%s': %s" % (path, e.strerror))


class MetaUnpickler(pickle.Unpickler):
    """meta.pkl's dicts, lists, strings and integers are built by the pickle's own opcodes; any
    class or function it names (the way a pickle runs code) is refused."""

    def find_class(self, module, name):
        raise Refused("names %s.%s; meta.pkl holds only dicts, lists, strings and integers: refused "
                      "(nothing of it was run)" % (module, name))


META_MAX_VALUES = 1000000  # a character data set's meta.pkl holds a few values per character


def plain(x):
    """Whether x is made of dict, list, str and int only (bool is an int's subclass: refused).
    The walk is bounded by what it visits, not by depth alone: each container is entered once
    (a pickle can share one list many times, or hold itself), at most 50 deep, and at most
    META_MAX_VALUES values in all."""
    seen = set()
    stack = [(x, 0)]
    visited = 0
    while stack:
        v, depth = stack.pop()
        visited += 1
        if visited > META_MAX_VALUES or depth > 50:
            return False
        if isinstance(v, (dict, list)):
            if id(v) in seen:
                continue
            seen.add(id(v))
            items = v.items() if isinstance(v, dict) else ((None, e) for e in v)
            for k, e in items:
                if isinstance(v, dict):
                    stack.append((k, depth + 1))
                stack.append((e, depth + 1))
        elif type(v) not in (str, int):
            return False
    return True


def read_meta(path):
    data = read_regular(path)
    try:
        meta = MetaUnpickler(io.BytesIO(data)).load()
    except Refused as e:
        raise Refused("'%s' %s" % (path, e))
    except Exception as e:  # any damage: truncated, not a pickle, a bad opcode
        raise Refused("'%s' is not a readable pickle (%s: %s)" % (path, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
    if not plain(meta):
        raise Refused("'%s' holds a value other than dicts, lists, strings and integers" % path)
    return meta


class AllowListPickle:
    """A pickle module that builds what torch.load(weights_only=True) admits (torch's own list: its
    tensor and storage types, their rebuild functions, dtypes, torch.Size and OrderedDict) and
    refuses every other class or function. PyTorch before 2.0 has the flag but its weights-only
    unpickler knows no float opcode, and nanoGPT's model_args and config hold floats (dropout,
    learning_rate): there the same list is applied with pickle's own opcodes, through torch's
    reader of the zip format (torch.load itself would put the plain pickle module back in when
    weights_only is off)."""
    __name__ = "allow-list pickle"

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            from torch._weights_only_unpickler import _get_allowed_globals
            allowed = _get_allowed_globals()
            if "%s.%s" % (module, name) not in allowed:
                raise Refused("names %s.%s, which is not a tensor's or a plain container's" % (module, name))
            return allowed["%s.%s" % (module, name)]

    @staticmethod
    def load(f, **kw):
        return AllowListPickle.Unpickler(f, **kw).load()


def read_ckpt(path, torch):
    import zipfile
    with open_regular(path) as f:
        try:
            if zipfile.is_zipfile(f) and any(n.endswith("/constants.pkl") or n == "constants.pkl"
                                             for n in zipfile.ZipFile(f).namelist()):
                raise Refused("'%s' is a TorchScript archive (code), not a nanoGPT checkpoint: refused" % path)
            f.seek(0)
            try:
                return torch.load(f, map_location="cpu", weights_only=True)
            except pickle.UnpicklingError as e:
                if "Unsupported operand" not in str(e):
                    raise
                f.seek(0)
                if not zipfile.is_zipfile(f):
                    raise Refused("'%s' is in PyTorch's legacy (pre-1.6) format, which this PyTorch reads only with "
                                  "code allowed to run: refused (PyTorch 2 reads it with weights_only=True)" % path)
                f.seek(0)
                with torch.serialization._open_zipfile_reader(f) as z:
                    return torch.serialization._load(z, "cpu", AllowListPickle, encoding="utf-8")
        except Refused as e:
            raise Refused(str(e) if str(e).startswith("'") else "'%s' %s: refused, nothing of it was run" % (path, e))
        except Exception as e:  # weights_only refuses any class or function but tensors' and containers'
            first = str(e).strip().splitlines()
            raise Refused("'%s' cannot be loaded as tensors and plain values only (torch.load weights_only=True: %s%s); "
                          "refused, nothing of it was run" % (path, type(e).__name__, ": " + first[-1][-300:] if first else ""))


# ---- the output ----

TEMPS = []  # the temporary file being written, removed on every way out


def remove_temps(*_):
    for t in TEMPS:
        try:
            os.unlink(t)
        except OSError:
            pass
    TEMPS.clear()


def on_signal(sig, _frame):
    remove_temps()
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)


def pid_runs(pid):
    try:
        os.kill(pid, 0)
    except OSError as e:
        return e.errno != errno.ESRCH
    return True


def check_target(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise Refused("cannot write '%s': %s" % (path, e.strerror))
    if not stat.S_ISREG(st.st_mode):
        raise Refused("cannot write '%s': it is %s, not a regular file; nothing was written (remove it or name another "
                      "file)" % (path, what_is(st.st_mode)))


def remove_stale_temps(path):
    """OUT.tmp.<pid>.<n> of processes that no longer run (regular files only)."""
    d, base = os.path.split(path)
    pattern = re.compile(re.escape(base) + r"\.tmp\.([0-9]{1,9})\.[0-9]{1,20}$")
    try:
        names = os.listdir(d or ".")
    except OSError:
        return
    for n in names:
        m = pattern.match(n)
        if not m or int(m.group(1)) == os.getpid() or pid_runs(int(m.group(1))):
            continue
        p = os.path.join(d, n)
        try:
            if stat.S_ISREG(os.lstat(p).st_mode):
                os.unlink(p)
        except OSError:
            pass


def write_replacing(path, chunks):
    check_target(path)
    remove_stale_temps(path)
    mode = None
    if os.path.lexists(path):
        mode = stat.S_IMODE(os.lstat(path).st_mode)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd, tmp = -1, None
    for n in range(1000):
        tmp = "%s.tmp.%d.%d" % (path, os.getpid(), n)
        try:
            fd = os.open(tmp, flags, 0o666)
            break
        except FileExistsError:
            continue
        except OSError as e:
            raise Refused("cannot write '%s' (its temporary file '%s'): %s" % (path, tmp, e.strerror))
    if fd < 0:
        raise Refused("cannot write '%s': no free temporary name beside it" % path)
    TEMPS.append(tmp)
    try:
        if mode is not None:
            os.fchmod(fd, mode)  # a replaced file keeps its permissions
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
            f.flush()
            os.fsync(f.fileno())
        check_target(path)  # nothing else was put there meanwhile
        os.rename(tmp, path)
        TEMPS.remove(tmp)
    except OSError as e:
        remove_temps()
        raise Refused("cannot write '%s': %s; it is unchanged" % (path, e.strerror))
    except BaseException:
        remove_temps()
        raise


def convert(ckpt_path, meta_path, out_path):
    for p in (ckpt_path, meta_path):  # before the work: inputs that cannot be read
        open_regular(p).close()
    check_target(out_path)  # and an output that can never be written
    for p in (ckpt_path, meta_path):
        try:
            if os.path.samefile(p, out_path):
                raise Refused("cannot write '%s': it is (or links to) the input '%s'; name another file for the output"
                              % (out_path, p))
        except OSError:
            pass
    meta = read_meta(meta_path)
    itos = meta.get("itos") if isinstance(meta, dict) else None
    if not isinstance(itos, dict):
        raise Refused("'%s' has no 'itos' (a character data set's meta.pkl)" % meta_path)
    try:
        import torch
    except ImportError:
        raise Refused("reading %s needs PyTorch (Debian: apt-get install python3-torch)" % ckpt_path)
    ckpt = read_ckpt(ckpt_path, torch)
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("model"), dict) or not isinstance(ckpt.get("model_args"), dict):
        raise Refused("'%s' is not a nanoGPT checkpoint (no 'model' and 'model_args')" % ckpt_path)
    args = ckpt["model_args"]
    dims = {}
    for k in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
        v = args.get(k)
        if type(v) is not int or v < 1:
            raise Refused("'%s': its model_args %s; expected a positive integer" %
                          (ckpt_path, "has no '%s'" % k if k not in args else "'%s' is %r" % (k, v)))
        dims[k] = v
    V = dims["vocab_size"]
    if sorted(itos) != list(range(V)):
        raise Refused("'%s''s itos has %d entries but the model's vocab_size is %d" % (meta_path, len(itos), V))
    chars = [itos[i] for i in range(V)]
    if any(not isinstance(c, str) or len(c) != 1 for c in chars) or chars != sorted(set(chars)):
        raise Refused("'%s''s itos is not the sorted distinct characters of a text" % meta_path)

    sd = {}
    for k, v in ckpt["model"].items():
        if not isinstance(k, str) or not isinstance(v, torch.Tensor):
            raise Refused("'%s': its model entry %r is not a named tensor" % (ckpt_path, k))
        if k.startswith("_orig_mod."):
            k = k[len("_orig_mod."):]
        if k.endswith(".attn.bias") and v.dim() == 4:
            continue  # the causal-mask buffer, not a weight
        sd[k] = v.detach().to(torch.float32).contiguous()
    linear_biases = [k for k in sd if k.endswith((".c_attn.bias", ".c_proj.bias", ".c_fc.bias")) or k == "lm_head.bias"]
    for k in linear_biases:
        if torch.count_nonzero(sd[k]).item():
            raise Refused("'%s': %s is a Linear bias other than 0 (bias=True); this architecture has none" % (ckpt_path, k))
        del sd[k]

    header = {"__metadata__": {
        "format": "pt",
        "source": "nanoGPT ckpt.pt",
        "vocab": "".join(chars),
        "vocab_size": str(V),
        "block_size": str(dims["block_size"]),
        "n_layer": str(dims["n_layer"]),
        "n_head": str(dims["n_head"]),
        "n_embd": str(dims["n_embd"]),
    }}
    blobs, offset = [], 0
    for k, v in sd.items():
        b = v.numpy().astype("<f4").tobytes()
        header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    write_replacing(out_path, [struct.pack("<Q", len(text)), text] + blobs)
    print("wrote %s: %d tensors, n_layer %d, n_head %d, n_embd %d, block_size %d, vocab %d" % (
        out_path, len(sd), dims["n_layer"], dims["n_head"], dims["n_embd"], dims["block_size"], V))


def main(argv):
    usage = "usage: nanogpt_to_safetensors.py CKPT.pt META.pkl OUT.safetensors"
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(usage + "\nwrites nanoGPT's ckpt.pt (with the data set's meta.pkl) as a safetensors file for ./sample "
              "and\n./train --init-from (docs/FORMAT.md)")
        return 0
    if len(argv) != 4:
        print("%s: error: expected 3 arguments, got %d (%s)" % (PROG, len(argv) - 1, usage), file=sys.stderr)
        return 2
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        convert(*argv[1:])
    except Refused as e:
        fail(str(e))
    except MemoryError:
        remove_temps()
        fail("out of memory converting '%s'" % argv[1])
    except Exception as e:  # anything unforeseen still ends in one line
        remove_temps()
        first = str(e).strip().splitlines()
        fail("converting '%s': %s%s" % (argv[1], type(e).__name__, ": " + first[-1] if first else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
