"""What the proxy counts as it runs, and says of itself: Prometheus metrics and the status line.

- prometheus: one registry per proxy, served on /metrics when asked for
- status: the line said every robots_status_interval seconds, read from those counts
"""
