// Runs the checks as a script: Node, Deno and Bun. Arguments: base URL, refused URL, runtime name.
// Prints one line of JSON.
import { runChecks } from './checks.mjs';

const args = globalThis.Deno?.args ?? globalThis.process.argv.slice(2);
const [base, refused, runtime] = args;
console.log(JSON.stringify(await runChecks({ base, refused, runtime })));
