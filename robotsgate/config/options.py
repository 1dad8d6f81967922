"""Every robots_* option, declared once, as data; read into one frozen `Settings`.

Each field of `Settings` is an option: its name (`robots_` + the field's name), type and default
come from the field, its help, allowed values, bounds, check and what a change rebuilds from the
field's metadata. The mitmproxy layer registers them from here (robotsgate.mitm.runtime), the
services are assembled from the `Settings` value (robotsgate.config.assemble), and nothing else
lists them: a new option is one field.

No mitmproxy here: `Settings.read` takes any `name -> value` lookup and raises `ValueError`
naming the option, so the options can be checked without a proxy.
"""

from collections.abc import Callable, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from enum import StrEnum
from typing import Any, Final, Literal, cast

from robotsgate.decision.identity import AgentMap
from robotsgate.decision.purposes import PurposeMap, parse_purposes
from robotsgate.egress.policy import DEFAULT_DENY, EgressPolicy
from robotsgate.licensing.servers import parse_credentials
from robotsgate.payments.spending import parse_budgets, parse_price, parse_sites
from robotsgate.protocol import PRODUCT_TOKEN, SEMANTICS
from robotsgate.protocol.readings import Semantics
from robotsgate.signing.messages import PROFILES, Profile
from robotsgate.state.redis_url import FALLBACKS, Fallback, check_prefix, check_url

PREFIX: Final = "robots_"
MODES = ("enforce", "monitor")
PATH_CASES = ("sensitive", "insensitive")
LONG_DELAY = ("clamp", "refuse")
AUDIT_FAILURE = ("closed", "continue")
USAGE_UNKNOWN = ("allow", "refuse")


class Rebuilds(StrEnum):
    """What a change of an option replaces (and so forgets)."""

    NOTHING = "nothing"  # read afresh on every request
    GATE = "gate"  # fetcher, stores, pacer: cached robots.txt files and schedules are forgotten
    PAGES = "pages"  # the nofollow memory
    AUDIT = "audit"  # the audit log is reopened
    METRICS = "metrics"  # the metrics server is restarted
    DIRECTORY = "directory"  # the key directory's server is restarted


def _option(default: Any, help: str, *, choices: Sequence[str] | None = None,
            bounds: tuple[int, int] | None = None,
            check: Callable[[Any], object] | None = None,
            rebuilds: Rebuilds = Rebuilds.NOTHING, secret: bool = False) -> Any:
    """A `Settings` field that is an option. `check` raises ValueError with the reason;
    `secret`: its value may hold one, and is left out of the Settings' repr."""
    metadata = {"help": help, "choices": tuple(choices) if choices else None, "bounds": bounds,
                "check": check, "rebuilds": rebuilds}
    return field(default=default, metadata=metadata, repr=not secret)


def _product_token(value: str) -> None:
    if value and not PRODUCT_TOKEN.fullmatch(value):
        raise ValueError(f"must be a product token (letters, '-' and '_'), such as MyBot; "
                         f"got {value!r}")


def _contact(value: str) -> None:
    if value and not (value.startswith(("https://", "http://", "mailto:")) and
                      all(0x21 <= ord(c) <= 0x7E for c in value)):
        raise ValueError(f"must be a URL (https://..., or mailto:...) without spaces; "
                         f"got {value!r}")


def _https_url(value: str) -> None:
    if not value.startswith("https://") or not all(0x21 <= ord(c) <= 0x7E for c in value) \
            or '"' in value or "\\" in value:
        raise ValueError(f"must be an https URL without spaces or quotes; got {value!r}")


def _tokens(values: Sequence[str]) -> None:
    for value in values:
        _product_token(value)


def parse_profiles(entries: Sequence[str]) -> dict[str, Profile]:
    """robots_signature_profiles: HOST=PROFILE entries, a host a name or *.suffix."""
    found: dict[str, Profile] = {}
    for entry in entries:
        if not entry.strip():
            continue  # `--set robots_signature_profiles=`: none
        host, sep, profile = entry.partition("=")
        host, profile = host.strip().lower(), profile.strip()
        name = host.removeprefix("*.")
        if not sep or profile not in PROFILES or not name or \
                not all(label and all(c.isalnum() or c == "-" for c in label)
                        for label in name.split(".")):
            raise ValueError(f"each entry is HOST=PROFILE, a host name or *.example.com and "
                             f"ietf or cloudflare, such as shop.example=cloudflare; got "
                             f"{entry!r}")
        if host in found:
            raise ValueError(f"{host} is given twice")
        found[host] = profile
    return found


def _asked_tokens(values: Sequence[str]) -> None:
    _tokens([value for value in values if value != "*"])


def _optional(check: Callable[[str], object]) -> Callable[[str], None]:
    def checked(value: str) -> None:
        if value:
            check(value)
    return checked


@dataclass(frozen=True, slots=True)
class Settings:
    """robotsgate's options, checked. Field `x` is the mitmproxy option `robots_x`."""

    # Each option declared alike (_option: default, help, check): alike in shape, different
    # options; a table, not code said twice.

    agent: str = _option(
        "", "Product token to obey robots.txt as, for all traffic (e.g. MyBot): letters, '-' and "
        "'_' only, as RFC 9309 defines one (MJ12bot's token is MJ). Unset: each request's "
        "User-Agent header picks the group: a group applies when its name is one of the "
        "header's product tokens, case-insensitively; when several do, the longest name wins; "
        "none: *.", check=_product_token)
    agents: tuple[str, ...] = _option(
        (), "Product tokens for clients, one KEY=Token per entry: KEY is a proxy-auth user "
        "name, a client address or a network (10.0.0.0/8). Takes precedence over robots_agent "
        "and the User-Agent header.", check=AgentMap.parse)
    require_agent: bool = _option(
        False, "Answer 407 to requests whose bot cannot be identified (no map entry, no "
        "proxy-auth user, no robots_agent and no User-Agent).")
    purpose: str = _option(
        "", "What the bots behind this proxy crawl for, comma-separated usage categories "
        "(train-ai, search, ai-input, or any a site names): a request is refused when the "
        "site's usage preferences disallow every one. Empty: no request is refused for its use.",
        check=parse_purposes)
    purposes: tuple[str, ...] = _option(
        (), "Purposes per client, one KEY=purpose[,purpose...] per entry: KEY is a client "
        "address or network, a proxy-auth user name or a bot's product token. Takes precedence "
        "over robots_purpose.", check=lambda entries: PurposeMap.parse("", entries))
    usage_unknown: Literal["allow", "refuse"] = _option(
        "allow", "A declared purpose the site states no preference for: allow counts it as "
        "allowed; refuse as disallowed (decided on the origin's answer, whose Content-Usage "
        "header may still state one).", choices=USAGE_UNKNOWN)
    licenses: Literal["enforce", "off"] = _option(
        "enforce", "RSL licences (robots.txt License: lines): enforce fetches the licence "
        "documents a site names when a bot with declared purposes asks for one of its pages, "
        "and refuses a request whose every purpose they prohibit or do not grant (403 "
        "license-prohibited), that needs a licence from a licence server (403 "
        "license-required), or whose licence cannot be read (503 license-unavailable); off "
        "reads none.", choices=("enforce", "off"), rebuilds=Rebuilds.GATE)
    max_price: str = _option(
        "", "The most the proxy pays for one request when an origin answers 402 with "
        "crawler-price (pay-per-crawl), as 'USD 0.05'; the request is then sent again with "
        "crawler-exact-price, signed (robots_signature_agent). Empty: nothing is ever paid.",
        check=_optional(parse_price), rebuilds=Rebuilds.GATE)
    budget: tuple[str, ...] = _option(
        (), "Spending limits for 402 payments, one [SCOPE=]AMOUNT/PERIOD per entry: SCOPE * "
        "(everything, the default), a bot's product token, or site:HOST; PERIOD hour, day or "
        "month (a UTC window); e.g. 'USD 10/day', 'site:news.example=USD 1/hour'. A payment "
        "is made only when every budget that applies has room, kept in the fleet's Redis when "
        "there is one.", check=parse_budgets, rebuilds=Rebuilds.GATE)
    forgive_overcharge: tuple[str, ...] = _option(
        (), "Sites paid again although they charged more than the price agreed, one HOST per "
        "entry. A site whose crawler-charged is above the price, in another currency or "
        "unreadable is otherwise paid nothing more (402 overcharged): in the fleet's Redis "
        "until it is named here, in memory as long as the budgets' counts are. Named, its "
        "charges are still counted in full and audited; taken off, its next overcharge stops "
        "it again.",
        check=parse_sites)
    license_credentials: tuple[str, ...] = _option(
        (), "OAuth 2.0 client credentials per RSL licence server, one SERVER=CLIENT_ID:SECRET "
        "or SERVER=CLIENT_ID:@FILE (the secret read from FILE) per entry; SERVER is the "
        "https:// URL a licence's <content server> names. A licence is then obtained from it "
        "(the Open License Protocol's token request) and presented as Authorization: License; "
        "without an entry, requests that need one are refused (license-required).",
        check=parse_credentials, rebuilds=Rebuilds.GATE, secret=True)
    contact: str = _option(
        "", "A URL about your bots (a page, or mailto:), sent with every robots.txt fetch: "
        "the proxy fetches as 'Token (+URL)' (RFC 9309 §2.2.1), never with a bot's own "
        "User-Agent.", check=_contact, rebuilds=Rebuilds.GATE)
    egress_deny: tuple[str, ...] = _option(
        (), f"More addresses bots (and robots.txt redirects) may not reach: 'private', or "
        f"networks. Always refused unless robots_egress_allow names them: "
        f"{', '.join(DEFAULT_DENY)} addresses. The proxy's own ports are never reachable "
        f"through it.", check=lambda entries: EgressPolicy.parse(entries, ()),
        rebuilds=Rebuilds.GATE)
    egress_allow: tuple[str, ...] = _option(
        (), "Networks or addresses bots may reach although they are refused by default or by "
        "robots_egress_deny, each with an optional port: 127.0.0.1:8000, 10.1.0.0/16, "
        "[::1]:8000.", check=lambda entries: EgressPolicy.parse((), entries),
        rebuilds=Rebuilds.GATE)
    audit_failure: Literal["closed", "continue"] = _option(
        "closed", "When the audit log cannot be written: closed answers 503 instead of "
        "forwarding or blocking unrecorded; continue logs the error and goes on.",
        choices=AUDIT_FAILURE)
    mode: Literal["enforce", "monitor"] = _option(
        "enforce", "enforce: answer disallowed requests with 403. monitor: decide and audit, "
        "but forward everything.", choices=MODES)
    semantics: Semantics = _option(
        "rfc9309", "How robots.txt is read: rfc9309, google (Google's reference parser) or "
        "classic (the 1994 standard).", choices=SEMANTICS, rebuilds=Rebuilds.GATE)
    path_case: Literal["sensitive", "insensitive"] = _option(
        "sensitive", "Match paths case-sensitively (RFC 9309) or insensitively.",
        choices=PATH_CASES, rebuilds=Rebuilds.GATE)
    audit_log: str = _option(
        "robots-audit.jsonl", "Audit log path (JSON lines, appended) of every refusal and every "
        "wait; '-' for standard output.",
        rebuilds=Rebuilds.AUDIT)
    audit_max_bytes: int = _option(
        0, "Rotate the audit log when it would grow past this many bytes (0: never; use "
        "logrotate and SIGHUP instead).", bounds=(0, 2**50), rebuilds=Rebuilds.AUDIT)
    audit_keep: int = _option(
        5, "Rotated audit logs kept by robots_audit_max_bytes: FILE.1 ... FILE.N.",
        bounds=(1, 1000), rebuilds=Rebuilds.AUDIT)
    signing_key: str = _option(
        "", "The proxy's Ed25519 key (a PEM file readable by its owner only; robotsgate keygen "
        "FILE makes one): it signs the audit log's checkpoints, so that robotsgate verify shows "
        "any line changed, removed or inserted. Empty: records are chained, nothing is signed.",
        rebuilds=Rebuilds.AUDIT)
    signature_agent: str = _option(
        "", "Web Bot Auth: sign every request that leaves (HTTP Message Signatures, Ed25519, "
        "with robots_signing_key) as this signature agent, the https URL where its key "
        "directory is (robotsgate directory prints it). Empty: no request is signed.",
        check=_optional(_https_url))
    signature_profile: Literal["ietf", "cloudflare"] = _option(
        "ietf", "How Signature-Agent is written: ietf, a Structured Fields Dictionary "
        "(sig1=\"URL\", covered with ;key=\"sig1\"), as the IETF webbotauth draft says; "
        "cloudflare, a quoted string, as Cloudflare's verifier takes it. "
        "robots_signature_profiles sets it per destination host.",
        choices=("ietf", "cloudflare"))
    signature_profiles: tuple[str, ...] = _option(
        (), "The profile of some destination hosts, one HOST=PROFILE per entry: "
        "shop.example=cloudflare, *.example.net=ietf (every name under example.net). An exact "
        "name wins over a *. one, and a longer *. over a shorter.", check=parse_profiles)
    signature_validity: int = _option(
        300, "Seconds a request's signature is good for (its expires parameter).",
        bounds=(1, 86_400))
    signing_agents: tuple[str, ...] = _option(
        (), "Product tokens of the bots whose requests are signed, as robots_agents, a "
        "proxy-auth user or robots_agent names them (a User-Agent, which any client may "
        "write, names no bot here); empty: every bot's. A request the bot signed itself is "
        "left as it is, and so noted in the audit log (event signature, reason bot-signed).",
        check=_tokens)
    signing_asked: tuple[str, ...] = _option(
        (), "Product tokens of the bots whose requests are signed only when an origin asks: "
        "an answer 401 or 403 with Accept-Signature is answered by the request once more, "
        "signed as the origin asked (audited: event signature, reason signature-asked); * for "
        "every bot robots_signing_agents does not name. Any signing bot's request is sent "
        "again so when the origin asks for more than it was signed with.",
        check=_asked_tokens)
    directory_port: int = _option(
        0, "Port on which the proxy serves its key directory "
        "(/.well-known/http-message-signatures-directory, each response signed) and its "
        "Signature Agent Card (/.well-known/signature-agent-card), over plain HTTP, for the "
        "https server of robots_signature_agent's host to pass on (0: not served).",
        bounds=(0, 65_535), rebuilds=Rebuilds.DIRECTORY)
    directory_host: str = _option(
        "127.0.0.1", "Address the key directory's port listens on.",
        rebuilds=Rebuilds.DIRECTORY)
    directory_keys: tuple[str, ...] = _option(
        (), "Key files the directory lists besides robots_signing_key, while keys are rotated "
        "(a private PEM key also signs the directory's responses; a public PEM or a JWK Set is "
        "listed only).")
    signature_card: str = _option(
        "", "A JSON file of the Signature Agent Card's fields the operator writes (client_name, "
        "client_uri, contacts, purpose, ...); the proxy adds keys, rfc9309-compliance and "
        "rate-control itself.")
    audit_checkpoint: int = _option(
        1000, "Audit records between two signed checkpoints (with robots_signing_key; also at "
        "rotation, reopening and shutdown).", bounds=(1, 10**9), rebuilds=Rebuilds.AUDIT)
    cache_ttl: int = _option(
        86_400, "Seconds a robots.txt is used before it is fetched again, at most 86400 (RFC 9309 "
        "§2.4); a shorter Cache-Control max-age wins, no-cache and no-store mean every request "
        "fetches it again.", bounds=(1, 86_400), rebuilds=Rebuilds.GATE)
    cache_size: int = _option(
        100_000, "Origins whose robots.txt is kept (least recently used are forgotten first).",
        bounds=(1, 100_000_000),
        rebuilds=Rebuilds.GATE)
    rules_cache: int = _option(
        4096, "Distinct robots.txt files kept parsed (parsed rules cost several times their "
        "body); a cached origin whose file is not among them keeps only the body and its "
        "sha256, and has it parsed again when a request comes, without fetching it again. "
        "Identical files are parsed once.", bounds=(1, 100_000_000),
        rebuilds=Rebuilds.GATE)
    fetch_timeout: int = _option(
        10, "Seconds to wait for a robots.txt answer before treating the origin as unreachable "
        "(503); in a fleet, also what a proxy that died while fetching costs the others (plus "
        "2 s).", bounds=(1, 600), rebuilds=Rebuilds.GATE)
    fetch_concurrency: int = _option(
        256, "robots.txt fetches in flight at once (a connection each); more wait their turn, "
        "and a fetch's timeout starts when it starts, so the proxy's own queue never counts "
        "against a site. A thousand new sites at once are fetched in turns of this many.",
        bounds=(1, 10_000), rebuilds=Rebuilds.GATE)
    error_ttl: int = _option(
        60, "Seconds an unreachable robots.txt is remembered before it is asked for again; also "
        "the Retry-After of the 503 answers meanwhile.", bounds=(1, 86_400),
        rebuilds=Rebuilds.GATE)
    min_delay_ms: int = _option(
        0, "Least milliseconds between the starts of two requests to one host, whatever its "
        "robots.txt says.", bounds=(0, 3_600_000), rebuilds=Rebuilds.GATE)
    pacing_margin_ms: int = _option(
        10, "Milliseconds added to every non-zero politeness interval, so that the proxy's own "
        "forwarding jitter never brings two requests closer than the site asked.",
        bounds=(0, 1000), rebuilds=Rebuilds.GATE)
    max_wait: int = _option(
        60, "Seconds a request may be held for politeness; one that would wait longer is "
        "answered 429 with Retry-After.", bounds=(0, 3600), rebuilds=Rebuilds.GATE)
    max_crawl_delay: int = _option(
        60, "Longest Crawl-delay (seconds) honoured as asked; a longer one is clamped or "
        "refused, per robots_on_long_delay.", bounds=(1, 86_400), rebuilds=Rebuilds.GATE)
    on_long_delay: Literal["clamp", "refuse"] = _option(
        "clamp", "clamp: use robots_max_crawl_delay instead of a longer Crawl-delay. refuse: "
        "answer 429 to every request to such a host. Both are audited with the value the site "
        "asked for.", choices=LONG_DELAY,
        rebuilds=Rebuilds.GATE)
    redis: str = _option(
        "", "redis://host:port/db (also rediss://, unix://): share robots.txt and politeness "
        "with every proxy on this Redis (fleet mode); redis+cluster://host:port (or "
        "rediss+cluster://): on this Redis Cluster, named by any one of its nodes. Unset: this "
        "process's memory, no Redis needed.", check=_optional(check_url),
        rebuilds=Rebuilds.GATE, secret=True)  # a password in the URL
    redis_prefix: str = _option(
        "robotsgate:", "Prefix of every Redis key and channel robotsgate uses (no spaces or "
        "braces).",
        check=check_prefix, rebuilds=Rebuilds.GATE)
    redis_fallback: Fallback = _option(
        "closed", "While Redis is unreachable: closed answers 503 (redis-unavailable); local "
        "goes on with this proxy's own memory (politeness no longer shared), logged loudly.",
        choices=FALLBACKS, rebuilds=Rebuilds.GATE)
    archive_dir: str = _option(
        "", "Directory where every distinct robots.txt body fetched is kept, named by its "
        "sha256, with a .json sidecar (URL, status, headers, fetched_at).",
        rebuilds=Rebuilds.GATE)
    metrics_port: int = _option(
        0, "Port for Prometheus metrics on /metrics (0: not served).", bounds=(0, 65_535),
        rebuilds=Rebuilds.METRICS)
    metrics_host: str = _option(
        "127.0.0.1", "Address the metrics port listens on.", rebuilds=Rebuilds.METRICS)
    status_interval: int = _option(
        60, "Seconds between two status lines in the proxy's log, as Scrapy's periodic stats: "
        "requests (and at what rate since the last line), forwarded (and how many of them "
        "held for politeness), refused by reason, hosts whose requests are held now, "
        "robots.txt fetches in flight, money spent. 0: no status line.", bounds=(0, 86_400))
    enforce_nofollow: bool = _option(
        True, "Answer 403 to a request whose Referer is a page that is nofollow for the agent "
        "(META robots, X-Robots-Tag) or that has the requested link in a nofollow section.",
        rebuilds=Rebuilds.PAGES)
    strip: bool = _option(
        False, "Remove the text of noindex sections and the hrefs of links in nofollow "
        "sections from HTML pages before the bot sees them.", rebuilds=Rebuilds.PAGES)
    nofollow_memory: int = _option(
        200_000, "Links remembered for nofollow enforcement, over all pages (least recently "
        "used pages are forgotten first).", bounds=(1, 100_000_000), rebuilds=Rebuilds.PAGES)
    nofollow_ttl: int = _option(
        86_400, "Seconds a page's nofollow links are remembered.", bounds=(1, 30 * 86_400),
        rebuilds=Rebuilds.PAGES)

    @property
    def monitor(self) -> bool:
        return self.mode == "monitor"

    @classmethod
    def read(cls, get: Callable[[str], Any]) -> "Settings":
        """Every option's value, from `get(option_name)`, each checked in declaration order;
        the first bad one raises ValueError with a message that starts with its name."""
        values: dict[str, Any] = {}
        for spec in OPTIONS:
            value = get(spec.name)
            spec.check(value)
            values[spec.attribute] = tuple(value) if spec.kind is Sequence else value
        return cls(**values)

    def changed(self, other: "Settings | None") -> set[Rebuilds]:
        """What differs from `other` needs rebuilt (everything, when there is no other)."""
        if other is None:
            return set(Rebuilds)
        return {spec.rebuilds for spec in OPTIONS
                if getattr(self, spec.attribute) != getattr(other, spec.attribute)}


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One option as mitmproxy registers it."""

    attribute: str
    kind: Any  # str, int, bool or Sequence (of str)
    default: Any
    help: str
    choices: tuple[str, ...] | None
    bounds: tuple[int, int] | None
    checker: Callable[[Any], object] | None
    rebuilds: Rebuilds

    @property
    def name(self) -> str:
        return PREFIX + self.attribute

    def check(self, value: Any) -> None:
        """Raise ValueError, its message naming the option, unless `value` is acceptable."""
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(self.choices)}; "
                             f"got {value!r}")
        if self.bounds is not None and not self.bounds[0] <= value <= self.bounds[1]:
            raise ValueError(f"{self.name} must be a whole number from {self.bounds[0]} to "
                             f"{self.bounds[1]}; got {value}")
        if self.checker is not None:
            try:
                self.checker(value)
            except ValueError as exc:
                raise ValueError(f"{self.name}: {exc}") from exc


def _spec(declared: "Field[Any]") -> OptionSpec:
    default = declared.default
    assert default is not MISSING
    kind: Any = Sequence if isinstance(default, tuple) else type(default)
    meta = declared.metadata
    return OptionSpec(declared.name, kind, list(default) if kind is Sequence else default,
                      cast(str, meta["help"]), meta["choices"], meta["bounds"], meta["check"],
                      meta["rebuilds"])


OPTIONS: Final = tuple(_spec(declared) for declared in fields(Settings))
NAMES: Final = frozenset(spec.name for spec in OPTIONS)
SPECS: Final = {spec.name: spec for spec in OPTIONS}
