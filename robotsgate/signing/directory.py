"""What a signature agent publishes for sites (Web Bot Auth): its key directory and its
Signature Agent Card.

- The key directory (draft-meunier-http-message-signatures-directory) is a JWK Set of the
  agent's public keys, served at `/.well-known/http-message-signatures-directory` with media
  type `application/http-message-signatures-directory+json`. Its response is signed, once with
  each key it lists whose private half the proxy holds, over the authority the request named
  (`"@authority";req`), tagged `http-message-signatures-directory`: a site can tell the
  directory comes from whoever holds the keys, not only from whoever holds the host name.
- The Signature Agent Card (draft-meunier-webbotauth-registry) describes the agent: its name,
  contacts, purpose... which the operator writes, and what this proxy makes true whatever bot
  is behind it, which it writes itself: the robots.txt rules it enforces
  (`rfc9309-compliance`), that it slows down on 429 (`rate-control`), and the keys.

Pure: the documents and the response's signature fields; robotsgate.signing.directory_server serves
them.
"""

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from robotsgate.signing.keys import PublicKey, SigningKey
from robotsgate.signing.messages import signature_base, signature_params

MEDIA_TYPE = "application/http-message-signatures-directory+json"
DIRECTORY_PATH = "/.well-known/http-message-signatures-directory"
CARD_PATH = "/.well-known/signature-agent-card"
TAG = "http-message-signatures-directory"
# What the proxy enforces of robots.txt for every bot behind it, in the card's words (the
# records it reads: RFC 9309's, the extensions it honours, and the usage preferences).
COMPLIANCE = ("User-Agent", "Allow", "Disallow", "Crawl-delay", "Request-rate", "Visit-time",
              "Content-Usage", "Content-Signal")
# What the proxy makes true, whatever the operator's card says.
PROXY_FIELDS = ("keys", "rfc9309-compliance", "rate-control")


@dataclass(frozen=True, slots=True)
class Published:
    """An agent's key directory and card, and the keys that sign the directory's responses."""

    keys: tuple[PublicKey, ...]  # listed, the signing key first
    signers: tuple[SigningKey, ...]  # the listed keys whose private half is held
    card: Mapping[str, Any]  # the operator's fields
    validity: int = 300  # seconds a directory response's signature is good for

    def directory(self) -> bytes:
        return json.dumps({"keys": [key.jwk() for key in self.keys]}, indent=2).encode() + b"\n"

    def card_document(self) -> bytes:
        return json.dumps(card(self.card, self.keys), indent=2).encode() + b"\n"

    def signature_fields(self, authority: str, now: float) -> tuple[tuple[str, str], ...]:
        """Signature-Input and Signature for a directory response to a request for
        `authority`: one signature per held key, labelled sig1, sig2, ..."""
        created = int(now)
        inputs, signatures = [], []
        for number, key in enumerate(self.signers, 1):
            params = signature_params(('"@authority";req',), created=created,
                                      expires=created + self.validity,
                                      keyid=key.public.keyid, alg="ed25519", tag=TAG)
            base = signature_base((('"@authority";req', authority),), params)
            inputs.append(f"sig{number}={params}")
            signatures.append(f"sig{number}=:{base64.b64encode(key.sign(base)).decode()}:")
        return (("Signature-Input", ", ".join(inputs)), ("Signature", ", ".join(signatures)))


def card(fields: Mapping[str, Any], keys: Sequence[PublicKey]) -> dict[str, Any]:
    """The Signature Agent Card: the operator's fields, then what the proxy makes true."""
    document = {name: value for name, value in fields.items() if name not in PROXY_FIELDS}
    document["rfc9309-compliance"] = list(COMPLIANCE)
    document["rate-control"] = "429"
    document["keys"] = [{**key.jwk(), "use": "sig"} for key in keys]
    return document


def read_card(path: str) -> dict[str, Any]:
    """The operator's card fields, from a JSON object in `path`; ValueError says what is
    wrong."""
    try:
        with open(path, "rb") as file:
            found = json.load(file)
    except OSError as exc:
        raise ValueError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValueError(f"{path!r} is not JSON ({exc})") from None
    if not isinstance(found, dict):
        raise ValueError(f"{path!r} must hold a JSON object of card fields, such as "
                         f'{{"client_name": "ExampleBot", '
                         f'"contacts": ["mailto:bots@example.com"]}}')
    return found
