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
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from http_message_signatures import HTTPMessageVerifier, algorithms
from http_message_signatures.exceptions import InvalidSignature
from http_message_signatures.resolvers import MappingKeyResolver

from .clients import curl
from .machine import clean_env, free_port, require_tool
from .origins import Origin, Reply, Seen
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


@pytest.mark.parametrize(("profile", "per_host", "covered"), [
    ("ietf", "", ['"@authority"', '"signature-agent";key="sig1"']),
    ("cloudflare", "", ['"@authority"', '"signature-agent"']),
    # The destination host's own profile wins over robots_signature_profile.
    ("ietf", "127.0.0.1=cloudflare", ['"@authority"', '"signature-agent"']),
])
def test_what_leaves_is_signed_and_verifies_with_the_published_key(
        profile: str, per_host: str, covered: list[str],
        published: tuple[Path, dict[str, Ed25519PublicKey]],
        origin: Callable[..., Origin], https_origin: Callable[..., Origin],
        proxy: Callable[..., Proxy]) -> None:
    key, keys = published
    plain, secure = origin(robots="User-agent: *\nDisallow: /private\n"), \
        https_origin(robots="User-agent: *\nDisallow: /private\n")
    gate = proxy(trust_test_ca=True, robots_signing_key=str(key),
                 robots_signature_agent=AGENT, robots_signature_profile=profile,
                 robots_signature_profiles=per_host)
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
    # The audit log says whose signature went: the bot's own, for a bot the proxy signs for.
    [own] = [r for r in gate.audit() if r["event"] == "signature"]
    assert (own["reason"], own["url"], own["signature"], own["agent_source"]) == \
        ("bot-signed", site.url("/own"), 'bot=("@authority");created=1', "map-user")


def test_signing_without_a_key_stops_the_start(tmp_path: Path,
                                               proxy: Callable[..., Proxy]) -> None:
    from .proxy import run_mitmdump

    code, output = run_mitmdump(tmp_path, {"robots_signature_agent": AGENT,
                                           "robots_audit_log": tmp_path / "a.jsonl"})
    assert code == 1, output
    assert "robotsgate: robots_signature_agent: requests are signed with robots_signing_key, " \
           "which is not set" in output


ASK = ('sig2=("@authority" "signature-agent";key="sig1" "@method" "@target-uri");'
       'nonce="n-42";tag="web-bot-auth"')


def members_only(keys: dict[str, Ed25519PublicKey]) -> Callable[[Seen], Reply]:
    """An origin's page for verified bots: 401 with Accept-Signature to a request without a
    signature, 403 to one whose signature does not verify or lacks the nonce it asked for."""
    def reply(seen: Seen) -> Reply:
        if "signature-input" not in seen.headers:
            return Reply(401, "sign, please\n", {"Accept-Signature": ASK})
        try:
            covered = check(seen, "https", keys)
        except InvalidSignature:
            return Reply(403, "bad signature\n")
        if ';nonce="n-42"' not in seen.headers["signature-input"] or \
                '"@target-uri"' not in covered:
            return Reply(403, "not what was asked\n", {"Accept-Signature": ASK})
        return Reply(200, "welcome, verified bot\n")
    return reply


@pytest.mark.parametrize("when", ["asked", "always"])
def test_an_origin_that_asks_for_a_signature_gets_the_request_once_more_signed_as_asked(
        when: str, published: tuple[Path, dict[str, Ed25519PublicKey]],
        https_origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    key, keys = published
    site = https_origin(robots="User-agent: *\nAllow: /\n")
    site.answer("/members", members_only(keys))
    site.route("/closed", 403, "no\n", {"Accept-Signature": ASK})
    options = {"robots_signing_asked": "*"} if when == "asked" else {}
    gate = proxy(trust_test_ca=True, robots_signing_key=str(key), robots_signature_agent=AGENT,
                 **options)
    got = curl(gate, site.url("/members"), headers={"User-Agent": "ShopBot/1.0"})
    assert (got.status, got.body) == (200, b"welcome, verified bot\n")
    first, again = [s.headers for s in site.seen if s.path == "/members"]
    # Signed only when asked; or signed every time, and again with what was asked besides.
    assert ("signature-input" in first) == (when == "always")
    assert again["signature-input"].startswith('sig2=("@authority" "signature-agent";key="sig1" '
                                               '"@method" "@target-uri");created=')
    # Another page the bot asks for: signed only when asked, as before.
    assert curl(gate, site.url("/page")).status == 200
    assert ("signature" in site.seen[-1].headers) == (when == "always")
    # Once only: an origin that refuses the signed request too is answered as it answered.
    got = curl(gate, site.url("/closed"))
    assert (got.status, got.body) == (403, b"no\n")
    assert site.count("/closed") == 2
    [asked, closed] = [r for r in gate.wait_audit(2) if r["event"] == "signature"]
    # 401 to the request without a signature; 403 to the one signed without the nonce.
    assert (asked["reason"], asked["origin_status"], asked["url"]) == \
        ("signature-asked", 401 if when == "asked" else 403, site.url("/members"))
    assert asked["signature"] == again["signature-input"]
    assert (closed["reason"], closed["origin_status"]) == ("signature-asked", 403)


def test_the_proxy_serves_its_key_directory_signed_and_its_agent_card(
        published: tuple[Path, dict[str, Ed25519PublicKey]], tmp_path: Path,
        origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    key, keys = published
    # Keys rotated: the old private key still signs the directory; one listed only.
    old, listed = tmp_path / "old.pem", tmp_path / "listed.pem"
    for made in (old, listed):
        subprocess.run([str(ROBOTSGATE), "keygen", str(made)], capture_output=True, check=True,
                       timeout=60, env=clean_env())
    public_only = tmp_path / "listed.jwks"
    public_only.write_text(subprocess.run(
        [str(ROBOTSGATE), "directory", "--key", str(listed)], capture_output=True, text=True,
        check=True, timeout=60, env=clean_env()).stdout)
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"client_name": "ShopBot", "rate-control": "none",
                                "contacts": ["mailto:bots@shop.example"]}))
    port = free_port()
    gate = proxy(robots_signing_key=str(key), robots_signature_agent=AGENT,
                 robots_directory_port=port, robots_signature_card=str(card),
                 robots_directory_keys=[str(old), str(public_only)])
    base = f"http://127.0.0.1:{port}"
    got = requests.get(base + "/.well-known/http-message-signatures-directory", timeout=10)
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/http-message-signatures-directory+json"
    directory = {jwk["kid"]: jwk for jwk in got.json()["keys"]}
    assert len(directory) == 3 and set(keys) <= set(directory)
    assert all("d" not in jwk for jwk in directory.values())
    # A site checks the response with the keys the directory lists: two of them signed it.
    results = directory_check(got, directory)
    assert len(results) == 2 and all(
        r.parameters["tag"] == "http-message-signatures-directory" for r in results)
    assert {r.parameters["keyid"] for r in results} < set(directory)
    # Signed for the authority asked for: not for another.
    got.request.url = got.request.url.replace("127.0.0.1", "elsewhere.example")
    with pytest.raises(InvalidSignature):
        directory_check(got, directory)
    card_got = requests.get(base + "/.well-known/signature-agent-card", timeout=10).json()
    assert card_got["client_name"] == "ShopBot" and card_got["rate-control"] == "429"
    assert "Disallow" in card_got["rfc9309-compliance"]
    assert {jwk["kid"] for jwk in card_got["keys"]} == set(directory)
    assert requests.get(base + "/other", timeout=10).status_code == 404
    # The directory's port is the proxy's own: no bot reaches it through the proxy.
    site = origin(robots="User-agent: *\nAllow: /\n")
    assert curl(gate, site.url("/page")).status == 200
    refused = curl(gate, f"{base}/.well-known/signature-agent-card")
    assert refused.status == 403 and refused.headers["x-robotsgate-reason"] == "destination"


def directory_check(response: requests.Response,
                    directory: dict[str, dict[str, str]]) -> list[Any]:
    public = {kid: Ed25519PublicKey.from_public_bytes(
        base64.urlsafe_b64decode(jwk["x"] + "=" * (-len(jwk["x"]) % 4)))
        for kid, jwk in directory.items()}
    verifier = HTTPMessageVerifier(signature_algorithm=algorithms.ED25519,
                                   key_resolver=MappingKeyResolver(public_keys=public,
                                                                   private_keys={}))
    return list(verifier.verify(response, expect_tag="http-message-signatures-directory"))
