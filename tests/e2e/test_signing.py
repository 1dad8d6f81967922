"""End to end, Web Bot Auth: a real `mitmdump -s addon.py` with a key made by `robotsgate keygen`
signs what leaves it, for http and https origins, and the origin checks each request with
independent verifiers holding only what is published: the http-message-signatures package
(PyPI) with the public key that keygen printed, and Cloudflare's web-bot-auth package (npm,
under Node) with the key directory `robotsgate directory` prints. A request the bot signed
itself keeps the bot's signature."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
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
from .tls import CertAuthority
from .wire import WireOrigin

ROBOTSGATE = Path(sys.executable).parent / "robotsgate"
AGENT = "https://bots.example/.well-known/http-message-signatures-directory"
# The Node verifier: package.json and package-lock.json (web-bot-auth 0.1.3 and exactly its
# dependencies), and verify.mjs, which checks one request with the package's verify().
WEBBOTAUTH = Path(__file__).parent / "webbotauth"
WEBBOTAUTH_VERSION = "0.1.3"
# robotsgate's addons with a wall clock an hour late (tests/e2e/addon_late_clock.py).
LATE_CLOCK = Path(__file__).parent / "addon_late_clock.py"


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


@pytest.fixture
def directory(published: tuple[Path, dict[str, Ed25519PublicKey]]) -> dict[str, Any]:
    """The key directory a site fetches from the signature agent, as `robotsgate directory`
    prints it for publishing."""
    key, _ = published
    made = subprocess.run([str(ROBOTSGATE), "directory", "--key", str(key)], capture_output=True,
                          text=True, timeout=60, env=clean_env())
    assert made.returncode == 0, made.stderr
    return dict(json.loads(made.stdout))


@pytest.fixture(scope="session")
def web_bot_auth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """verify.mjs beside the node_modules that `npm ci` installed from the lock, in a directory
    of this session's (nothing is installed in the source tree; npm's own cache makes a
    session after the first one quick)."""
    node = require_tool("node", package="nodejs")
    npm = require_tool("npm")
    major = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    if int(major.stdout.lstrip("v").split(".")[0]) < 20:
        pytest.fail(f"web-bot-auth needs Node 20 or later (Web Crypto's Ed25519 and the global "
                    f"crypto), this is {major.stdout.strip()}", pytrace=False)
    where = tmp_path_factory.mktemp("webbotauth")
    for name in ("package.json", "package-lock.json", "verify.mjs"):
        shutil.copy(WEBBOTAUTH / name, where / name)
    # The machine's own npm settings (registry, CA, any proxy to reach it) apply here: this
    # installs a tool, it is no client under test.
    done = subprocess.run([npm, "ci", "--prefix", str(where), "--prefer-offline",
                           "--ignore-scripts", "--no-audit", "--no-fund"],
                          capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert done.returncode == 0, f"npm ci of {WEBBOTAUTH}'s lock failed:\n{done.stderr}"
    installed = json.loads((where / "node_modules/web-bot-auth/package.json").read_text())
    assert installed["version"] == WEBBOTAUTH_VERSION
    return where / "verify.mjs"


def node_check(verifier: Path, seen: Seen, directory: dict[str, Any]) -> dict[str, Any]:
    """The origin's check of a request it received with web-bot-auth's verify(), the key
    looked up by keyid in the directory: {"ok": ..., "error": None or why, "base": ...}."""
    request = {"method": seen.method, "url": f"https://{seen.host}{seen.path}",
               "headers": seen.headers}
    done = subprocess.run([require_tool("node", package="nodejs"), str(verifier)],
                          input=json.dumps({"request": request, "directory": directory}),
                          capture_output=True, text=True, timeout=60, env=clean_env())
    assert done.returncode in (0, 1), f"verify.mjs: exit {done.returncode}\n{done.stderr}"
    result = {"error": None, **json.loads(done.stdout)}
    assert result["ok"] is (done.returncode == 0), result
    return result


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


def test_fields_the_bot_names_in_connection_never_leave_and_the_signature_arrives(
        published: tuple[Path, dict[str, Ed25519PublicKey]], test_ca: CertAuthority,
        proxy: Callable[..., Proxy]) -> None:
    # A next hop that obeys RFC 9110 §7.6.1 (HAProxy, a CDN) would remove what Connection
    # names: here, the proxy's own signature. The proxy removes what the bot named before it
    # decides, and its Connection with them: the bot's fields stay on the bot's hop.
    key, keys = published
    site = WireOrigin(b"User-agent: *\nAllow: /\n", tls=test_ca.server_context())
    try:
        gate = proxy(trust_test_ca=True, robots_signing_key=str(key),
                     robots_signature_agent=AGENT)
        got = curl(gate, f"https://{site.authority}/page", headers={
            "User-Agent": "ShopBot/1.0",
            "Connection": "signature, Signature-Input, signature-agent",
            "Signature-Input": 'bot=("@authority");created=1', "Signature": "bot=:AAAA:",
            "Signature-Agent": '"https://forged.example/"', "Keep-Alive": "timeout=5"})
    finally:
        site.stop()
    assert got.status == 200
    [page] = [r for r in site.requests if r.path == "/page"]
    names = [name.lower() for name, _ in page.headers]
    assert b"connection" not in names and b"keep-alive" not in names
    # The proxy's signature, and only its: the bot's fields were gone before it signed.
    assert [names.count(name) for name in (b"signature", b"signature-input",
                                           b"signature-agent")] == [1, 1, 1]
    seen = Seen(page.method, page.path, {name.decode().lower(): value.decode()
                                         for name, value in page.headers}, 0.0)
    assert check(seen, "https", keys) == ['"@authority"', '"signature-agent";key="sig1"']
    assert [r for r in gate.audit() if r["event"] == "signature"] == []  # not the bot's own


# Why web-bot-auth 0.1.3 refuses the ietf profile (the test after the next one shows it).
IETF_KEY_IGNORED = (
    'web-bot-auth 0.1.3 builds its signature base with http-message-sig 0.2.0, which gives '
    '"signature-agent";key="sig1" the whole Signature-Agent field, not the member sig1 '
    "(RFC 9421 §2.1.2)")


def with_header(seen: Seen, name: str, value: str) -> Seen:
    """The request as received, one of its fields changed on the way."""
    return dataclasses.replace(seen, headers={**seen.headers, name: value})


# The cloudflare profile only: web-bot-auth 0.1.3 refuses every signature of the ietf one
# (IETF_KEY_IGNORED), which the next test shows, with the line its base gets wrong.
@pytest.mark.parametrize("profile", ["cloudflare"])
def test_web_bot_auth_verifies_what_leaves_with_the_published_directory(
        profile: str, published: tuple[Path, dict[str, Ed25519PublicKey]],
        directory: dict[str, Any], web_bot_auth: Path, https_origin: Callable[..., Origin],
        proxy: Callable[..., Proxy], tmp_path: Path) -> None:
    key, _ = published
    site = https_origin(robots="User-agent: *\nAllow: /\n")
    gate = proxy(trust_test_ca=True, robots_signing_key=str(key),
                 robots_signature_agent=AGENT, robots_signature_profile=profile)
    assert curl(gate, site.url("/page"), headers={"User-Agent": "ShopBot/1.0"}).status == 200
    [seen] = [s for s in site.seen if s.path == "/page"]
    result = node_check(web_bot_auth, seen, directory)
    assert result["ok"], result
    # The key is the directory's whose thumbprint (as the package computes it) is the keyid
    # the signature names: the directory's kid is that thumbprint.
    [jwk] = directory["keys"]
    assert result["keyid"] == result["kid"] == jwk["kid"]
    assert result["expires"] - result["created"] == 300  # robots_signature_validity
    component = '"signature-agent";key="sig1"' if profile == "ietf" else '"signature-agent"'
    assert result["base"].splitlines()[:2] == [f'"@authority": {seen.host}',
                                               f'{component}: "{AGENT}"']
    # What it vouches for is the authority the origin was reached at, and the agent named.
    for name, value in (("host", "elsewhere.example"),
                        ("signature-agent", seen.headers["signature-agent"].replace(
                            "bots.example", "other.example"))):
        refused = node_check(web_bot_auth, with_header(seen, name, value), directory)
        assert refused["error"] == "invalid signature", (name, refused)
    # Only the published key verifies: a directory of another key has none for this keyid.
    other = tmp_path / "other.pem"
    subprocess.run([str(ROBOTSGATE), "keygen", str(other)], capture_output=True, check=True,
                   timeout=60, env=clean_env())
    elsewhere = json.loads(subprocess.run(
        [str(ROBOTSGATE), "directory", "--key", str(other)], capture_output=True, check=True,
        text=True, timeout=60, env=clean_env()).stdout)
    refused = node_check(web_bot_auth, seen, elsewhere)
    assert refused["error"] == f"no key in the directory has keyid {result['keyid']}", refused


def test_web_bot_auth_0_1_3_signs_a_keyed_signature_agent_as_the_whole_field(
        published: tuple[Path, dict[str, Ed25519PublicKey]], directory: dict[str, Any],
        web_bot_auth: Path, https_origin: Callable[..., Origin],
        proxy: Callable[..., Proxy]) -> None:
    """The ietf profile covers `"signature-agent";key="sig1"`, whose value RFC 9421 §2.1.2 makes
    the member sig1 of the Dictionary, serialized: `"https://..."`. http-message-sig 0.2.0
    (web-bot-auth 0.1.3's) looks the field up by name and ignores the key parameter, so its
    signature base has the whole field, `sig1="https://..."`, and it refuses every such
    signature. With that one line as the RFC says, its base verifies with the published key."""
    key, keys = published
    site = https_origin(robots="User-agent: *\nAllow: /\n")
    gate = proxy(trust_test_ca=True, robots_signing_key=str(key),
                 robots_signature_agent=AGENT, robots_signature_profile="ietf")
    assert curl(gate, site.url("/page"), headers={"User-Agent": "ShopBot/1.0"}).status == 200
    [seen] = [s for s in site.seen if s.path == "/page"]
    assert check(seen, "https", keys) == ['"@authority"', '"signature-agent";key="sig1"']
    assert seen.headers["signature-agent"] == f'sig1="{AGENT}"'
    refused = node_check(web_bot_auth, seen, directory)
    assert refused["error"] == "invalid signature", refused
    base = refused["base"].splitlines()
    assert base[1] == f'"signature-agent";key="sig1": sig1="{AGENT}"'
    base[1] = f'"signature-agent";key="sig1": "{AGENT}"'
    keyid = re.search(r';keyid="([^"]+)"', seen.headers["signature-input"])
    signature = re.fullmatch(r"sig1=:([A-Za-z0-9+/=]+):", seen.headers["signature"])
    assert keyid is not None and signature is not None
    keys[keyid[1]].verify(base64.b64decode(signature[1]), "\n".join(base).encode())


@pytest.mark.parametrize("profile", ["ietf", "cloudflare"])
def test_a_signature_past_its_expires_is_refused_by_both_verifiers(
        profile: str, published: tuple[Path, dict[str, Ed25519PublicKey]],
        directory: dict[str, Any], web_bot_auth: Path, https_origin: Callable[..., Origin],
        proxy: Callable[..., Proxy]) -> None:
    """Proxies whose wall clock is an hour late (injected, as the unit tests inject theirs):
    what one signs for a minute has expired when it arrives, what one signs for two hours has
    not. Neither verifier takes a clock of its own (each reads the time itself), so the time
    is moved at the signer."""
    key, keys = published
    site = https_origin(robots="User-agent: *\nAllow: /\n")
    for validity in (60, 7200):
        gate = proxy(addon=LATE_CLOCK, trust_test_ca=True, robots_signing_key=str(key),
                     robots_signature_agent=AGENT, robots_signature_profile=profile,
                     robots_signature_validity=validity)
        assert curl(gate, site.url(f"/for-{validity}"),
                    headers={"User-Agent": "ShopBot/1.0"}).status == 200
    seen = {s.path: s for s in site.seen}
    expired, current = seen["/for-60"], seen["/for-7200"]
    params = re.search(r";created=(\d+);expires=(\d+);", expired.headers["signature-input"])
    assert params is not None and int(params[2]) - int(params[1]) == 60
    assert int(params[2]) < time.time() - 3000  # signed an hour ago, good for a minute
    with pytest.raises(InvalidSignature, match='"expires" parameter is set to a time in the past'):
        check(expired, "https", keys)
    check(current, "https", keys)  # the same clock, a longer validity: it verifies
    assert node_check(web_bot_auth, expired, directory)["error"] == "Signature expired"
    accepted = node_check(web_bot_auth, current, directory)
    # web-bot-auth 0.1.3 refuses the ietf profile whatever the time (IETF_KEY_IGNORED).
    assert accepted["ok"] if profile == "cloudflare" else \
        accepted["error"] == "invalid signature", accepted


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
    assert code == 2, output
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
