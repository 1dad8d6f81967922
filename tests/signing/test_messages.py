"""Web Bot Auth signatures (robotsgate.signing.messages): RFC 9421's own Ed25519 test vector, and
the fields of both profiles checked by an independent verifier (the http-message-signatures
package) that holds only the public key."""

import base64
import time
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from http_message_signatures import HTTPMessageVerifier, algorithms
from http_message_signatures.exceptions import InvalidSignature
from http_message_signatures.resolvers import MappingKeyResolver

from robotsgate.signing import keys as signing_keys
from robotsgate.signing.messages import (
    Message,
    Profile,
    Signer,
    Wanted,
    bot_signed,
    signature_base,
    signature_params,
    wanted,
)

# RFC 9421 Appendix B.1.4, test-key-ed25519.
RFC_KEY = b"""-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF
-----END PRIVATE KEY-----
"""


def test_rfc9421_b26_signing_a_request_using_ed25519() -> None:
    # Appendix B.2.6: the request, its signature base and the signature the RFC gives.
    covered = (('"date"', "Tue, 20 Apr 2021 02:07:55 GMT"), ('"@method"', "POST"),
               ('"@path"', "/foo"), ('"@authority"', "example.com"),
               ('"content-type"', "application/json"), ('"content-length"', "18"))
    params = signature_params([name for name, _ in covered], created=1618884473,
                              keyid="test-key-ed25519")
    assert params == ('("date" "@method" "@path" "@authority" "content-type" '
                      '"content-length");created=1618884473;keyid="test-key-ed25519"')
    base = signature_base(covered, params)
    assert base.endswith(b'\n"@signature-params": ("date" "@method" "@path" "@authority" '
                         b'"content-type" "content-length");created=1618884473;'
                         b'keyid="test-key-ed25519"')
    key = serialization.load_pem_private_key(RFC_KEY, password=None)
    assert isinstance(key, Ed25519PrivateKey)
    assert base64.b64encode(key.sign(base)).decode() == (
        "wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==")


@pytest.fixture
def key(tmp_path: Path) -> signing_keys.SigningKey:
    return signing_keys.generate(str(tmp_path / "key.pem"))


def verified(key: signing_keys.SigningKey, authority: str, fields: dict[str, str], *,
             path: str = "/page") -> list[str]:
    """What the independent verifier says the signature covers; raises when it fails."""
    public = serialization.load_pem_public_key(_pem(key.public.raw))
    verifier = HTTPMessageVerifier(
        signature_algorithm=algorithms.ED25519,
        key_resolver=MappingKeyResolver(public_keys={key.public.keyid: public}, private_keys={}))
    request = requests.Request("GET", f"https://{authority}{path}", headers=fields).prepare()
    [result] = verifier.verify(request, expect_tag="web-bot-auth")
    return [name for name in result.covered_components if name != '"@signature-params"']


def _pem(raw: bytes) -> bytes:
    return Ed25519PublicKey.from_public_bytes(raw).public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def as_dict(fields: tuple[tuple[bytes, bytes], ...]) -> dict[str, str]:
    return {name.decode(): value.decode() for name, value in fields}


@pytest.mark.parametrize(("profile", "agent_field", "covered"), [
    ("ietf", 'sig1="https://bots.example"', ['"@authority"', '"signature-agent";key="sig1"']),
    ("cloudflare", '"https://bots.example"', ['"@authority"', '"signature-agent"']),
])
def test_both_profiles_verify_with_only_the_public_key(
        key: signing_keys.SigningKey, profile: Profile, agent_field: str,
        covered: list[str]) -> None:
    signer = Signer(key, "https://bots.example", profile=profile)
    fields = as_dict(signer.fields("shop.example:8443", time.time()))
    assert fields["Signature-Agent"] == agent_field
    assert f'keyid="{key.public.keyid}"' in fields["Signature-Input"]
    assert ';alg="ed25519";tag="web-bot-auth"' in fields["Signature-Input"]
    assert verified(key, "shop.example:8443", fields) == covered


def test_another_authority_a_changed_agent_or_an_expired_signature_fails(
        key: signing_keys.SigningKey) -> None:
    signer = Signer(key, "https://bots.example", validity=60)
    fields = as_dict(signer.fields("shop.example", time.time()))
    with pytest.raises(InvalidSignature):
        verified(key, "other.example", fields)
    with pytest.raises(InvalidSignature):
        verified(key, "shop.example", {**fields, "Signature-Agent": 'sig1="https://evil.example"'})
    old = as_dict(signer.fields("shop.example", time.time() - 120))
    with pytest.raises(InvalidSignature):
        verified(key, "shop.example", old)


def test_one_signature_per_authority_and_second(key: signing_keys.SigningKey) -> None:
    signer = Signer(key, "https://bots.example")
    assert signer.fields("a.example", 1000.2) is signer.fields("a.example", 1000.9)
    assert signer.fields("a.example", 1001.0) != signer.fields("a.example", 1000.9)
    assert signer.fields("b.example", 1000.2) != signer.fields("a.example", 1000.2)


def test_who_signs_and_when(key: signing_keys.SigningKey) -> None:
    assert not bot_signed([(b"Accept", b"*/*")])
    assert bot_signed([(b"signature-input", b"x")]) and bot_signed([(b"Signature-Agent", b"x")])
    everyone = Signer(key, "https://bots.example")
    assert everyone.mode(lambda: pytest.fail("no bots named: none asked for")) == "always"
    named = Signer(key, "https://bots.example", agents=frozenset({"shopbot"}))
    assert named.mode(lambda: ("ShopBot",)) == "always"
    assert named.mode(lambda: ("OtherBot",)) is None and named.mode(lambda: ()) is None
    # Bots that sign only when asked; "*": every bot but those named to sign always.
    asked = Signer(key, "https://bots.example", agents=frozenset({"shopbot"}),
                   asked=frozenset({"newsbot"}))
    assert asked.mode(lambda: ("NewsBot",)) == "asked"
    assert asked.mode(lambda: ("ShopBot",)) == "always" and asked.mode(lambda: ("X",)) is None
    star = Signer(key, "https://bots.example", agents=frozenset({"shopbot"}),
                  asked=frozenset({"*"}))
    assert star.mode(lambda: ("ShopBot",)) == "always" and star.mode(lambda: ("X",)) == "asked"
    assert Signer(key, "https://bots.example", asked=frozenset({"newsbot"})).mode(
        lambda: ("X",)) == "always"


def test_a_profile_per_destination_host(key: signing_keys.SigningKey) -> None:
    signer = Signer(key, "https://bots.example", profiles={
        "shop.example": "cloudflare", "*.cdn.example": "cloudflare", "a.cdn.example": "ietf"})
    assert signer.profile_for("shop.example") == "cloudflare"
    assert signer.profile_for("www.shop.example") == "ietf"  # an exact name is that name only
    assert signer.profile_for("x.y.cdn.example") == "cloudflare"
    assert signer.profile_for("a.cdn.example") == "ietf"
    assert signer.profile_for("cdn.example") == "ietf"
    assert as_dict(signer.fields("shop.example:8443", 1000))["Signature-Agent"] == \
        '"https://bots.example"'
    assert as_dict(signer.fields("[::1]:8443", 1000))["Signature-Agent"] == \
        'sig1="https://bots.example"'


def test_what_an_origin_asks_for_is_read_from_accept_signature() -> None:
    asked = wanted('sig2=("@method" "@target-uri" "signature-agent";key="sig1");'
                   'nonce="n-1";tag="web-bot-auth";keyid="k"')
    assert asked == Wanted("sig2", (("@method", ()), ("@target-uri", ()),
                                    ("signature-agent", (("key", "sig1"),))), "n-1")
    assert not asked.met_by_default()
    assert wanted('sig1=("@authority" "signature-agent";key="sig1")').met_by_default()
    assert wanted('sig1=("@authority");nonce="x"').met_by_default() is False
    # Another tag or algorithm is not asked of this proxy; the next member may be.
    assert wanted('a=("@method");tag="other", b=("@path");alg="ed25519"') == \
        Wanted("b", (("@path", ()),))
    assert wanted('a=("@method");alg="rsa-pss-sha512"') is None
    for unreadable in ("", "sig1", "sig1=(", 'sig1=(1 2)', "\u00e9=()", 'sig1=("a";k=1)'):
        assert wanted(unreadable) is None, unreadable


def test_a_signature_made_as_the_origin_asked_verifies(key: signing_keys.SigningKey) -> None:
    signer = Signer(key, "https://bots.example", profile="cloudflare")
    message = Message("GET", "https", "shop.example", "/page?q=1",
                      ((b"Host", b"shop.example"), (b"Accept", b"text/html"),
                       (b"Accept", b" */* ")))
    asked = wanted('sig2=("@method" "@target-uri" "@path" "@query" "accept" '
                   '"signature-agent";key="sig1");nonce="n-1"')
    assert asked is not None
    fields = as_dict(signer.answer(asked, message, time.time()) or ())
    # The form of Signature-Agent the origin named wins over the host's profile.
    assert fields["Signature-Agent"] == 'sig1="https://bots.example"'
    assert fields["Signature-Input"].startswith('sig2=("@authority" "signature-agent";key="sig1" '
                                                '"@method" "@target-uri" "@path" "@query" '
                                                '"accept");created=')
    assert ';nonce="n-1";' in fields["Signature-Input"]
    headers = {**fields, "Accept": "text/html, */*"}
    assert verified(key, "shop.example", headers, path="/page?q=1") == [
        '"@authority"', '"signature-agent";key="sig1"', '"@method"', '"@target-uri"',
        '"@path"', '"@query"', '"accept"']
    with pytest.raises(InvalidSignature):
        verified(key, "shop.example", headers, path="/page?q=2")
    # What a request's own signature cannot cover, or a field it lacks: no signature.
    for impossible in ('s=("@status")', 's=("x-missing")', 's=("accept";sf)',
                       's=("signature-agent";key="other")'):
        asked = wanted(impossible)
        assert asked is None or signer.answer(asked, message, 1000) is None, impossible
