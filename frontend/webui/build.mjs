// Bundles src/ into the output directory given (dist/ for the committed
// bundle; the Go test builds into a temporary one and compares).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const out = process.argv[2];
if (!out) {
  console.error('usage: node build.mjs OUTDIR');
  process.exit(2);
}
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: ['src/chat.ts', 'src/console.ts'],
  outdir: out,
  bundle: true,
  format: 'esm',
  target: 'es2020',
  charset: 'utf8',
  legalComments: 'none',
  logLevel: 'warning',
});
for (const f of readdirSync('src')) {
  if (f.endsWith('.html') || f.endsWith('.css')) copyFileSync(join('src', f), join(out, f));
}
