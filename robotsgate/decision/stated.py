"""What an answer states of its own use, and what that makes of a request's usage: the one
judgement of an answer's usage preferences, which the proxy (robotsgate.mitm.usage) and
`robotsgate check` both make. No mitmproxy types: header fields in, values out.

The statements, and the rule that joins each:

- robots.txt's Content-Usage and Content-Signal for the path (the gate's Verdict.usage);
- each Content-Usage field line of the answer, on its own (joined into one Dictionary, a later
  `train-ai=y` would override an earlier `n`, and one unreadable line would make every other
  unknown); a line longer than MAX_PREFERENCE is not parsed;
- TDMRep: the origin's /.well-known/tdmrep.json rule for the path (robotsgate.licensing.tdmrep), the
  answer's tdm-reservation header, the page's META: TDMRep's own order decides between them (the
  last of those that say 1 or 0: robotsgate.protocol.usage.tdm_decided), and "0" is a statement
  (train-ai=y, ai-input=y);
- noai (and noimageai, for an image) in the answer's X-Robots-Tag or the page's META.

Between those four, aipref's rule: most restrictive first (robotsgate.protocol.usage.combine).
"""

from collections.abc import Sequence
from dataclasses import dataclass

from robotsgate.decision.purposes import Purposes, UsageRefusal, refused
from robotsgate.pages.directives import Directives, read_header
from robotsgate.protocol.usage import (
    CATEGORIES,
    Source,
    Statement,
    Usage,
    combine,
    no_ai,
    read_statement,
    tdm_decided,
    tdm_reservation,
)

MAX_PREFERENCE = 8192  # characters of one Content-Usage field line that are read
_CATEGORIES = frozenset(CATEGORIES)


@dataclass(frozen=True, slots=True)
class Stated:
    """What an answer's headers state about its use, read in one pass over its raw fields."""

    lines: tuple[bytes, ...]  # Content-Usage field lines
    tdm: str | None  # tdm-reservation: "1" or "0" (of several lines, a "1" counts); None: none
    robots_tags: tuple[bytes, ...] = ()  # X-Robots-Tag lines that may say noai or noimageai
    image: bool = False  # an image (Content-Type image/...): noimageai speaks of it
    tdm_policy: str | None = None  # TDMRep's tdm-policy: the URL of the rights holder's terms
    ours: bool = False  # the answer carries an X-Robotsgate-Usage of its own

    @classmethod
    def of(cls, fields: Sequence[tuple[bytes, bytes]]) -> "Stated":
        names = b"\n".join([name for name, _ in fields]).lower()
        # `find`, not `in`: `bytes in bytes` makes and drops a TypeError before it searches.
        if max(map(names.find, _STATING)) < 0:
            return NOTHING_STATED  # nearly every answer: one look at its names, no loop
        lines: list[bytes] = []
        robots_tags: list[bytes] = []
        tdm: str | None = None
        ours = image = False
        policy = None
        for name, value in fields:
            size = len(name)  # a length first: most names are none of these
            if size == 13 and name.lower() == b"content-usage":
                lines.append(value)
            elif size == 15 and name.lower() == b"tdm-reservation":
                said = value.strip()
                # TDMRep: 1 reserves, 0 does not; of two lines that disagree, the reservation.
                if said == b"1" or (said == b"0" and tdm is None):
                    tdm = said.decode("ascii")
            elif size == 18 and name.lower() == b"x-robotsgate-usage":
                ours = True
            elif size == 12 and name.lower() == b"x-robots-tag":
                lowered = value.lower()
                if lowered.find(b"noai") >= 0 or lowered.find(b"noimageai") >= 0:
                    robots_tags.append(value)
            elif size == 12 and name.lower() == b"content-type":
                image = value.lstrip().lower().startswith(b"image/")
            elif size == 10 and name.lower() == b"tdm-policy" and policy is None:
                policy = value.decode("utf-8", "surrogateescape").strip()
        return cls(tuple(lines), tdm, tuple(robots_tags), image, policy, ours)


# The names Stated reads for (Content-Type alone says nothing), or within another name's: then
# the fields are read one by one.
_STATING = (b"content-usage", b"tdm-", b"x-robotsgate-usage", b"x-robots-tag")
NOTHING_STATED = Stated((), None)


def no_ai_of(lines: tuple[bytes, ...], names: frozenset[str]) -> tuple[str, ...]:
    """noai, noimageai as X-Robots-Tag lines say them for an agent answering to `names` (for
    every agent, or `mybot: noai`, as the page reading reads them)."""
    reading = Directives()
    for line in lines:
        read_header(line.decode("utf-8", "surrogateescape"), names, reading, [])
    return tuple(reading.no_ai)


def answer_usage(robots: Usage, stated: Stated, purposes: Purposes, *,
                 tdm_file: Statement | None = None, tdm_meta: str | None = None,
                 meta_policy: str | None = None, no_ai_header: tuple[str, ...] = (),
                 no_ai_meta: tuple[str, ...] = (), unknown_refused: bool = False
                 ) -> tuple[Usage, UsageRefusal | None]:
    """The usage an answer is forwarded with, and the refusal when it disallows every declared
    purpose. `robots`: robots.txt's (Verdict.usage); `tdm_file`: the tdmrep.json rule for the
    URL (Verdict.tdm); `tdm_meta`, `meta_policy`: the page's META tdm-reservation and
    tdm-policy; `no_ai_header`: noai, noimageai of the answer's X-Robots-Tag for this agent
    (no_ai_of); `no_ai_meta`: those of the page's META."""
    said = [robots]
    for line in stated.lines:
        # Each field line on its own, most restrictive first: joined into one Dictionary
        # (RFC 9110 §5.3), a later "train-ai=y" would override an earlier "n", and one
        # unreadable line would make every other unknown. A line past the limit is not
        # parsed (it says nothing): its cost would be the whole proxy's.
        if len(line) <= MAX_PREFERENCE:
            said.append(read_statement(Source.HEADER, line).usage())
    tdm = tdm_decided(
        tdm_file,
        tdm_reservation(stated.tdm, Source.TDM_HEADER, policy=stated.tdm_policy),
        tdm_reservation(tdm_meta, Source.TDM_META, policy=meta_policy))
    if tdm is not None:
        said.append(tdm.usage())
    # noimageai: "images on this page" may not be used (DeviantArt's directive): it speaks of
    # an image answer, and of nothing else; a page's own text is not an image.
    image = stated.image
    said += [no_ai(name, header=True).usage() for name in no_ai_header
             if image or name == "noai"]
    said += [no_ai(name, header=False).usage() for name in no_ai_meta
             if image or name == "noai"]
    usage = combine(*said).only(_CATEGORIES | purposes)
    return usage, refused(usage, purposes, unknown_refused=unknown_refused)
