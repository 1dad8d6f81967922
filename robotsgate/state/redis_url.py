"""What names a Redis and how the fleet uses it, read from the options without redis itself:
loading the configuration (robotsgate.config.options) must not import the Redis client."""

from typing import Literal
from urllib.parse import urlsplit, urlunsplit

# What the proxy does while Redis is unreachable: refuse (closed), or go on alone (local).
Fallback = Literal["closed", "local"]
FALLBACKS: tuple[Fallback, ...] = ("closed", "local")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")


def is_cluster(url: str) -> bool:
    return urlsplit(url).scheme in CLUSTER_SCHEMES


def check_url(url: str) -> str:
    """The URL if redis-py can use it, else ValueError saying why."""
    if not url.startswith(("redis://", "rediss://", "unix://", "redis+cluster://",
                           "rediss+cluster://")):
        raise ValueError(f"must look like redis://host:port/db, or redis+cluster://host:port "
                         f"for any node of a Redis Cluster; got {redacted(url)!r}")
    cluster = is_cluster(url)
    plain = url.replace("+cluster", "", 1) if cluster else url
    from redis.connection import parse_url  # only when a URL is given

    parse_url(plain)  # type: ignore[no-untyped-call]  # ValueError: bad port, query
    parts = urlsplit(plain)
    if cluster and parts.path.strip("/") not in ("", "0"):
        raise ValueError(f"a Redis Cluster has only database 0; got {redacted(url)!r}")
    if parts.scheme != "unix":
        if not parts.hostname:
            raise ValueError(f"needs a host, as in redis://host:port/db; got {redacted(url)!r}")
        db = parts.path.strip("/")
        if db and not db.isdigit():  # redis-py would quietly use database 0
            raise ValueError(f"database must be a number, as in redis://host:port/0; "
                             f"got {redacted(url)!r}")
    return url


def check_prefix(prefix: str) -> str:
    # Braces would make the prefix a Redis Cluster hash tag: keys one script reads together
    # would land on different nodes.
    if not prefix or not prefix.isprintable() or " " in prefix or "{" in prefix or \
            "}" in prefix:
        raise ValueError(f"must be a non-empty key prefix without spaces or braces; "
                         f"got {prefix!r}")
    return prefix


def redacted(url: str) -> str:
    """The URL without its password, for logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + netloc))
