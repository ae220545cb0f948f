// The published shape: ESM through `import`, the same module through `require()` on Node >= 20.19,
// internals closed by the exports map, and a runtime-agnostic core.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

function node(code: string, type: 'module' | 'commonjs'): string {
  return execFileSync(process.execPath, [`--input-type=${type}`, '--no-warnings', '-e', code], {
    cwd: root,
    encoding: 'utf8',
  }).trim();
}

const API = [
  'retry',
  'createRetryPolicy',
  'RetryBudget',
  'TokenBucket',
  'RatioBudget',
  'parseRetryAfter',
  'step',
];

describe('package', () => {
  it('works through import', () => {
    const out = node(
      `import * as s from 'stormproof'; console.log(${JSON.stringify(API)}.map((k) => typeof s[k]).join());`,
      'module',
    );
    expect(out).toBe(API.map(() => 'function').join());
  });

  it('works through require()', () => {
    const out = node(
      `const s = require('stormproof'); console.log(${JSON.stringify(API)}.map((k) => typeof s[k]).join());`,
      'commonjs',
    );
    expect(out).toBe(API.map(() => 'function').join());
  });

  it('runs a retry end to end through require()', () => {
    const out = node(
      `const { retry } = require('stormproof');
       let n = 0;
       retry(async () => { if (++n < 3) throw Object.assign(new Error('x'), { status: 503 }); return n; },
             { random: () => 0 }).then((v) => console.log(v));`,
      'commonjs',
    );
    expect(out).toBe('3');
  });

  it('serves stormproof/grpc through import and require()', () => {
    const names = [
      'createRetryInterceptor',
      'createAdmissionInterceptor',
      'getRetryReport',
      'toServiceConfig',
      'parsePushback',
    ];
    const code = (load: string) =>
      `${load}; console.log(${JSON.stringify(names)}.map((k) => typeof g[k]).join());`;
    const expected = names.map(() => 'function').join();
    expect(node(code(`const g = await import('stormproof/grpc')`), 'module')).toBe(expected);
    expect(node(code(`const g = require('stormproof/grpc')`), 'commonjs')).toBe(expected);
  });

  it('exports stormproof/server through import and require()', () => {
    const names = ['createShedder', 'webMiddleware', 'nodeMiddleware', 'isRetry'];
    const code = `console.log(${JSON.stringify(names)}.map((k) => typeof s[k]).join());`;
    const expected = names.map(() => 'function').join();
    expect(node(`import * as s from 'stormproof/server'; ${code}`, 'module')).toBe(expected);
    expect(node(`const s = require('stormproof/server'); ${code}`, 'commonjs')).toBe(expected);
  });

  it('blocks internals', () => {
    const out = node(
      `import('stormproof/dist/core/step.js').then(() => console.log('open'), (e) => console.log(e.code));`,
      'module',
    );
    expect(out).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it('declares types for every export and Node >= 20.19', () => {
    expect(pkg.engines.node).toBe('>=20.19');
    for (const [subpath, target] of Object.entries<Record<string, string> | string>(pkg.exports)) {
      if (subpath === './package.json') continue;
      expect(typeof target === 'object' && target.types, subpath).toMatch(/\.d\.ts$/);
    }
  });

  it('has zero runtime dependencies', () => {
    expect(pkg.dependencies ?? {}).toEqual({});
  });
});

describe('the runtime-agnostic core', () => {
  const agnostic = ['src/core', 'src/sim', 'src/fetch', 'src/server', 'src/index.ts'];
  // The one file allowed to know Node: the server's node:http adapter (type imports only).
  const nodeAdapter = join('src/server', 'adapters', 'node.ts');
  const files = agnostic
    .filter((p) => existsSync(join(root, p)))
    .flatMap((p) =>
      p.endsWith('.ts')
        ? [p]
        : readdirSync(join(root, p), { recursive: true, encoding: 'utf8' })
            .filter((f) => f.endsWith('.ts'))
            .map((f) => join(p, f)),
    )
    .filter((f) => f !== nodeAdapter);

  it('covers the server engine and its web adapter', () => {
    expect(files).toContain(join('src/server', 'shedder.ts'));
    expect(files).toContain(join('src/server', 'adapters', 'web.ts'));
  });

  it("lets the server's node adapter import Node types only", () => {
    const text = readFileSync(join(root, nodeAdapter), 'utf8');
    const source = ts.createSourceFile(nodeAdapter, text, ts.ScriptTarget.Latest, true);
    for (const statement of source.statements) {
      if (!ts.isImportDeclaration(statement)) continue;
      const spec = (statement.moduleSpecifier as ts.StringLiteral).text;
      if (spec.startsWith('node:')) expect(statement.importClause?.isTypeOnly, spec).toBe(true);
    }
  });

  /** The modules a file imports, read by the TypeScript scanner (comments and strings ignored). */
  const importsOf = (file: string) =>
    ts
      .preProcessFile(readFileSync(join(root, file), 'utf8'), true, true)
      .importedFiles.map((f) => f.fileName);

  it('imports nothing from node: or a Node built-in', () => {
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      for (const spec of importsOf(file)) {
        expect(spec, `${file} imports ${spec}`).not.toMatch(/^node:/);
        expect(builtinModules, `${file} imports ${spec}`).not.toContain(spec);
      }
    }
  });

  it('imports only relative modules (zero dependencies)', () => {
    for (const file of files) {
      for (const spec of importsOf(file)) {
        expect(spec, `${file} imports ${spec}`).toMatch(/^\.\.?\//);
      }
    }
  });
});
