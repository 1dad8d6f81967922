"""The operator's credentials for RSL licence servers (robots_license_credentials), read
without any network library: the options are read by tools that fetch nothing."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit


@dataclass(frozen=True, slots=True)
class Credentials:
    """An operator's OAuth 2.0 client credentials for one licence server."""

    client_id: str
    secret: str = field(repr=False)


def server_key(url: str) -> str:
    """A licence server's URL as credentials are kept for it: scheme and host lower-cased,
    no trailing "/"."""
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def parse_credentials(entries: Sequence[str]) -> dict[str, Credentials]:
    """robots_license_credentials: `SERVER=CLIENT_ID:SECRET`, or `SERVER=CLIENT_ID:@FILE` (the
    secret read from FILE, its surrounding whitespace dropped). ValueError naming the entry
    that cannot be used by its position and its server's host only: an entry that is not
    well formed may hold the secret anywhere (a missing "=" or ":" moves it into what would
    be the server or the client id), so nothing else of it is ever in a message."""
    found: dict[str, Credentials] = {}
    for number, entry in enumerate(entries, 1):
        server, sep, rest = entry.partition("=")
        # The URL may hold "=" in its query: the last "=" before the client id is not known,
        # so the client id and secret are read from the first ":" after the first "=".
        client_id, colon, secret = rest.partition(":")
        shown = entry_name(number, server)
        if not sep or not colon or not client_id.strip():
            raise ValueError(f"{shown} is not SERVER=CLIENT_ID:SECRET (or CLIENT_ID:@FILE)")
        parts = urlsplit(server.strip())
        if parts.scheme.lower() != "https":
            raise ValueError(f"{shown}: the licence server must be an https:// URL (the client "
                             f"secret is sent to it)")
        if "@" in parts.netloc:
            raise ValueError(f"{shown}: the licence server's URL must not hold credentials "
                             f"(user:password@): give them as CLIENT_ID:SECRET")
        if secret.startswith("@"):
            try:
                secret = Path(secret[1:]).read_text(encoding="utf-8").strip()
            except (OSError, ValueError) as exc:  # ValueError: a NUL in the name, not UTF-8
                # Not the file's name either: a secret that begins with "@" by chance is
                # read as one.
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else \
                    type(exc).__name__
                raise ValueError(f"{shown}: cannot read the secret from the file it names "
                                 f"after \"@\": {why}") from None
        if not secret:
            raise ValueError(f"{shown}: an empty secret")
        found[server_key(server)] = Credentials(client_id.strip(), secret)
    return found


def entry_name(number: int, server: str) -> str:
    """How a message names a credentials entry: its position, and its server's host name (no
    user information, port, path or query); nothing else of it."""
    try:
        host = urlsplit(server.strip()).hostname if "://" in server else None
    except ValueError:
        host = None
    return f"entry {number} (licence server {host})" if host else \
        f"entry {number} (no licence server URL before \"=\")"
