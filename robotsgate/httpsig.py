"""Web Bot Auth: requests signed at the proxy, so that a site can tell which operator's bots
they come from (HTTP Message Signatures, RFC 9421; draft-ietf-webbotauth-httpsig-protocol).

Each request that leaves carries three fields:

    Signature-Agent: sig1="https://bots.example"                      (profile ietf)
                     "https://bots.example"                           (profile cloudflare)
    Signature-Input: sig1=("@authority" "signature-agent";key="sig1");created=...;expires=...;
                     keyid="<RFC 7638 thumbprint>";alg="ed25519";tag="web-bot-auth"
    Signature:       sig1=:<Ed25519 signature of the signature base, base64>:

The two profiles deployed today differ in `Signature-Agent` only: the working group's draft
sends a Structured Fields Dictionary and covers its member (`;key="sig1"`); Cloudflare's
documented profile sends the URL as a string and refuses the `key` parameter. The signature
covers the authority the proxy decided (the canonical one it writes as Host or :authority),
never one a bot wrote.

A signature names no request but its authority, so one is made per authority and second, and
used by every request to it in that second (an Ed25519 signature for each request would cost
each of them; the draft makes a nonce optional, and this profile sends none).

Pure: no clock is read here and nothing is sent; robotsgate.mitm.signing writes the fields.
"""

import base64
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import http_sf

from robotsgate.protocol.memo import keep
from robotsgate.signing import SigningKey

type Profile = Literal["ietf", "cloudflare"]
PROFILES: tuple[Profile, ...] = ("ietf", "cloudflare")
LABEL = "sig1"
TAG = "web-bot-auth"
# Fields that mean the bot signed its request itself: its own signature is left as it is.
SIGNED_BY_BOT = (b"signature", b"signature-input", b"signature-agent")
_REMEMBERED = 4096  # authorities whose signature of this second is kept


def signature_base(covered: Sequence[tuple[str, str]], params: str) -> bytes:
    """RFC 9421 §2.5: one line per covered component (its identifier, serialized with its
    parameters, and its value), then the signature parameters."""
    lines = [f"{name}: {value}" for name, value in covered]
    lines.append(f'"@signature-params": {params}')
    return "\n".join(lines).encode("utf-8")


def signature_params(components: Sequence[str], *, created: int, keyid: str,
                     expires: int | None = None, alg: str | None = None,
                     tag: str | None = None) -> str:
    """The inner list of covered components and its parameters, serialized (RFC 9421 §2.3)."""
    params = f"({' '.join(components)});created={created}"
    if expires is not None:
        params += f";expires={expires}"
    params += f';keyid="{keyid}"'
    if alg is not None:
        params += f';alg="{alg}"'
    if tag is not None:
        params += f';tag="{tag}"'
    return params


@dataclass(frozen=True, slots=True)
class Signer:
    """Signs requests for one signature agent, as one profile says."""

    key: SigningKey
    agent: str  # the signature agent's URL (where its key directory is)
    profile: Profile = "ietf"
    validity: int = 300  # seconds a signature is good for
    agents: frozenset[str] = frozenset()  # product tokens (lower case) that sign; empty: all
    _made: dict[str, tuple[int, tuple[tuple[bytes, bytes], ...]]] = field(
        default_factory=dict, compare=False, repr=False)

    def signs(self, tokens: Callable[[], Iterable[str]],
              fields: Sequence[tuple[bytes, bytes]]) -> bool:
        """Whether a request, with these header fields, from a bot named by `tokens` (asked
        only when the operator named the bots that sign) is signed here: not when the bot
        signed it itself, nor for a bot the operator did not name."""
        if any(name.lower() in SIGNED_BY_BOT for name, _ in fields):
            return False
        return not self.agents or any(token.lower() in self.agents for token in tokens())

    def fields(self, authority: str, now: float) -> tuple[tuple[bytes, bytes], ...]:
        """Signature-Agent, Signature-Input and Signature for a request to `authority` (as
        written in Host or :authority, lower case) at `now` (seconds since the epoch)."""
        created = int(now)
        made = self._made.get(authority)
        if made is not None and made[0] == created:
            return made[1]
        fields = self._fields(authority, created)
        keep(self._made, _REMEMBERED, authority, (created, fields))
        return fields

    def _fields(self, authority: str, created: int) -> tuple[tuple[bytes, bytes], ...]:
        agent = http_sf.ser(self.agent)  # a Structured Fields String (RFC 9651 §3.3.3)
        if self.profile == "ietf":
            header, component = http_sf.ser({LABEL: self.agent}), \
                f'"signature-agent";key="{LABEL}"'
        else:
            header, component = agent, '"signature-agent"'
        params = signature_params(('"@authority"', component), created=created,
                                  expires=created + self.validity,
                                  keyid=self.key.public.keyid, alg="ed25519", tag=TAG)
        base = signature_base((('"@authority"', authority), (component, agent)), params)
        signature = base64.b64encode(self.key.sign(base)).decode("ascii")
        return ((b"Signature-Agent", header.encode("ascii")),
                (b"Signature-Input", f"{LABEL}={params}".encode("ascii")),
                (b"Signature", f"{LABEL}=:{signature}:".encode("ascii")))
