"""Lint a robots.txt: what the parser had to guess at, and rules that can never decide anything.

Pure, like the rest of the package: bytes in, findings out. The parser's own warnings (unknown
directives, accepted misspellings, rules outside any group, a byte order mark, bytes that are not
UTF-8, a body over 500 KiB) become findings with a kind; on top of them come checks that need the
parsed structure:

- rules that never decide because another rule takes precedence over every path they match
  ("shadowed" when that rule says the opposite, "redundant" when it says the same);
- patterns that can never match a path (a path always starts with '/');
- Sitemap lines, and RSL License lines, that are not full URLs; License lines naming more
  licence documents than are read (rsl.MAX_LICENSES): what they name is not read, and a bot
  that declares what it crawls for is refused (a licence not read may prohibit it);
- AI usage preferences (Content-Usage, Content-Signal; see usage.py): values that are not a
  Structured Field Dictionary ("usage-syntax", from the parser), and labels that state nothing
  ("usage-label": not in the vocabulary, or a value other than y / n): both are ignored by the
  reader, so each is something the site probably did not mean.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from robotsgate.protocol.match import Rank
from robotsgate.protocol.parse import MAX_BYTES, Key, tokenize
from robotsgate.protocol.readings import Reading
from robotsgate.protocol.robots import RobotsTxt
from robotsgate.protocol.rules import Group, Rule
from robotsgate.protocol.usage import CATEGORIES, RETIRED, SIGNAL_OTHERS, Source, Statement


@dataclass(frozen=True, slots=True)
class Finding:
    line: int  # 1-based; 0 for the file as a whole
    kind: str  # see KINDS
    message: str


KINDS = ("size", "bom", "encoding", "unknown-directive", "misspelling", "outside-group",
         "agent-name", "syntax", "shadowed", "redundant", "never-matches", "no-effect", "sitemap",
         "usage-syntax", "usage-label", "license")

# Parser warnings by what their message says; "syntax" for the rest (bad values, missing ':').
_PARSER_KINDS = (
    ("only the first", "size"),
    ("byte order mark", "bom"),
    ("not UTF-8", "encoding"),
    ("unknown directive", "unknown-directive"),
    ("outside any group", "outside-group"),
    ("User-agent ", "agent-name"),
    (" read as ", "misspelling"),
    ("preference", "usage-syntax"),
)


def lint(content: bytes, *, semantics: str = "rfc9309", case_sensitive: bool = True,
         declared_size: int | None = None) -> tuple[Finding, ...]:
    """Findings for a robots.txt body, in line order. Never raises on content.

    `declared_size` is the size the server announced (Content-Length) when `content` is only
    the part of a body that was read.
    """
    robots = RobotsTxt.parse(content, semantics=semantics, case_sensitive=case_sensitive)
    findings = [Finding(w.line, _parser_kind(w.message), w.message) for w in robots.warnings]
    if declared_size is not None and declared_size > MAX_BYTES and len(content) <= MAX_BYTES:
        findings.append(Finding(0, "size", f"body is {declared_size:,} bytes (Content-Length);"
                                           f" only the first {MAX_BYTES:,} are read "
                                           "(RFC 9309 §2.5)"))
    findings += _sitemaps(content)
    findings += _licenses(robots)
    for group in robots.groups:
        findings += _never_matching(group.rules, robots.reading)
        findings += _usage_labels(group.usage)
    findings += _shadowing(robots)
    return tuple(sorted(set(findings), key=lambda f: (f.line, KINDS.index(f.kind), f.message)))


def _parser_kind(message: str) -> str:
    for needle, kind in _PARSER_KINDS:
        if needle in message:
            return kind
    return "syntax"


def _sitemaps(content: bytes) -> list[Finding]:
    found = []
    for line in tokenize(content[:MAX_BYTES]).lines:
        if line.key is Key.SITEMAP:
            value = line.value.decode("utf-8", "replace")
            if not value.lower().startswith(("http://", "https://")):
                found.append(Finding(line.number, "sitemap",
                                     f"Sitemap {value!r} is not a full URL (RFC 9309 §2.4)"))
    return found


def _licenses(robots: RobotsTxt) -> list[Finding]:
    """RSL: a License line names a licence document by its full URL (it may be on another
    host); one that is not a URL names nothing a crawler can fetch. Past the documents read
    (rsl.MAX_LICENSES), one finding, at the first line not read."""
    found = [Finding(license.line or 0, "license",  # robots.txt's always have a line
                     f"License {license.url!r} is not a full URL (RSL 1.0: https://...)")
             for license in robots.licenses
             if not license.url.lower().startswith(("https://", "http://"))]
    unread = robots.unread_licenses
    if unread is not None:
        found.append(Finding(
            unread.first.line or 0, "license",
            f"{unread.named:,} licence documents named; only the first {unread.cap} are read: "
            f"this License line and the {unread.count - 1:,} other document(s) named after it "
            f"are not, and robotsgate refuses the requests of bots that declare what they "
            f"crawl for (503 license-unavailable), since a licence not read may prohibit it"))
    return found


def _never_matching(rules: Iterable[Rule], reading: Reading) -> list[Finding]:
    found = []
    for rule in rules:
        pattern = rule.pattern
        if not pattern:
            if rule.allow:
                found.append(Finding(rule.line, "no-effect",
                                     "Allow with no path allows nothing; it has no effect"))
            continue
        if pattern.lower().startswith(("http://", "https://")):
            path = "/" + pattern.split("://", 1)[1].partition("/")[2]
            found.append(Finding(rule.line, "never-matches",
                                 f"{rule.text} is a full URL and never matches: rules match "
                                 f"paths, such as {path}"))
        else:
            why = reading.never_matches(rule)
            if why is not None:
                found.append(Finding(rule.line, "never-matches", why))
    return found


def _usage_labels(statements: Iterable[Statement]) -> list[Finding]:
    found = []
    for statement in statements:
        assert statement.line is not None  # every robots.txt statement has one
        signal = statement.source is Source.CONTENT_SIGNAL
        name = "Content-Signal" if signal else "Content-Usage"
        for label in statement.labels:
            why = None
            if signal and label.category is None:
                if label.key not in SIGNAL_OTHERS:
                    why = f"key {label.key!r} is not search, ai-input or ai-train: ignored"
            elif not signal and label.key not in CATEGORIES:
                why = f"label {label.key!r} is not in the vocabulary ({', '.join(CATEGORIES)})"
                if label.key == "ai-train":
                    why += "; ai-train is Content-Signal's name, Content-Usage says train-ai"
                elif label.key in RETIRED:
                    why += "; earlier drafts of the vocabulary had it"
                why += ": ignored"
            elif label.allowed is None:
                values = "yes or no" if signal else "y or n"
                why = f"{label.key}={label.value} is not {values}: the preference is unknown"
            if why is not None:
                found.append(Finding(statement.line, "usage-label", f"{name} {why}"))
    return found


def _policies(robots: RobotsTxt) -> list[tuple[Group, ...]]:
    """The rule sets that decide together: for each agent named, the groups merged for it."""
    if not robots.reading.merges_groups:
        return [(group,) for group in robots.groups]  # one group decides alone
    seen: dict[tuple[int, ...], tuple[Group, ...]] = {}
    for group in robots.groups:
        for agent in group.agents:
            merged = robots.groups_for(agent)
            # A group its own names do not select (a name with no product token) decides
            # nothing for anyone; its rules are still checked against each other.
            policy = merged if any(g is group for g in merged) else (group,)
            seen.setdefault(tuple(id(g) for g in policy), policy)
    return list(seen.values())


def _shadowing(robots: RobotsTxt) -> list[Finding]:
    found: list[Finding] = []
    for groups in _policies(robots):
        entries = [(rule, compiled) for g in groups
                   for rule, compiled in zip(g.rules, g.compiled, strict=True)]
        if robots.reading.first_match:
            found += _first_match_shadows(entries)
        else:
            found += _longest_match_shadows(entries)
    return found


def _verdict(loser: Rule, winner: Rule, why: str) -> Finding:
    if loser.directive != winner.directive:
        return Finding(loser.line, "shadowed",
                       f"{loser.text} never applies: {winner.text} (line {winner.line}) {why}")
    return Finding(loser.line, "redundant",
                   f"{loser.text} is redundant: {winner.text} (line {winner.line}) {why}")


def _first_match_shadows(entries: Sequence[tuple[Rule, str]]) -> list[Finding]:
    """First-match precedence (1994): the first rule in file order whose prefix matches wins."""
    found = []
    earlier: dict[str, Rule] = {}
    for rule, compiled in entries:
        if not compiled:
            continue  # an empty rule matches nothing
        # Any earlier rule that is a prefix of this one matches every path this one matches.
        winner = next((earlier[compiled[:n]] for n in range(1, len(compiled) + 1)
                       if compiled[:n] in earlier), None)
        if winner is not None:
            found.append(_verdict(rule, winner, "comes first and matches every path it matches"))
        earlier.setdefault(compiled, rule)
    return found



def _longest_match_shadows(entries: Sequence[tuple[Rule, str]]) -> list[Finding]:
    """Longest-match precedence (RFC 9309, Google): the longest pattern wins, Allow wins a tie,
    then the earliest line.

    Rule S beats rule R on every path R matches when S ranks higher and S's matches include
    R's. Checked exactly for the cases that occur: equal patterns, and S a plain prefix followed
    by '*' (a trailing '*' adds length without narrowing: "Allow: /a*" outranks "Disallow: /a"
    everywhere). Wildcards inside S are not compared (that would be glob containment).
    """
    ranked = [(rule, compiled, (-len(compiled), 0 if rule.allow else 1, index))
              for index, (rule, compiled) in enumerate(entries) if compiled]
    best: dict[str, tuple[Rank, Rule]] = {}  # pattern -> the best-ranked rule with it
    starred: dict[str, tuple[Rank, Rule]] = {}  # plain prefix before trailing '*' -> best rule
    for rule, compiled, rank in ranked:
        if compiled not in best or rank < best[compiled][0]:
            best[compiled] = (rank, rule)
        # As the matcher reads it: a final '$' after trailing '*'s anchors nothing.
        unanchored = compiled.removesuffix("$")
        body = unanchored.rstrip("*")
        if body != unanchored and "*" not in body and (
                body not in starred or rank < starred[body][0]):
            starred[body] = (rank, rule)
    found = []
    for rule, compiled, rank in ranked:
        top_rank, top = best[compiled]
        if top_rank < rank:
            found.append(_verdict(rule, top, "has the same pattern and takes precedence"))
            continue
        head = _literal_head(compiled)
        for n in range(len(head) + 1):
            cover = starred.get(head[:n])
            if cover is not None and cover[0] < rank and cover[1] is not rule:
                found.append(_verdict(rule, cover[1], "matches every path it matches and is "
                                                      "longer, so it takes precedence"))
                break
    return found


def _literal_head(compiled: str) -> str:
    """What every path a pattern matches starts with."""
    head = compiled.split("*", 1)[0]
    return head[:-1] if head.endswith("$") and "*" not in compiled else head
