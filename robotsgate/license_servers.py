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
    that cannot be used (the secret never in the message)."""
    found: dict[str, Credentials] = {}
    for entry in entries:
        server, sep, rest = entry.partition("=")
        # The URL may hold "=" in its query: the last "=" before the client id is not known,
        # so the client id and secret are read from the first ":" after the first "=".
        client_id, colon, secret = rest.partition(":")
        shown = f"{server.strip()}={client_id}:..."
        if not sep or not colon or not client_id.strip():
            raise ValueError(f"{shown!r} is not SERVER=CLIENT_ID:SECRET (or CLIENT_ID:@FILE)")
        if not server.strip().lower().startswith("https://"):
            raise ValueError(f"{shown!r}: the licence server must be an https:// URL (the "
                             f"client secret is sent to it)")
        if secret.startswith("@"):
            try:
                secret = Path(secret[1:]).read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ValueError(f"{shown!r}: cannot read the secret from {secret[1:]!r}: "
                                 f"{exc.strerror or exc}") from None
        if not secret:
            raise ValueError(f"{shown!r}: an empty secret")
        found[server_key(server)] = Credentials(client_id.strip(), secret)
    return found


