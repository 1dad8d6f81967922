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

An origin may ask for a signature, or for more than this one covers: a 401 or 403 carrying
`Accept-Signature` (RFC 9421 §5.1) names the components and parameters it wants (a nonce,
`@method`, `@target-uri`, a header field...). `wanted` reads that ask, and `Signer.answer` signs
one request as it asks, when every component it names is one a request's signature can cover;
the mitm layer sends that request once more (robotsgate.mitm.signing).

Pure: no clock is read here and nothing is sent; robotsgate.mitm.signing writes the fields.
"""

import base64
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import http_sf

from robotsgate.protocol.memo import keep
from robotsgate.signing.keys import SigningKey

type Profile = Literal["ietf", "cloudflare"]
type Mode = Literal["always", "asked"]
PROFILES: tuple[Profile, ...] = ("ietf", "cloudflare")
LABEL = "sig1"
TAG = "web-bot-auth"
# Fields that mean the bot signed its request itself: its own signature is left as it is.
SIGNED_BY_BOT = (b"signature", b"signature-input", b"signature-agent")
_REMEMBERED = 4096  # authorities whose signature of this second is kept
# What every signature made here covers, the profile's signature-agent aside.
_COVERED = ("@authority", "signature-agent")
# The derived components (RFC 9421 §2.2) a request's signature can cover.
_DERIVED = frozenset(("@method", "@target-uri", "@authority", "@scheme", "@request-target",
                      "@path", "@query"))


def bot_signed(fields: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether the bot signed its request itself: its own signature is then left as it is."""
    return any(name.lower() in SIGNED_BY_BOT for name, _ in fields)


def signature_base(covered: Sequence[tuple[str, str]], params: str) -> bytes:
    """RFC 9421 §2.5: one line per covered component (its identifier, serialized with its
    parameters, and its value), then the signature parameters."""
    lines = [f"{name}: {value}" for name, value in covered]
    lines.append(f'"@signature-params": {params}')
    return "\n".join(lines).encode("utf-8")


def signature_params(components: Sequence[str], *, created: int, keyid: str,
                     expires: int | None = None, nonce: str | None = None,
                     alg: str | None = None, tag: str | None = None) -> str:
    """The inner list of covered components and its parameters, serialized (RFC 9421 §2.3)."""
    params = f"({' '.join(components)});created={created}"
    if expires is not None:
        params += f";expires={expires}"
    if nonce is not None:
        params += f";nonce={http_sf.ser(nonce)}"
    params += f';keyid="{keyid}"'
    if alg is not None:
        params += f';alg="{alg}"'
    if tag is not None:
        params += f';tag="{tag}"'
    return params


@dataclass(frozen=True, slots=True)
class Message:
    """What a signature can cover of a request, as it leaves."""

    method: str
    scheme: str
    authority: str  # as written in Host or :authority, lower case
    target: str  # the path and query (origin form)
    fields: Sequence[tuple[bytes, bytes]]


@dataclass(frozen=True, slots=True)
class Wanted:
    """A signature an origin asked for (one member of its Accept-Signature)."""

    label: str
    components: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # names and parameters
    nonce: str | None = None

    def met_by_default(self) -> bool:
        """Whether the signature every request gets already gives what was asked."""
        return self.nonce is None and all(
            name in _COVERED and (not params or params == (("key", LABEL),))
            for name, params in self.components)


def wanted(value: str) -> Wanted | None:
    """The signature an Accept-Signature field value (RFC 9421 §5.1) asks for: its first
    member meant for Web Bot Auth with Ed25519 (no tag or ours, no alg or ed25519); None when
    the value cannot be read or asks for nothing this proxy signs."""
    try:
        # Typed loosely: a member may be any Structured Fields value, each checked below.
        members: Any = http_sf.parse(value.encode("ascii"), tltype="dictionary")
    except (ValueError, UnicodeError):
        return None
    for label, (inner, params) in members.items():
        if not isinstance(inner, list) or params.get("tag", TAG) != TAG or \
                params.get("alg", "ed25519") != "ed25519":
            continue
        components: list[tuple[str, tuple[tuple[str, str], ...]]] = []
        for item, item_params in inner:
            if not isinstance(item, str) or \
                    not all(isinstance(v, str) for v in item_params.values()):
                break
            components.append((item, tuple(sorted(item_params.items()))))
        else:
            nonce = params.get("nonce")
            return Wanted(label, tuple(components), nonce if isinstance(nonce, str) else None)
    return None


@dataclass(frozen=True, slots=True)
class Signer:
    """Signs requests for one signature agent, as one profile says."""

    key: SigningKey
    agent: str  # the signature agent's URL (where its key directory is)
    profile: Profile = "ietf"
    validity: int = 300  # seconds a signature is good for
    agents: frozenset[str] = frozenset()  # product tokens (lower case) that sign; empty: all
    # Product tokens (lower case; "*": every bot) that sign only when an origin asks.
    asked: frozenset[str] = frozenset()
    # Destination hosts with a profile of their own: exact names, or "*.example.com".
    profiles: Mapping[str, Profile] = field(default_factory=dict)
    _made: dict[str, tuple[int, tuple[tuple[bytes, bytes], ...]]] = field(
        default_factory=dict, compare=False, repr=False)

    def mode(self, tokens: Callable[[], Iterable[str]]) -> Mode | None:
        """How a request from the bot `tokens` names is signed: always, only when the origin
        asks, or (None) never. `tokens` is asked only when the operator named bots."""
        if not self.agents and not self.asked:
            return "always"
        named = {token.lower() for token in tokens()}
        if named & self.asked:
            return "asked"
        if named & self.agents:
            return "always"
        if "*" in self.asked:
            return "asked"
        return "always" if not self.agents else None

    def profile_for(self, host: str) -> Profile:
        """The profile of a destination host: its own (an exact name first, then the longest
        `*.` suffix), or robots_signature_profile's."""
        found = self.profiles.get(host)
        if found is not None or not self.profiles:
            return found or self.profile
        parts = host.split(".")
        for start in range(1, len(parts)):
            found = self.profiles.get("*." + ".".join(parts[start:]))
            if found is not None:
                return found
        return self.profile

    def fields(self, authority: str, now: float) -> tuple[tuple[bytes, bytes], ...]:
        """Signature-Agent, Signature-Input and Signature for a request to `authority` (as
        written in Host or :authority, lower case) at `now` (seconds since the epoch)."""
        created = int(now)
        made = self._made.get(authority)
        if made is not None and made[0] == created:
            return made[1]
        message = Message("", "https", authority, "", ())
        fields = self._sign(message, LABEL, self.profile_for(_host(authority)),
                            tuple((name, ()) for name in _COVERED), None, created)
        assert fields is not None  # the components every signature covers are always there
        keep(self._made, _REMEMBERED, authority, (created, fields))
        return fields

    def answer(self, wanted: Wanted, message: Message,
               now: float) -> tuple[tuple[bytes, bytes], ...] | None:
        """The fields of a signature of `message` as `wanted` asks (its label, its nonce, its
        components besides @authority and signature-agent, which every one covers); None when
        it names a component a request's signature cannot cover, or one the request lacks."""
        profile = self.profile_for(_host(message.authority))
        components = [(name, ()) for name in _COVERED]
        for name, params in wanted.components:
            if name == "signature-agent":
                # The form the origin names is the form it reads: with key, the draft's.
                profile = "ietf" if params else "cloudflare"
                if params not in ((), (("key", LABEL),)):
                    return None
                continue
            if params or (name.startswith("@") and name not in _DERIVED):
                return None  # sf, bs, req, tr, name...: not for a request's own signature
            if (name, ()) not in components:
                components.append((name, ()))
        return self._sign(message, wanted.label, profile, tuple(components), wanted.nonce,
                          int(now))

    def _sign(self, message: Message, label: str, profile: Profile,
              components: tuple[tuple[str, tuple[()]], ...], nonce: str | None,
              created: int) -> tuple[tuple[bytes, bytes], ...] | None:
        agent = http_sf.ser(self.agent)  # a Structured Fields String (RFC 9651 §3.3.3)
        if profile == "ietf":
            header, agent_id = http_sf.ser({LABEL: self.agent}), f'"signature-agent";key="{LABEL}"'
        else:
            header, agent_id = agent, '"signature-agent"'
        covered: list[tuple[str, str]] = []
        for name, _ in components:
            if name == "signature-agent":
                covered.append((agent_id, agent))
                continue
            value = _value(name, message)
            if value is None:
                return None
            covered.append((http_sf.ser(name), value))
        params = signature_params([identifier for identifier, _ in covered], created=created,
                                  expires=created + self.validity, nonce=nonce,
                                  keyid=self.key.public.keyid, alg="ed25519", tag=TAG)
        signature = base64.b64encode(self.key.sign(signature_base(covered, params)))
        return ((b"Signature-Agent", header.encode("ascii")),
                (b"Signature-Input", f"{label}={params}".encode("ascii")),
                (b"Signature", f"{label}=:".encode("ascii") + signature + b":"))


def _value(name: str, message: Message) -> str | None:
    """A component's value in the signature base (RFC 9421 §2.1, §2.2); None when the request
    has no such field."""
    path, _, query = message.target.partition("?")
    match name:
        case "@authority":
            return message.authority
        case "@method":
            return message.method
        case "@scheme":
            return message.scheme.lower()
        case "@target-uri":
            return f"{message.scheme.lower()}://{message.authority}{message.target}"
        case "@request-target":
            return message.target
        case "@path":
            return path or "/"
        case "@query":
            return "?" + query
    wanted_name = name.encode("ascii").lower()
    values = [value.decode("latin-1").strip() for field_name, value in message.fields
              if field_name.lower() == wanted_name]
    return ", ".join(values) if values else None


def _host(authority: str) -> str:
    """The host of an authority, without its port."""
    if authority.startswith("["):
        return authority[:authority.find("]") + 1]
    return authority.rpartition(":")[0] if ":" in authority else authority
