// Binomial draws for the counted herd: how many of `n` interchangeable clients fall on one side
// of a split of probability `p`. Written for this simulator (no dependency), from the seeded
// random source it is given, by inversion: the uniform draw is walked through the probability
// mass function, so a draw costs one uniform and a few steps per unit of standard deviation.

/** log(k!) exactly (as a sum of logs) below this, by Stirling's series above. */
const TABLE = 1024;
const LOG_FACTORIAL = new Float64Array(TABLE);
for (let k = 2; k < TABLE; k++) LOG_FACTORIAL[k] = LOG_FACTORIAL[k - 1]! + Math.log(k);
const HALF_LOG_TWO_PI = 0.5 * Math.log(2 * Math.PI);

/**
 * `log(k!)` for an integer `k >= 0`: a table below 1024, Stirling's series with three correction
 * terms above (its truncation error there is below 1e-19, far under a double's rounding).
 */
export function logFactorial(k: number): number {
  if (k < TABLE) return LOG_FACTORIAL[k]!;
  const inv = 1 / k;
  const inv2 = inv * inv;
  return (
    (k + 0.5) * Math.log(k) - k + HALF_LOG_TWO_PI + inv * (1 / 12 - inv2 * (1 / 360 - inv2 / 1260))
  );
}

/** Below this mean, inversion starts at 0; above it, at the mode. */
const SMALL_MEAN = 30;

/**
 * A draw from Binomial(`n`, `p`): `n` an integer >= 0, `p` in [0, 1], `random` uniform in
 * [0, 1). Exact up to double rounding: inversion from 0 (mean below 30) or from the mode outward,
 * taking the likelier neighbour first, with the mass function's values computed by its
 * recurrence from `log(k!)`. Relative errors of about 1e-13 in those values put the sampled
 * distribution within about 1e-12 of the binomial in total variation. One uniform per draw; the
 * cost grows with the standard deviation `sqrt(n p (1 - p))`, not with `n`.
 */
export function binomial(n: number, p: number, random: () => number): number {
  if (n <= 0 || p <= 0) return 0;
  if (p >= 1) return n;
  if (p > 0.5) return n - binomial(n, 1 - p, random);
  const q = 1 - p;
  const ratio = p / q;
  let u = random();
  if (n * p < SMALL_MEAN) {
    // P(0) = q^n >= e^(-2 * 30) here, so it never underflows.
    let f = Math.exp(n * Math.log1p(-p));
    let k = 0;
    while (u >= f && k < n) {
      u -= f;
      k++;
      f *= (ratio * (n - k + 1)) / k;
      if (f === 0) break;
    }
    return k;
  }
  const mode = Math.floor((n + 1) * p);
  const atMode = Math.exp(
    logFactorial(n) -
      logFactorial(mode) -
      logFactorial(n - mode) +
      mode * Math.log(p) +
      (n - mode) * Math.log1p(-p),
  );
  if (u < atMode) return mode;
  u -= atMode;
  let lo = mode - 1;
  let hi = mode + 1;
  // P(k) from P(k + 1) going down, from P(k - 1) going up.
  let fLo = lo >= 0 ? (atMode * (lo + 1)) / ((n - lo) * ratio) : 0;
  let fHi = hi <= n ? (atMode * ratio * (n - hi + 1)) / hi : 0;
  while (fLo > 0 || fHi > 0) {
    if (fHi >= fLo) {
      if (u < fHi) return hi;
      u -= fHi;
      hi++;
      fHi = hi <= n ? (fHi * ratio * (n - hi + 1)) / hi : 0;
    } else {
      if (u < fLo) return lo;
      u -= fLo;
      lo--;
      fLo = lo >= 0 ? (fLo * (lo + 1)) / ((n - lo) * ratio) : 0;
    }
  }
  // Only the rounding of the masses left u unspent: the mode is as good an answer as any.
  return mode;
}
