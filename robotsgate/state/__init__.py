"""What the proxy remembers between requests, behind two small protocols.

- `Store` (store.py): robots.txt entries per origin, fetched once for everyone sharing the store.
  MemoryStore keeps them in this process; RedisStore (redis_store.py) shares them with a fleet.
- `Pacing` (pacing.py): one politeness schedule per host. Pacer keeps it in this process;
  RedisPacer (redis_pacing.py) runs the same algorithm in Lua, for a fleet.
- fleet.py: a fleet's Redis with failover to this process's memory (FleetStore, FleetPacer).
- redis_clock.py: Redis's clock as a proxy sees it, and the fences that keep a command Redis runs
  after its sender gave up from taking effect.
- departures.py: when paced requests really leave this process (always local).

Nothing here knows the gate: parsing comes from the rules cache (robotsgate.rules_cache), and
fetching from whoever calls `Store.refresh`.
"""
