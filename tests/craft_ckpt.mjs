// tests/craft_ckpt.mjs IN OUT: a crafted checkpoint: IN with the first value of its wte record
// set to NaN and the CRC-32 recomputed, so that only the validation of the values can refuse it
// (docs/FORMAT.md: magic, u32 version, records of u8 name length, name, u8 dtype, u8 ndim, ndim x
// u32 shape, data; the last 4 bytes the CRC-32 of everything before them).
import fs from 'fs';
const [inPath, outPath] = process.argv.slice(2), b = fs.readFileSync(inPath), d = new DataView(b.buffer, b.byteOffset);
const size = [4, 4, 1, 8, 8, 8];
let pos = 12, done = false;
while (pos < b.length - 4 && !done) {
  const n = b[pos], name = b.subarray(pos + 1, pos + 1 + n).toString(); pos += 1 + n;
  const dtype = b[pos], ndim = b[pos + 1]; pos += 2;
  let count = 1; for (let i = 0; i < ndim; i++) { count *= d.getUint32(pos, true); pos += 4; }
  if (name == 'wte' && dtype == 0) { d.setFloat32(pos, NaN, true); done = true; }
  pos += count * size[dtype];
}
if (!done) { console.error('craft_ckpt: no f32 wte record in ' + inPath); process.exit(1); }
const table = new Uint32Array(256).map((_, i) => { let c = i; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c; });
let crc = 0xffffffff; for (let i = 0; i < b.length - 4; i++) crc = table[(crc ^ b[i]) & 0xff] ^ (crc >>> 8);
d.setUint32(b.length - 4, (crc ^ 0xffffffff) >>> 0, true);
fs.writeFileSync(outPath, b);
