// tests/web_views.mjs: the playground's views in node, without a browser: `node tests/web_views.mjs
// WASM` builds the tiny preset, trains it 20 steps, and checks the entry points the page's maps
// and samples call. pg_attention: each row of P sums to 1 (within 1e-5), no weight above the
// diagonal (causal), a prompt longer than the block cut to block_size, a character outside the
// vocabulary refused with a message naming it. pg_sample: the asked number of characters, all in
// the vocabulary, the same text for the same seed, greedy the same for any seed. Looking does not change the
// losses of the steps after it. Two modules each training one variant of a pair (pg_init_pair's
// which 0 and 1, as the page's two Web Workers do) give every loss and statistic bit for bit as
// one module training both. pg_retune: a learning rate set before step 1 trains as one built
// with it, a shape setting is reported as applying at Reset. pg_five_qkv on ./lab examples'
// T = 3 example gives ./lab's numbers; pg_five on the model agrees with the map's row. One line
// per check; exit status 1 on a failure.
import fs from 'fs';
import {execFileSync} from 'child_process';
const [wasmPath] = process.argv.slice(2);
// the page's own memory file system (the wasi-src script of web/playground.in.html), as tests/web_check.mjs
const page = fs.readFileSync('web/playground.in.html', 'utf8');
const memfs = new Function(page.match(/<script id="wasi-src" type="text\/plain">([\s\S]*?)<\/script>/)[1] + '\nreturn memfs;')();
const wasmBytes = fs.readFileSync(wasmPath);
// a module of its own, with its own memory file system (one per Web Worker in the page)
async function instance() { let e; const f = memfs(() => e.memory, (t) => process.stderr.write(t));
  e = (await WebAssembly.instantiate(wasmBytes, {wasi_snapshot_preview1: f.imports})).instance.exports; e._initialize(); return e; }
let ex = await instance();
const enc = new TextEncoder(), dec = new TextDecoder();
function cstr(p) { const b = new Uint8Array(ex.memory.buffer); let e = p; while (b[e]) e++; return dec.decode(b.subarray(p, e)); }
function withBytes(s, f) { const b = enc.encode(s), p = ex.pg_alloc(b.length + 1), m = new Uint8Array(ex.memory.buffer); m.set(b, p); m[p + b.length] = 0;
  try { return f(p, b.length); } finally { ex.pg_free(p); } }
let failed = 0;
function check(ok, what) { console.log((ok ? 'web-views: ok: ' : 'web-views: FAIL: ') + what); if (!ok) failed++; }

const text = fs.readFileSync('data/default.txt', 'utf8'), block = 32;
// the page's tiny preset, in compare mode (variant 1 unscaled)
const tiny = JSON.stringify({model: {n_layer: 2, n_head: 2, n_embd: 32, block_size: block}, train: {batch_size: 8, warmup_steps: 0}});
const init = () => withBytes(tiny, (p, n) => ex.pg_init(p, n, 1));
if (!withBytes(text, (p, n) => ex.pg_set_text(p, n)) || !init()) { console.error('web-views: the module refused the tiny preset: ' + cstr(ex.pg_message())); process.exit(1); }
for (let i = 0; i < 20; i++) ex.pg_step(2);
const vocab = new Set(text);

// the map: rows sum to 1, nothing above the diagonal
const prompt = text.slice(0, 20);
for (const v of [0, 1]) {
  const T = withBytes(prompt, (p, n) => ex.pg_attention(v, p, n, 1, 1));
  const P = new Float64Array(ex.memory.buffer, ex.pg_attention_map(), T * T);
  let rowErr = 0, above = 0;
  for (let t = 0; t < T; t++) { let s = 0; for (let u = 0; u < T; u++) { s += P[t * T + u]; if (u > t) above = Math.max(above, Math.abs(P[t * T + u])); }
    rowErr = Math.max(rowErr, Math.abs(s - 1)); }
  check(T == 20 && rowErr <= 1e-5 && above == 0, `variant ${v}, layer 1 head 1 of a 20-character prompt: T ${T}, largest |row sum - 1| ${rowErr.toExponential(2)}, largest weight above the diagonal ${above}`);
}
const long = text.slice(0, 3 * block);
const Tl = withBytes(long, (p, n) => ex.pg_attention(0, p, n, 0, 0));
check(Tl == block, `a prompt of ${long.length} characters is cut to the block: T ${Tl} (block ${block})`);
const bad = withBytes('ab\u2603c\u20ac\u2603', (p, n) => ex.pg_attention(0, p, n, 0, 0)), badMsg = cstr(ex.pg_message());
check(bad == 0 && badMsg.includes('\u2603') && badMsg.includes('U+20AC') && badMsg.split('\u2603').length == 2,
  `a prompt with characters outside the vocabulary is refused, each named once: "${badMsg}"`);
const far = withBytes(prompt, (p, n) => ex.pg_attention(0, p, n, 2, 0));
check(far == 0, `layer 2 of a 2-layer model is refused: "${cstr(ex.pg_message())}"`);

// the sample: k vocabulary characters, deterministic for a seed
const sample = (v, temp, seed) => withBytes(prompt, (p, n) => { const q = ex.pg_sample(v, p, n, 120, temp, seed); return q ? cstr(q) : null; });
const a = sample(0, 1, 7), b = sample(0, 1, 7), c = sample(0, 1, 8);
check(a !== null && [...a].length == 120 && [...a].every(ch => vocab.has(ch)), `120 characters sampled, all in the vocabulary: ${JSON.stringify(a && a.slice(0, 40))}...`);
check(a === b && a !== c, 'the same seed gives the same sample, another seed another one');
check(sample(1, 0, 1) === sample(1, 0, 99), 'greedy (temperature 0) gives the same sample for any seed');

// looking does not change what is trained: 10 steps with a map and a sample after each, from the
// same init, make the same losses as 10 steps without
function losses(look) { init(); const r = [];
  for (let i = 0; i < 10; i++) { ex.pg_step(2); r.push(ex.pg_loss(0), ex.pg_loss(1));
    if (look) { ex.pg_measure(2); withBytes(prompt, (p, n) => ex.pg_attention(1, p, n, 0, 1)); sample(0, 1, 3); withBytes(prompt, (p, n) => ex.pg_five(0, p, n, 1, 1, 5)); } }
  return r; }
const plain = losses(false), looked = losses(true);
check(plain.every((l, i) => l === looked[i]), `10 steps with a map, a sample and the five steps after each: the same losses bit for bit (last ${looked[19].toFixed(6)})`);

// two modules, one variant each, against one module training both: the page's default pair
// (scaled against unscaled, fan_in) and the logit-growth pair (QK-norm off against on)
const lesson = JSON.stringify({model: {n_layer: 2, n_head: 2, n_embd: 128, block_size: 32, init: 'fan_in'}, train: {batch_size: 8, warmup_steps: 0}});
const growth = JSON.stringify({model: {n_layer: 2, n_head: 2, n_embd: 64, block_size: 64}, train: {batch_size: 8, warmup_steps: 0, lr: 0.031}});
const solo = [await instance(), await instance()];
function initPair(e, cfg, pair, which) { if (!withText(e, text, (p, n) => e.pg_set_text(p, n))) return 0;
  return withText(e, pair, (q) => withText(e, cfg, (p, n) => e.pg_init_pair(p, n, q, which))); }
function withText(e, s, f) { const b = enc.encode(s), p = e.pg_alloc(b.length + 1), m = new Uint8Array(e.memory.buffer); m.set(b, p); m[p + b.length] = 0;
  try { return f(p, b.length); } finally { e.pg_free(p); } }
function run(e, nvar, v, steps) { const r = [];  // losses and, every 5 steps, the statistics of head 0.1
  for (let i = 0; i < steps; i++) { e.pg_step(nvar); r.push(e.pg_loss(v));
    if (i % 5 == 4) { e.pg_measure(nvar); r.push(e.pg_entropy(v, 1), e.pg_max_weight(v, 1), e.pg_grad_gain(v, 1), e.pg_max_logit(v, 1), e.pg_val_loss(v, 2)); } }
  return r; }
for (const [name, cfg, pair] of [['scaled/unscaled, fan_in', lesson, 'model.attn_scale=none'], ['QK-norm none/layernorm, lr 0.031', growth, 'model.qk_norm=layernorm']]) {
  const ok = initPair(ex, cfg, pair, -1) && initPair(solo[0], cfg, pair, 0) && initPair(solo[1], cfg, pair, 1);
  if (!ok) { check(false, `${name}: pg_init_pair refused: ${cstr(ex.pg_message())}`); continue; }
  // one module: both variants per step; run() reads variant v, so train a copy per variant
  const both = [run(ex, 2, 0, 15)]; initPair(ex, cfg, pair, -1);
  const r1 = (() => { const r = []; for (let i = 0; i < 15; i++) { ex.pg_step(2); r.push(ex.pg_loss(1));
    if (i % 5 == 4) { ex.pg_measure(2); r.push(ex.pg_entropy(1, 1), ex.pg_max_weight(1, 1), ex.pg_grad_gain(1, 1), ex.pg_max_logit(1, 1), ex.pg_val_loss(1, 2)); } } return r; })();
  both.push(r1);
  const sep = [run(solo[0], 1, 0, 15), run(solo[1], 1, 0, 15)];
  const same = (a, b) => a.length == b.length && a.every((x, i) => Object.is(x, b[i]));
  check(same(both[0], sep[0]) && same(both[1], sep[1]) && !same(sep[0], sep[1]),
    `${name}: two modules, one variant each, give the one module's 15 losses and 3 x 5 statistics of each variant bit for bit (last losses ${sep[0][sep[0].length - 6].toFixed(6)}, ${sep[1][sep[1].length - 6].toFixed(6)})`);
}

// pg_retune: lr 0.002 set before step 1 trains as the config built with lr 0.002; n_layer is a shape setting
const lr2 = lesson.replace('"warmup_steps":0', '"warmup_steps":0,"lr":0.002');
initPair(ex, lesson, '', -1); const rt = withText(ex, lr2, (p, n) => ex.pg_retune(p, n)); const tuned = run(ex, 1, 0, 5);
initPair(ex, lr2, '', -1); const built2 = run(ex, 1, 0, 5);
initPair(ex, lesson, '', -1); const plain1 = run(ex, 1, 0, 5);
check(rt == 1 && tuned.every((x, i) => Object.is(x, built2[i])) && tuned[4] !== plain1[4], `lr 0.002 set by pg_retune before step 1: the same 5 losses as built with it (returned ${rt}; step 5 ${tuned[4].toFixed(6)}, lr 0.001 ${plain1[4].toFixed(6)})`);
const rt2 = withText(ex, lesson.replace('"n_layer":2', '"n_layer":3'), (p, n) => ex.pg_retune(p, n));
check(rt2 == 2, `pg_retune with n_layer changed: 2 (applies at Reset), got ${rt2}`);

// the five steps on ./lab examples' T = 3 example (causal mask, scale 1/sqrt(2)), against ./lab's own numbers
let lab = null;
try { lab = JSON.parse(execFileSync('./lab', ['examples', '--json'], {encoding: 'utf8'})).t3; } catch (err) { check(false, `./lab examples --json: ${err.message} (run make first)`); }
if (lab) {
  const flat = (a) => new Float64Array(a.flat()), put64 = (a) => { const p = ex.pg_alloc(a.length * 8); new Float64Array(ex.memory.buffer, p, a.length).set(a); return p; };
  const [q, k, v, dO] = [lab.Q, lab.K, lab.V, lab.dO].map((a) => put64(flat(a)));
  let worst = 0, gains = [];
  for (let t = 0; t < 3; t++) {
    if (!ex.pg_five_qkv(q, k, v, dO, 3, 2, 0, 0, t)) { check(false, 'pg_five_qkv refused: ' + cstr(ex.pg_message())); break; }
    const f = new Float64Array(ex.memory.buffer, ex.pg_five_view(), 9 + 5 * 3 + 9 + 6 + 2);
    const raw = f.subarray(9, 12), sc = f.subarray(12, 15), mk = f.subarray(15, 18), p = f.subarray(21, 24), out = f.subarray(39, 41);
    const want = [[raw, lab.scores[t]], [sc, lab.scores_scaled[t]], [mk, lab.masked_scaled[t].map((x) => x === null ? -Infinity : x)],
      [p, lab.weights_scaled[t]], [out, lab.out_scaled[t]]];
    for (const [got, w] of want) for (let u = 0; u < w.length; u++) worst = Math.max(worst, got[u] === w[u] ? 0 : Math.abs(got[u] - w[u]));
    gains.push(f[4]); worst = Math.max(worst, t ? Math.abs(f[4] - lab.dS_gain_scaled[t]) : 0);
  }
  check(worst <= 1e-6, `the five steps of ./lab examples' T = 3 example, causal, scaled: scores, scaled scores, masked (-inf), weights, outputs and row gains equal to ./lab's to ${worst.toExponential(2)} (row gains ${gains.map((g) => g.toFixed(6)).join(', ')})`);
  [q, k, v, dO].forEach((p) => ex.pg_free(p));
}
// the five steps on the model: the row of P is the map's row, the mask's cells -inf, J's rows sum to 0
initPair(ex, lesson, 'model.attn_scale=none', -1); for (let i = 0; i < 5; i++) ex.pg_step(2);
{ const T = withBytes(prompt, (p, n) => ex.pg_five(1, p, n, 1, 0, 7)), f = new Float64Array(ex.memory.buffer, ex.pg_five_view(), 9 + 5 * T + T * T);
  const mk = f.subarray(9 + 2 * T, 9 + 3 * T), p = Array.from(f.subarray(9 + 4 * T, 9 + 5 * T)), J = f.subarray(9 + 5 * T, 9 + 5 * T + T * T);
  const Tm = withBytes(prompt, (q, n) => ex.pg_attention(1, q, n, 1, 0)), P = Array.from(new Float64Array(ex.memory.buffer, ex.pg_attention_map(), Tm * Tm)).slice(7 * Tm, 8 * Tm);
  let jsum = 0; for (let u = 0; u < T; u++) { let s2 = 0; for (let j = 0; j < T; j++) s2 += J[u * T + j]; jsum = Math.max(jsum, Math.abs(s2)); }
  check(T == 20 && p.every((x, u) => x === P[u]) && mk.every((x, u) => (u > 7) == (x == -Infinity)) && jsum < 1e-6 && f[4] > 0 && isFinite(f[4]) && f[3] == 1,
    `the five steps of query 7 (unscaled, layer 1 head 0): its weights are the map's row bit for bit, keys 8..19 masked to -inf, J's rows sum to 0 (${jsum.toExponential(1)}), row gain ${f[4].toFixed(4)}, scale ${f[3]}`); }
process.exit(failed ? 1 : 0);
