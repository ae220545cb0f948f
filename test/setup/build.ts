// Builds dist/ once before the suite, so the package tests load what users would install. The
// build is incremental (tsconfig.build.json keeps its record in node_modules/.cache/stormproof):
// after `npm ci`, whose `prepare` just built it, nothing is compiled again (17 s -> 6.5 s for a
// one-file run), and after an edit only what changed is.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Every module under src/ that tsc compiles (the page is vite's), as its path in dist/. */
function outputs(root: string): string[] {
  const src = join(root, 'src');
  return readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter(
      (file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && !file.startsWith(`page${sep}`),
    )
    .map((file) => join(root, 'dist', file.replace(/\.ts$/, '.js')));
}

export default function build(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  // tsc trusts its record and does not write again an output it says is there: when any is
  // missing (dist/ removed by hand, in whole or in part), it builds everything.
  if (outputs(root).some((file) => !existsSync(file))) {
    const config = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8'));
    rmSync(join(root, config.compilerOptions.tsBuildInfoFile), { force: true });
  }
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
}
