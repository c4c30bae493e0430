// tests/web_check.mjs: the playground's module (build/web/playground.wasm) in node, without a
// browser, with the page's own memory file system (the wasi-src script of web/playground.in.html):
//   node tests/web_check.mjs WASM CONFIG STEPS [--save PATH] [--load CKPT]
// builds from CONFIG (a ./train config) on data/default.txt, or with --load from the checkpoint
// CKPT (pg_load: the page's loading; a refusal prints "refused: MESSAGE" and exits 3), trains
// STEPS steps printing "STEP LOSS" (9 significant digits, as tools/web_native.c), and with
// --save writes the page's checkpoint (pg_save) to PATH; with --rate WARM, also the steps/s of the
// steps after the first WARM, to stderr.
import fs from 'fs';
const args = process.argv.slice(2), [wasmPath, configPath, stepsArg] = args;
const opt = (k) => { const i = args.indexOf(k); return i > 0 ? args[i + 1] : null; };
const page = fs.readFileSync('web/playground.in.html', 'utf8');
const src = page.match(/<script id="wasi-src" type="text\/plain">([\s\S]*?)<\/script>/)[1];
const memfs = new Function(src + '\nreturn memfs;')();
let ex;
const mfs = memfs(() => ex.memory, (t) => process.stderr.write(t));
ex = (await WebAssembly.instantiate(fs.readFileSync(wasmPath), {wasi_snapshot_preview1: mfs.imports})).instance.exports;
ex._initialize();
const enc = new TextEncoder();
function put(b) { const p = ex.pg_alloc(b.length + 1), m = new Uint8Array(ex.memory.buffer); m.set(b, p); m[p + b.length] = 0; return p; }
function message() { const p = ex.pg_message(), b = new Uint8Array(ex.memory.buffer); let e = p; while (b[e]) e++; return new TextDecoder().decode(b.subarray(p, e)); }
const text = fs.readFileSync('data/default.txt');
if (!ex.pg_set_text(put(text), text.length)) { console.error('web_check: ' + message()); process.exit(1); }
const load = opt('--load');
if (load) {
  mfs.write(load, fs.readFileSync(load));
  if (ex.pg_load(put(enc.encode(load))) < 0) { console.log('refused: ' + message()); process.exit(3); }
} else {
  const cfg = fs.readFileSync(configPath);
  if (!ex.pg_init(put(cfg), cfg.length, 0)) { console.error('web_check: the module refused ' + configPath + ': ' + message()); process.exit(1); }
}
const warm = opt('--rate') === null ? -1 : +opt('--rate');
let t0 = 0;
for (let i = 0; i < +stepsArg; i++) { if (i == warm) t0 = performance.now(); ex.pg_step(1); console.log(ex.pg_info(0, 2), ex.pg_loss(0).toPrecision(17)); }
if (warm >= 0 && warm < +stepsArg) { const s = (performance.now() - t0) / 1000;
  console.error('rate ' + ((+stepsArg - warm) / s).toFixed(4) + ' steps/s (' + (+stepsArg - warm) + ' steps in ' + s.toFixed(3) + ' s)'); }
const save = opt('--save');
if (save) {
  if (!ex.pg_save(0)) { console.error('web_check: ' + message()); process.exit(1); }
  fs.writeFileSync(save, mfs.read('checkpoint.bin'));
}
