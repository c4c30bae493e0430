#!/usr/bin/env python3
# tools/bench_torch.py: the same-machine PyTorch reference for `make bench-torch` (docs/PERFORMANCE.md).
#
# A nanoGPT-equivalent model (pre-LN blocks, causal attention with the mask and softmax written
# out as nanoGPT does on PyTorch 1.x, 4C GELU MLP, tied head, AdamW, gradient clipping) timed like
# `./train CONFIG --bench=N`: random tokens, 3 warm-up steps, then N full steps (forward, backward,
# clip, AdamW), median ms/step. Optional: the project never runs it in its tests and does not
# depend on it (Debian: apt-get install python3-torch libopenblas0-pthread).
#
#   python3 tools/bench_torch.py W1 1 30                   one run, in this environment as it is
#   python3 tools/bench_torch.py W1 --best 30              PyTorch's fastest configuration here
#   python3 tools/bench_torch.py W1 --pairs 5 30 -- ./train configs/bench_w1.json --bench=30
#                                                          its fastest, then 5 pairs alternating
#                                                          with the command; the ratio per pair
#   python3 tools/bench_torch.py W2 --sgemm 15             the BLAS alone on the shape's four
#                                                          forward products, GFLOP/s
#
# Every run says what it measured: the BLAS library that serves PyTorch's sgemm_ (found from the
# loaded libtorch_cpu, so the alternatives system's choice is what is reported), OpenBLAS's own
# build and kernel report (openblas_get_config, openblas_get_corename), the thread counts and
# ATen's vector capability. Against the reference BLAS (what Debian's python3-torch pulls in
# without libopenblas0-pthread, tens of times slower) no ratio is printed.
#
# PyTorch's configurations tried (each in a fresh process, since OpenBLAS reads its variables when
# it loads): OpenBLAS's kernels as the environment chooses them (OPENBLAS_CORETYPE as set, and
# unset), and forced to Haswell (AVX2), SkylakeX and Cooperlake (AVX-512), because OpenBLAS 0.3.21
# does not know every current CPU model and then falls back to old SSE kernels; ATen's own kernels
# at its default capability and at AVX-512; then torch threads 1 and 2 by OPENBLAS_NUM_THREADS 1
# and 2. The search is staged (kernels, then ATen, then threads); each stage runs its candidates
# twice in rotation and keeps the fastest.
import ctypes, math, os, re, resource, statistics, subprocess, sys, time

# n_layer, n_head, n_embd, B, T. W1, W2: configs/bench_w1.json, bench_w2.json. T64 .. T4096: the cost
# curve's shapes (configs/bench_context.json at --model.block_size=T --train.batch_size=4096/T, as
# `make bench-context` runs them): 4096 tokens per step at every T.
SHAPES = {'W1': (4, 4, 128, 12, 64), 'W2': (6, 6, 384, 8, 256)}
SHAPES.update({f'T{t}': (4, 4, 128, 4096 // t, t) for t in (64, 128, 256, 512, 1024, 2048, 4096)})
NAMES = '|'.join(SHAPES)
USAGE = (f"usage: bench_torch.py {NAMES} TORCH_THREADS STEPS\n"
         f"       bench_torch.py {NAMES} --best STEPS\n"
         f"       bench_torch.py {NAMES} --sgemm REPS\n"
         f"       bench_torch.py {NAMES} --pairs N STEPS -- COMMAND...")
FIX = "install OpenBLAS for PyTorch (Debian: apt-get install libopenblas0-pthread)"


def blas_report():
    """The BLAS library behind PyTorch's sgemm_, and OpenBLAS's own report when it is OpenBLAS."""
    class DlInfo(ctypes.Structure):
        _fields_ = [('fname', ctypes.c_char_p), ('fbase', ctypes.c_void_p),
                    ('sname', ctypes.c_char_p), ('saddr', ctypes.c_void_p)]
    rep = {'library': 'unknown', 'kind': 'unknown', 'config': '', 'core': ''}
    maps = [l.split()[-1] for l in open('/proc/self/maps') if 'libtorch_cpu' in l]
    if not maps:
        return rep
    try:
        sgemm = ctypes.cast(ctypes.CDLL(maps[0]).sgemm_, ctypes.c_void_p)
        info = DlInfo()
        if not ctypes.CDLL(None).dladdr(sgemm, ctypes.byref(info)):
            return rep
    except (OSError, AttributeError):
        return rep
    path = os.path.realpath(info.fname.decode())
    rep['library'] = path
    lib = ctypes.CDLL(path)
    if hasattr(lib, 'openblas_get_config'):
        lib.openblas_get_config.restype = lib.openblas_get_corename.restype = ctypes.c_char_p
        rep.update(kind='openblas', config=lib.openblas_get_config().decode(),
                   core=lib.openblas_get_corename().decode(), threads=lib.openblas_get_num_threads())
    elif 'mkl' in path:
        rep['kind'] = 'mkl'
    elif '/blas/' in path or 'refblas' in path or os.path.basename(path).startswith('libblas'):
        rep['kind'] = 'reference'
    return rep


def import_torch():
    try:
        import torch
    except ImportError:
        sys.exit("bench_torch.py: PyTorch is not installed for %s (Debian: apt-get install python3-torch "
                 "libopenblas0-pthread, and run /usr/bin/python3)" % sys.executable)
    return torch


def print_blas():
    """The BLAS line every run ends with, and the warning when it is the reference BLAS."""
    rep = blas_report()
    print(f"blas: kind={rep['kind']} library={rep['library']} core={rep['core'] or '-'} config={rep['config'] or '-'}", flush=True)
    if rep['kind'] == 'reference':
        print(f"bench_torch.py: PyTorch runs on the reference BLAS ({rep['library']}), not an optimised one: "
              f"its times say little about PyTorch; {FIX}", file=sys.stderr)


def run_one(shape, nthreads, steps):
    """One timed run in this process's environment; prints the result line and the BLAS line."""
    torch = import_torch()
    import torch.nn as nn, torch.nn.functional as F
    torch.set_num_threads(nthreads)
    torch.manual_seed(0)
    V = 65
    L, H, C, B, T = SHAPES[shape]

    class Block(nn.Module):
        def __init__(s):
            super().__init__()
            s.ln1, s.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            s.attn = nn.Linear(C, 3 * C, bias=False); s.proj = nn.Linear(C, C, bias=False)
            s.fc = nn.Linear(C, 4 * C, bias=False); s.mproj = nn.Linear(4 * C, C, bias=False)
            s.register_buffer('mask', torch.triu(torch.ones(T, T, dtype=torch.bool), 1))

        def forward(s, x):
            q, k, v = s.attn(s.ln1(x)).split(C, dim=2)
            q, k, v = [t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v)]
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
            att = att.masked_fill(s.mask, float('-inf'))
            y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + s.proj(y)
            return x + s.mproj(F.gelu(s.fc(s.ln2(x))))

    class GPT(nn.Module):
        def __init__(s):
            super().__init__()
            s.wte, s.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            s.blocks = nn.ModuleList([Block() for _ in range(L)]); s.lnf = nn.LayerNorm(C)
            for p in s.parameters():
                if p.dim() >= 2: nn.init.normal_(p, std=0.02)

        def forward(s, idx, tgt):
            x = s.wte(idx) + s.wpe(torch.arange(T))
            for b in s.blocks: x = b(x)
            logits = s.lnf(x) @ s.wte.weight.t()
            return F.cross_entropy(logits.view(-1, V), tgt.view(-1))

    m = GPT()
    decay = [p for p in m.parameters() if p.dim() >= 2]
    nodecay = [p for p in m.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.1}, {'params': nodecay, 'weight_decay': 0.0}],
                            lr=1e-3, betas=(0.9, 0.99))
    times = []
    for it in range(steps + 3):
        x, y = torch.randint(V, (B, T)), torch.randint(V, (B, T))
        t0 = time.perf_counter()
        loss = m(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        if it >= 3: times.append((time.perf_counter() - t0) * 1000)
    cap = [l.split(':', 1)[1].strip() for l in torch.__config__.show().splitlines() if 'CPU capability' in l]
    print(f"torch {shape}: ms_per_step={statistics.median(times):.1f} min={min(times):.1f} max={max(times):.1f} "
          f"(torch {torch.__version__}, {nthreads} torch thread(s), OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}, "
          f"ATen {cap[0] if cap else '?'}) peak_rss_mib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}", flush=True)
    print_blas()


def run_sgemm(shape, reps):
    """The BLAS alone on the shape's forward products (one whole batch of rows: qkv, attention
    projection, MLP up, MLP down), in this process's environment: GFLOP/s of each, median of reps."""
    torch = import_torch()
    torch.manual_seed(0)
    L, H, C, B, T = SHAPES[shape]
    N, flops, secs = B * T, 0.0, 0.0
    for k, n in ((C, 3 * C), (C, C), (C, 4 * C), (4 * C, C)):
        a, b = torch.randn(N, k), torch.randn(k, n)
        for _ in range(3): torch.mm(a, b)
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter(); torch.mm(a, b); ts.append(time.perf_counter() - t0)
        t = statistics.median(ts)
        print(f"sgemm {shape} {N}x{k} @ {k}x{n}: {2 * N * k * n / t / 1e9:.1f} GFLOP/s", flush=True)
        flops += 2 * N * k * n; secs += t
    print(f"sgemm {shape}: {flops / secs / 1e9:.1f} GFLOP/s over the four (torch {torch.get_num_threads()} thread(s), "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')})", flush=True)
    print_blas()


class Setting:
    """One configuration of PyTorch: its threads and the environment OpenBLAS and ATen read."""
    def __init__(s, torch_threads, blas_threads, coretype, aten):
        s.torch_threads, s.blas_threads, s.coretype, s.aten = torch_threads, blas_threads, coretype, aten

    def env(s):
        e = dict(os.environ)
        e['OMP_NUM_THREADS'] = str(s.torch_threads)
        e['OPENBLAS_NUM_THREADS'] = str(s.blas_threads)
        for key, val in (('OPENBLAS_CORETYPE', s.coretype), ('ATEN_CPU_CAPABILITY', s.aten)):
            if val is None: e.pop(key, None)
            else: e[key] = val
        return e

    def command(s):
        """The same configuration as a shell command anyone can run."""
        parts = [f"OMP_NUM_THREADS={s.torch_threads}", f"OPENBLAS_NUM_THREADS={s.blas_threads}"]
        parts.append(f"OPENBLAS_CORETYPE={s.coretype}" if s.coretype else "env -u OPENBLAS_CORETYPE")
        if s.aten: parts.append(f"ATEN_CPU_CAPABILITY={s.aten}")
        return ' '.join(parts) + f" {sys.executable} tools/bench_torch.py"

    def key(s):
        return (s.torch_threads, s.blas_threads, s.coretype, s.aten)


def measure(shape, setting, steps):
    """Runs PyTorch in a fresh process with the setting; returns (ms, result line, blas line)."""
    p = subprocess.run([sys.executable, os.path.abspath(__file__), shape, str(setting.torch_threads), str(steps)],
                       env=setting.env(), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(p.stderr.strip() or f"bench_torch.py: the PyTorch run failed (exit {p.returncode})")
    lines = p.stdout.splitlines()
    ms = re.search(r'ms_per_step=([0-9.]+)', lines[0])
    blas = lines[1] if len(lines) > 1 else 'blas: kind=unknown'
    if 'kind=reference' in blas:
        sys.exit(f"bench_torch.py: PyTorch runs on the reference BLAS ({blas}); no ratio against it is printed: {FIX}")
    return float(ms.group(1)), lines[0], blas


def best_setting(shape, steps):
    """The staged search of the header: kernels, then ATen's capability, then the threads."""
    steps = min(steps, 10)  # each trial: 3 warm-up steps and up to 10 timed ones
    env_core = os.environ.get('OPENBLAS_CORETYPE')
    cores = [env_core] if env_core else []
    cores += [None, 'Haswell', 'SkylakeX', 'Cooperlake']
    cores = [c for i, c in enumerate(cores) if c not in cores[:i]]

    def stage(candidates):
        # every candidate twice, in rotation, keeping each one's faster run: on a shared machine
        # one slow run must not decide the stage. Only this stage's runs are compared, so that a
        # candidate carried over from the stage before is not favoured by an earlier, quieter run.
        best_ms = {}
        for _ in range(2):
            for st in candidates:
                ms, line, blas = measure(shape, st, steps)
                best_ms[st.key()] = min(ms, best_ms.get(st.key(), ms))
                print(f"  try: {ms:8.1f} ms  {st.command()}  [{blas[6:]}]", flush=True)
        return min(candidates, key=lambda st: best_ms[st.key()])

    best = stage([Setting(1, 2, c, None) for c in cores])
    best = stage([best, Setting(1, 2, best.coretype, 'avx512')])
    best = stage([Setting(t, b, best.coretype, best.aten) for t in (1, 2) for b in (1, 2)])
    return best


def main():
    a = sys.argv[1:]
    if len(a) < 3 or a[0] not in SHAPES:
        sys.exit(USAGE)
    shape = a[0]
    if a[1].isdigit() and a[2].isdigit() and len(a) == 3:
        return run_one(shape, int(a[1]), int(a[2]))
    if a[1] == '--sgemm' and a[2].isdigit() and len(a) == 3:
        return run_sgemm(shape, int(a[2]))
    if a[1] == '--best' and a[2].isdigit() and len(a) == 3:
        st = best_setting(shape, int(a[2]))
        print(f"torch {shape}: fastest: {st.command()} {shape} {st.torch_threads} {a[2]}")
        return
    if a[1] == '--pairs' and len(a) >= 6 and a[2].isdigit() and a[3].isdigit() and a[4] == '--':
        pairs, steps, ours = int(a[2]), int(a[3]), a[5:]
        print(f"PyTorch's configurations for {shape} (up to 10 timed steps each, twice):", flush=True)
        st = best_setting(shape, steps)
        print(f"fastest: {st.command()} {shape} {st.torch_threads} {steps}", flush=True)
        ratios = []
        for i in range(pairs):
            p = subprocess.run(ours, capture_output=True, text=True)
            m = re.search(r'bench \S+: ms_per_step=([0-9.]+)', p.stdout)
            if p.returncode != 0 or not m:
                sys.exit(f"bench_torch.py: {' '.join(ours)} failed or printed no 'bench ...: ms_per_step=' line\n{p.stderr}")
            mine = float(m.group(1))
            theirs, line, blas = measure(shape, st, steps)
            ratios.append(theirs / mine)
            rss = re.search(r'peak_rss_mib=([0-9]+)', line)
            print(f"pair {i + 1}: ours {mine:.1f} ms, PyTorch {theirs:.1f} ms (peak RSS {rss.group(1) if rss else '?'} MiB), "
                  f"PyTorch / ours {theirs / mine:.2f}", flush=True)
        print(f"{shape}: PyTorch / ours over {pairs} alternated pairs: {min(ratios):.2f}-{max(ratios):.2f}, "
              f"median {statistics.median(ratios):.2f} ({blas[6:]})")
        return
    sys.exit(USAGE)


if __name__ == '__main__':
    main()
