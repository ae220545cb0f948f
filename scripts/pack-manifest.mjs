// npm pack / publish: the packed package.json leaves out the `prepare` script. `prepare` builds
// dist/ for an install from git, but in a tarball dist/ is already built, and npm 11 warns about
// every install script of a tarball that `allowScripts` does not cover. `prepack` calls this with
// `strip` (after the build), `postpack` with `restore`, which puts back the file byte for byte.
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const MANIFEST = 'package.json';
const SAVED = '.package.json.unpacked';

const step = process.argv[2];
if (step === 'strip') {
  // A pack that failed before `postpack` left the original saved: strip from that, keep it.
  if (!existsSync(SAVED)) copyFileSync(MANIFEST, SAVED);
  const manifest = JSON.parse(readFileSync(SAVED, 'utf8'));
  delete manifest.scripts.prepare;
  writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
} else if (step === 'restore') {
  if (existsSync(SAVED)) renameSync(SAVED, MANIFEST);
} else {
  console.error(`pack-manifest: expected "strip" or "restore", got ${JSON.stringify(step)}`);
  process.exit(2);
}
