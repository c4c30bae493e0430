// tests/web_views.mjs: the playground's views in node, without a browser: `node tests/web_views.mjs
// WASM` builds the tiny preset, trains it 20 steps, and checks the entry points the page's maps
// and samples call. pg_attention: each row of P sums to 1 (within 1e-5), no weight above the
// diagonal (causal), a prompt longer than the block cut to block_size, a character outside the
// vocabulary refused with a message naming it. pg_sample: the asked number of characters, all in
// the vocabulary, the same text for the same seed, greedy the same for any seed. Looking does not change the
// losses of the steps after it. One line per
// check; exit status 1 on a failure.
import fs from 'fs';
const [wasmPath] = process.argv.slice(2);
// the page's own memory file system (the wasi-src script of web/playground.in.html), as tests/web_check.mjs
const page = fs.readFileSync('web/playground.in.html', 'utf8');
const memfs = new Function(page.match(/<script id="wasi-src" type="text\/plain">([\s\S]*?)<\/script>/)[1] + '\nreturn memfs;')();
let ex;
const mfs = memfs(() => ex.memory, (t) => process.stderr.write(t));
ex = (await WebAssembly.instantiate(fs.readFileSync(wasmPath), {wasi_snapshot_preview1: mfs.imports})).instance.exports;
ex._initialize();
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
    if (look) { ex.pg_measure(2); withBytes(prompt, (p, n) => ex.pg_attention(1, p, n, 0, 1)); sample(0, 1, 3); } }
  return r; }
const plain = losses(false), looked = losses(true);
check(plain.every((l, i) => l === looked[i]), `10 steps with a map and a sample after each: the same losses bit for bit (last ${looked[19].toFixed(6)})`);
process.exit(failed ? 1 : 0);
