#!/usr/bin/env python3
# tools/bench_torch.py: the same-machine PyTorch reference for `make bench` (docs/PERFORMANCE.md).
#
# A nanoGPT-equivalent model (pre-LN blocks, causal attention with the mask and softmax written
# out as nanoGPT does on PyTorch 1.x, 4C GELU MLP, tied head, AdamW, gradient clipping) timed like
# `./train CONFIG --bench=N`: random tokens, 3 warm-up steps, then N full steps (forward, backward,
# clip, AdamW), median ms/step. Optional: the project never runs it and does not depend on it
# (Debian: apt-get install python3-torch).
#
#   OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=1 python3 tools/bench_torch.py W2 1 20
#
# That threading (OpenBLAS's two threads for the products, one PyTorch thread for the rest) was
# the fastest of the four combinations of 1 and 2 on this project's 2-core machine.
import math, statistics, sys, time

SHAPES = {'W1': (4, 4, 128, 12, 64), 'W2': (6, 6, 384, 8, 256)}  # n_layer, n_head, n_embd, B, T
if len(sys.argv) != 4 or sys.argv[1] not in SHAPES or not sys.argv[2].isdigit() or not sys.argv[3].isdigit():
    sys.exit("usage: bench_torch.py W1|W2 TORCH_THREADS STEPS")
try:
    import torch, torch.nn as nn, torch.nn.functional as F
except ImportError:
    sys.exit("bench_torch.py: PyTorch is not installed for %s (Debian: apt-get install python3-torch)" % sys.executable)
shape, nthreads, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
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
print(f"torch {shape}: ms_per_step={statistics.median(times):.1f} min={min(times):.1f} max={max(times):.1f} "
      f"(torch {torch.__version__}, {nthreads} torch thread(s))", flush=True)
