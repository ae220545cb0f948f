// The Grafana dashboard (examples/grafana-stormproof.json) and the alert rules of
// docs/observability.md, checked as close to an import as this machine allows (Grafana itself is
// not installable here): every PromQL expression parsed by the Prometheus project's own grammar
// (@prometheus-io/lezer-promql, the parser of Prometheus's web UI), and every metric and label it
// selects, filters or groups by looked up in a real scrape of exporter-prometheus after real
// traffic (a stormproof/server under overload, a createFetch client whose budget runs dry and
// whose breaker opens). The dashboard's JSON is typechecked against Grafana's own Dashboard type
// (@grafana/schema) and put through what Grafana's import does with `__inputs`.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { parser } from '@prometheus-io/lezer-promql';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetch } from '../src/fetch/index.js';
import { CircuitBreaker, RetryBudget } from '../src/index.js';
import { instrument } from '../src/otel/index.js';
import { createShedder, nodeMiddleware } from '../src/server/index.js';

const root = new URL('..', import.meta.url);
const dashboardText = readFileSync(new URL('examples/grafana-stormproof.json', root), 'utf8');
const docs = readFileSync(new URL('docs/observability.md', root), 'utf8');

const closers: Array<() => unknown> = [];
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function listen(server: http.Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Real traffic through the real exporter, then one scrape over loopback. */
async function scrapeAfterTraffic(): Promise<string> {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [exporter] });
  const handle = instrument({ meterProvider, traces: false });
  closers.push(
    () => meterProvider.shutdown(),
    () => handle.stop(),
  );
  const metricsUrl = await listen(
    http.createServer((req, res) => exporter.getMetricsRequestHandler(req, res)),
  );

  // A server under about 5x its limit, with a queue: some requests wait, some are shed.
  const shedder = createShedder({
    limit: { kind: 'aimd', initial: 4, min: 2, max: 50 },
    queue: { capacity: 8 },
    ramp: false,
  });
  closers.push(() => shedder.close());
  const shed = nodeMiddleware(shedder);
  const app = await listen(
    http.createServer((req, res) =>
      shed(req, res, async () => {
        await delay(30); // long enough that a burst of 20 fills the limit and the queue
        res.end('ok');
      }),
    ),
  );
  const agent = new http.Agent({ keepAlive: true, maxSockets: 100 });
  closers.push(() => agent.destroy());
  const get = () =>
    new Promise<number>((resolve) => {
      http
        .get(app, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        })
        .on('error', () => resolve(0));
    });
  const statuses: number[] = [];
  for (let round = 0; round < 5; round++) {
    statuses.push(...(await Promise.all(Array.from({ length: 20 }, get))));
  }
  expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
  expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);

  // A named fetch client against a server that always fails: it retries until its budget
  // (two retries' worth of credits) refuses, and its breaker opens after six failures.
  const failing = await listen(
    http.createServer((_req, res) => res.writeHead(503, { 'retry-after': '0' }).end('busy')),
  );
  const client = createFetch({
    name: 'dashboard-check',
    baseDelayMs: 1,
    budget: new RetryBudget({ maxCredits: 20, cost: 10 }),
    breaker: { consecutiveFailures: 6 },
  });
  const answers: string[] = [];
  for (let i = 0; i < 5; i++) {
    try {
      const res = await client(`${failing}/items`);
      await res.text();
      answers.push(String(res.status));
    } catch (error) {
      answers.push((error as Error).name);
    }
  }
  expect(answers).toContain('BreakerOpenError');
  // A breaker named by the user (not an origin): the dashboard and the alert show both kinds.
  const named = new CircuitBreaker('payments-db', { consecutiveFailures: 1 });
  named.record(named.admit(), 'failure');
  expect(named.state).toBe('open');
  return (await fetch(`${metricsUrl}/metrics`)).text();
}

/** A scrape: the `# TYPE` of each sample name, and the labels (with the values seen) it carries. */
interface Scrape {
  /** Sample name (`x_total`, `h_bucket`) to the type of its family. */
  types: Map<string, string>;
  /** Sample name to each label it carries and the values seen. */
  labels: Map<string, Map<string, Set<string>>>;
}

/** Reads Prometheus's text exposition format, as exporter-prometheus writes it. */
function parseScrape(text: string): Scrape {
  const scrape: Scrape = { types: new Map(), labels: new Map() };
  const families = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) families.set(type[1]!, type[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0];
    const family =
      families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/, '')) ?? 'untyped';
    scrape.types.set(name, family);
    const labels = scrape.labels.get(name) ?? new Map<string, Set<string>>();
    scrape.labels.set(name, labels);
    for (const [, label, value] of line.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels.set(label!, (labels.get(label!) ?? new Set()).add(value!));
    }
  }
  return scrape;
}

type Node = ReturnType<typeof parser.parse>['topNode'];

interface Selector {
  metric: string;
  matchers: Array<{ label: string; op: string; value: string }>;
}

/** What one PromQL expression selects, filters and groups by, per Prometheus's grammar. */
interface Analysis {
  syntaxErrors: string[];
  selectors: Selector[];
  /** `by (...)` of an aggregation and `on (...)` of a binary operator, with the series below it. */
  groupings: Array<{ labels: string[]; selectors: Selector[] }>;
  /** Whether it aggregates: a sum() without `by` keeps no label. */
  aggregates: boolean;
  /** Series that rate(), irate() or increase() read: counters only. */
  rated: Selector[];
  /** histogram_quantile() calls: the series they read and the `by` labels of the sums inside. */
  quantiles: Array<{ selectors: Selector[]; groupings: string[][] }>;
}

const unquote = (literal: string): string => JSON.parse(literal.replace(/^'|'$/g, '"')) as string;

function descendants(node: Node, name: string, found: Node[] = []): Node[] {
  if (node.name === name) found.push(node);
  for (let child = node.firstChild; child !== null; child = child.nextSibling) {
    descendants(child, name, found);
  }
  return found;
}

function selectorOf(node: Node, text: string): Selector {
  const at = (n: Node | null) => (n === null ? '' : text.slice(n.from, n.to));
  const matchers = [
    ...descendants(node, 'UnquotedLabelMatcher'),
    ...descendants(node, 'QuotedLabelMatcher'),
  ].map((m) => {
    const quoted = m.getChild('QuotedLabelName');
    const strings = m.getChildren('StringLiteral');
    return {
      label: quoted === null ? at(m.getChild('LabelName')) : unquote(at(quoted)),
      op: at(m.getChild('MatchOp')),
      value: unquote(at(strings[strings.length - 1] ?? null)),
    };
  });
  const named = matchers.find((m) => m.label === '__name__' && m.op === '=');
  return {
    metric: named?.value ?? at(node.getChild('Identifier')),
    matchers: matchers.filter((m) => m !== named),
  };
}

/** Grafana's own variables, which it replaces before a query reaches Prometheus. */
const GRAFANA_RANGES =
  /\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}/g;

function analyse(expr: string): Analysis {
  const text = expr.replace(GRAFANA_RANGES, '5m');
  const tree = parser.parse(text);
  const syntaxErrors: string[] = [];
  tree.iterate({
    enter(n) {
      if (n.type.isError) syntaxErrors.push(`syntax error at ${n.from}: ${JSON.stringify(text)}`);
    },
  });
  const top = tree.topNode;
  const selectorsIn = (node: Node) =>
    descendants(node, 'VectorSelector').map((s) => selectorOf(s, text));
  const labelsOf = (clause: Node) =>
    (clause.getChild('GroupingLabels')?.getChildren('LabelName') ?? []).map((l) =>
      text.slice(l.from, l.to),
    );
  const groupings: Analysis['groupings'] = [];
  for (const aggregate of descendants(top, 'AggregateExpr')) {
    const modifier = aggregate.getChild('AggregateModifier');
    if (modifier?.getChild('By')) {
      groupings.push({
        labels: labelsOf(modifier),
        selectors: selectorsIn(aggregate.getChild('FunctionCallBody')!),
      });
    }
  }
  for (const binary of descendants(top, 'BinaryExpr')) {
    const clause = binary.getChild('MatchingModifierClause');
    if (clause?.getChild('On'))
      groupings.push({ labels: labelsOf(clause), selectors: selectorsIn(binary) });
  }
  const rated: Selector[] = [];
  const quantiles: Analysis['quantiles'] = [];
  for (const call of descendants(top, 'FunctionCall')) {
    const fn = call.getChild('FunctionIdentifier')?.firstChild?.name;
    const body = call.getChild('FunctionCallBody')!;
    if (fn === 'Rate' || fn === 'Irate' || fn === 'Increase') rated.push(...selectorsIn(body));
    if (fn === 'HistogramQuantile') {
      quantiles.push({
        selectors: selectorsIn(body),
        groupings: descendants(body, 'AggregateModifier')
          .filter((m) => m.getChild('By') !== null)
          .map(labelsOf),
      });
    }
  }
  return {
    syntaxErrors,
    selectors: selectorsIn(top),
    groupings,
    aggregates: descendants(top, 'AggregateExpr').length > 0,
    rated,
    quantiles,
  };
}

/**
 * What is wrong with one expression against a scrape: syntax, metrics never exported, labels
 * not on the metric, filter values never seen, rate() of a gauge, a quantile that drops `le`,
 * a legend naming a label the result does not keep.
 */
function problems(expr: string, scrape: Scrape, legend = ''): string[] {
  const a = analyse(expr);
  const out = [...a.syntaxErrors];
  const labelsOf = (metric: string) => scrape.labels.get(metric);
  for (const s of a.selectors) {
    const labels = labelsOf(s.metric);
    if (labels === undefined) {
      out.push(`${s.metric} is not in the scrape`);
      continue;
    }
    for (const m of s.matchers) {
      const values = labels.get(m.label);
      if (values === undefined) out.push(`${s.metric} has no label ${m.label}`);
      else if (m.op === '=' && !values.has(m.value)) {
        out.push(
          `${s.metric}{${m.label}="${m.value}"} never seen (seen: ${[...values].join(', ')})`,
        );
      } else if (
        m.op === '=~' &&
        ![...values].some((v) => new RegExp(`^(?:${m.value})$`).test(v))
      ) {
        out.push(`${s.metric}{${m.label}=~"${m.value}"} matches no value seen`);
      }
    }
  }
  for (const g of a.groupings) {
    for (const label of g.labels) {
      for (const s of g.selectors) {
        const labels = labelsOf(s.metric);
        if (labels !== undefined && !labels.has(label))
          out.push(`${s.metric} has no label ${label} to group by`);
      }
    }
  }
  for (const s of a.rated) {
    const type = scrape.types.get(s.metric);
    const counter =
      type === 'counter' || (type === 'histogram' && /_(bucket|sum|count)$/.test(s.metric));
    if (type !== undefined && !counter) out.push(`rate() of ${s.metric}, a ${type}, not a counter`);
  }
  for (const q of a.quantiles) {
    for (const s of q.selectors) {
      if (!(s.metric.endsWith('_bucket') && scrape.types.get(s.metric) === 'histogram')) {
        out.push(`histogram_quantile() of ${s.metric}, not a histogram's _bucket`);
      }
    }
    for (const by of q.groupings) {
      if (!by.includes('le'))
        out.push(`histogram_quantile() over a sum by (${by.join(', ')}) without le`);
    }
  }
  for (const [, label] of legend.matchAll(/\{\{\s*([^}\s]+)\s*\}\}/g)) {
    const kept = a.aggregates
      ? a.groupings.some((g) => g.labels.includes(label!))
      : a.selectors.every((s) => labelsOf(s.metric)?.has(label!));
    if (!kept) out.push(`legend {{${label}}}: the result has no such label`);
  }
  return out;
}

/**
 * The metric table of docs/observability.md ("### Metrics"), by Prometheus name (`_total` on
 * counters), each with the labels its row lists, in Prometheus form. "as `call.duration`" takes
 * that row's labels (and those listed after it).
 */
function metricTable(markdown: string): Map<string, string[]> {
  const section = markdown.slice(markdown.indexOf('### Metrics'), markdown.indexOf('### Traces'));
  const rows = new Map<string, { type: string; attributes: string }>();
  for (const [, name, type, attributes] of section.matchAll(
    /^\| `(stormproof\.[^`]+)` \|([^|]*)\|([^|]*)\|/gm,
  )) {
    rows.set(name!, { type: type!.trim(), attributes: attributes! });
  }
  const table = new Map<string, string[]>();
  for (const [name, { type, attributes }] of rows) {
    const as = /as `([^`]+)`/.exec(attributes);
    // "as `breaker.state`, and `x`": that row's labels and x.
    const listed = as
      ? rows.get(`stormproof.${as[1]}`)!.attributes + attributes.replace(as[0], '')
      : attributes;
    const labels = [...listed.matchAll(/`([a-z_.]+)`/g)]
      .map((m) => m[1]!)
      .filter((l) => l.includes('.'))
      .map((l) => l.replaceAll('.', '_'));
    const prometheus = name.replaceAll('.', '_') + (type.startsWith('counter') ? '_total' : '');
    table.set(prometheus, labels);
  }
  return table;
}

interface Query {
  where: string;
  expr: string;
  legend?: string;
}

interface DashboardJson {
  __inputs?: Array<Record<string, unknown>>;
  id?: number | null;
  uid?: string;
  panels: Array<{
    id: number;
    title: string;
    datasource?: { type?: string; uid?: string };
    gridPos: { x: number; y: number; w: number; h: number };
    targets?: Array<{
      refId: string;
      expr: string;
      legendFormat?: string;
      datasource?: { type?: string; uid?: string };
    }>;
  }>;
  templating?: { list?: Array<{ name: string; type: string; query?: unknown; current?: unknown }> };
  [key: string]: unknown;
}

const dashboard = JSON.parse(dashboardText) as DashboardJson;

function dashboardQueries(): Query[] {
  return dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((t) => ({
      where: `panel ${panel.id} "${panel.title}" ${t.refId}`,
      expr: t.expr,
      ...(t.legendFormat === undefined ? {} : { legend: t.legendFormat }),
    })),
  );
}

/** The `expr` of each rule in the docs' rules block (`expr: one line` or `expr: |` and a block). */
function alertQueries(): Query[] {
  const section = docs.slice(docs.indexOf('## Alert rules that catch a storm early'));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)![1]!;
  const lines = yaml.split('\n');
  const queries: Query[] = [];
  let alert = '';
  lines.forEach((line, i) => {
    const name = /^\s*- alert: (\S+)/.exec(line);
    if (name) alert = name[1]!;
    const expr = /^(\s*)expr: (.*)$/.exec(line);
    if (!expr) return;
    if (expr[2] !== '|') {
      queries.push({ where: `alert ${alert}`, expr: expr[2]! });
      return;
    }
    const indent = expr[1]!.length;
    const block: string[] = [];
    for (const next of lines.slice(i + 1)) {
      if (next.trim() !== '' && next.search(/\S/) <= indent) break;
      block.push(next.trim());
    }
    queries.push({ where: `alert ${alert}`, expr: block.join(' ').trim() });
  });
  expect(queries.map((q) => q.where)).toEqual(
    [...yaml.matchAll(/- alert: (\S+)/g)].map((m) => `alert ${m[1]}`),
  );
  return queries;
}

describe('the Grafana dashboard and the alert rules', () => {
  const queries = [...dashboardQueries(), ...alertQueries()];
  let scrape: Scrape;
  beforeAll(async () => {
    scrape = parseScrape(await scrapeAfterTraffic());
  }, 20_000);

  it('finds every query: one per panel target, one per alert rule', () => {
    const targets = dashboard.panels.reduce((n, p) => n + (p.targets?.length ?? 0), 0);
    expect(targets).toBeGreaterThan(0);
    expect(queries.filter((q) => q.where.startsWith('panel'))).toHaveLength(targets);
    expect(queries.filter((q) => q.where.startsWith('alert')).map((q) => q.where)).toEqual([
      'alert RetryAmplificationHigh',
      'alert RetryBudgetEmpty',
      'alert ServerShedding',
      'alert BreakerOpen',
    ]);
  });

  it("every expression parses with Prometheus's own PromQL grammar", () => {
    for (const q of queries) expect(analyse(q.expr).syntaxErrors, q.where).toEqual([]);
  });

  it('every metric and label they use is in a real scrape, after real traffic', () => {
    const found = queries.map((q) => ({
      where: q.where,
      problems: problems(q.expr, scrape, q.legend),
    }));
    expect(found.filter((f) => f.problems.length > 0)).toEqual([]);
    // Not vacuous: each query selects at least one series.
    for (const q of queries) expect(analyse(q.expr).selectors.length, q.where).toBeGreaterThan(0);
  });

  it("docs/observability.md's metric table lists every stormproof metric and label exported", () => {
    const table = metricTable(docs);
    const missing: string[] = [];
    for (const [name, labels] of scrape.labels) {
      if (!name.startsWith('stormproof_')) continue;
      const row = table.get(
        scrape.types.get(name) === 'histogram' ? name.replace(/_(bucket|sum|count)$/, '') : name,
      );
      if (row === undefined) {
        missing.push(`${name}: no row`);
        continue;
      }
      for (const label of labels.keys()) {
        if (!label.startsWith('otel_scope_') && label !== 'le' && !row.includes(label)) {
          missing.push(`${name}: ${label} not listed`);
        }
      }
    }
    expect(missing).toEqual([]);
    // Not vacuous: the table was read, and a row that leaves a label out does not list it.
    expect(table.size).toBeGreaterThan(20);
    expect(
      metricTable(
        docs.replace(
          '| `stormproof.policy`, `stormproof.refusal.reason`',
          '| `stormproof.refusal.reason`',
        ),
      ).get('stormproof_retry_refused_total'),
    ).not.toContain('stormproof_policy');
  });

  it('fails on each defect it is there for', () => {
    const cases: Array<[string, string, string?]> = [
      // A panel querying a metric that is never exported: renamed, or with a unit suffix.
      ['sum(rate(stormproof_attempt_total[5m]))', 'stormproof_attempt_total is not in the scrape'],
      [
        'histogram_quantile(0.99, sum by (le) (rate(stormproof_call_duration_seconds_bucket[5m])))',
        'stormproof_call_duration_seconds_bucket is not in the scrape',
      ],
      ['sum by (stormproof_policy (rate(stormproof_calls_total[5m]))', 'syntax error at'],
      [
        'sum by (stormproof_policy) (rate(stormproof_server_shed_total[5m]))',
        'stormproof_server_shed_total has no label stormproof_policy to group by',
      ],
      [
        'rate(stormproof_retry_refused_total{stormproof_refusal_reason="budgets"}[5m])',
        'stormproof_retry_refused_total{stormproof_refusal_reason="budgets"} never seen',
      ],
      [
        'rate(stormproof_calls_total{stormproof_reason="budget"}[5m])',
        'stormproof_calls_total has no label stormproof_reason',
      ],
      ['rate(stormproof_server_limit[5m])', 'rate() of stormproof_server_limit, a gauge'],
      [
        'histogram_quantile(0.99, sum by (stormproof_policy) (rate(stormproof_call_duration_bucket[5m])))',
        'without le',
      ],
      [
        'sum(rate(stormproof_calls_total[5m]))',
        'legend {{stormproof_policy}}: the result has no such label',
        '{{stormproof_policy}}',
      ],
    ];
    for (const [expr, problem, legend] of cases) {
      expect(problems(expr, scrape, legend).join('\n'), expr).toContain(problem);
    }
  });
});

/**
 * TypeScript's errors for `<json> satisfies Dashboard` (Grafana's own type of a dashboard's JSON
 * model, from @grafana/schema), compiled in memory: an object literal under `satisfies` gets
 * excess-property checks, so a misspelt field fails too. The export-only fields (`__inputs`,
 * `__requires`), which Grafana's import reads and drops, are not part of the model.
 */
const libraryFiles = new Map<string, ts.SourceFile>();

function typeErrors(json: string): string[] {
  const { __inputs, __requires, ...model } = JSON.parse(json) as Record<string, unknown>;
  const file = fileURLToPath(new URL('test/dashboard-model.ts', root));
  const source = `import type { Dashboard } from '@grafana/schema';\nexport const model = ${JSON.stringify(model, null, 2)} satisfies Dashboard;\n`;
  const options: ts.CompilerOptions = {
    strict: true,
    exactOptionalPropertyTypes: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) => {
    if (name === file) return ts.createSourceFile(name, source, version);
    // TypeScript's libs and @grafana/schema's types, parsed once for every check.
    const parsed = libraryFiles.get(name) ?? read(name, version, ...rest);
    if (parsed !== undefined) libraryFiles.set(name, parsed);
    return parsed;
  };
  const exists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || exists(name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where =
      d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
    const line = where === undefined ? '' : `${source.split('\n')[where.line]?.trim()} `;
    return `${line}${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

/** Every string in a JSON value. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (typeof value !== 'object' || value === null) return [];
  return Object.values(value).flatMap(strings);
}

/**
 * What Grafana's import does with a dashboard's `__inputs` (pkg/services/dashboardimport: each
 * `${NAME}` of an input, in every string of the JSON, becomes the value chosen for it, and
 * `__inputs` is dropped), with `uid` chosen for every data source input.
 */
function imported(json: string, uid: string): DashboardJson {
  const { __inputs = [], ...rest } = JSON.parse(json) as DashboardJson;
  const names = __inputs.map((input) => `\${${String(input.name)}}`);
  return JSON.parse(
    JSON.stringify(rest, (_key, value: unknown) =>
      typeof value === 'string' ? names.reduce((v, name) => v.replaceAll(name, uid), value) : value,
    ),
  ) as DashboardJson;
}

describe('the dashboard as Grafana reads it', () => {
  it('asks for a Prometheus data source on import, and every panel queries the one chosen', () => {
    const inputs = dashboard.__inputs ?? [];
    expect(inputs).toEqual([
      expect.objectContaining({
        name: expect.stringMatching(/^DS_[A-Z0-9_]+$/),
        type: 'datasource',
        pluginId: 'prometheus',
      }),
    ]);
    const after = imported(dashboardText, 'chosen-uid');
    expect(strings(after).filter((v) => v.includes(`\${${String(inputs[0]!.name)}}`))).toEqual([]);
    // Every other reference is to a variable of the dashboard (or one of Grafana's own, $__...).
    const variables = (after.templating?.list ?? []).map((v) => v.name);
    const references = strings(after).flatMap((v) =>
      [...v.matchAll(/\$\{(\w+)(?::\w+)?\}|\$(\w+)/g)].map((m) => m[1] ?? m[2]!),
    );
    expect(references.filter((r) => !r.startsWith('__') && !variables.includes(r))).toEqual([]);
    // The data source variable opens on the chosen one; every panel and query goes through it.
    const source = after.templating!.list!.find((v) => v.type === 'datasource')!;
    expect(source).toMatchObject({ query: 'prometheus', current: { value: 'chosen-uid' } });
    const ref = { type: 'prometheus', uid: `\${${source.name}}` };
    for (const panel of after.panels) {
      expect(panel.datasource, panel.title).toEqual(ref);
      for (const t of panel.targets ?? []) expect(t.datasource, panel.title).toEqual(ref);
    }
  });

  it('has panels with unique ids, on the 24-column grid, none over another', () => {
    expect(dashboard.id ?? null).toBeNull(); // a new dashboard on import, never another's id
    expect(dashboard.uid).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { id, gridPos: g, targets = [] } of dashboard.panels) {
      expect(Number.isInteger(id) && id > 0, `panel ${id}`).toBe(true);
      expect([g.x, g.y, g.w, g.h].every(Number.isInteger), `panel ${id}`).toBe(true);
      expect(g.x >= 0 && g.y >= 0 && g.w > 0 && g.h > 0 && g.x + g.w <= 24, `panel ${id}`).toBe(
        true,
      );
      const refIds = targets.map((t) => t.refId);
      expect(new Set(refIds).size, `panel ${id}`).toBe(refIds.length);
    }
    const overlaps = dashboard.panels.flatMap((a, i) =>
      dashboard.panels
        .slice(i + 1)
        .filter(
          (b) =>
            a.gridPos.x < b.gridPos.x + b.gridPos.w &&
            b.gridPos.x < a.gridPos.x + a.gridPos.w &&
            a.gridPos.y < b.gridPos.y + b.gridPos.h &&
            b.gridPos.y < a.gridPos.y + a.gridPos.h,
        )
        .map((b) => `${a.id} and ${b.id}`),
    );
    expect(overlaps).toEqual([]);
  });

  it("is a Dashboard of Grafana's own type (@grafana/schema)", () => {
    expect(typeErrors(dashboardText)).toEqual([]);
  });

  it('the type check fails on a misspelt field, a wrong type, an unknown variable type', () => {
    const broken = (change: (d: DashboardJson) => void) => {
      const copy = JSON.parse(dashboardText) as DashboardJson;
      change(copy);
      return typeErrors(JSON.stringify(copy)).join('\n');
    };
    expect(
      broken((d) => {
        const { gridPos, ...rest } = d.panels[0]!;
        d.panels[0] = { ...rest, gridpos: gridPos } as never;
      }),
    ).toMatch(/'"gridpos"' does not exist in type 'Panel/);
    expect(broken((d) => Object.assign(d, { schemaVersion: '39' }))).toMatch(
      /Type 'string' is not assignable to type 'number'/,
    );
    expect(broken((d) => Object.assign(d.templating!.list![0]!, { type: 'datasources' }))).toMatch(
      /"datasources"/,
    );
  });
});
