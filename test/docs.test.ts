// Every public option documents its default and shows an example (TSDoc `@default`, `@example`).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const sources = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter(
  (f) => f.endsWith('.ts') && !f.startsWith('cli'),
);

/** Properties of exported interfaces whose name ends in Options or Hooks, with their JSDoc tags. */
function options(): Array<{ where: string; tags: string[] }> {
  const found: Array<{ where: string; tags: string[] }> = [];
  for (const file of sources) {
    const text = readFileSync(join(root, 'src', file), 'utf8');
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    source.forEachChild((node) => {
      if (!ts.isInterfaceDeclaration(node) || !/(Options|Hooks)$/.test(node.name.text)) return;
      if (!node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) return;
      for (const member of node.members) {
        if (!ts.isPropertySignature(member)) continue;
        const tags = ts.getJSDocTags(member).map((t) => t.tagName.text);
        found.push({ where: `${file} ${node.name.text}.${member.name.getText(source)}`, tags });
      }
    });
  }
  return found;
}

describe('public options', () => {
  const all = options();
  it('are found', () => {
    expect(all.length).toBeGreaterThan(20);
  });
  it.each(all.map((o) => [o.where, o.tags] as const))('%s has @default and @example', (_, tags) => {
    expect(tags).toContain('default');
    expect(tags).toContain('example');
  });
});
