// Builds dist/ once before the suite, so the package tests load what users would install.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function build(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
}
