// tests/web_check.mjs: the playground's module (build/web/playground.wasm) in node, without a
// browser: `node tests/web_check.mjs WASM STEPS` trains the default preset as tools/web_native.c
// does natively and prints each step's loss the same way, for the comparison of the two; with
// `--rate WARM` after them, also the steps/s of the steps after the first WARM, to stderr.
import fs from 'fs';
const [wasmPath, stepsArg, rateArg, warmArg] = process.argv.slice(2);
const wasi = {clock_time_get: () => 0, fd_close: () => 0, fd_seek: () => 0, fd_write: () => 0,
  proc_exit: (c) => { throw new Error('proc_exit ' + c); }};
const ex = (await WebAssembly.instantiate(fs.readFileSync(wasmPath), {wasi_snapshot_preview1: wasi})).instance.exports;
ex._initialize();
const text = fs.readFileSync('data/default.txt'), p = ex.pg_alloc(text.length);
new Uint8Array(ex.memory.buffer).set(text, p);
if (!ex.pg_set_text(p, text.length, 64) || !ex.pg_init(4, 4, 128, 64, 12, 1e-3, 1337, -1, 1, 0, 0)) {
  console.error('web_check: the module refused the default preset'); process.exit(1);
}
const steps = +(stepsArg || 50), warm = rateArg == '--rate' ? +warmArg : -1;
let t0 = 0;
for (let i = 0; i < steps; i++) {
  if (i == warm) t0 = performance.now();
  ex.pg_step(1); console.log(i + 1, ex.pg_loss(0).toPrecision(9));
}
if (warm >= 0 && warm < steps) { const s = (performance.now() - t0) / 1000;
  console.error('rate ' + ((steps - warm) / s).toFixed(4) + ' steps/s (' + (steps - warm) + ' steps in ' + s.toFixed(3) + ' s)'); }
