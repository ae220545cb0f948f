// The Node side of bench/herd-vs-python.mjs: runs the compiled herd (dist/sim/herd.js) once for the
// jitter setting given on the command line and prints the storm story's line, exactly as
// bench/herd_model.py prints it.
import { runHerd } from '../dist/sim/herd.js';

const SETTINGS = { full: 'True', none: 'False' };
const setting = process.argv[2];
if (!(setting in SETTINGS)) {
  process.stderr.write('usage: node herd-node.mjs full|none\n');
  process.exit(2);
}
const { calls, busiestSlot, doneAfterSeconds } = runHerd({ jitter: setting });
process.stdout.write(
  `jitter=${SETTINGS[setting]}: ${calls} calls, busiest 10 ms slot ${busiestSlot} calls, all done after ${doneAfterSeconds.toFixed(2)} s\n`,
);
