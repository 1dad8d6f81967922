"""`robotsgate check | lint | report`: the operator's questions, answered from a shell.

- check: would this URL be allowed for this bot, and why? The robots.txt is fetched exactly as the
  proxy fetches it (robotsgate.fetch.Fetcher) and decided by the proxy's own Gate, so the answer
  is the proxy's answer.
- lint: is this robots.txt well written? (robotsgate.protocol.lint)
- report: what were our bots blocked from, and on what grounds? (robotsgate.report)

Exit status: 0 allowed / clean / done, 1 disallowed / findings, 2 error (including bad usage).
"""

import argparse
import asyncio
import json
import os
import re
import shutil
import ssl
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import certifi

from robotsgate.audit import timestamp
from robotsgate.fetch import Fetcher, FetchResult
from robotsgate.gate import Gate, GateConfig, Request, Verdict
from robotsgate.origin import Origin
from robotsgate.protocol import (
    MAX_BYTES,
    SEMANTICS,
    RobotsTxt,
    is_product_token,
    seconds_until_open,
)
from robotsgate.protocol.lint import Finding, lint
from robotsgate.purposes import parse_purposes
from robotsgate.report import (
    MAX_KEY_CHARS,
    Bounds,
    Only,
    Summary,
    parse_when,
    read,
    render_text,
)
from robotsgate.report_html import render_html
from robotsgate.retrieval import Retrieval
from robotsgate.rules_cache import RulesCache
from robotsgate.state.store import MemoryStore, RobotsEntry

OK, FOUND, ERROR = 0, 1, 2
# Shown on a terminal for logs at least this big (bytes) when --progress is auto.
PROGRESS_FROM = 8 << 20


class CliError(Exception):
    """A problem to report in one line, exit status 2."""


# -- check --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checked:
    url: str
    agent_arg: str
    verdict: Verdict
    fetched: FetchResult | None  # None: not fetched (a request for /robots.txt itself)
    source: str  # where the rules came from: the robots.txt URL, or the file given
    now: float
    purposes: frozenset[str] = frozenset()


class _FileFetcher:
    """Serves a local file as if the origin had answered it 200."""

    def __init__(self, path: str) -> None:
        self._body = _read_input(path)[:MAX_BYTES]
        self._path = path

    async def fetch(self, robots_url: str, user_agent: str | None) -> FetchResult:
        return FetchResult("ok", robots_url, self._path, None, self._body)


class _Remembering:
    """Passes fetches through and remembers the last result, to show its details."""

    def __init__(self, fetcher: Fetcher | _FileFetcher) -> None:
        self.fetcher = fetcher
        self.result: FetchResult | None = None

    async def fetch(self, robots_url: str, user_agent: str | None) -> FetchResult:
        self.result = await self.fetcher.fetch(robots_url, user_agent)
        return self.result


def _origin_and_path(url: str) -> tuple[Origin, str]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise CliError(f"{url!r} is not a URL: {exc}") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise CliError(f"{url!r} is not an http or https URL")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Origin.of(parts.scheme, parts.hostname, port), path


def _tls(args: argparse.Namespace) -> ssl.SSLContext | bool:
    """Like the proxy: certifi's roots unless told otherwise."""
    if args.insecure:
        return False
    return ssl.create_default_context(cafile=args.cacert or certifi.where())


async def check(args: argparse.Namespace) -> Checked:
    origin, path = _origin_and_path(args.url)
    # A product token is obeyed as robots_agent is; anything else is read as a whole
    # User-Agent header, as the proxy reads each request's (the longest named group wins).
    token = args.agent if is_product_token(args.agent) else None
    source: Fetcher | _FileFetcher = (_FileFetcher(args.robots) if args.robots else
                                      Fetcher(timeout=args.timeout, verify=_tls(args)))
    fetcher = _Remembering(source)
    rules = RulesCache(1, semantics=args.semantics, case_sensitive=args.path_case == "sensitive")
    store = MemoryStore(1)
    gate = Gate(GateConfig(), store, Retrieval(fetcher, rules, store, time.time), time.time)
    try:
        verdict = await gate.check(Request(origin, path, args.agent, token, args.purpose))
    finally:
        if isinstance(source, Fetcher):
            await source.aclose()
    return Checked(args.url, args.agent, verdict, fetcher.result,
                   args.robots or origin.robots_url, time.time(), args.purpose)


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
    allowed = (decision.allowed if decision else True) and not unavailable and \
        v.usage_refusal is None
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
        "reason": v.reason,
        "explanation": decision.explain() if decision else None,
        "rule": rule.text if rule else None,
        "line": rule.line if rule else None,
        "group": list(group.agents) if group else None,
        "group_line": group.line if group else None,
        "crawl_delay": None, "request_rate": None, "visit_time": None, "visit_time_open": None,
        "opens_in": None, "sitemaps": list(robots.sitemaps) if robots else [],
        "proxy_answer": v.status or "forward",
        # category -> {value, rule, line}, for categories something is stated about.
        "usage": {category: {"value": str(p.value),
                             "rule": p.statement.text if p.statement else None,
                             "line": p.statement.line if p.statement else None}
                  for category, p in v.usage.preferences},
        "usage_header": v.usage.render() or None,  # X-Robotsgate-Usage, as far as robots.txt goes
        "purposes": sorted(c.purposes),
        "usage_refusal": v.usage_refusal.explain() if v.usage_refusal else None,
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
    if f["group"] is not None:
        rows.append(("group", f"{', '.join(f['group'])} (line {f['group_line']})"))
    elif kind is not None and kind != "unreachable":
        rows.append(("group", "none applies to this agent"))
    rows.append(("result", "allowed" if f["allowed"] else
                 "DISALLOWED for every purpose (the path itself is allowed)"
                 if f["usage_refusal"] else "DISALLOWED"))
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
    answer = f["proxy_answer"]
    rows.append(("proxy", "forwards it" if answer == "forward" else
                 f"answers {answer} ({f['reason']})"))
    width = max(len(name) for name, _ in rows) + 2
    return "".join(f"{name + ':':<{width}}{value}\n" for name, value in rows)


def run_check(args: argparse.Namespace) -> int:
    checked = asyncio.run(check(args))
    facts = _check_facts(checked)
    if args.json:
        print(json.dumps(facts, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(_check_text(facts))
    return OK if facts["allowed"] else FOUND


# -- lint ---------------------------------------------------------------------------------------


def _read_input(path: str) -> bytes:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None


async def _fetch_for_lint(url: str, args: argparse.Namespace) -> FetchResult:
    origin, path = _origin_and_path(url)
    target = origin.robots_url if path == "/" else f"{origin.key}{path}"
    fetcher = Fetcher(timeout=args.timeout, verify=_tls(args))
    try:
        return await fetcher.fetch(target, args.user_agent)
    finally:
        await fetcher.aclose()


def run_lint(args: argparse.Namespace) -> int:
    source: str = args.source
    declared = None
    if source.lower().startswith(("http://", "https://")):
        result = asyncio.run(_fetch_for_lint(source, args))
        source = result.robots_url
        if result.outcome != "ok":
            meaning = "no robots.txt: no restrictions" if result.outcome == "missing" else \
                "unreachable: complete disallow"
            raise CliError(f"{source}: {result.error or result.status} ({meaning}); "
                           "nothing to lint")
        body = result.body
        length = dict((k.lower(), v) for k, v in result.headers).get("content-length", "")
        declared = int(length) if length.isdigit() else None
    else:
        body = _read_input(source)
    findings = lint(body, semantics=args.semantics, case_sensitive=args.path_case == "sensitive",
                    declared_size=declared)
    if args.json:
        print(json.dumps({"source": source, "findings": [
            {"line": f.line, "kind": f.kind, "message": f.message} for f in findings]},
            indent=2, ensure_ascii=False))
    else:
        sys.stdout.write("".join(_finding_text(source, f) for f in findings))
        count = len(findings)
        print(f"{source}: {count} finding{'s' if count != 1 else ''}" if count else
              f"{source}: no findings")
    return FOUND if findings else OK


def _finding_text(source: str, finding: Finding) -> str:
    where = f"{source}:{finding.line}" if finding.line else source
    return f"{where}: {finding.kind}: {finding.message}\n"


# -- report -------------------------------------------------------------------------------------


class _Progress:
    """A one-line progress bar on stderr, redrawn when the percentage changes."""

    def __init__(self, total: int, stream: IO[str]) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.shown = -1

    def __call__(self, done: int) -> None:
        percent = min(100, done * 100 // self.total)
        if percent == self.shown:
            return
        self.shown = percent
        filled = percent * 30 // 100
        self.stream.write(f"\rreading {'#' * filled}{'.' * (30 - filled)} {percent:3d}% "
                          f"({done / 1e6:,.1f} of {self.total / 1e6:,.1f} MB)")
        if percent == 100:
            self.stream.write("\n")
        self.stream.flush()


def _open_logs(stack: ExitStack, paths: Sequence[str]) -> Iterator[tuple[str, IO[bytes]]]:
    for path in paths:
        if path == "-":
            yield "<stdin>", sys.stdin.buffer
            continue
        try:
            stream = stack.enter_context(open(path, "rb"))  # noqa: SIM115 -- closed by stack
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
        yield path, stream


def _progress(args: argparse.Namespace, paths: Sequence[str]) -> Callable[[int], None] | None:
    if args.progress == "never" or "-" in paths:
        return None
    try:
        total = sum(Path(p).stat().st_size for p in paths)
    except OSError as exc:
        raise CliError(f"cannot read {exc.filename}: {exc.strerror}") from None
    if args.progress == "auto" and not (sys.stderr.isatty() and total >= PROGRESS_FROM):
        return None
    return _Progress(total, sys.stderr)


def _breakdown(text: str) -> tuple[int, int]:
    """--breakdown N or NxM: the N most blocked agents and hosts, M rows each (M = N if not
    given); 0 for none."""
    found = re.fullmatch(r"\s*(\d+)\s*(?:[x×*]\s*(\d+)\s*)?", text)
    if found is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not N or NxM (5x10: the 5 most blocked agents and hosts, 10 paths "
            "and URLs each; 0: none)")
    many = int(found[1])
    each = int(found[2]) if found[2] is not None else many
    if many and not each:
        raise argparse.ArgumentTypeError(f"{text!r}: M, the rows for each, must be at least 1")
    return many, each


def run_report(args: argparse.Namespace) -> int:
    now = time.time()
    try:
        since = parse_when(args.since, now) if args.since else None
        until = parse_when(args.until, now) if args.until else None
        only = Only(agent=args.agent, host=args.host) \
            if args.agent is not None or args.host is not None else None
    except ValueError as exc:
        raise CliError(str(exc)) from None
    broken_down, each = args.breakdown
    shown = {"top": args.top, "broken_down": broken_down, "each": each}
    progress = _progress(args, args.logs)
    with ExitStack() as stack:
        summary: Summary = read(_open_logs(stack, args.logs), since=since, until=until,
                                progress=progress, only=only, bounds=Bounds.to_show(**shown))
    sys.stdout.write(render_text(summary, **shown))
    if args.html:
        page = render_html(summary, **shown, generated=timestamp(now))
        try:
            Path(args.html).write_text(page, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {args.html}: {exc.strerror or exc}") from None
        print(f"html report: {args.html}")
    return OK


# -- archive ------------------------------------------------------------------------------------


def run_show(args: argparse.Namespace) -> int:
    """The archived robots.txt behind an audit record's robots_sha256."""
    archive = Path(args.archive)
    sha = _archived(archive, args.sha256.lower())
    body = archive / sha
    try:
        meta = json.loads((archive / f"{sha}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CliError(f"the sidecar of {sha} cannot be read: {exc}") from None
    print(f"# {meta.get('url')} (HTTP {meta.get('status')}), fetched {meta.get('fetched_at')}")
    sys.stdout.flush()
    sys.stdout.buffer.write(body.read_bytes())
    return OK


def _archived(archive: Path, wanted: str) -> str:
    """The one archived sha256 that starts with `wanted` (at least 6 hex digits, like git)."""
    if not re.fullmatch(r"[0-9a-f]{6,64}", wanted):
        raise CliError(f"{wanted!r} is not a sha256 or a prefix of one (6 to 64 hex digits)")
    try:
        found = sorted(p.name for p in archive.glob(f"{wanted}*")
                       if re.fullmatch(r"[0-9a-f]{64}", p.name) and p.is_file())
    except OSError as exc:
        raise CliError(f"cannot read the archive {archive}: {exc}") from None
    if not found:
        raise CliError(f"no robots.txt with sha256 {wanted} in {archive}")
    if len(found) > 1:
        raise CliError(f"{wanted} is the start of {len(found)} archived sha256s "
                       f"({', '.join(sha[:12] for sha in found[:5])}): give more digits")
    return found[0]


# -- the command line ---------------------------------------------------------------------------


def _fetch_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=float, default=10, metavar="SECONDS",
                        help="seconds to wait for robots.txt, like robots_fetch_timeout "
                             "(default: %(default)s)")
    parser.add_argument("--cacert", metavar="FILE",
                        help="trust this CA bundle for https instead of certifi's")
    parser.add_argument("--insecure", action="store_true",
                        help="do not verify https certificates (like ssl_insecure)")


def _reading_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--semantics", choices=SEMANTICS, default="rfc9309",
                        help="how robots.txt is read, like robots_semantics (default: "
                             "%(default)s)")
    parser.add_argument("--path-case", choices=("sensitive", "insensitive"),
                        default="sensitive", help="like robots_path_case (default: %(default)s)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robotsgate", description="Tools for the people who run the robotsgate proxy.",
        epilog="Exit status: 0 allowed / no findings, 1 disallowed / findings, 2 error.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser(
        "serve", help="start the proxy (mitmdump with robotsgate), on 127.0.0.1:8080",
        description=SERVE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False)

    p = commands.add_parser(
        "check", help="would this URL be allowed for this bot, and why?",
        description="Fetch the URL's robots.txt the way the proxy does (or read FILE) and say "
                    "whether the URL is allowed for the agent: the deciding rule and line, the "
                    "group, Crawl-delay, Request-rate, Visit-time and Sitemap lines, and what "
                    "its usage preferences (Content-Usage, Content-Signal) allow.",
        epilog="Exit status: 0 allowed, 1 disallowed (by a rule, by usage preferences for "
               "every --purpose, or robots.txt unreachable: complete disallow), 2 error.")
    p.add_argument("url", help="the URL a bot would request, http:// or https://")
    p.add_argument("--agent", required=True, metavar="TOKEN",
                   help="the bot: a product token (MyBot), obeyed as robots_agent is; or a "
                        "whole User-Agent header, read as the proxy reads one")
    p.add_argument("--robots", metavar="FILE",
                   help="read robots.txt from FILE ('-': standard input) instead of fetching it")
    p.add_argument("--purpose", metavar="CATEGORIES", type=_purposes, default=frozenset(),
                   help="what the bot crawls for, as robots_purpose (train-ai,search): "
                        "disallowed when robots.txt's usage preferences disallow every one")
    p.add_argument("--json", action="store_true", help="print the facts as JSON")
    _reading_options(p)
    _fetch_options(p)
    p.set_defaults(run=run_check)

    p = commands.add_parser(
        "lint", help="is this robots.txt well written?",
        description="Warnings with line numbers: unknown directives, rules outside any group, "
                    "misspellings that were accepted, rules shadowed by others, patterns that "
                    "can never match, a body over 500 KiB, a byte order mark, bytes that are "
                    "not UTF-8, Sitemap lines that are not URLs.",
        epilog="Exit status: 0 no findings, 1 findings, 2 error (including a URL with no "
               "robots.txt).")
    p.add_argument("source", metavar="FILE|URL",
                   help="a file ('-': standard input), or a URL: a site (http://example.com/ "
                        "means its /robots.txt) or the file's own URL")
    p.add_argument("--user-agent", default=None, help="User-Agent to fetch with")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    _reading_options(p)
    _fetch_options(p)
    p.set_defaults(run=run_lint)

    p = commands.add_parser(
        "report", help="what were the bots blocked from, and why?",
        description="Sum up audit logs: top blocked hosts, agents, paths, URLs, rules and "
                    "reasons, the top paths and URLs of the most blocked agents, the top paths "
                    "of the most blocked hosts, and "
                    "blocks over time; --html writes the same as one self-contained page with "
                    "charts. Paths are without their query; URLs are as the bot sent them, "
                    f"query included, cut at {MAX_KEY_CHARS} characters.",
        epilog=f"Memory stays bounded whatever the logs (Space-Saving): each table keeps "
               f"{Bounds().keys:,} keys, and {Bounds().each} paths (and URLs) for each of the "
               f"{Bounds().broken_down} most blocked hosts (and agents); ten times the rows "
               "asked for when that is more. A table that saw more distinct keys says so and "
               "how often a key it dropped was blocked at most, lists only the rows surely "
               "above that, and marks with ~ the counts that are estimates (upper bounds, "
               "at most the error it states too high). A key with more than 1/N of a "
               "table's blocks, N the keys it keeps, is never dropped.")
    p.add_argument("logs", nargs="+", metavar="AUDIT.jsonl",
                   help="audit logs (rotated ones too; '-': standard input)")
    p.add_argument("--since", metavar="WHEN",
                   help="only records from then on: 2026-01-31, 2026-01-31T12:00 (UTC unless "
                        "a zone is given) or an age: 90m, 24h, 7d, 2w")
    p.add_argument("--until", metavar="WHEN", help="only records before then (same forms)")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="rows per table (default: %(default)s)")
    p.add_argument("--breakdown", type=_breakdown, default=(5, 5), metavar="N[xM]",
                   help="the top paths and URLs of each of the N most blocked agents, and the "
                        "top paths of each of the N most blocked hosts, M rows each (M = N if "
                        "left out; 0: none; default: 5x5)")
    p.add_argument("--agent", metavar="TOKEN",
                   help="only the records of this agent: its product token as the audit log "
                        "has it, any case (* for requests no named group applied to)")
    p.add_argument("--host", metavar="HOST",
                   help="only the records of this host: a.example (any port) or "
                        "b.example:8080 (that port only)")
    p.add_argument("--html", metavar="OUT.html", help="also write an HTML page with charts")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="progress bar on stderr; auto: on a terminal, for logs over "
                        f"{PROGRESS_FROM >> 20} MiB (default: %(default)s)")
    p.set_defaults(run=run_report)

    p = commands.add_parser(
        "show", help="print an archived robots.txt by its sha256",
        description="Print the robots.txt an audit record's robots_sha256 names, from the "
                    "robots_archive_dir, after a comment line saying where and when it was "
                    "fetched.")
    p.add_argument("sha256", help="the record's robots_sha256, or its first 6 or more digits")
    p.add_argument("--archive", required=True, metavar="DIR", help="the robots_archive_dir")
    p.set_defaults(run=run_show)
    return parser


SERVE_HELP = """\
usage: robotsgate serve [mitmdump options]

Start the proxy: mitmdump with robotsgate's addons, from this installation. Every argument goes
to mitmdump, so any mitmproxy option works alongside robotsgate's robots_* options:

  robotsgate serve --set robots_agent=MyBot --set robots_audit_log=/var/log/robots.jsonl

Defaults, each overridden by giving it: --listen-host 127.0.0.1 (or $ROBOTSGATE_HOST),
--listen-port 8080 (or $ROBOTSGATE_PORT), and --set flow_detail=0 (no line per request: the
audit log is the record; --set flow_detail=1 lists them). At start-up one line says what is in
force; a misspelled option or a bad value stops it with one line and exit status 2.
robotsgate's options: `mitmdump -s <robotsgate>/addon.py --options`, or the README.
"""


def serve(args: Sequence[str]) -> int:
    """Replace this process with mitmdump running robotsgate (never returns, but on error)."""
    if any(arg in ("-h", "--help") for arg in args):
        print(SERVE_HELP, end="")
        return 0
    here = Path(sys.executable).parent  # the mitmdump installed beside this robotsgate
    mitmdump = shutil.which("mitmdump", path=str(here)) or shutil.which("mitmdump")
    if mitmdump is None:
        print("robotsgate serve: mitmdump not found; install mitmproxy (pip install "
              "'mitmproxy>=12,<13')", file=sys.stderr)
        return ERROR
    given = " ".join(args)
    command = [mitmdump]
    if "--listen-host" not in given and "listen_host=" not in given:
        command += ["--listen-host", os.environ.get("ROBOTSGATE_HOST", "127.0.0.1")]
    if "--listen-port" not in given and "listen_port=" not in given and \
            not any(arg == "-p" or (arg.startswith("-p") and arg[2:].isdigit()) for arg in args):
        command += ["--listen-port", os.environ.get("ROBOTSGATE_PORT", "8080")]
    if "flow_detail" not in given and "--flow-detail" not in given:
        command += ["--set", "flow_detail=0"]
    # The script file beside this module: imported by mitmdump, not here (it loads mitmproxy).
    command += ["-s", str(Path(__file__).resolve().with_name("addon.py")), *args]
    sys.stdout.flush()
    os.execv(mitmdump, command)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        # Everything after "serve" is mitmdump's: argparse would take its options for ours.
        return serve(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "top", 1) < 1:
        parser.error("--top must be at least 1")
    try:
        status: int = args.run(args)
    except CliError as exc:
        print(f"robotsgate {args.command}: {exc}", file=sys.stderr)
        return ERROR
    except KeyboardInterrupt:
        return 130
    return status
