// The shipped types as users compile them: the built dist/*.d.ts, installed as
// node_modules/stormproof, checked with skipLibCheck false in the configurations that users
// actually have. A Node project has no DOM library, so the shipped types must not need it; a
// CommonJS project on `moduleResolution: "node10"` finds subpaths through typesVersions.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
  typesVersions: Record<string, Record<string, string[]>>;
};

/**
 * What a user writes: every subpath, the options, and two lines that must NOT compile. If the
 * fetch input lost its type (became `any`), the `@ts-expect-error` lines would be unused, which
 * is an error too.
 */
const CONSUMER = `
import { createRetryPolicy, parseRateLimit, RetryBudget } from 'stormproof';
import { createFetch, getRetryReport, type FetchFunction } from 'stormproof/fetch';
import { runStorm } from 'stormproof/sim';

const perOrigin = createFetch({ budget: (origin: string) => new RetryBudget(), maxOrigins: 10 });
const shared: FetchFunction = createFetch({ budget: new RetryBudget(), deadlineMs: 3000 });
const plain: typeof fetch = perOrigin;

export async function main(): Promise<number | undefined> {
  const res = await shared(new URL('https://example.com'), { method: 'GET' });
  await plain('https://example.com');
  // @ts-expect-error a number is not a fetch input
  await perOrigin(12345);
  // @ts-expect-error maxOrigins is a number
  createFetch({ maxOrigins: 'ten' });
  void runStorm;
  void getRetryReport(res)?.reason;
  return createRetryPolicy().retry(async () => parseRateLimit('"d";r=0;t=1'));
}
`;

let dir = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'stormproof-types-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(root, join(dir, 'node_modules', 'stormproof'), 'dir');
  writeFileSync(join(dir, 'index.ts'), CONSUMER);
});

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

/** Type-checks the consumer with these compiler options; returns the diagnostics as text. */
function check(options: Record<string, unknown>): string[] {
  const { options: compilerOptions, errors } = ts.convertCompilerOptionsFromJson(
    {
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      typeRoots: [join(root, 'node_modules', '@types')],
      ...options,
    },
    dir,
  );
  expect(errors.map((e) => ts.flattenDiagnosticMessageText(e.messageText, '\n'))).toEqual([]);
  const program = ts.createProgram([join(dir, 'index.ts')], compilerOptions);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file ? `${d.file.fileName.replace(root, '')}: ` : '';
    return `${where}TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

describe('the shipped types', () => {
  it('compile in a Node project without the DOM library (lib es2023, types node, skipLibCheck false)', () => {
    expect(
      check({ module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2023'], types: ['node'] }),
    ).toEqual([]);
  });

  it('keep the fetch input typed with skipLibCheck true as well (never any)', () => {
    expect(
      check({
        module: 'nodenext',
        moduleResolution: 'nodenext',
        lib: ['es2023'],
        types: ['node'],
        skipLibCheck: true,
      }),
    ).toEqual([]);
  });

  it('resolve stormproof/fetch and stormproof/sim in a CommonJS project on moduleResolution node10', () => {
    expect(
      check({
        module: 'commonjs',
        moduleResolution: 'node10',
        target: 'es2022',
        lib: ['es2023'],
        types: ['node'],
      }),
    ).toEqual([]);
  });

  it('compile in a browser project (lib dom, no Node types, bundler resolution)', () => {
    expect(
      check({
        module: 'esnext',
        moduleResolution: 'bundler',
        target: 'es2022',
        lib: ['es2023', 'dom'],
        types: [],
      }),
    ).toEqual([]);
  });

  it('map every subpath export in typesVersions, so node10 finds each one', () => {
    const subpaths = Object.keys(pkg.exports)
      .filter((key) => key !== '.' && key !== './package.json')
      .map((key) => key.slice(2));
    const mapped = pkg.typesVersions['*'] ?? {};
    for (const subpath of subpaths) {
      const types = (pkg.exports[`./${subpath}`] as { types?: string }).types;
      expect(mapped[subpath], `typesVersions["*"]["${subpath}"]`).toEqual([types]);
    }
  });
});
