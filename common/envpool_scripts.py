"""The env pool's Lua scripts (`common.envpool`): each change of an env's state is one atomic script.

State of an env id in Redis (key names in `common.keys`):

- registered: a field of `ENV_REGISTRY` (JSON record: url, provider, flavor, dedicated);
- unhealthy: a member of `ENV_UNHEALTHY`;
- leased: its lease key `env_lease(id)` exists (value: the owner; TTL renewed by the owner), and
  `ENV_LEASED` scores it with the lease's deadline (ms, Redis' clock);
- free: a member of `ENV_FREE` and of `env_free(provider)` (sorted sets, every score 0: ZPOPMIN takes
  the first id in id order, as the pool always leased).

Invariant kept by every script: an env is free exactly when it is registered, healthy, not dedicated
and not leased. A lease pops a free id (ZPOPMIN) and sets its lease key (SET NX PX): a fixed number of
commands, O(log envs) work, whatever the pool's size. Whatever ends a lease puts the env back once
(ZADD to a set): `release`; `reclaim` when
the lease key expired (its owner died), found through `ENV_LEASED`'s earliest deadlines; `settle`
after a registration or a health change. The SET NX on the lease key stays the guard against double
leases: a free id whose lease key someone holds anyway (a `claim`) is dropped, not leased, and its
holder's release or expiry frees it.

Conventions of every script: KEYS[1..4] = registry, unhealthy set, leased zset, free set (all
providers); ARGV[1..2] = the lease key's prefix and suffix, from which the scripts build lease keys
of ids they pop (so the pool needs a standalone Redis, not Redis Cluster: keys are not all declared).
"""

from __future__ import annotations

_PRELUDE = """
local REGISTRY, UNHEALTHY, LEASED, FREE = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local function lease_key(id) return ARGV[1] .. id .. ARGV[2] end
local function provider_free(provider) return FREE .. ':' .. provider end
local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- The decoded registry record of `id` (nil when unregistered) and its raw JSON.
local function record(id)
  local raw = redis.call('hget', REGISTRY, id)
  if not raw then return nil, nil end
  local rec = cjson.decode(raw)
  if type(rec.provider) ~= 'string' then rec.provider = 'static' end
  return rec, raw
end
-- May the pool hand `id` out (when nobody leases it)?
local function poolable(id, rec)
  return rec ~= nil and rec.dedicated ~= true and redis.call('sismember', UNHEALTHY, id) == 0
end
local function drop_free(id, rec)
  redis.call('zrem', FREE, id)
  if rec ~= nil then redis.call('zrem', provider_free(rec.provider), id) end
end
-- Put `id` where its state says: free when poolable and unleased (returns 1 when it was not free
-- before), else out of the free sets (a lease without a tracked deadline gets one from its TTL).
local function settle(id, rec)
  local pttl = redis.call('pttl', lease_key(id))
  if pttl == -2 then
    redis.call('zrem', LEASED, id)
    if poolable(id, rec) then
      redis.call('zadd', provider_free(rec.provider), 0, id)
      return redis.call('zadd', FREE, 0, id)
    end
  else
    redis.call('zadd', LEASED, 'NX', now_ms() + math.max(pttl, 0), id)
  end
  drop_free(id, rec)
  return 0
end
-- A tracked lease: its key gone (expired: the owner died; or deleted) -> settle the env; alive past
-- its recorded deadline (`overdue`) -> a new deadline from its TTL, so it leaves the earliest ones.
local function recheck(id, overdue)
  local pttl = redis.call('pttl', lease_key(id))
  if pttl == -2 then return settle(id, (record(id))) end
  if overdue and pttl > 0 then redis.call('zadd', LEASED, 'XX', now_ms() + pttl, id) end
  return 0
end
"""

#: KEYS[5] the set to pop from (`ENV_FREE`, or `env_free(provider)`), KEYS[6] `ENV_FREED_SEQ`;
#: ARGV[3] owner, ARGV[4] TTL (ms), ARGV[5] "1" when KEYS[5] is a provider's set, ARGV[6] how many of
#: the earliest lease deadlines to recheck when nothing is free, ARGV[7..] env ids to avoid.
#: Returns {1, env id, registry record} or {0, the release number last pushed to `ENV_FREED`}.
#: Without `avoid`: ZPOPMIN, HGET, ZREM, SISMEMBER, SET, TIME, ZADD (7 commands inside one EVALSHA).
LEASE = _PRELUDE + """
local SOURCE, SEQ = KEYS[5], KEYS[6]
local owner, ttl, by_provider, lookahead = ARGV[3], tonumber(ARGV[4]), ARGV[5] == '1', tonumber(ARGV[6])
local avoid, navoid = {}, #ARGV - 6
for i = 7, #ARGV do avoid[ARGV[i]] = true end

-- The first free id in id order (ZPOPMIN: all scores are 0), not avoided when another is free: of the
-- 1 + #avoid first ids popped at least one is not avoided whenever the set holds one; the others go back.
local function pop()
  local popped = redis.call('zpopmin', SOURCE, 1 + navoid)
  local chosen = nil
  for i = 1, #popped, 2 do
    if not avoid[popped[i]] then chosen = popped[i] break end
  end
  chosen = chosen or popped[1]
  for i = 1, #popped, 2 do
    if popped[i] ~= chosen then redis.call('zadd', SOURCE, 0, popped[i]) end
  end
  return chosen
end

-- Lease a popped id: its registry record, or nil (a stale member, dropped; or held by a claim).
local function take(id)
  local rec, raw = record(id)
  if by_provider then redis.call('zrem', FREE, id)
  elseif rec ~= nil then redis.call('zrem', provider_free(rec.provider), id) end
  if not poolable(id, rec) then return nil end
  local key = lease_key(id)
  if not redis.call('set', key, owner, 'NX', 'PX', ttl) then
    redis.call('zadd', LEASED, 'NX', now_ms() + math.max(redis.call('pttl', key), 0), id)
    return nil
  end
  redis.call('zadd', LEASED, now_ms() + ttl, id)
  return raw
end

for round = 1, 2 do
  for _ = 1, 8 do
    local id = pop()
    if not id then break end
    local raw = take(id)
    if raw then return {1, id, raw} end
  end
  if round == 2 then break end
  local freed, now = 0, now_ms()
  local earliest = redis.call('zrange', LEASED, 0, lookahead - 1, 'WITHSCORES')
  for i = 1, #earliest, 2 do
    freed = freed + recheck(earliest[i], tonumber(earliest[i + 1]) <= now)
  end
  if freed == 0 then break end
end
return {0, redis.call('get', SEQ) or '0'}
"""

#: KEYS[5] lease key, KEYS[6] `ENV_CLEAN`, KEYS[7] `ENV_FREED`, KEYS[8] `ENV_FREED_SEQ`; ARGV[3] owner,
#: ARGV[4] env id, ARGV[5] "1" to mark the env clean. Only the owner releases (compare-and-delete);
#: the release is numbered and pushed to `ENV_FREED` (the newest 64 kept), waking one blocked leaser.
RELEASE = _PRELUDE + """
if redis.call('get', KEYS[5]) ~= ARGV[3] then return 0 end
local id = ARGV[4]
if ARGV[5] == '1' then redis.call('sadd', KEYS[6], id) end
redis.call('del', KEYS[5])
settle(id, (record(id)))
redis.call('lpush', KEYS[7], redis.call('incr', KEYS[8]))
redis.call('ltrim', KEYS[7], 0, 63)
return 1
"""

#: KEYS[5] lease key; ARGV[3] owner, ARGV[4] TTL (ms), ARGV[5] env id. Compare-and-expire; 0 when lost.
RENEW = _PRELUDE + """
if redis.call('get', KEYS[5]) ~= ARGV[3] then return 0 end
redis.call('pexpire', KEYS[5], ARGV[4])
redis.call('zadd', LEASED, now_ms() + tonumber(ARGV[4]), ARGV[5])
return 1
"""

#: KEYS[5] lease key; ARGV[3] owner, ARGV[4] TTL (ms), ARGV[5] env id (registered or not). 0 when held.
CLAIM = _PRELUDE + """
if not redis.call('set', KEYS[5], ARGV[3], 'NX', 'PX', ARGV[4]) then return 0 end
redis.call('zadd', LEASED, now_ms() + tonumber(ARGV[4]), ARGV[5])
drop_free(ARGV[5], (record(ARGV[5])))
return 1
"""

#: ARGV[3] env id, ARGV[4] its record (JSON with "provider"). Adds or updates it, then settles it; an
#: unchanged record is left as it is (providers register their envs again every few seconds).
REGISTER = _PRELUDE + """
local id = ARGV[3]
local old, old_raw = record(id)
if old_raw == ARGV[4] then return 0 end
local rec = cjson.decode(ARGV[4])
if old ~= nil and old.provider ~= rec.provider then redis.call('zrem', provider_free(old.provider), id) end
redis.call('hset', REGISTRY, id, ARGV[4])
return settle(id, (record(id)))
"""

#: KEYS[5] `ENV_CLEAN`; ARGV[3] env id. Its lease key, if any, is left to expire.
UNREGISTER = _PRELUDE + """
local id = ARGV[3]
drop_free(id, (record(id)))
redis.call('hdel', REGISTRY, id)
redis.call('srem', UNHEALTHY, id)
redis.call('srem', KEYS[5], id)
redis.call('zrem', LEASED, id)
return 1
"""

#: ARGV[3] env id, ARGV[4] "1" unhealthy / "0" healthy again.
MARK = _PRELUDE + """
local id = ARGV[3]
if ARGV[4] == '1' then redis.call('sadd', UNHEALTHY, id) else redis.call('srem', UNHEALTHY, id) end
return settle(id, (record(id)))
"""

#: ARGV[3] at most this many leases rechecked (earliest deadlines first). Leases past their deadline
#: whose key is gone free their env. Returns how many envs went back to the free sets.
RECLAIM = _PRELUDE + """
local freed = 0
local due = redis.call('zrangebyscore', LEASED, '-inf', now_ms(), 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(due) do freed = freed + recheck(id, true) end
return freed
"""

#: ARGV[3..] env ids: each settled again (free exactly when registered, healthy, not dedicated and
#: unleased; tracked in `ENV_LEASED` when leased). Returns how many went back to the free sets.
RECONCILE = _PRELUDE + """
local freed = 0
for i = 3, #ARGV do freed = freed + settle(ARGV[i], (record(ARGV[i]))) end
return freed
"""
