// The breaker's transitions as Lua scripts, one atomic step each on one key's hash (and its
// probe lease, which shares the hash's slot through a hash tag, so Redis Cluster accepts them).
// Time is the server's (TIME), so a fleet agrees on when an open period ends.
//
// KEYS[1]: the hash (state, level, failures, until, successes, ratio buckets b0-9/c0-9/f0-9)
// KEYS[2]: the probe lease (SET NX PX, value: the holder's token)
// ARGV[1..7]: consecutiveFailures, failureRatio ('' in consecutive mode), windowMs,
//             minimumCalls, openMs, maxOpenMs, successesToClose
// Every script answers { state, level, failures, retryInMs, granted }.

const PRELUDE = `
local h, lease = KEYS[1], KEYS[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local threshold, ratio = tonumber(ARGV[1]), tonumber(ARGV[2])
local windowMs, minimumCalls = tonumber(ARGV[3]), tonumber(ARGV[4])
local openMs, maxOpenMs, toClose = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local KEEP_MS = 86400000

local function read()
  local v = redis.call('HMGET', h, 'state', 'level', 'failures', 'until')
  return v[1] or 'closed', tonumber(v[2] or '0'), tonumber(v[3] or '0'), tonumber(v[4] or '0')
end

local function ceiling(level)
  return math.min(maxOpenMs, openMs * 2 ^ level)
end

local function open(level, draw)
  local c = ceiling(level)
  redis.call('DEL', h)
  redis.call('HSET', h, 'state', 'open', 'level', level, 'failures', 0,
    'until', now + math.floor(c / 2 + draw * c / 2))
end

local function reply(granted)
  local state, level, failures, untilMs = read()
  local retry = 0
  if state == 'open' then
    retry = math.max(0, untilMs - now)
  elseif state == 'half-open' then
    retry = redis.call('PTTL', lease)
    if retry < 0 then state, retry = 'open', 0 end -- the probe's holder is gone
  end
  if state == 'isolated' then redis.call('PERSIST', h) else redis.call('PEXPIRE', h, KEEP_MS) end
  return { state, level, failures, retry, granted and 1 or 0 }
end
`;

/** Adds a batch of outcomes. ARGV[8..11]: reset (0/1), failures, successes, draw. */
export const REPORT = `${PRELUDE}
local reset, nf, ns, draw = ARGV[8] == '1', tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local state, level, failures = read()
if state == 'closed' then
  if not ratio then
    if reset then failures = 0 end
    failures = failures + nf
    if failures >= threshold then open(0, draw) else redis.call('HSET', h, 'failures', failures) end
  else
    local bucket = math.floor(now / (windowMs / 10))
    local i = bucket % 10
    if tonumber(redis.call('HGET', h, 'b' .. i) or '-1') ~= bucket then
      redis.call('HSET', h, 'b' .. i, bucket, 'c' .. i, 0, 'f' .. i, 0)
    end
    redis.call('HINCRBY', h, 'c' .. i, nf + ns)
    redis.call('HINCRBY', h, 'f' .. i, nf)
    local calls, fails = 0, 0
    for j = 0, 9 do
      local v = redis.call('HMGET', h, 'b' .. j, 'c' .. j, 'f' .. j)
      if v[1] and tonumber(v[1]) > bucket - 10 then
        calls = calls + tonumber(v[2])
        fails = fails + tonumber(v[3])
      end
    end
    if nf > 0 and calls >= minimumCalls and fails >= ratio * calls then open(0, draw) end
  end
end
return reply(false)
`;

/** Claims the fleet's single probe. ARGV[8]: the claimant's token. */
export const CLAIM = `${PRELUDE}
local state, level, failures, untilMs = read()
local free = (state == 'open' and now >= untilMs)
  or (state == 'half-open' and redis.call('EXISTS', lease) == 0)
if free and redis.call('SET', lease, ARGV[8], 'NX', 'PX', math.floor(ceiling(level))) then
  if state == 'open' then redis.call('HSET', h, 'state', 'half-open', 'successes', 0) end
  return reply(true)
end
return reply(false)
`;

/** Ends a probe. ARGV[8..10]: token, outcome (success, failure, ignored), draw. */
export const SETTLE = `${PRELUDE}
if redis.call('GET', lease) == ARGV[8] then
  redis.call('DEL', lease)
  local state, level = read()
  if state == 'half-open' then
    if ARGV[9] == 'failure' then
      open(level + 1, tonumber(ARGV[10]))
    elseif ARGV[9] == 'success' and redis.call('HINCRBY', h, 'successes', 1) >= toClose then
      redis.call('DEL', h)
    end
  end
end
return reply(false)
`;

/** Isolates or resets the key for the whole fleet. ARGV[8]: 'isolate' or 'reset'. */
export const CONTROL = `${PRELUDE}
redis.call('DEL', lease)
if ARGV[8] == 'isolate' then
  redis.call('DEL', h)
  redis.call('HSET', h, 'state', 'isolated')
else
  redis.call('DEL', h)
end
return reply(false)
`;
