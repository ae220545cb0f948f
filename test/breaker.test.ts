// Circuit breakers on an injected clock: exact open periods, probes, ratios, export and import.
import { describe, expect, it } from 'vitest';
import {
  type BreakerAdmission,
  BreakerOpenError,
  BreakerRegistry,
  type BreakerTransition,
  CircuitBreaker,
  type Clock,
  isBreakerOpenError,
} from '../src/index.js';

function virtual(start = 1000): Clock & { t: number } {
  const clock: Clock & { t: number } = { t: start, now: () => clock.t, sleep: async () => {} };
  return clock;
}

function fail(b: CircuitBreaker, n: number): void {
  for (let i = 0; i < n; i++) b.record(b.admit(), 'failure');
}

describe('CircuitBreaker: consecutive failures', () => {
  it('opens on the 5th failure in a row; a success in between starts the count again', () => {
    const clock = virtual();
    const b = new CircuitBreaker('api', { clock, random: () => 0 });
    fail(b, 4);
    b.record(b.admit(), 'success');
    fail(b, 4);
    expect(b.state).toBe('closed');
    fail(b, 1);
    expect(b.state).toBe('open');
    // Equal jitter with random 0: half the 5 s ceiling.
    expect(b.admit()).toEqual({ admitted: false, retryAfterMs: 2500 });
    clock.t += 2499.5;
    expect(b.admit()).toEqual({ admitted: false, retryAfterMs: 1 });
  });

  it('a closed breaker admits with one shared frozen answer', () => {
    const b = new CircuitBreaker('api');
    const a = b.admit();
    expect(a).toEqual({ admitted: true, probe: false });
    expect(b.admit()).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
  });

  it('one probe when the period ends; its success closes the breaker', () => {
    const clock = virtual();
    const b = new CircuitBreaker('api', { clock, random: () => 0.5 });
    fail(b, 5);
    clock.t += 3750; // 2500 + 0.5 * 2500
    const probe = b.admit();
    expect(probe).toEqual({ admitted: true, probe: true });
    expect(b.state).toBe('half-open');
    const other = b.admit();
    expect(other.admitted).toBe(false);
    b.record(probe, 'success');
    expect(b.state).toBe('closed');
    expect(b.admit()).toEqual({ admitted: true, probe: false });
  });

  it('each failed probe doubles the ceiling, with equal jitter, up to 300 s', () => {
    const clock = virtual();
    const b = new CircuitBreaker('api', { clock, random: () => 0.5 });
    fail(b, 5);
    const periods: number[] = [];
    for (let i = 0; i < 9; i++) {
      const refused = b.admit() as { retryAfterMs: number };
      periods.push(refused.retryAfterMs);
      clock.t += refused.retryAfterMs;
      b.record(b.admit(), 'failure');
    }
    // 0.75 of each ceiling: 5, 10, 20, 40, 80, 160, 300, 300, 300 s.
    expect(periods).toEqual([3750, 7500, 15000, 30000, 60000, 120000, 225000, 225000, 225000]);
    // A success closes it and the next trip starts from 5 s again.
    clock.t += 225000;
    b.record(b.admit(), 'success');
    fail(b, 5);
    expect(b.admit()).toEqual({ admitted: false, retryAfterMs: 3750 });
  });

  it('the jitter spreads a fleet that opened together', () => {
    const draws = [0, 0.25, 0.5, 0.75, 0.999];
    const periods = draws.map((r) => {
      const b = new CircuitBreaker('api', { clock: virtual(), random: () => r });
      fail(b, 5);
      return (b.admit() as { retryAfterMs: number }).retryAfterMs;
    });
    expect(periods).toEqual([2500, 3125, 3750, 4375, 4998]);
  });

  it('a check long after the period ends (a late timer, a quiet spell) still sends one probe', () => {
    const clock = virtual();
    const b = new CircuitBreaker('api', { clock, random: () => 0 });
    fail(b, 5);
    clock.t += 3_600_000;
    expect(b.admit()).toEqual({ admitted: true, probe: true });
    expect(b.admit().admitted).toBe(false);
    expect(b.admit().admitted).toBe(false);
  });

  it('probes and successesToClose: three at once, three successes to close', () => {
    const clock = virtual();
    const b = new CircuitBreaker('api', { clock, random: () => 0, probes: 3, successesToClose: 3 });
    fail(b, 5);
    clock.t += 2500;
    const probes = [b.admit(), b.admit(), b.admit()];
    expect(probes.every((p) => p.admitted && p.probe)).toBe(true);
    expect(b.admit().admitted).toBe(false);
    b.record(probes[0]!, 'success');
    b.record(probes[1]!, 'success');
    expect(b.state).toBe('half-open');
    const fourth = b.admit(); // a slot came free
    expect(fourth).toEqual({ admitted: true, probe: true });
    b.record(probes[2]!, 'success');
    expect(b.state).toBe('closed');
    b.record(fourth, 'failure'); // a probe that ends after the close changes nothing
    expect(b.state).toBe('closed');
  });

  it('an ignored probe frees its slot; a probe that never reports loses it after one ceiling', () => {
    const clock = virtual();
    const b = new CircuitBreaker('api', { clock, random: () => 0 });
    fail(b, 5);
    clock.t += 2500;
    const probe = b.admit();
    b.record(probe, 'ignored');
    expect(b.state).toBe('half-open');
    const lost = b.admit();
    expect(lost).toEqual({ admitted: true, probe: true });
    expect(b.admit()).toEqual({ admitted: false, retryAfterMs: 5000 });
    clock.t += 5000;
    expect(b.admit()).toEqual({ admitted: true, probe: true });
  });

  it('calls admitted before the trip that end after it change nothing', () => {
    const clock = virtual();
    const b = new CircuitBreaker('api', { clock, random: () => 0 });
    const early: BreakerAdmission[] = [b.admit(), b.admit()];
    fail(b, 5);
    b.record(early[0]!, 'success');
    expect(b.state).toBe('open');
    clock.t += 2500;
    const probe = b.admit();
    b.record(early[1]!, 'success'); // not the probe: does not close
    expect(b.state).toBe('half-open');
    b.record(probe, 'failure');
    expect(b.state).toBe('open');
  });

  it('tells of every change of state, and a throwing hook changes nothing', () => {
    const clock = virtual();
    const seen: BreakerTransition[] = [];
    const b = new CircuitBreaker('api', {
      clock,
      random: () => 0,
      onStateChange: (t) => {
        seen.push(t);
        throw new Error('hook');
      },
    });
    fail(b, 5);
    clock.t += 2500;
    b.record(b.admit(), 'success');
    b.isolate();
    b.reset();
    expect(seen.map((t) => `${t.from}>${t.to}`)).toEqual([
      'closed>open',
      'open>half-open',
      'half-open>closed',
      'closed>isolated',
      'isolated>closed',
    ]);
    expect(seen.every((t) => t.key === 'api')).toBe(true);
  });
});

describe('CircuitBreaker: failure ratio', () => {
  it('opens when enough calls in the window failed often enough, not before the minimum', () => {
    const clock = virtual(0);
    const b = new CircuitBreaker('db', {
      clock,
      random: () => 0,
      failureRatio: 0.5,
      windowMs: 10_000,
      minimumCalls: 10,
    });
    fail(b, 9); // nine failures: below the minimum volume
    expect(b.state).toBe('closed');
    b.record(b.admit(), 'success'); // 10 calls, 9 failed, but a success does not trip
    expect(b.state).toBe('closed');
    fail(b, 1);
    expect(b.state).toBe('open');
  });

  it('the window slides: old failures fall out', () => {
    const clock = virtual(0);
    const b = new CircuitBreaker('db', {
      clock,
      failureRatio: 0.5,
      windowMs: 10_000,
      minimumCalls: 10,
    });
    fail(b, 6); // at t = 0
    clock.t = 10_500; // the bucket of t = 0 has slid out
    for (let i = 0; i < 6; i++) b.record(b.admit(), 'success');
    fail(b, 4); // 10 calls in the window, 4 failed: 40%
    expect(b.state).toBe('closed');
    fail(b, 2); // 12 calls, 6 failed: 50%
    expect(b.state).toBe('open');
  });
});

describe('manual control, export and import', () => {
  it('isolate refuses every call with no retryAfterMs, and no probe ever goes; reset closes', () => {
    const clock = virtual();
    const b = new CircuitBreaker('api', { clock });
    b.isolate();
    expect(b.admit()).toEqual({ admitted: false, retryAfterMs: undefined });
    clock.t += 86_400_000;
    expect(b.admit().admitted).toBe(false);
    b.reset();
    expect(b.admit()).toEqual({ admitted: true, probe: false });
  });

  it('an open breaker survives a restart: JSON with wall-clock times', () => {
    const wall = { t: Date.UTC(2026, 0, 1) };
    const a = new CircuitBreaker('api', {
      clock: virtual(123_456),
      wallClock: () => wall.t,
      random: () => 0,
    });
    fail(a, 5);
    const json = JSON.parse(JSON.stringify(a));
    expect(json).toEqual({
      key: 'api',
      state: 'open',
      level: 0,
      failures: 0,
      probeAt: Date.UTC(2026, 0, 1) + 2500,
    });
    // Another process, another monotonic clock, one second later.
    wall.t += 1000;
    const clock = virtual(7);
    const b = new CircuitBreaker('api', { clock, wallClock: () => wall.t });
    b.restore(json);
    expect(b.admit()).toEqual({ admitted: false, retryAfterMs: 1500 });
    clock.t += 1500;
    expect(b.admit()).toEqual({ admitted: true, probe: true });
    expect(() => b.restore({ ...json, key: 'other' })).toThrow(/does not match breaker "api"/);
    expect(() => b.restore({ ...json, state: 'ajar' })).toThrow(
      'stormproof: breaker snapshot state is invalid, got "ajar"',
    );
  });

  it('BreakerOpenError: a stable code, retryAfterMs, a brand that survives two copies', () => {
    const e = new BreakerOpenError('api', 2500);
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe('STORMPROOF_BREAKER_OPEN');
    expect(e.name).toBe('BreakerOpenError');
    expect(e.retryAfterMs).toBe(2500);
    expect(e.message).toBe('stormproof: circuit breaker "api" is open (next probe in 2500 ms)');
    expect(isBreakerOpenError(e)).toBe(true);
    const foreign = { [Symbol.for('stormproof.BreakerOpenError')]: true };
    expect(isBreakerOpenError(foreign)).toBe(true);
    expect(isBreakerOpenError(new Error('x'))).toBe(false);
    expect(isBreakerOpenError(null)).toBe(false);
    expect(new BreakerOpenError('api', undefined).message).toMatch(/isolated until reset/);
  });

  it('bad options fail at construction, naming the option', () => {
    expect(() => new CircuitBreaker('a', { consecutiveFailures: null as never })).toThrow(
      /CircuitBreaker consecutiveFailures must be an integer, got null/,
    );
    expect(() => new CircuitBreaker('a', { failureRatio: 0 })).toThrow(/failureRatio must be > 0/);
    expect(() => new CircuitBreaker('a', { openMs: 10_000, maxOpenMs: 5000 })).toThrow(
      'stormproof: CircuitBreaker maxOpenMs must be >= openMs (10000), got 5000',
    );
    expect(() => new CircuitBreaker('a', { probe: 2 } as never)).toThrow(/did you mean probes/);
    expect(() => new CircuitBreaker('a', null as never)).toThrow(/options must be an object/);
    expect(() => new CircuitBreaker(1 as never)).toThrow(/key must be a string/);
    expect(() => new CircuitBreaker('a', { clock: null as never })).toThrow(/clock must have/);
    expect(() => new BreakerRegistry({ maxKeys: 0 })).toThrow(
      /BreakerRegistry maxKeys must be >= 1/,
    );
  });
});

describe('BreakerRegistry', () => {
  it('one breaker per key: a bad route does not open a healthy one', () => {
    const r = new BreakerRegistry({ clock: virtual(), random: () => 0 });
    fail(r.get('https://bad.example'), 5);
    expect(r.get('https://bad.example').state).toBe('open');
    expect(r.get('https://good.example').state).toBe('closed');
    expect(r.get('https://bad.example')).toBe(r.get('https://bad.example'));
  });

  it('keeps at most maxKeys, dropping the least recently used', () => {
    const r = new BreakerRegistry({ maxKeys: 2, clock: virtual(), random: () => 0 });
    const a = r.get('a');
    r.get('b');
    r.get('a'); // a is now the most recent
    r.get('c'); // drops b
    expect(r.size).toBe(2);
    expect(r.get('a')).toBe(a);
    expect(r.toJSON().map((s) => s.key)).toEqual(['c', 'a']);
  });

  it('isolate and reset per key; export and import every breaker', () => {
    const wall = () => Date.UTC(2026, 0, 1);
    const r = new BreakerRegistry({ clock: virtual(), wallClock: wall, random: () => 0 });
    r.isolate('a');
    fail(r.get('b'), 5);
    r.get('c');
    const saved = JSON.parse(JSON.stringify(r));
    const r2 = new BreakerRegistry({ clock: virtual(), wallClock: wall });
    r2.restore(saved);
    expect(['a', 'b', 'c'].map((k) => r2.get(k).state)).toEqual(['isolated', 'open', 'closed']);
    r2.reset('a');
    expect(r2.get('a').state).toBe('closed');
    expect(() => r2.restore({} as never)).toThrow(/restore needs an array of snapshots/);
  });
});
