// The herd against the storm story's Python model, in one run: whole processes (spawn, run,
// exit), interleaved, N rounds each. `python3 herd_model.py <jitter>` runs the storm story's function
// as printed; `node herd-node.mjs <jitter>` runs the compiled TypeScript model (dist/sim/herd.js,
// built by `npm run build` in the root). Both must print the same line. Bare start-ups of each
// interpreter are timed alongside, to show what a whole-process time is made of.
//
//   node bench/herd-vs-python.mjs             # 15 rounds, prints a markdown section
//   node bench/herd-vs-python.mjs --rounds 5
//   node bench/herd-vs-python.mjs --smoke     # one round, no warm-up: checks the paths, times nothing
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const AIM = 20;
/** What the storm story prints, per jitter setting. */
const EXPECTED = {
  full: 'jitter=True: 6487 calls, busiest 10 ms slot 205 calls, all done after 3.45 s',
  none: 'jitter=False: 81000 calls, busiest 10 ms slot 1975 calls, all done after 376.21 s',
};

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** One whole process, spawn to exit, in ms; stdout trimmed. Throws if it fails. */
function timeProcess(command, args) {
  const start = process.hrtime.bigint();
  const result = spawnSync(command, args, { cwd: here, encoding: 'utf8', maxBuffer: 1 << 20 });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.error) throw result.error;
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited with ${result.status}: ${result.stderr}`);
  }
  return { ms, out: result.stdout.trim() };
}

function contenders() {
  const py = (jitter) => ({
    name: `python3 herd_model.py ${jitter}`,
    command: 'python3',
    args: ['herd_model.py', jitter],
    jitter,
  });
  const node = (jitter) => ({
    name: `node herd-node.mjs ${jitter}`,
    command: process.execPath,
    args: ['herd-node.mjs', jitter],
    jitter,
  });
  return [
    py('full'),
    node('full'),
    py('none'),
    node('none'),
    { name: 'python3 -c pass (start-up only)', command: 'python3', args: ['-c', 'pass'] },
    { name: 'node -e 0 (start-up only)', command: process.execPath, args: ['-e', '0'] },
  ];
}

/**
 * Runs the comparison and returns `{ markdown, ok }`: `ok` is false when the two models print
 * different lines (or not the storm story's). When python3 is missing, the section says so.
 */
export function herdVsPythonSection({ smoke = false, rounds = smoke ? 1 : 15 } = {}) {
  const list = contenders();
  const times = new Map(list.map((c) => [c.name, []]));
  const outputs = new Map();
  try {
    if (!smoke) for (const c of list) timeProcess(c.command, c.args); // warm the file cache
    for (let round = 0; round < rounds; round++) {
      // Interleaved: every contender once per round, the order rotated from round to round.
      for (let i = 0; i < list.length; i++) {
        const c = list[(i + round) % list.length];
        const { ms, out } = timeProcess(c.command, c.args);
        times.get(c.name).push(ms);
        if (c.jitter !== undefined) outputs.set(c.name, out);
      }
    }
  } catch (error) {
    if (error?.code === 'ENOENT') {
      return {
        ok: true,
        markdown: `## The herd against the Python model\n\nSkipped: \`python3\` was not found on this machine.\n`,
      };
    }
    throw error;
  }

  const stat = (name) => {
    const xs = times.get(name);
    return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
  };
  const fmt = (ms) => `${ms.toFixed(1)} ms`;
  let ok = true;
  const checks = [];
  for (const jitter of ['full', 'none']) {
    const py = outputs.get(`python3 herd_model.py ${jitter}`);
    const node = outputs.get(`node herd-node.mjs ${jitter}`);
    const same = py === node && py === EXPECTED[jitter];
    ok &&= same;
    checks.push(
      same
        ? `- ${jitter}: both print \`${py}\``
        : `- ${jitter}: **MISMATCH**: Python printed \`${py}\`, Node printed \`${node}\` (the storm story: \`${EXPECTED[jitter]}\`)`,
    );
  }

  const timing = [
    '| process | median | spread (min to max) |',
    '|---|---|---|',
    ...list.map((c) => {
      const s = stat(c.name);
      return `| \`${c.name}\` | ${fmt(s.median)} | ${fmt(s.min)} to ${fmt(s.max)} |`;
    }),
  ];
  const nodeStart = stat('node -e 0 (start-up only)').median;
  const pyStart = stat('python3 -c pass (start-up only)').median;
  const speedups = [
    `| herd (2000 clients) | Python | Node | speedup | aim: ${AIM}x | beyond bare start-up: Python, Node (ratio) |`,
    '|---|---|---|---|---|---|',
  ];
  const verdicts = [];
  for (const [jitter, label] of [
    ['full', "full jitter (the storm story's default)"],
    ['none', 'no jitter'],
  ]) {
    const py = stat(`python3 herd_model.py ${jitter}`).median;
    const node = stat(`node herd-node.mjs ${jitter}`).median;
    const speedup = py / node;
    const met = speedup >= AIM;
    // A rough split: the whole process less the median bare start-up of its interpreter.
    const pyModel = Math.max(0, py - pyStart);
    const nodeModel = Math.max(0, node - nodeStart);
    const modelRatio = nodeModel > 0 ? `${(pyModel / nodeModel).toFixed(1)}x` : 'n/a';
    speedups.push(
      `| ${label} | ${fmt(py)} | ${fmt(node)} | ${speedup.toFixed(1)}x | ${met ? 'met' : `missed by a factor of ${(AIM / speedup).toFixed(1)}`} | ${fmt(pyModel)}, ${fmt(nodeModel)} (${modelRatio}) |`,
    );
    if (!met) {
      const budget = py / AIM;
      const room =
        nodeStart >= budget
          ? `a bare \`node -e 0\` alone takes ${fmt(nodeStart)} here, so no model code could meet it`
          : `a bare \`node -e 0\` takes ${fmt(nodeStart)} of that here, leaving ${fmt(budget - nodeStart)} to load and run the model, which takes about ${fmt(nodeModel)}`;
      verdicts.push(
        `${label}: ${AIM}x needs the whole Node process to finish in ${fmt(budget)}; ${room}. Beyond the bare start-ups, Node's part (loading dist/ and a cold run of the model) takes ${fmt(nodeModel)} against Python's ${fmt(pyModel)} (${modelRatio}).`,
      );
    }
  }

  const markdown = `## The herd against the Python model

Whole processes, spawn to exit, timed by \`bench/herd-vs-python.mjs\`: \`python3 bench/herd_model.py <jitter>\` (the storm story's \`herd\` as printed there) against \`node bench/herd-node.mjs <jitter>\` (the compiled \`runHerd\` from \`dist/sim/herd.js\`), ${rounds} interleaved round${rounds === 1 ? '' : 's'}${smoke ? ', no warm-up' : ' after one warm-up run each'}, ${process.version}, ${spawnSync('python3', ['--version'], { encoding: 'utf8' }).stdout.trim()}. The bare start-up of each interpreter is timed alongside.
${smoke ? '\n**Smoke run (`--smoke`): one round, too short to mean anything.**\n' : ''}
Same figures:

${checks.join('\n')}

${timing.join('\n')}

${speedups.join('\n')}
${verdicts.length > 0 ? `\n${verdicts.map((v) => `- ${v}`).join('\n')}\n` : ''}`;
  return { markdown, ok };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const smoke = process.argv.includes('--smoke');
  const at = process.argv.indexOf('--rounds');
  const rounds = at > 0 ? Number(process.argv[at + 1]) : undefined;
  if (rounds !== undefined && !(Number.isInteger(rounds) && rounds >= 1)) {
    process.stderr.write('usage: node herd-vs-python.mjs [--smoke] [--rounds N]\n');
    process.exit(2);
  }
  const { markdown, ok } = herdVsPythonSection({ smoke, ...(rounds ? { rounds } : {}) });
  process.stdout.write(markdown);
  if (!ok) process.exit(1);
}
