"""`robotsgate check`: would this URL be allowed for this bot, and why?

The robots.txt is fetched exactly as the proxy fetches it (robotsgate.retrieval.fetch.Fetcher) and
decided by the proxy's own Gate, so the answer is the proxy's answer.
"""

import argparse
import asyncio
import json
import logging
import re
import sys
import time
from dataclasses import dataclass
from typing import Any

import httpx

from robotsgate.audit.records import timestamp
from robotsgate.cli.answer import Answered, judge_answer
from robotsgate.cli.common import (
    FOUND,
    OK,
    CliError,
    Commands,
    fetch_options,
    origin_and_path,
    read_input,
    reading_options,
    tls,
)
from robotsgate.cli.licenses import read_licences, unread_entry
from robotsgate.config import assemble
from robotsgate.config.options import Settings
from robotsgate.decision.gate import Gate
from robotsgate.decision.plan import Answer
from robotsgate.decision.policy import Unrestricted
from robotsgate.decision.purposes import parse_purposes
from robotsgate.decision.request import Facts
from robotsgate.decision.verdict import Verdict
from robotsgate.escape import escaped
from robotsgate.licensing.licenses import Licensing
from robotsgate.licensing.tdmrep import TdmRepFiles
from robotsgate.outcomes import OUTCOMES, status
from robotsgate.protocol import (
    MAX_BYTES,
    RobotsTxt,
    is_product_token,
    product_tokens,
    seconds_until_open,
)
from robotsgate.retrieval.entries import Retrieval
from robotsgate.retrieval.fetch import Fetcher, FetchResult
from robotsgate.rules_cache import RulesCache
from robotsgate.state.store import MemoryStore, RobotsEntry


@dataclass(frozen=True, slots=True)
class Checked:
    url: str
    agent_arg: str
    verdict: Verdict
    fetched: FetchResult | None  # None: not fetched (a request for /robots.txt itself)
    source: str  # where the rules came from: the robots.txt URL, or the file given
    now: float
    purposes: frozenset[str] = frozenset()
    licences: tuple[dict[str, Any], ...] = ()  # RSL: robotsgate.cli.licenses
    # The origin's answer judged as the proxy judges it (a bot with purposes, a request the
    # proxy forwards): robotsgate.cli.answer. None: not asked.
    answered: Answered | None = None


class _FileFetcher:
    """Serves a local file as if the origin had answered it 200."""

    def __init__(self, path: str) -> None:
        self._body = read_input(path)[:MAX_BYTES]
        self._path = path

    async def fetch(self, robots_url: str, user_agent: str) -> FetchResult:
        return FetchResult("ok", robots_url, self._path, None, self._body)


class _Remembering:
    """Passes fetches through and remembers the last result, to show its details."""

    def __init__(self, fetcher: Fetcher | _FileFetcher) -> None:
        self.fetcher = fetcher
        self.result: FetchResult | None = None

    async def fetch(self, robots_url: str, user_agent: str) -> FetchResult:
        self.result = await self.fetcher.fetch(robots_url, user_agent)
        return self.result


async def check(args: argparse.Namespace) -> Checked:
    """The proxy's exchange policy on a GET of the URL, as the bot would send it."""
    origin, path = origin_and_path(args.url)
    # A product token is obeyed as robots_agent is; anything else is read as a whole
    # User-Agent header, as the proxy reads each request's (the longest named group wins).
    token = args.agent if is_product_token(args.agent) else None
    source: Fetcher | _FileFetcher = (_FileFetcher(args.robots) if args.robots else
                                      Fetcher(timeout=args.timeout, verify=tls(args)))
    fetcher = _Remembering(source)
    # The proxy's own defaults but for what the command line gives, assembled as the proxy
    # assembles them.
    settings = Settings(agent=token or "", purpose=",".join(sorted(args.purpose)),
                        contact=args.contact, semantics=args.semantics, path_case=args.path_case)
    rules = RulesCache(1, semantics=settings.semantics,
                       case_sensitive=settings.path_case == "sensitive")
    store = MemoryStore(1)
    # Licences as the proxy reads them: by the proxy's fetcher, under the proxy's own name.
    licensing = Licensing(source, time.time, contact=settings.contact) \
        if isinstance(source, Fetcher) else None
    tdmrep = TdmRepFiles(source, time.time, contact=settings.contact) \
        if isinstance(source, Fetcher) else None
    gate = Gate(assemble.gate_config(settings), store,
                Retrieval(fetcher, rules, store, time.time, contact=settings.contact), time.time,
                licensing=licensing, tdmrep=tdmrep)
    exchange = assemble.exchange(settings, gate, Unrestricted())
    fields = [(b"Host", origin.authority.encode("ascii"))]
    if args.agent:
        fields.append((b"User-Agent", args.agent.encode("utf-8", "surrogateescape")))
    facts = Facts(origin.scheme, origin.host, origin.port, b"GET",
                  path.encode("utf-8", "surrogateescape"), b"", tuple(fields))
    try:
        plan = await exchange.decide(facts)
        if plan.verdict is None:
            assert isinstance(plan, Answer)
            raise CliError(f"the proxy answers this request {OUTCOMES[plan.reason].status} "
                           f"({plan.reason}) before robots.txt: {escaped(plan.text.strip())}")
        entry = plan.verdict.entry
        licenses = entry.robots.licenses if entry is not None and entry.robots is not None \
            else ()
        licences = () if licensing is None or not licenses else tuple(await read_licences(
            licensing, licenses, args.url, args.purpose))
        answered = None
        if plan.verdict.action == "forward" and args.purpose and isinstance(source, Fetcher):
            # What the answer says may withhold it too: the proxy reads it; so does check.
            async with httpx.AsyncClient(verify=tls(args), timeout=args.timeout,
                                         follow_redirects=False, trust_env=False) as client:
                answered = await judge_answer(
                    args.url, plan.verdict, args.purpose, agent=token,
                    user_agent=args.agent or None, licensing=licensing, client=client)
    finally:
        if isinstance(source, Fetcher):
            await source.aclose()
    return Checked(args.url, args.agent, plan.verdict, fetcher.result,
                   args.robots or origin.robots_url, time.time(), args.purpose, licences,
                   answered)


def _purposes(text: str) -> frozenset[str]:
    try:
        return parse_purposes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def _check_facts(c: Checked) -> dict[str, Any]:
    """Everything check prints, as plain values (also the --json output)."""
    v = c.verdict
    entry: RobotsEntry | None = v.entry
    robots: RobotsTxt | None = entry.robots if entry else None
    decision = v.decision
    rule = decision.rule if decision else None
    group = decision.group if decision else None
    unavailable = v.action == "unavailable"
    answered = c.answered
    withheld = answered.reason if answered is not None else None
    # One verdict with the proxy's: a licence's refusal, and the answer's own, count too.
    allowed = (decision.allowed if decision else True) and not unavailable and \
        v.usage_refusal is None and v.license_refusal is None and withheld is None
    license_refusal = v.license_refusal or (answered.license_refusal if answered else None)
    usage_refusal = v.usage_refusal or (answered.refusal if answered else None)
    facts: dict[str, Any] = {
        "url": c.url, "allowed": allowed, "agent": v.agent,
        "robots_url": v.robots_url, "source": c.source,
        "robots_status": entry.status if entry else None,
        "robots_kind": entry.kind if entry else None,
        "robots_error": entry.error if entry else None,
        "robots_sha256": entry.sha256 if entry else None,
        "robots_bytes": len(entry.body) if entry and entry.sha256 else None,
        "robots_fetched_at": timestamp(entry.fetched_at) if entry else None,
        "final_url": c.fetched.final_url if c.fetched else None,
        "reason": withheld or v.reason,
        "explanation": decision.explain() if decision else None,
        "rule": rule.text if rule else None,
        "line": rule.line if rule else None,
        "group": list(group.agents) if group else None,
        "group_line": group.line if group else None,
        "crawl_delay": None, "request_rate": None, "visit_time": None, "visit_time_open": None,
        "opens_in": None, "sitemaps": list(robots.sitemaps) if robots else [],
        # RSL: the licence documents robots.txt names (line: where), each fetched and read
        # unless robots.txt came from a file: what it says of the URL, per purpose.
        "licenses": (list(c.licences) or [
            {"url": license.url, "line": license.line, "error": "not fetched", "problems": [],
             "applies": None, "purposes": {}}
            for license in (robots.licenses if robots else ())]) + (
            [unread_entry(robots.unread_licenses)]
            if robots is not None and robots.unread_licenses is not None else []),
        "proxy_answer": v.status or (status(withheld) if withheld else "forward"),
        # category -> {value, rule, line}, for categories something is stated about.
        "usage": {category: {"value": str(p.value),
                             "rule": p.statement.text if p.statement else None,
                             "line": p.statement.line if p.statement else None}
                  for category, p in v.usage.preferences},
        "usage_header": v.usage.render() or None,  # X-Robotsgate-Usage, as far as robots.txt goes
        "purposes": sorted(c.purposes),
        "agent_note": _agent_note(c.agent_arg),
        "usage_refusal": usage_refusal.explain() if usage_refusal else None,
        "license_refusal": None if license_refusal is None else {
            "kind": license_refusal.kind, "license": license_refusal.url,
            "where": license_refusal.where(v.robots_url), "rule": license_refusal.cite or None,
            "explanation": license_refusal.explain() or license_refusal.error},
        # The origin's answer, when check asked for it (a bot with purposes, a request the
        # proxy forwards): its status, X-Robotsgate-Usage, and whether the proxy withholds it.
        "answer": None if answered is None else {
            "status": answered.status, "usage": answered.usage.render() or None,
            "withheld": withheld, "error": answered.error},
    }
    if robots is not None:
        facts["crawl_delay"] = robots.crawl_delay(v.agent)
        rate = robots.request_rate(v.agent)
        if rate is not None:
            facts["request_rate"] = {"requests": rate.requests, "seconds": rate.seconds,
                                     "interval": rate.interval}
        window = robots.visit_time(v.agent)
        if window is not None:
            facts["visit_time"] = f"{window.start:%H%M}-{window.end:%H%M}"
            closed_for = seconds_until_open(window, c.now)
            facts["visit_time_open"] = not closed_for
            facts["opens_in"] = closed_for or None
    return facts


def _agent_note(agent: str) -> str | None:
    """What a bot name that is no product token is read as (MJ12bot: a User-Agent naming MJ)."""
    if not agent or is_product_token(agent) or re.search(r"[\s/;()]", agent):
        return None  # a token, or plainly a whole User-Agent header
    tokens = ", ".join(sorted(product_tokens(agent))) or "none"
    return (f"{agent} is not a product token (letters, '-' and '_' only, RFC 9309): read as a "
            f"User-Agent header, whose product tokens are {tokens}")


def _check_text(f: dict[str, Any]) -> str:
    rows: list[tuple[str, str]] = [("url", f["url"])]
    if f["source"] != f["robots_url"]:
        rows.append(("robots.txt", f"{f['source']} (file, read as {f['robots_url']})"))
    else:
        rows.append(("robots.txt", f["robots_url"]))
    if f["final_url"] and f["final_url"] not in (f["robots_url"], f["source"]):
        rows.append(("redirected", f"to {f['final_url']}"))
    kind, status = f["robots_kind"], f["robots_status"]
    shown = f"HTTP {status}" if status is not None else "no answer"
    if kind == "ok" and f["source"] == f["robots_url"]:
        rows.append(("status", f"{shown}, {f['robots_bytes']:,} bytes, sha256 "
                               f"{f['robots_sha256']}"))
    elif kind == "ok":
        rows.append(("status", f"{f['robots_bytes']:,} bytes, sha256 {f['robots_sha256']}"))
    elif kind == "missing":
        rows.append(("status", f"{shown}: no robots.txt, so no restrictions"
                               + (f" ({f['robots_error']})" if status is None else "")))
    elif kind == "unreachable" or f["reason"] == "robots-unavailable":
        rows.append(("status", f"unreachable ({f['robots_error'] or shown}): complete "
                               "disallow (RFC 9309 §2.3.1.4)"))
    if kind == "ok" and f["robots_error"]:
        rows.append(("note", f"last fetch failed ({f['robots_error']}); a stale copy decides"))
    rows.append(("agent", f["agent"]))
    if f["agent_note"]:
        rows.append(("note", f["agent_note"]))
    if f["group"] is not None:
        rows.append(("group", f"{', '.join(f['group'])} (line {f['group_line']})"))
    elif kind is not None and kind != "unreachable":
        rows.append(("group", "none applies to this agent"))
    rows.append(("result", "allowed" if f["allowed"] else
                 "DISALLOWED for every purpose (the path itself is allowed)"
                 if f["usage_refusal"] else
                 f"DISALLOWED by a licence ({f['reason']}; the path itself is allowed)"
                 if f["license_refusal"] else "DISALLOWED"))
    if f["rule"]:
        rows.append(("rule", f"{f['rule']} (line {f['line']})"))
    if f["explanation"]:
        rows.append(("why", f["explanation"]))
    if f["crawl_delay"] is not None:
        rows.append(("crawl-delay", f"{f['crawl_delay']:g} s"))
    if f["request_rate"]:
        r = f["request_rate"]
        rows.append(("request-rate", f"{r['requests']}/{r['seconds']:g}s: one request every "
                                     f"{r['interval']:g} s"))
    if f["visit_time"]:
        state = "open now" if f["visit_time_open"] else \
            f"closed now, opens in {_duration(f['opens_in'])}"
        rows.append(("visit-time", f"{f['visit_time']} UTC ({state})"))
    if f["usage"]:
        rows.append(("usage", "; ".join(
            f"{category} {u['value']} by {u['rule']}"
            + (f" (line {u['line']})" if u["line"] else "")
            for category, u in f["usage"].items())))
    elif f["allowed"] or f["usage_refusal"]:
        rows.append(("usage", "no preference stated"))
    if f["purposes"]:
        rows.append(("purposes", ", ".join(f["purposes"]) + (
            f": all refused ({f['usage_refusal']})" if f["usage_refusal"] else "")))
    for sitemap in f["sitemaps"]:
        rows.append(("sitemap", sitemap))
    for license in f["licenses"]:
        rows += _licence_rows(license)
    refusal = f["license_refusal"]
    if refusal:
        rows.append(("licence", f"{refusal['kind']}: {refusal['license']} ({refusal['where']})"
                     + (f": {refusal['explanation']}" if refusal["explanation"] else "")))
    answer = f["answer"]
    if answer is not None:
        shown = f"HTTP {answer['status']}" if answer["status"] is not None else \
            f"no answer ({answer['error']})"
        rows.append(("answer", shown + (f", usage {answer['usage']}" if answer["usage"] else "")
                     + (f": withheld ({answer['withheld']})" if answer["withheld"] else "")))
    said = f["proxy_answer"]
    rows.append(("proxy", "forwards it" if said == "forward" else
                 f"answers {said} ({f['reason']})"))
    width = max(len(name) for name, _ in rows) + 2
    # URLs, rules, group names and sitemaps are what bots and sites wrote: shown escaped.
    return "".join(f"{name + ':':<{width}}{escaped(value)}\n" for name, value in rows)


def _licence_rows(license: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("license", f"{license['url']} (line {license['line']}; RSL)")]
    if license["error"]:
        rows.append(("  read", license["error"]))
    rows += [("  problem", problem) for problem in license["problems"]]
    applies = license["applies"]
    if applies is None:
        if not license["error"]:
            rows.append(("  applies", "no <content> of it covers this URL"))
        return rows
    servers = f"; licence server {', '.join(applies['servers'])}" if applies["servers"] else ""
    rows.append(("  applies", f"<content url=\"{applies['content']}\"> (line "
                              f"{applies['line']}){servers}"))
    for purpose, said in license["purposes"].items():
        rows.append((f"  {purpose}", f"{said['answer']}: {said['evidence']}"))
    return rows


def run_check(args: argparse.Namespace) -> int:
    # The proxy's own log line about an unreachable robots.txt ("nothing is forwarded to it for
    # the next 60 s") is not this command's to say: its answer says it.
    logging.getLogger("robotsgate.retrieval.entries").setLevel(logging.ERROR)
    checked = asyncio.run(check(args))
    facts = _check_facts(checked)
    if args.json:
        print(json.dumps(facts, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(_check_text(facts))
    return OK if facts["allowed"] else FOUND


# Arguments declared as every command's are (argparse): alike in shape, not in meaning.
def add_parser(commands: Commands) -> None:
    """`robotsgate check`: its arguments."""
    p = commands.add_parser(
        "check", help="would this URL be allowed for this bot, and why?",
        description="Fetch the URL's robots.txt the way the proxy does (or read FILE) and say "
                    "whether the URL is allowed for the agent: the deciding rule and line, the "
                    "group, Crawl-delay, Request-rate, Visit-time and Sitemap lines, and what "
                    "its usage preferences (Content-Usage, Content-Signal) allow.",
        epilog="Exit status: 0 allowed, 1 disallowed (by a rule, by usage preferences for "
               "every --purpose, or robots.txt unreachable: complete disallow), 2 error.")
    p.add_argument("url", help="the URL a bot would request, http:// or https://")
    p.add_argument("--agent", default="", metavar="TOKEN",
                   help="the bot: a product token (MyBot), obeyed as robots_agent is; or a "
                        "whole User-Agent header, read as the proxy reads one (default: none, "
                        "as a bot that names itself nowhere: the * group)")
    p.add_argument("--robots", metavar="FILE",
                   help="read robots.txt from FILE ('-': standard input) instead of fetching it")
    p.add_argument("--purpose", metavar="CATEGORIES", type=_purposes, default=frozenset(),
                   help="what the bot crawls for, as robots_purpose (train-ai,search): "
                        "disallowed when robots.txt's usage preferences disallow every one")
    p.add_argument("--contact", default="", metavar="URL",
                   help="your bots' page, sent with the robots.txt fetch as robots_contact "
                        "is: 'Token (+URL)'")
    p.add_argument("--json", action="store_true", help="print the facts as JSON")
    reading_options(p)
    fetch_options(p)
    p.set_defaults(run=run_check)
