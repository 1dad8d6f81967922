"""Web Bot Auth signatures (robotsgate.httpsig): RFC 9421's own Ed25519 test vector, and the
fields of both profiles checked by an independent verifier (the http-message-signatures
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

from robotsgate import signing
from robotsgate.httpsig import Profile, Signer, signature_base, signature_params

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
def key(tmp_path: Path) -> signing.SigningKey:
    return signing.generate(str(tmp_path / "key.pem"))


def verified(key: signing.SigningKey, authority: str, fields: dict[str, str]) -> list[str]:
    """What the independent verifier says the signature covers; raises when it fails."""
    public = serialization.load_pem_public_key(_pem(key.public.raw))
    verifier = HTTPMessageVerifier(
        signature_algorithm=algorithms.ED25519,
        key_resolver=MappingKeyResolver(public_keys={key.public.keyid: public}, private_keys={}))
    request = requests.Request("GET", f"https://{authority}/page", headers=fields).prepare()
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
        key: signing.SigningKey, profile: Profile, agent_field: str,
        covered: list[str]) -> None:
    signer = Signer(key, "https://bots.example", profile=profile)
    fields = as_dict(signer.fields("shop.example:8443", time.time()))
    assert fields["Signature-Agent"] == agent_field
    assert f'keyid="{key.public.keyid}"' in fields["Signature-Input"]
    assert ';alg="ed25519";tag="web-bot-auth"' in fields["Signature-Input"]
    assert verified(key, "shop.example:8443", fields) == covered


def test_another_authority_a_changed_agent_or_an_expired_signature_fails(
        key: signing.SigningKey) -> None:
    signer = Signer(key, "https://bots.example", validity=60)
    fields = as_dict(signer.fields("shop.example", time.time()))
    with pytest.raises(InvalidSignature):
        verified(key, "other.example", fields)
    with pytest.raises(InvalidSignature):
        verified(key, "shop.example", {**fields, "Signature-Agent": 'sig1="https://evil.example"'})
    old = as_dict(signer.fields("shop.example", time.time() - 120))
    with pytest.raises(InvalidSignature):
        verified(key, "shop.example", old)


def test_one_signature_per_authority_and_second(key: signing.SigningKey) -> None:
    signer = Signer(key, "https://bots.example")
    assert signer.fields("a.example", 1000.2) is signer.fields("a.example", 1000.9)
    assert signer.fields("a.example", 1001.0) != signer.fields("a.example", 1000.9)
    assert signer.fields("b.example", 1000.2) != signer.fields("a.example", 1000.2)


def test_who_signs(key: signing.SigningKey) -> None:
    everyone = Signer(key, "https://bots.example")
    assert everyone.signs(lambda: (), [(b"Accept", b"*/*")])
    assert not everyone.signs(lambda: ("ShopBot",), [(b"signature-input", b"x")])
    named = Signer(key, "https://bots.example", agents=frozenset({"shopbot"}))
    assert named.signs(lambda: ("ShopBot",), []) and not named.signs(lambda: ("OtherBot",), [])
    assert not named.signs(lambda: (), [])
