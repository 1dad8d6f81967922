"""Politeness in Redis: the transitions of politeness.py as one Lua program, for a fleet.

One script holds every transition a fleet applies to a host's state in Redis, so that the
rules live in one place beside their Python originals (politeness.py) and every proxy loads one
program: `reserve` (politeness.reserve), `pushback`, `turn` (turn_wait and released), `left`
(departed), and the bookkeeping around them: `regrouping` (Redis lost its memory: every proxy
puts back what it knew), `reassert` and `adopt` (a schedule known elsewhere joins the shared
one, the later start and the longer pause winning, as politeness.follow), `unreserve` (a
reservation whose answer never came is given back).

A host's state is one hash (redis_pacing.py says its key): `next`, `paused_until`, `failures`
(the Schedule), `left`, `pending`, `pending_at` (the Turn), `by`/`before` (the last
reservation's id and the `next` it replaced, to undo it) and `turn_by`/`left_before` (the
request whose departure `left` records in advance, and what `left` was before: its turn given
back if it is not used). Times are on Redis's clock (TIME).

Every call is ARGV[1] a deadline ('' for none: the fence of redis_clock.py), ARGV[2] the
transition's name, then its own arguments, read below as A[1], A[2], ...
"""

from typing import Any

from redis.commands.core import AsyncScript

from robotsgate.state.redis_clock import FENCE, Client, RedisClock

# The program. Its transitions, each a function of the keys and its arguments A:
PROGRAM = FENCE + """
local A = {}
for i = 3, #ARGV do
  A[i - 2] = ARGV[i]
end
local function f6(x)
  return string.format('%.6f', x)
end

-- Whether a group's schedule is whole: nil, or the seconds to wait before anything is decided
-- (Redis lost it; every proxy re-asserts meanwhile). A missing epoch starts a regrouping.
local function regrouping_of(epoch_key, group, regroup, channel)
  local epoch = redis.call('GET', epoch_key)
  if not epoch then
    redis.call('SET', epoch_key, f6(now + tonumber(regroup)))
    redis.call('PUBLISH', channel, 'regroup ' .. group)
    return tonumber(regroup)
  elseif tonumber(epoch) > now then
    return tonumber(epoch) - now
  end
  return nil
end

-- KEYS: host hash, its group's epoch. A: regroup, channel, interval, max_wait, host, keep
-- (seconds the hash outlives its last use, so the backoff counter is remembered between
-- pauses), group, the reservation's id (kept with the `next` it replaced), slack ('' for none),
-- seconds a proxy trusts a host idle (`idle_until`: a host found idle is said busy on the
-- channel when it gets a schedule before then; no notice otherwise).
-- {wait, paused, idle, refused, regrouping, next, paused_until, turn}
-- A slot that is now, on a host whose turn is free (nothing pending, the interval passed since
-- the last departure), comes with its turn taken (`turn` 1): its departure is recorded as at
-- most `slack` from now (turn_at_once, below); its proxy sends it within that, or takes the
-- turn again, giving this one back (`turn_by`, `left_before`).
local function reserve()
  local regrouping = regrouping_of(KEYS[2], A[7], A[1], A[2])
  if regrouping then
    return {f6(regrouping), 0, 0, 0, 1, '0', '0', 0}
  end
  local interval = tonumber(A[3])
  local state = redis.call('HMGET', KEYS[1], 'next', 'paused_until', 'left', 'pending',
                           'idle_until')
  local nxt = tonumber(state[1]) or 0
  local paused_until = tonumber(state[2]) or 0
  if nxt <= now and paused_until <= now then
    if interval <= 0 then
      -- Idle: the proxy that asked trusts that for `idle` seconds (redis_pacing.py), and is
      -- told if the host gets busy meanwhile. Kept that long, and a second more.
      local idle = tonumber(A[10])
      redis.call('HSET', KEYS[1], 'idle_until', f6(now + idle + 1))
      if redis.call('PTTL', KEYS[1]) < (idle + 1) * 1000 then
        redis.call('PEXPIRE', KEYS[1], math.ceil((idle + 1) * 1000))
      end
      return {'0', 0, 1, 0, 0, '0', '0', 0}
    end
    if (tonumber(state[5]) or 0) > now then
      -- A proxy may trust it idle still: it hears that it is not.
      redis.call('PUBLISH', A[2], 'busy ' .. A[5])
    end
  end
  local slot = math.max(now, nxt, paused_until)
  local paused = 0
  if paused_until > now and paused_until >= nxt then
    paused = 1
  end
  local wait = slot - now
  if wait > tonumber(A[4]) then
    return {f6(wait), paused, 0, 1, 0, f6(nxt), f6(paused_until), 0}
  end
  local left = tonumber(state[3]) or 0
  local taken = 0
  if wait <= 0 and interval > 0 and A[9] ~= '' and not state[4] and left + interval <= now then
    redis.call('HSET', KEYS[1], 'next', f6(slot + interval), 'by', A[8], 'before', f6(nxt),
               'left', f6(now + tonumber(A[9])), 'turn_by', A[8], 'left_before', f6(left))
    taken = 1
  else
    redis.call('HSET', KEYS[1], 'next', f6(slot + interval), 'by', A[8], 'before', f6(nxt))
  end
  local last = math.max(slot + interval, paused_until)
  redis.call('PEXPIRE', KEYS[1], math.ceil((last - now + tonumber(A[6])) * 1000))
  return {f6(wait), paused, 0, 0, 0, f6(slot + interval), f6(paused_until), taken}
end

-- KEYS: a group's epoch. A: regroup, channel, group. Seconds the regrouping lasts yet.
local function regrouping()
  return f6(regrouping_of(KEYS[1], A[3], A[1], A[2]) or 0)
end

-- KEYS: host hash. A: a reservation's id. The slot it claimed is given back, when no other
-- reservation (nor a re-assertion) came after it: its proxy never heard of it.
local function unreserve()
  local state = redis.call('HMGET', KEYS[1], 'by', 'before')
  if state[1] ~= A[1] then
    return 0
  end
  redis.call('HSET', KEYS[1], 'next', state[2])
  redis.call('HDEL', KEYS[1], 'by', 'before')
  return 1
end

-- Merge a start and a pause known elsewhere into the host's schedule: the later wins
-- (politeness.follow); forgets the last reservation's id, which may no longer be undone. Only
-- when either is still ahead, unless `always`.
local function merge(nxt, paused_until, keep, always)
  local state = redis.call('HMGET', KEYS[1], 'next', 'paused_until')
  nxt = math.max(tonumber(state[1]) or 0, nxt)
  paused_until = math.max(tonumber(state[2]) or 0, paused_until)
  if not always and math.max(nxt, paused_until) <= now then
    return false
  end
  redis.call('HSET', KEYS[1], 'next', f6(nxt), 'paused_until', f6(paused_until))
  redis.call('HDEL', KEYS[1], 'by', 'before')
  redis.call('PEXPIRE', KEYS[1], math.ceil((math.max(nxt, paused_until) - now + keep) * 1000))
  return true
end

-- KEYS: host hash. A: next, paused_until (Redis's clock), keep, channel, host. What one proxy
-- knew of a host's schedule, re-asserted after Redis lost it.
local function reassert()
  if not merge(tonumber(A[1]), tonumber(A[2]), tonumber(A[3]), false) then
    return 0
  end
  redis.call('PUBLISH', A[4], 'busy ' .. A[5])
  return 1
end

-- KEYS: host hash. A: seconds to the next start, seconds paused, keep. A schedule this proxy
-- kept alone meanwhile (while Redis was down) joins the shared one.
local function adopt()
  merge(now + tonumber(A[1]), now + tonumber(A[2]), tonumber(A[3]), true)
  return 1
end

-- KEYS: host hash. A: retry_after seconds ('' when the origin sent none), backoff base,
-- backoff cap, channel, host, keep. {pause, paused_until}
local function pushback()
  local pause
  if A[1] == '' then
    local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
    pause = math.min(tonumber(A[3]), tonumber(A[2]) * 2 ^ (failures - 1))
  else
    pause = math.min(math.max(tonumber(A[1]), 0), tonumber(A[3]) * 12)
  end
  local state = redis.call('HMGET', KEYS[1], 'next', 'paused_until')
  local paused_until = math.max(tonumber(state[2]) or 0, now + pause)
  redis.call('HSET', KEYS[1], 'paused_until', f6(paused_until))
  local last = math.max(tonumber(state[1]) or 0, paused_until)
  redis.call('PEXPIRE', KEYS[1], math.ceil((last - now + tonumber(A[6])) * 1000))
  redis.call('PUBLISH', A[4], 'pause ' .. A[5])
  return {f6(pause), f6(paused_until)}
end

-- KEYS: host hash. The backoff starts from the beginning again.
local function recovered()
  return redis.call('HDEL', KEYS[1], 'failures')
end

-- KEYS: host hash, its group's epoch. A: regroup, channel, interval, flow id, confirm_timeout,
-- keep, the latest departure this proxy heard of (Redis's clock, 0 if none), group, slack, a
-- turn of this proxy's to give back ('' for none), whether the request leaves at once ('1').
-- {0, 0, at} to go now (marked pending); leaving at once, {0, wait, at} to go after `wait`
-- (0 or more), its departure recorded as `at`; {1, wait} to wait that long and ask again; {2,
-- at most} while another request is pending.
-- While the group regroups nothing goes: a request in flight when the memory went has its
-- departure reported meanwhile, and every proxy hears of it. A departure is never later than
-- now plus the slack (one recorded at once is at most that ahead): a clock that stepped back,
-- or a bad notice, cannot hold a host.
local function turn()
  local regrouping = regrouping_of(KEYS[2], A[8], A[1], A[2])
  if regrouping then
    return {1, f6(regrouping)}
  end
  local interval = tonumber(A[3])
  local slack = tonumber(A[9])
  local keep = math.ceil((interval + slack + tonumber(A[5]) + tonumber(A[6])) * 1000)
  local function kept()
    if redis.call('PTTL', KEYS[1]) < keep then
      redis.call('PEXPIRE', KEYS[1], keep)
    end
  end
  local state = redis.call('HMGET', KEYS[1], 'left', 'pending', 'pending_at', 'turn_by',
                           'left_before')
  local stored = tonumber(state[1]) or 0
  local changed = false
  if A[10] ~= '' and state[4] == A[10] then
    -- A turn this proxy took and did not use (its request could not leave on it): given back.
    stored = tonumber(state[5]) or 0
    changed = true
  end
  local left = math.min(math.max(stored, tonumber(A[7]) or 0), now + slack)
  local pending = state[2]
  if pending and pending ~= A[4] then
    local expires = (tonumber(state[3]) or 0) + tonumber(A[5])
    if now < expires then
      if changed then
        redis.call('HSET', KEYS[1], 'left', f6(left))
        redis.call('HDEL', KEYS[1], 'turn_by', 'left_before')
      end
      return {2, f6(expires - now)}
    end
    -- Never confirmed: it counts as having left when the wait for it gave up.
    left = math.max(left, math.min(expires, now))
    redis.call('HDEL', KEYS[1], 'pending', 'pending_at')
    changed = true
  end
  if left ~= stored then
    changed = true
  end
  local wait = left + interval - now
  if A[11] == '1' then
    -- It leaves as it is released, on a connection already open: its turn is given for when
    -- it comes (now, or `wait` from now), and its departure recorded as at most `slack` after
    -- that (its proxy sends it within that, or takes the turn again, giving this one back).
    local go = math.max(wait, 0)
    local at = now + go + slack
    redis.call('HSET', KEYS[1], 'left', f6(at), 'turn_by', A[4], 'left_before', f6(left))
    kept()
    return {0, f6(go), f6(at)}
  end
  if wait > 0 then
    if changed then
      redis.call('HSET', KEYS[1], 'left', f6(left))
      redis.call('HDEL', KEYS[1], 'turn_by', 'left_before')
      kept()
    end
    return {1, f6(wait)}
  end
  redis.call('HSET', KEYS[1], 'left', f6(left), 'pending', A[4], 'pending_at', f6(now))
  redis.call('HDEL', KEYS[1], 'turn_by', 'left_before')
  kept()
  return {0, '0', f6(left)}
end

-- KEYS: host hash. A: flow id, age (seconds since it left), channel, host, keep. Unfenced:
-- run late, it only makes `left` later than the truth, never earlier. A departure counts
-- whether or not its request is the pending one (it may have been taken over after its
-- confirmation timed out, or been sent while Redis was away): every real departure is kept,
-- and no turn taken before it can be given back any more.
local function left()
  local state = redis.call('HMGET', KEYS[1], 'left', 'pending')
  local at = math.max(tonumber(state[1]) or 0, now - math.max(tonumber(A[2]), 0))
  redis.call('HSET', KEYS[1], 'left', f6(at))
  if state[2] == A[1] then
    redis.call('HDEL', KEYS[1], 'pending', 'pending_at', 'turn_by', 'left_before')
  else
    redis.call('HDEL', KEYS[1], 'turn_by', 'left_before')
  end
  local keep = math.ceil(tonumber(A[5]) * 1000)
  if redis.call('PTTL', KEYS[1]) < keep then
    redis.call('PEXPIRE', KEYS[1], keep)
  end
  redis.call('PUBLISH', A[3], 'left ' .. A[4] .. ' ' .. f6(at))
  return f6(at)
end

local transitions = {reserve = reserve, regrouping = regrouping, unreserve = unreserve,
                     reassert = reassert, adopt = adopt, pushback = pushback,
                     recovered = recovered, turn = turn, left = left}
local transition = transitions[ARGV[2]]
if not transition then
  return redis.error_reply('ERR no transition ' .. tostring(ARGV[2]))
end
return transition()
"""

TRANSITIONS = ("reserve", "regrouping", "unreserve", "reassert", "adopt", "pushback",
               "recovered", "turn", "left")


class Program:
    """The program, registered with one client: each transition run fenced (a deadline on
    Redis's clock, for what must not take effect once its proxy gave up) or not."""

    def __init__(self, client: Client, redis_clock: RedisClock) -> None:
        self._script: AsyncScript = client.register_script(PROGRAM)
        self._clock = redis_clock

    async def fenced(self, transition: str, keys: list[str], args: list[str]) -> Any:
        return await self._clock.run(self._script, keys, [transition, *args])

    async def run(self, transition: str, keys: list[str], args: list[str]) -> Any:
        return await self._script(keys=keys, args=["", transition, *args])
