"""TDMRep (W3C TDM Reservation Protocol, Final Community Group Report, 2024-05-10), pure: its
file /.well-known/tdmrep.json read and matched (robotsgate.protocol.tdmrep), its values 1 and 0,
and its own order between its sources (robotsgate.protocol.usage.tdm_decided), apart from
aipref's most-restrictive combination between TDMRep's answer and the other signals
(robotsgate.decision.stated.answer_usage).

The report's property definitions: tdm-reservation 1, TDM rights are reserved; 0, they are not
(so a 0 is a statement, wherever it appears); tdm-policy, the URL of the rights holder's terms.
The file examples below are written after the report's tdmrep.json section (an array of rules,
each with location, tdm-reservation and tdm-policy); its exact text was not at hand when they
were written, so they are not quoted.
"""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robotsgate.decision.stated import NOTHING_STATED, Stated, answer_usage
from robotsgate.pages import read_page
from robotsgate.protocol.tdmrep import MAX_BYTES, read_tdmrep
from robotsgate.protocol.usage import (
    NO_USAGE,
    PreferenceValue,
    Source,
    tdm_decided,
    tdm_reservation,
)

ALLOWED, DISALLOWED = PreferenceValue.ALLOWED, PreferenceValue.DISALLOWED

# One rule for the whole origin, with its policy (the report's first example's shape).
WHOLE_SITE = b"""[
  {
    "location": "/",
    "tdm-reservation": 1,
    "tdm-policy": "https://provider.com/policies/policy.json"
  }
]"""
# Rules per part of the site, one of them not reserved.
BY_PART = b"""[
  {"location": "/images/*", "tdm-reservation": 1,
   "tdm-policy": "https://provider.com/policies/images.json"},
  {"location": "/text/*", "tdm-reservation": 1},
  {"location": "/text/open/*", "tdm-reservation": 0}
]"""


def test_the_whole_site_example_reserves_every_path_with_its_policy() -> None:
    tdmrep = read_tdmrep(WHOLE_SITE)
    assert not tdmrep.problems and not tdmrep.unreadable
    for url in ("https://example.com/", "https://example.com/a/b?c=d", "/x"):
        said = tdmrep.statement(url)
        assert said is not None and said.preference == "1", url
        assert said.policy == "https://provider.com/policies/policy.json"
        assert said.source is Source.TDM_FILE and said.pattern == "/"
        assert said.line is None  # a line is robots.txt's: the rule is named by its location
        assert tdmrep.rule(url).index == 1
        assert said.usage().of("train-ai").value is DISALLOWED
        assert said.usage().of("ai-input").value is DISALLOWED
        assert said.usage().of("search").value is PreferenceValue.UNKNOWN  # search is no TDM


def test_rules_by_part_the_longest_location_decides_and_0_is_a_statement() -> None:
    tdmrep = read_tdmrep(BY_PART)
    images = tdmrep.statement("https://example.com/images/cat.png")
    assert images is not None and images.preference == "1"
    assert images.policy == "https://provider.com/policies/images.json"
    text = tdmrep.statement("https://example.com/text/closed.html")
    assert text is not None and text.preference == "1" and text.policy is None
    # TDMRep's 0: rights not reserved. It says "may mine", which is not silence.
    opened = tdmrep.statement("https://example.com/text/open/a.html")
    assert opened is not None and opened.preference == "0"
    assert tdmrep.rule("https://example.com/text/open/a.html").index == 3
    assert opened.usage().of("train-ai").value is ALLOWED
    assert opened.text == ('/.well-known/tdmrep.json: {"location": "/text/open/*", '
                           '"tdm-reservation": 0}')
    assert tdmrep.statement("https://example.com/about") is None  # no location matches


def test_locations_are_matched_as_robots_txt_patterns() -> None:
    tdmrep = read_tdmrep(json.dumps([
        {"location": "/*.pdf$", "tdm-reservation": 1},
        {"location": "/caf%C3%A9/", "tdm-reservation": 1},
        {"location": "https://example.com/full/", "tdm-reservation": 1}]).encode())
    assert tdmrep.statement("/paper.pdf") is not None
    assert tdmrep.statement("/paper.pdf?x=1") is None  # '$' ends the URL
    assert tdmrep.statement("/café/menu") is not None  # percent-encoding normalised
    assert tdmrep.statement("/full/x") is not None  # a full URL read from its path


def test_what_cannot_be_read() -> None:
    # Values other than 0 and 1 state nothing, and are said; the other rules are still read.
    tdmrep = read_tdmrep(json.dumps([
        {"location": "/a/", "tdm-reservation": 2}, {"location": "/b/", "tdm-reservation": True},
        {"tdm-reservation": 1}, {"location": "/c/", "tdm-reservation": "1"}]).encode())
    assert tdmrep.statement("/a/x") is None and tdmrep.statement("/b/x") is None
    said = tdmrep.statement("/c/x")
    assert said is not None and said.preference == "1"
    assert len(tdmrep.problems) == 3 and not tdmrep.unreadable
    # Not an array of objects, not JSON, too long: unreadable, which is not "nothing reserved".
    for body in (b'{"location": "/"}', b"[1, 2]", b"<html>not found</html>", b"[{",
                 b"[" * 100_000, b"[" + b" " * MAX_BYTES + b"]"):
        assert read_tdmrep(body).unreadable, body[:20]
    assert "line 1, column 3" in read_tdmrep(b"[{").problems[0]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_read_tdmrep_never_raises(body: bytes) -> None:
    tdmrep = read_tdmrep(body)
    tdmrep.statement("/x")


# -- TDMRep's own order between its sources ----------------------------------------------------


def test_only_0_and_1_are_statements() -> None:
    for value in ("1", " 1 ", 1):
        said = tdm_reservation(value, Source.TDM_HEADER)
        assert said is not None and said.usage().of("train-ai").value is DISALLOWED
    for value in ("0", 0):
        said = tdm_reservation(value, Source.TDM_HEADER, policy="https://x/p")
        assert said is not None and said.usage().of("ai-input").value is ALLOWED
        assert said.policy is None  # only a reservation has terms
    for value in ("yes", "", "2", None, True):
        assert tdm_reservation(value, Source.TDM_META) is None  # type: ignore[arg-type]


def test_a_later_source_supersedes_an_earlier_one() -> None:
    file, header, meta = (tdm_reservation("1", Source.TDM_FILE, pattern="/"),
                          tdm_reservation("1", Source.TDM_HEADER),
                          tdm_reservation("0", Source.TDM_META))
    assert tdm_decided(file, header, meta) is meta
    assert tdm_decided(file, None, None) is file
    assert tdm_decided(file, tdm_reservation("0", Source.TDM_HEADER), None).preference == "0"
    assert tdm_decided(None, None, None) is None


def test_the_header_1_and_meta_0_case_is_not_reserved() -> None:
    # The case of the report: a page sent with `tdm-reservation: 1` whose head says
    # <meta name="tdm-reservation" content="0">. The META is the page's own word: rights not
    # reserved, so a mining bot may have it.
    page = read_page(b'<html><head><meta name="tdm-reservation" content="0"></head></html>',
                     now=0.0)
    assert page.tdm_reservation == "0" and not page.tdm_reserved  # recorded, not dropped
    stated = Stated.of([(b"tdm-reservation", b"1")])
    usage, refusal = answer_usage(NO_USAGE, stated, frozenset({"train-ai"}),
                                  tdm_meta=page.tdm_reservation)
    assert refusal is None
    assert usage.render() == "train-ai=y, ai-input=y"
    # Without the META, the header reserves.
    usage, refusal = answer_usage(NO_USAGE, stated, frozenset({"train-ai"}))
    assert refusal is not None and refusal.statement.text == "tdm-reservation: 1"


def test_tdmrep_against_the_other_signals_is_most_restrictive_first() -> None:
    # TDMRep's 0 allows mining; a Content-Usage header that says train-ai=n still disallows
    # it: between different signals, aipref's rule (vocab §5.1), not TDMRep's order.
    stated = Stated.of([(b"Content-Usage", b"train-ai=n"), (b"tdm-reservation", b"0")])
    usage, refusal = answer_usage(NO_USAGE, stated, frozenset({"train-ai"}))
    assert refusal is not None and refusal.statement.text == "Content-Usage: train-ai=n"
    assert usage.of("ai-input").value is ALLOWED
    # The file reserves, the header does not: the header supersedes the file.
    file = read_tdmrep(WHOLE_SITE).statement("/a")
    usage, refusal = answer_usage(NO_USAGE, Stated.of([(b"tdm-reservation", b"0")]),
                                  frozenset({"ai-input"}), tdm_file=file)
    assert refusal is None
    usage, refusal = answer_usage(NO_USAGE, NOTHING_STATED, frozenset({"ai-input"}),
                                  tdm_file=file)
    assert refusal is not None and refusal.statement.policy == \
        "https://provider.com/policies/policy.json"


@pytest.mark.parametrize(("content_type", "refused"), [(b"image/png", True),
                                                       (b"text/html", False)])
def test_noimageai_speaks_of_images_only(content_type: bytes, refused: bool) -> None:
    # DeviantArt's directives: noai, the content may not be used for AI; noimageai, its images
    # may not. A page's own text is no image: the page's images are answers of their own.
    stated = Stated.of([(b"Content-Type", content_type), (b"X-Robots-Tag", b"noimageai")])
    _, refusal = answer_usage(NO_USAGE, stated, frozenset({"train-ai"}),
                              no_ai_header=("noimageai",))
    assert (refusal is not None) is refused
    # A page's META noimageai: its images may not be used, the page may.
    _, refusal = answer_usage(NO_USAGE, Stated.of([(b"Content-Type", b"text/html")]),
                              frozenset({"train-ai"}), no_ai_meta=("noimageai",))
    assert refusal is None
