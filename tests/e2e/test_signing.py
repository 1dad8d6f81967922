"""End to end, Web Bot Auth: a real `mitmdump -s addon.py` with a key made by `robotsgate keygen`
signs what leaves it, for http and https origins, and the origin checks each request with an
independent verifier (the http-message-signatures package) holding only the public key that
keygen printed. A request the bot signed itself keeps the bot's signature."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from http_message_signatures import HTTPMessageVerifier, algorithms
from http_message_signatures.exceptions import InvalidSignature
from http_message_signatures.resolvers import MappingKeyResolver

from .clients import curl
from .machine import clean_env, require_tool
from .origins import Origin, Seen
from .proxy import Proxy

ROBOTSGATE = Path(sys.executable).parent / "robotsgate"
AGENT = "https://bots.example/.well-known/http-message-signatures-directory"


@pytest.fixture
def published(tmp_path: Path) -> tuple[Path, dict[str, Ed25519PublicKey]]:
    """A key from `robotsgate keygen`, and what a site learns of it: the public keys by id."""
    key = tmp_path / "signing.pem"
    made = subprocess.run([str(ROBOTSGATE), "keygen", str(key)], capture_output=True, text=True,
                          timeout=60, env=clean_env())
    assert made.returncode == 0, made.stderr
    keys = {}
    for jwk in json.loads(made.stdout)["keys"]:
        raw = base64.urlsafe_b64decode(jwk["x"] + "=" * (-len(jwk["x"]) % 4))
        keys[jwk["kid"]] = Ed25519PublicKey.from_public_bytes(raw)
    return key, keys


def check(seen: Seen, scheme: str, keys: dict[str, Ed25519PublicKey]) -> list[str]:
    """The origin's check of a request it received: what the signature covers."""
    verifier = HTTPMessageVerifier(signature_algorithm=algorithms.ED25519,
                                   key_resolver=MappingKeyResolver(public_keys=keys,
                                                                   private_keys={}))
    request = requests.Request(seen.method, f"{scheme}://{seen.host}{seen.path}",
                               headers=seen.headers).prepare()
    [result] = verifier.verify(request, expect_tag="web-bot-auth")
    return [name for name in result.covered_components if name != '"@signature-params"']


@pytest.mark.parametrize(("profile", "covered"), [
    ("ietf", ['"@authority"', '"signature-agent";key="sig1"']),
    ("cloudflare", ['"@authority"', '"signature-agent"']),
])
def test_what_leaves_is_signed_and_verifies_with_the_published_key(
        profile: str, covered: list[str], published: tuple[Path, dict[str, Ed25519PublicKey]],
        origin: Callable[..., Origin], https_origin: Callable[..., Origin],
        proxy: Callable[..., Proxy]) -> None:
    key, keys = published
    plain, secure = origin(robots="User-agent: *\nDisallow: /private\n"), \
        https_origin(robots="User-agent: *\nDisallow: /private\n")
    gate = proxy(trust_test_ca=True, robots_signing_key=str(key),
                 robots_signature_agent=AGENT, robots_signature_profile=profile)
    for site in (plain, secure):
        assert curl(gate, site.url("/page"), headers={"User-Agent": "ShopBot/1.0"}).status == 200
    [seen] = [s for s in secure.seen if s.path == "/page"]
    assert check(seen, "https", keys) == covered
    # What the signature vouches for is the authority the origin was reached at.
    seen.headers["host"] = "elsewhere.example"
    with pytest.raises(InvalidSignature):
        check(seen, "https", keys)
    # Nothing is signed in the clear (a signature covers the authority, not the scheme: one
    # seen on the way could be replayed over https), nor the proxy's own robots.txt fetches.
    [seen] = [s for s in plain.seen if s.path == "/page"]
    assert "signature" not in seen.headers and "signature-agent" not in seen.headers
    assert "signature" not in secure.robots_fetches()[0].headers


def test_a_bots_own_signature_is_left_alone_and_only_named_bots_are_signed(
        published: tuple[Path, dict[str, Ed25519PublicKey]],
        https_origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    key, _ = published
    site = https_origin(robots="User-agent: *\nAllow: /\n")
    # Bots named by their proxy-auth user (robots_agents): a User-Agent names no one here.
    gate = proxy(trust_test_ca=True, robots_signing_key=str(key), robots_signature_agent=AGENT,
                 robots_signing_agents="ShopBot", proxyauth="any",
                 robots_agents="alice=ShopBot")

    def get(path: str, user: str, headers: dict[str, str]) -> None:
        done = subprocess.run(
            [require_tool("curl"), "-sS", "-o", "/dev/null", "-w", "%{http_code}",
             "--cacert", str(gate.ca), "-x", f"http://{user}:x@127.0.0.1:{gate.port}",
             *[arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")],
             site.url(path)], capture_output=True, text=True, timeout=30, env=clean_env())
        assert done.stdout == "200", done.stderr

    get("/own", "alice", {"Signature-Input": 'bot=("@authority");created=1',
                          "Signature": "bot=:AAAA:"})
    get("/other", "bob", {"User-Agent": "ShopBot/1.0"})  # says ShopBot, is not
    get("/named", "alice", {"User-Agent": "Mozilla/5.0"})
    seen = {s.path: s.headers for s in site.seen}
    assert seen["/own"]["signature"] == "bot=:AAAA:" and "signature-agent" not in seen["/own"]
    assert "signature" not in seen["/other"]
    assert seen["/named"]["signature"].startswith("sig1=:")


def test_signing_without_a_key_stops_the_start(tmp_path: Path,
                                               proxy: Callable[..., Proxy]) -> None:
    from .proxy import run_mitmdump

    code, output = run_mitmdump(tmp_path, {"robots_signature_agent": AGENT,
                                           "robots_audit_log": tmp_path / "a.jsonl"})
    assert code == 1, output
    assert "robotsgate: robots_signature_agent: requests are signed with robots_signing_key, " \
           "which is not set" in output
