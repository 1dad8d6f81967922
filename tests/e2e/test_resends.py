"""End to end, a request the proxy sends once more (robotsgate.mitm.again): for a signature an
origin asks for (Accept-Signature), a licence it refused (WWW-Authenticate: License), a price it
asks (402). Each resend is the bot's request again, body included, framed by the proxy as the
copy it holds: here an HTTP/2 bot's body whose length no header gives (its DATA frames end it),
sent to an HTTP/1.1-only origin, which gets it chunked the first time and whole the second.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from .machine import clean_env
from .origins import Origin, Reply, Seen
from .proxy import Proxy
from .test_what_leaves import h2_exchange, read_response, tunnel
from .wire import status_of

OriginFactory = Callable[..., Origin]
ProxyFactory = Callable[..., Proxy]
ROBOTSGATE = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "robotsgate"
AGENT = "https://bots.example/.well-known/http-message-signatures-directory"
BODY = b'{"query": "what the bot posts", "pad": "' + b"x" * 5000 + b'"}'


@pytest.fixture
def key(tmp_path: Path) -> Path:
    made = tmp_path / "signing.pem"
    done = subprocess.run([str(ROBOTSGATE), "keygen", str(made)], capture_output=True,
                          text=True, timeout=60, env=clean_env())
    assert done.returncode == 0, done.stderr
    return made


def h2_post(gate: Proxy, site: Origin, path: str, *extra: tuple[str, str]
            ) -> tuple[int | None, bytes]:
    """An HTTP/2 bot's POST of BODY, with no content-length: its DATA frames say where it ends.
    The proxy speaks HTTP/2 to the bot before it knows the origin speaks only HTTP/1.1
    (connection_strategy=lazy)."""
    authority = f"{site.host}:{site.port}"
    sock = tunnel(gate, authority, None, ("h2",))
    assert sock.selected_alpn_protocol() == "h2"
    try:
        return h2_exchange(sock, [(":method", "POST"), (":scheme", "https"),
                                  (":authority", authority), (":path", path), *extra], BODY)
    finally:
        sock.close()


def h1_post(gate: Proxy, site: Origin, path: str, framing: str, *extra: tuple[str, str]
            ) -> tuple[int | None, bytes]:
    """An HTTP/1.1 bot's POST of BODY, chunked or with its Content-Length."""
    authority = f"{site.host}:{site.port}"
    sock = tunnel(gate, authority, None, ("http/1.1",))
    if framing == "chunked":
        head, body = b"Transfer-Encoding: chunked", b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)
    else:
        head, body = b"Content-Length: %d" % len(BODY), BODY
    fields = b"".join(b"%s: %s\r\n" % (n.encode(), v.encode()) for n, v in extra)
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\n%s\r\n%sConnection: close\r\n\r\n%s"
                 % (path.encode(), authority.encode(), head, fields, body))
    answer = read_response(sock)
    sock.close()
    _, _, rest = answer.partition(b"\r\n\r\n")
    return status_of(answer), rest


def posts(site: Origin, path: str) -> list[Seen]:
    return [seen for seen in site.seen if seen.path == path]


def assert_both_carried_the_body(first: Seen, again: Seen) -> None:
    # The first one as the bot framed it (chunked; an HTTP/2 body ended by its DATA frames is
    # chunked for HTTP/1.1); the copy as the proxy holds it, whole, its length given once.
    assert first.body == BODY and first.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in first.headers
    assert again.body == BODY and again.headers.get("content-length") == str(len(BODY))
    assert "transfer-encoding" not in again.headers


@pytest.mark.parametrize("framing", ["h2", "h1-chunked", "h1-length"])
def test_the_signature_resend_carries_the_body_however_the_bot_framed_it(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path, framing: str) -> None:
    site = https_origin(robots="User-agent: *\nAllow: /\n")

    def members(seen: Seen) -> Reply:
        if "signature-input" not in seen.headers:
            return Reply(401, "sign, please\n",
                         {"Accept-Signature": 'sig2=("@authority" "@method");tag="web-bot-auth"'})
        return Reply(200, "welcome, verified bot\n")

    site.answer("/members", members)
    gate = proxy(trust_test_ca=True, connection_strategy="lazy", robots_signing_key=str(key),
                 robots_signature_agent=AGENT, robots_signing_asked="*")

    bot = ("user-agent", "ShopBot/1.0")
    status, body = h2_post(gate, site, "/members", bot) if framing == "h2" else \
        h1_post(gate, site, "/members", framing.removeprefix("h1-"), bot)

    assert (status, body) == (200, b"welcome, verified bot\n")
    first, again = posts(site, "/members")
    if framing == "h1-length":  # as the bot framed it, both times
        assert first.headers["content-length"] == again.headers["content-length"] == \
            str(len(BODY)) and first.body == again.body == BODY
    else:
        assert_both_carried_the_body(first, again)
    assert "signature-input" not in first.headers and "@method" in again.headers["signature-input"]
    [record] = [r for r in gate.audit() if r["event"] == "signature"]
    assert (record["reason"], record["origin_status"], record.get("error")) == \
        ("signature-asked", 401, None)


def test_the_payment_resend_of_an_http2_body_reaches_an_http1_origin(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path) -> None:
    site = https_origin(robots="User-agent: *\nAllow: /\n")

    def sell(seen: Seen) -> Reply:
        if seen.headers.get("crawler-exact-price") == "USD 0.01" and "signature" in seen.headers:
            return Reply(200, b"paid answer", {"crawler-charged": "USD 0.01"})
        return Reply(402, b"payment required\n", {"crawler-price": "USD 0.01"})

    site.answer("/paid", sell)
    gate = proxy(trust_test_ca=True, connection_strategy="lazy", robots_signing_key=str(key),
                 robots_signature_agent=AGENT, robots_max_price="USD 0.05",
                 robots_budget="USD 1/day")

    status, body = h2_post(gate, site, "/paid")

    assert (status, body) == (200, b"paid answer")
    first, again = posts(site, "/paid")
    assert_both_carried_the_body(first, again)
    assert again.headers["crawler-exact-price"] == "USD 0.01"
    [record] = [r for r in gate.audit() if r["event"] == "payment"]
    assert (record["reason"], record["origin_status"]) == ("crawler-charged", 200)


def test_the_licence_resend_of_an_http2_body_reaches_an_http1_origin(
        https_origin: OriginFactory, proxy: ProxyFactory, tmp_path: Path) -> None:
    server = https_origin()
    issued = iter(["tok-1", "tok-2"])

    def issue(seen: Seen) -> Reply:
        if parse_qs(seen.body.decode()).get("grant_type") != ["rsl"] or \
                seen.headers.get("authorization") != \
                "Basic " + base64.b64encode(b"newsbot:s3cret").decode():
            return Reply(401, b'{"error": "invalid_client"}', {"Content-Type": "application/json"})
        return Reply(200, json.dumps({"access_token": next(issued), "token_type": "License",
                                      "expires_in": 3600}).encode(),
                     {"Content-Type": "application/json"})

    server.answer("/olp/token", issue)
    site = https_origin()
    site.set_robots(f"User-agent: *\nAllow: /\n\nLicense: {site.url('/license.xml')}\n")
    site.route("/license.xml", headers={"Content-Type": "application/rsl+xml"}, body=(
        '<?xml version="1.0" encoding="UTF-8"?>\n<rsl xmlns="https://rslstandard.org/rsl">'
        f'<content url="/" server="{server.url("/olp")}"><license>'
        '<permits type="usage">search</permits></license></content></rsl>\n'))

    def article(seen: Seen) -> Reply:
        if seen.headers.get("authorization") == "License tok-2":
            return Reply(200, b"licensed answer")
        return Reply(401, b"licence please\n",
                     {"WWW-Authenticate": 'License error="invalid_token"'})

    site.answer("/search", article)
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    gate = proxy(trust_test_ca=True, connection_strategy="lazy",
                 robots_purposes=["SearchBot=search"],
                 robots_license_credentials=f"{server.url('/olp')}=newsbot:@{secret}")

    status, body = h2_post(gate, site, "/search", ("user-agent", "SearchBot/1.0"))

    assert (status, body) == (200, b"licensed answer")
    first, again = posts(site, "/search")
    assert_both_carried_the_body(first, again)
    assert (first.headers["authorization"], again.headers["authorization"]) == \
        ("License tok-1", "License tok-2")
    [record] = [r for r in gate.audit() if r["event"] == "license"]
    assert record["reason"] == "license-refused"
    assert record["error"].endswith("sent again with a new one"), record
