"""robots.txt fetched under the proxy's identity and kept: statuses, redirects and caps
(RFC 9309 §2.3), the entry every decision reads, and the evidence archive of every body.

- fetch: one robots.txt over HTTP (httpx), classified, no state
- entries: a fetch turned into the cached entry (freshness, stale copies, metrics)
- archive: every distinct body kept once, named by its sha256
"""
