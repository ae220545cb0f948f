// `stormproof check`: reads a description of the retry layers of a stack and answers, before any
// outage does, how many calls one user request can become at the bottom, how long the user can
// wait, and which of the storm story's rules the stack breaks.
import { BREAKER_RULE_KEYS, resolveBreakerOptions } from '../core/breaker/options.js';
import { checkNumber, closest, show } from '../core/validate.js';
import { readGrpcServiceConfig } from './grpc-layer.js';

/** How a layer jitters its waits, as `check` reads it. */
export type StackJitter = 'none' | 'full' | 'equal' | 'decorrelated' | 'band';

/**
 * One layer of a stack that may retry, as `check` reads it from JSON. Only `name` and `attempts`
 * are required. A field left out means the layer does not have that protection (no backoff, no
 * cap, no jitter, no timeout, no deadline, no budget), or does not do that risky thing (retry
 * non-idempotent calls).
 */
export interface StackLayer {
  /** What the layer is: "client library", "API gateway". A non-empty string. */
  readonly name: string;
  /** Attempts the layer makes per call it receives, the first included. An integer from 1 to 100. */
  readonly attempts: number;
  /** The ceiling of its first backoff wait, in ms (0: retries at once). Default 0. */
  readonly baseDelayMs?: number;
  /** The cap of its backoff ceiling, in ms, at least `baseDelayMs`. Default: no cap. */
  readonly maxDelayMs?: number;
  /** How it picks a wait below the ceiling. Default `"none"`. */
  readonly jitter?: StackJitter | { readonly band: readonly [number, number] };
  /** Its time limit for one attempt, in ms. Default: none. */
  readonly timeoutMs?: number;
  /** Its time limit for the whole call, retries included, in ms. Default: none. */
  readonly deadlineMs?: number;
  /** Whether a retry budget limits its retries (an object: a budget's options). Default `false`. */
  readonly budget?: boolean | object;
  /** Whether it retries non-idempotent calls (POST, PATCH) without an idempotency key. Default `false`. */
  readonly retriesNonIdempotent?: boolean;
  /**
   * Whether the layer retries through stormproof, in the same process as the layer below it.
   * Two such layers in a row retry once between them: the upper one passes the lower one's
   * failures up instead of retrying them (reason 'already-retried'; RFC 9110 9.2.2), unless it
   * sets `allowNestedRetries`. Default `false`.
   */
  readonly stormproof?: boolean;
  /** With `stormproof`: the policy option that turns that rule off. Default `false`. */
  readonly allowNestedRetries?: boolean;
  /**
   * Whether a circuit breaker guards the calls this layer makes: `true` for stormproof's
   * defaults, or the breaker's options by their `BreakerOptions` names (`consecutiveFailures`,
   * `failureRatio`, `windowMs`, `minimumCalls`, `openMs`, `maxOpenMs`, `probes`,
   * `successesToClose`). Default `false`.
   */
  readonly breaker?: boolean | StackBreaker;
  /**
   * A gRPC layer: its service config (the JSON given to `grpc.service_config`). Its first
   * retryPolicy stands for `attempts` (capped at 5, as gRPC does), `baseDelayMs`, `maxDelayMs`,
   * the backoff multiplier and A6's band jitter; `retryThrottling` counts as a budget and the
   * method's `timeout` as `deadlineMs`. Those fields cannot also be given.
   */
  readonly grpc?: unknown;
  /** Free text, ignored. */
  readonly description?: string;
  /**
   * A stormproof policy's own names, so a policy's options can be pasted in as a layer:
   * `maxAttempts` is `attempts`, `attemptTimeoutMs` is `timeoutMs`, `jitter` may be
   * `{ band: [low, high] }`, `budget` may be a budget's options (an object: a budget). The options
   * that change no worst case (`honorRetryAfter`, `throttledDelayMultiplier`,
   * `maxInternalErrorRetries`) are accepted and ignored.
   */
  readonly maxAttempts?: number;
  /** The same as `timeoutMs`, by the policy's name. */
  readonly attemptTimeoutMs?: number;
}

/** A layer's circuit breaker, as `check` reads it: the breaker's own options, every one optional. */
export interface StackBreaker {
  /** Failures in a row that open it (not used with `failureRatio`). Default 5. */
  readonly consecutiveFailures?: number;
  /** Opens on this share of failures in `windowMs` instead, from 0 (exclusive) to 1. */
  readonly failureRatio?: number;
  /** The window of `failureRatio`, in ms. Default 30,000. */
  readonly windowMs?: number;
  /** The fewest calls in the window before `failureRatio` can open it. Default 100. */
  readonly minimumCalls?: number;
  /** The first open period's ceiling, in ms. Default 5,000. */
  readonly openMs?: number;
  /** The largest open period's ceiling, in ms. Default 300,000. */
  readonly maxOpenMs?: number;
  /** Calls a half-open breaker lets through at once. Default 1. */
  readonly probes?: number;
  /** Probe successes that close it. Default 1. */
  readonly successesToClose?: number;
}

/** A stack, as `check` reads it from JSON: its layers from the top (nearest the user) down. */
export interface Stack {
  /** A name for the report. */
  readonly name?: string;
  /** Free text, ignored. */
  readonly description?: string;
  /** The layers that may retry, from the one nearest the user down to the one above the service. */
  readonly layers: readonly StackLayer[];
}

/** One layer's worst case, as {@link checkStack} works it out. */
export interface StackLayerReport {
  /** The layer's name. */
  readonly name: string;
  /**
   * Its attempts per call it receives: 1 when it passes the stormproof layer below it up
   * (`passesUp`), whatever its own maxAttempts.
   */
  readonly attempts: number;
  /** Set when it is a stormproof layer over a stormproof layer, and passes that one's failures up. */
  readonly passesUp?: true;
  /** Calls it receives per user request in the worst case (1 for the top layer). */
  readonly worstCaseCallsReceived: number;
  /** The longest it can sleep between attempts in one call, in ms (null: no cap on it). */
  readonly maxTotalBackoffMs: number | null;
  /** The longest one call to it can take, in ms, the layers below included (null: unbounded). */
  readonly worstCaseLatencyMs: number | null;
  /** What its circuit breaker changes in a long outage, when it has one. */
  readonly breaker?: StackBreakerReport;
}

/**
 * What a layer's circuit breaker changes in an outage that lasts minutes, once it has opened.
 * Per breaker: each process (or each key) has its own, unless they share a store.
 */
export interface StackBreakerReport {
  /** What opens it, in words: "5 failures in a row", "a failure ratio of 50% over at least 100 calls in 30000 ms". */
  readonly opensAfter: string;
  /** Calls at the bottom per user request while it is open: 0, every call is refused at once. */
  readonly bottomCallsWhileOpen: 0;
  /**
   * Calls at the bottom per open period: its probes, each one attempt of this layer, which the
   * retrying layers below it multiply.
   */
  readonly bottomCallsPerOpenPeriod: number;
  /** The first open period, in ms: equal jitter draws it from half of `openMs` to `openMs`. */
  readonly firstOpenMs: readonly [number, number];
  /** The longest open period, in ms, reached after failed probes: half of `maxOpenMs` to `maxOpenMs`. */
  readonly longestOpenMs: readonly [number, number];
  /**
   * The most probes it can send in the first 10 minutes open, every probe failing at once and
   * every period drawn at its shortest.
   */
  readonly maxProbesIn10Minutes: number;
}

/** What {@link checkStack} reports. */
export interface StackReport {
  /** The stack's name, if it has one. */
  readonly name?: string;
  /** Calls at the service below the last layer per user request: the product of the attempts. */
  readonly worstCaseBottomCalls: number;
  /**
   * The longest a user request can take, in ms: null when nothing bounds it (no layer has a
   * timeout or a deadline, so a hung service holds the request for ever).
   */
  readonly worstCaseLatencyMs: number | null;
  /** What the stack does that the storm story warns against, one sentence each. */
  readonly warnings: readonly string[];
  /**
   * Facts worth knowing that break no rule, one sentence each (not counted by `--strict`): a
   * stack that retries with no circuit breaker keeps calling the service for as long as an
   * outage lasts.
   */
  readonly notes: readonly string[];
  /** Each layer's worst case, top first. */
  readonly layers: readonly StackLayerReport[];
}

const OWNER = 'stack';
const STACK_KEYS = ['name', 'description', 'layers', '$schema'] as const;
const LAYER_KEYS = [
  'name',
  'description',
  'attempts',
  'baseDelayMs',
  'maxDelayMs',
  'jitter',
  'timeoutMs',
  'deadlineMs',
  'budget',
  'retriesNonIdempotent',
  // A stormproof policy's own names (see StackLayer).
  'maxAttempts',
  'attemptTimeoutMs',
  'honorRetryAfter',
  'throttledDelayMultiplier',
  'maxInternalErrorRetries',
  'grpc',
  'stormproof',
  'allowNestedRetries',
  'breaker',
] as const;
/** The breaker options a stack file may give: the rules, not the hooks, clock or store. */
const BREAKER_KEYS = BREAKER_RULE_KEYS;
/** A long outage, for the count of probes: "outages that last minutes". */
const LONG_OUTAGE_MS = 600_000;
/** The fields a gRPC layer's service config stands for. */
const GRPC_FIELDS = ['attempts', 'baseDelayMs', 'maxDelayMs', 'jitter', 'budget', 'deadlineMs'];
const JITTERS: readonly string[] = ['none', 'full', 'equal', 'decorrelated', 'band'];
/** gRPC treats any maxAttempts above 5 as 5; the storm story's limit is 3 or 4. */
const MAX_SENSIBLE_ATTEMPTS = 5;

interface Layer {
  name: string;
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** How much each backoff ceiling grows: 2, or a gRPC service config's backoffMultiplier. */
  multiplier: number;
  jitter: StackJitter;
  /** The top of the band, for `band` jitter (gRPC's 1.2). */
  bandHigh: number;
  timeoutMs: number | undefined;
  deadlineMs: number | undefined;
  budget: boolean;
  retriesNonIdempotent: boolean;
  stormproof: boolean;
  allowNestedRetries: boolean;
  breaker: Breaker | undefined;
}

/** A layer's breaker with its defaults filled, as the engine fills them. */
type Breaker = Record<Exclude<(typeof BREAKER_KEYS)[number], 'failureRatio'>, number> & {
  failureRatio: number | undefined;
};

/** Throws on a field the format does not have, naming it and the nearest known one. */
function checkFields(at: string, o: Record<string, unknown>, known: readonly string[]): void {
  for (const key of Object.keys(o)) {
    if (known.includes(key)) continue;
    const near = closest(key, known);
    const hint = near !== undefined ? ` (did you mean "${near}"?)` : '';
    throw new TypeError(
      `stormproof: ${at} has no field ${show(key)}${hint}; its fields are ${known.filter((k) => k !== '$schema').join(', ')}`,
    );
  }
}

function checkString(name: string, value: unknown, required: boolean): string | undefined {
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value.trim() === '') {
    throw new TypeError(
      `stormproof: ${OWNER} ${name} must be a non-empty string, got ${show(value)}`,
    );
  }
  return value;
}

function checkBoolean(name: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new TypeError(`stormproof: ${OWNER} ${name} must be true or false, got ${show(value)}`);
  }
  return value;
}

/**
 * The longest duration a stack may give, in ms: 2^31 - 1 (about 24.86 days), the longest timer
 * JavaScript can set (a longer `setTimeout` fires at once). A bigger value is a mistake, and would
 * overflow the worst-case sums to Infinity, read as "no timeout".
 */
export const MAX_STACK_MS = 2 ** 31 - 1;

/** A duration in ms: a finite number >= `min` (> 0 when `min` is 0 and `exclusive`), at most MAX_STACK_MS. */
function checkMs(name: string, value: unknown, min: number, exclusive: boolean): number {
  const ms = checkNumber(OWNER, name, value, { min, minExclusive: exclusive });
  if (ms > MAX_STACK_MS) {
    throw new RangeError(
      `stormproof: ${OWNER} ${name} must be at most ${MAX_STACK_MS} ms (24.86 days, the longest timer JavaScript can set), got ${show(value)}`,
    );
  }
  return ms;
}

function optionalNumber(name: string, value: unknown, min: number): number | undefined {
  if (value === undefined) return undefined;
  return checkMs(name, value, min, min === 0);
}

/** A field that has two names (the stack's and the policy's): the one given, or neither. */
function either(at: string, o: Record<string, unknown>, name: string, policyName: string) {
  const a = o[name];
  const b = o[policyName];
  if (a !== undefined && b !== undefined) {
    throw new TypeError(
      `stormproof: ${OWNER} ${at} has both ${name} and ${policyName}, which mean the same; give one`,
    );
  }
  return a !== undefined ? { key: name, value: a } : { key: policyName, value: b };
}

/** A policy's `{ band: [low, high] }` jitter: its high end, checked. */
function readBand(at: string, jitter: object): number {
  const band = (jitter as { band?: unknown }).band;
  const keys = Object.keys(jitter);
  if (
    keys.length !== 1 ||
    !Array.isArray(band) ||
    band.length !== 2 ||
    !band.every((x) => typeof x === 'number' && Number.isFinite(x)) ||
    band[0] < 0 ||
    band[0] > band[1]
  ) {
    throw new TypeError(
      `stormproof: ${OWNER} ${at}.jitter must be one of ${JITTERS.map((j) => `"${j}"`).join(', ')} or { "band": [low, high] } with 0 <= low <= high, got ${show(jitter)}`,
    );
  }
  return band[1] as number;
}

/**
 * A layer's `breaker`: true for the defaults, or the breaker's options, checked and filled by the
 * breaker's own rules (so a stack file takes exactly what `new CircuitBreaker` takes).
 */
function readBreaker(at: string, value: unknown): Breaker | undefined {
  if (value === undefined || value === false) return undefined;
  const options = value === true ? {} : value;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(
      `stormproof: ${OWNER} ${at}.breaker must be true, false or an object of breaker options, got ${show(value)}`,
    );
  }
  const o = options as Record<string, unknown>;
  checkFields(`${OWNER} ${at}.breaker`, o, BREAKER_KEYS);
  const filled = resolveBreakerOptions(`${OWNER} ${at}.breaker`, o);
  return {
    consecutiveFailures: filled.consecutiveFailures,
    failureRatio: filled.failureRatio,
    windowMs: filled.windowMs,
    minimumCalls: filled.minimumCalls,
    openMs: filled.openMs,
    maxOpenMs: filled.maxOpenMs,
    probes: filled.probes,
    successesToClose: filled.successesToClose,
  };
}

/**
 * A breaker's worst case once open. `callsPerAttempt` is what one attempt of its layer becomes at
 * the bottom (the product of the attempts below it).
 */
function breakerReport(b: Breaker, callsPerAttempt: number): StackBreakerReport {
  // Each open period is drawn from [ceiling / 2, ceiling]; the ceiling doubles after each failed
  // probe, from openMs to maxOpenMs. The most probes: every period at its shortest.
  let probes = 0;
  let elapsed = 0;
  for (let level = 0; ; level++) {
    elapsed += Math.min(b.maxOpenMs, b.openMs * 2 ** level) / 2;
    if (elapsed > LONG_OUTAGE_MS) break;
    probes += b.probes;
  }
  return {
    opensAfter:
      b.failureRatio === undefined
        ? `${b.consecutiveFailures} failures in a row`
        : `a failure ratio of ${b.failureRatio * 100}% over at least ${b.minimumCalls} calls in ${b.windowMs} ms`,
    bottomCallsWhileOpen: 0,
    bottomCallsPerOpenPeriod: b.probes * callsPerAttempt,
    firstOpenMs: [b.openMs / 2, b.openMs],
    longestOpenMs: [b.maxOpenMs / 2, b.maxOpenMs],
    maxProbesIn10Minutes: probes,
  };
}

function readLayer(value: unknown, i: number): Layer {
  const at = `layers[${i}]`;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`stormproof: ${OWNER} ${at} must be an object, got ${show(value)}`);
  }
  const o = value as Record<string, unknown>;
  checkFields(`${OWNER} ${at}`, o, LAYER_KEYS);
  const name = checkString(`${at}.name`, o.name, true)!;
  checkString(`${at}.description`, o.description, false);
  if (o.grpc !== undefined) return readGrpcLayer(o, at, name);
  const given = either(at, o, 'attempts', 'maxAttempts');
  if (given.value === undefined) {
    throw new TypeError(
      `stormproof: ${OWNER} ${at}.attempts (or maxAttempts) is required (an integer from 1 to 100)`,
    );
  }
  const attempts = checkNumber(OWNER, `${at}.${given.key}`, given.value, {
    min: 1,
    max: 100,
    integer: true,
  });
  const timeout = either(at, o, 'timeoutMs', 'attemptTimeoutMs');
  const baseDelayMs = checkMs(`${at}.baseDelayMs`, o.baseDelayMs ?? 0, 0, false);
  const maxDelayMs =
    o.maxDelayMs === undefined
      ? Number.POSITIVE_INFINITY
      : checkMs(`${at}.maxDelayMs`, o.maxDelayMs, baseDelayMs, false);
  let jitter = o.jitter ?? 'none';
  let bandHigh = 1.2;
  if (typeof jitter === 'object' && jitter !== null) {
    bandHigh = readBand(at, jitter);
    jitter = 'band';
  }
  if (typeof jitter !== 'string' || !JITTERS.includes(jitter)) {
    throw new TypeError(
      `stormproof: ${OWNER} ${at}.jitter must be one of ${JITTERS.map((j) => `"${j}"`).join(', ')}, got ${show(jitter)}`,
    );
  }
  return {
    name,
    attempts,
    baseDelayMs,
    maxDelayMs,
    multiplier: 2,
    jitter: jitter as StackJitter,
    bandHigh,
    timeoutMs: optionalNumber(`${at}.${timeout.key}`, timeout.value, 0),
    deadlineMs: optionalNumber(`${at}.deadlineMs`, o.deadlineMs, 0),
    // A policy's budget: its options (an object) say there is one.
    budget:
      typeof o.budget === 'object' && o.budget !== null && !Array.isArray(o.budget)
        ? true
        : checkBoolean(`${at}.budget`, o.budget),
    retriesNonIdempotent: checkBoolean(`${at}.retriesNonIdempotent`, o.retriesNonIdempotent),
    stormproof: checkBoolean(`${at}.stormproof`, o.stormproof),
    allowNestedRetries: checkBoolean(`${at}.allowNestedRetries`, o.allowNestedRetries),
    breaker: readBreaker(at, o.breaker),
  };
}

/** A layer described by its gRPC service config instead of the retry fields. */
function readGrpcLayer(o: Record<string, unknown>, at: string, name: string): Layer {
  const both = GRPC_FIELDS.find((field) => o[field] !== undefined);
  if (both !== undefined) {
    throw new TypeError(
      `stormproof: ${OWNER} ${at}.${both} cannot be given with ${at}.grpc: the service config sets it`,
    );
  }
  const grpc = readGrpcServiceConfig(`${OWNER} ${at}.grpc`, o.grpc);
  return {
    name,
    attempts: grpc.attempts,
    baseDelayMs: grpc.baseDelayMs,
    maxDelayMs: grpc.maxDelayMs,
    multiplier: grpc.backoffMultiplier,
    jitter: grpc.jitter,
    bandHigh: 1.2,
    timeoutMs: optionalNumber(`${at}.timeoutMs`, o.timeoutMs, 0),
    deadlineMs: grpc.deadlineMs,
    budget: grpc.budget,
    retriesNonIdempotent: checkBoolean(`${at}.retriesNonIdempotent`, o.retriesNonIdempotent),
    stormproof: checkBoolean(`${at}.stormproof`, o.stormproof),
    allowNestedRetries: checkBoolean(`${at}.allowNestedRetries`, o.allowNestedRetries),
    breaker: readBreaker(at, o.breaker),
  };
}

/**
 * The longest a layer can sleep in one call: the sum, over its `attempts - 1` retries, of the
 * largest wait its jitter can draw below each ceiling `min(cap, base * multiplier^n)`. Full and equal
 * jitter wait below the ceiling, no jitter waits exactly the ceiling, gRPC's band up to 1.2 times
 * it, and decorrelated jitter (`min(cap, uniform(base, previous * 3))`) up to `base * 3^(n + 1)`.
 */
function maxTotalBackoff(layer: Layer): number {
  let total = 0;
  for (let n = 0; n < layer.attempts - 1; n++) {
    const { baseDelayMs: base, maxDelayMs: cap } = layer;
    switch (layer.jitter) {
      case 'decorrelated':
        total += Math.min(cap, base * 3 ** (n + 1));
        break;
      case 'band':
        total += Math.min(cap, base * layer.multiplier ** n) * layer.bandHigh;
        break;
      default:
        total += Math.min(cap, base * layer.multiplier ** n);
    }
  }
  return total;
}

/** `n` as a plain number for a report: a finite value, or null for an unbounded one. */
function finite(n: number): number | null {
  return Number.isFinite(n) ? n : null;
}

function list(names: readonly string[]): string {
  if (names.length <= 1) return names.join('');
  return `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

/**
 * Checks a description of the retry layers of a stack (parsed JSON; the format is in
 * `docs/simulator.md` and {@link Stack}) and works out its worst case per user request:
 *
 * - calls at the bottom: every layer repeats the whole call below it, so the product of the
 *   attempts (3 layers of 4: 64);
 * - latency: from the bottom up, one attempt of a layer takes at most its `timeoutMs` or the worst
 *   case of the layer below, whichever is shorter; the layer takes `attempts` of those plus its
 *   longest total backoff, and never more than its `deadlineMs`. Retry-After pauses are not
 *   counted;
 * - a layer's breaker: once open, no calls at the bottom per user request, only its probes per
 *   open period (multiplied by the retrying layers below it);
 * - warnings: more than one layer retries; a layer retries at once or without jitter; retries
 *   non-idempotent calls; retries without a budget (said differently for a layer a breaker
 *   stops); makes more than 5 attempts; and nothing bounds the latency;
 * - notes: the stack retries and no layer has a breaker.
 *
 * @throws TypeError or RangeError naming the field (`layers[1].attempts`) and the value at fault.
 * @example
 * ```ts
 * checkStack({ layers: [
 *   { name: 'client library', attempts: 4, baseDelayMs: 200, maxDelayMs: 5000, jitter: 'full', timeoutMs: 1000, budget: true },
 * ] }); // { worstCaseBottomCalls: 4, worstCaseLatencyMs: 5400, warnings: [], notes: [...], ... }
 * ```
 */
export function checkStack(stack: unknown): StackReport {
  if (stack === null || typeof stack !== 'object' || Array.isArray(stack)) {
    throw new TypeError(
      `stormproof: ${OWNER} must be an object with a "layers" array, got ${show(stack)}`,
    );
  }
  const s = stack as Record<string, unknown>;
  checkFields(OWNER, s, STACK_KEYS);
  const name = checkString('name', s.name, false);
  checkString('description', s.description, false);
  if (!Array.isArray(s.layers) || s.layers.length === 0) {
    throw new TypeError(
      `stormproof: ${OWNER} layers must be a non-empty array of layers, top first, got ${show(s.layers)}`,
    );
  }
  const read = s.layers.map(readLayer);
  // One retry layer in one process: a stormproof layer over a stormproof layer passes its
  // failures up, so it makes one attempt per call it receives (the engine's 'already-retried').
  const passesUp = read.map(
    (layer, i) => layer.stormproof && !layer.allowNestedRetries && read[i + 1]?.stormproof === true,
  );
  const layers = read.map((layer, i) => (passesUp[i] ? { ...layer, attempts: 1 } : layer));

  // Worst case calls received per layer, top down.
  const received: number[] = [];
  let calls = 1;
  for (const layer of layers) {
    received.push(calls);
    calls *= layer.attempts;
  }

  // Worst case latency per layer, bottom up. The service below the last layer is unbounded.
  const latency = new Array<number>(layers.length);
  const backoff = layers.map(maxTotalBackoff);
  let below = Number.POSITIVE_INFINITY;
  for (let i = layers.length - 1; i >= 0; i--) {
    const layer = layers[i]!;
    const attempt = layer.timeoutMs === undefined ? below : Math.min(layer.timeoutMs, below);
    let total = layer.attempts * attempt + backoff[i]!;
    if (layer.deadlineMs !== undefined) total = Math.min(total, layer.deadlineMs);
    latency[i] = total;
    below = total;
  }

  const warnings: string[] = [];
  const retrying = layers.filter((l) => l.attempts > 1);
  /** The nearest layer at or above `layer` with a breaker: once open, `layer` gets no calls. */
  const guardOf = (layer: Layer): Layer | undefined => {
    for (let i = layers.indexOf(layer); i >= 0; i--) {
      if (layers[i]!.breaker !== undefined) return layers[i];
    }
    return undefined;
  };
  if (retrying.length > 1) {
    warnings.push(
      `${retrying.length} layers retry (${list(retrying.map((l) => l.name))}): their attempts multiply to ${calls} calls at the bottom per user request. Retry at one layer, usually the one nearest the user, and make the others fail fast.`,
    );
  }
  for (const layer of retrying) {
    if (layer.baseDelayMs === 0) {
      warnings.push(
        `${layer.name} retries at once (no backoff, so no jitter either): every failed call comes back in the same instant, at the worst moment. Use capped exponential backoff with full jitter.`,
      );
    } else if (layer.jitter === 'none') {
      warnings.push(
        `${layer.name} retries without jitter: clients that failed together retry together, in waves. Use full jitter.`,
      );
    }
    if (layer.retriesNonIdempotent) {
      warnings.push(
        `${layer.name} retries non-idempotent calls (POST, PATCH): a retry can apply the work twice. Retry them only with an idempotency key.`,
      );
    }
    const guard = guardOf(layer);
    if (!layer.budget && guard === undefined) {
      warnings.push(
        `${layer.name} retries with no retry budget: in a long outage every call makes all ${layer.attempts} attempts. Add a budget of about 10 percent.`,
      );
    } else if (!layer.budget && guard !== undefined) {
      // A breaker at this layer or above stops its calls once open, but not while it is closed.
      const whose =
        guard === layer ? 'its circuit breaker' : `the circuit breaker of ${guard.name}`;
      const b = guard.breaker!;
      const gap =
        b.failureRatio === undefined
          ? `a partial outage never opens it, since any success resets its count of ${b.consecutiveFailures} failures in a row`
          : `failures under ${b.failureRatio * 100}% never open it`;
      warnings.push(
        `${layer.name} retries with no retry budget: ${whose} stops its calls in a long outage once open, but while it is closed every failing call makes all ${layer.attempts} attempts, and ${gap}. Add a budget of about 10 percent.`,
      );
    }
    if (layer.attempts > MAX_SENSIBLE_ATTEMPTS) {
      warnings.push(
        `${layer.name} makes ${layer.attempts} attempts, more than ${MAX_SENSIBLE_ATTEMPTS} (gRPC caps maxAttempts at 5; the SRE book allows 3). Use 3 or 4.`,
      );
    }
  }
  const notes: string[] = [];
  if (retrying.length > 0 && layers.every((l) => l.breaker === undefined)) {
    notes.push(
      `No layer has a circuit breaker: for as long as an outage lasts, minutes or hours, every user request still sends at least 1 call, and up to ${calls}, to the failing service. A breaker at one layer sends none once open, only a probe now and then.`,
    );
  }
  const top = latency[0]!;
  if (!Number.isFinite(top)) {
    warnings.push(
      'No layer has a timeout or a deadline that bounds the call: a service that hangs holds the user for ever. Give each attempt a timeout and the call a deadline.',
    );
  }

  return {
    ...(name === undefined ? {} : { name }),
    worstCaseBottomCalls: calls,
    worstCaseLatencyMs: finite(top),
    warnings,
    notes,
    layers: layers.map((layer, i) => ({
      name: layer.name,
      attempts: layer.attempts,
      ...(passesUp[i] ? { passesUp: true } : {}),
      worstCaseCallsReceived: received[i]!,
      maxTotalBackoffMs: finite(backoff[i]!),
      worstCaseLatencyMs: finite(latency[i]!),
      ...(layer.breaker === undefined
        ? {}
        : { breaker: breakerReport(layer.breaker, calls / received[i]! / layer.attempts) }),
    })),
  };
}
