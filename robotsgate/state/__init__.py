"""What the proxy remembers between requests, behind three small protocols.

- `Store` (store.py): robots.txt entries per origin, fetched once for everyone sharing the store.
  MemoryStore keeps them in this process; RedisStore (redis_store.py) shares them with a fleet.
- `Pacing` (pacing.py): one politeness schedule per host. Pacer keeps it in this process;
  RedisPacer (redis_pacing.py) runs the same algorithm in Lua, for a fleet.
- Departures (departures.py): when paced requests really leave, and the turns they take by it;
  RedisDepartures (redis_departures.py) takes the same turns across a fleet, in Lua.
- fleet.py: a fleet's Redis, and whether it answers (Fleet.ask, the one place that tells);
  fleet_views.py: the store, schedule and turns the gate sees, on Redis or on the fallback.
- redis_clock.py: Redis's clock as a proxy sees it, and the fences that keep a command Redis runs
  after its sender gave up from taking effect; redis_url.py: the Redis options, read without
  the Redis client.

Nothing here knows the gate: parsing comes from the rules cache (robotsgate.rules_cache), and
fetching from whoever calls `Store.refresh`.
"""
