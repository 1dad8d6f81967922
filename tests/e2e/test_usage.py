"""End to end: AI usage preferences through a real ``mitmdump -s addon.py``.

Each of the three ways a site states what its content may be used for -- robots.txt
(Content-Usage, Content-Signal), the Content-Usage response header, TDM reservation (header and
META) -- against bots that declare their purposes (robots_purpose, robots_purposes). Assertions
are about what the client got, what the origin saw and what the audit log says.
"""

import socket
from collections.abc import Callable

from .clients import Resp, curl, httpx_call
from .origins import Origin
from .proxy import Proxy

OriginFactory = Callable[..., Origin]
ProxyFactory = Callable[..., Proxy]
HTML = {"Content-Type": "text/html; charset=utf-8"}

# draft-ietf-aipref-attach's own example, for ExampleBot.
ATTACH_EXAMPLE = """User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y
"""


def blocks(gate: Proxy) -> list[dict[str, object]]:
    """Refusals: of a request that never left, or of an answer withheld after it did."""
    return [r for r in gate.audit() if r["event"] in ("block", "would-block", "withheld")]


def test_robots_txt_content_usage_refuses_a_training_bot_before_the_origin_sees_it(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots=ATTACH_EXAMPLE)
    site.route("/page", body="page")
    site.route("/ai-ok/page", body="ok for training")
    gate = proxy(robots_agent="ExampleBot", robots_purpose="train-ai")

    refused = curl(gate, site.url("/page"))
    assert refused.status == 403
    assert refused.header("X-Robotsgate-Reason") == "usage-preference"
    assert refused.header("X-Robotsgate-Rule") == "Content-Usage: train-ai=n"
    assert refused.header("X-Robotsgate-Line") == "4"
    assert "disallow every purpose this bot crawls for (train-ai)" in refused.text
    assert not site.saw("/page"), "refused by robots.txt, yet it reached the origin"

    allowed = curl(gate, site.url("/ai-ok/page"))
    assert (allowed.status, allowed.text) == (200, "ok for training")
    assert allowed.header("X-Robotsgate-Usage") == "train-ai=y"

    # /never/ is disallowed by the rule, not by usage: the older reason stands.
    assert curl(gate, site.url("/never/x")).header("X-Robotsgate-Reason") == "disallowed"

    [record] = [r for r in blocks(gate) if r["reason"] == "usage-preference"]
    assert record["rule"] == "Content-Usage: train-ai=n" and record["line"] == 4
    assert record["purposes"] == "train-ai" and record["status"] == 403
    assert record["group"] == "*" and record["robots_sha256"]


def test_content_signal_sorts_bots_by_their_purposes(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n")
    site.route("/article", body="text")
    gate = proxy(robots_purposes=["TrainBot=train-ai", "SearchBot=search,train-ai"])

    trainer = curl(gate, site.url("/article"), headers={"User-Agent": "TrainBot/1.0"})
    assert trainer.status == 403 and trainer.header("X-Robotsgate-Reason") == "usage-preference"
    assert trainer.header("X-Robotsgate-Rule") == "Content-Signal: search=yes, ai-train=no"

    # One purpose of two allowed: forwarded, and told what it may use the page for.
    searcher = curl(gate, site.url("/article"), headers={"User-Agent": "SearchBot/2.0"})
    assert (searcher.status, searcher.text) == (200, "text")
    assert searcher.header("X-Robotsgate-Usage") == "search=y, train-ai=n"  # as stated
    assert site.count("/article") == 1


def test_the_content_usage_header_withholds_the_body_over_https(
        https_origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = https_origin(robots="User-agent: *\nAllow: /\n")
    site.route("/doc", body="the secret text", headers={"Content-Usage": "train-ai=n"})
    site.route("/open", body="open text", headers={"Content-Usage": "train-ai=y, search=n"})
    gate = proxy(trust_test_ca=True, robots_purpose="train-ai")

    withheld = httpx_call(gate, site.url("/doc"))
    assert withheld.status == 403
    assert withheld.header("X-Robotsgate-Reason") == "usage-preference"
    assert "the secret text" not in withheld.text
    assert "The origin's answer (HTTP 200) was withheld" in withheld.text
    assert site.saw("/doc")  # only the response could say it

    forwarded = httpx_call(gate, site.url("/open"))
    assert (forwarded.status, forwarded.text) == (200, "open text")
    assert forwarded.header("X-Robotsgate-Usage") == "train-ai=y, search=n"

    [record] = blocks(gate)
    assert record["reason"] == "usage-preference" and record["origin_status"] == 200
    assert record["event"] == "withheld"  # the request did reach the origin
    assert record["rule"] == "Content-Usage: train-ai=n" and record["line"] is None


def test_tdm_reservation_by_header_and_by_meta(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    site.route("/reserved", body="data", headers={"tdm-reservation": "1"})
    site.route("/not-reserved", body="data", headers={"tdm-reservation": "0"})
    site.route("/page.html", body=b'<html><head><meta name="tdm-reservation" content="1">'
                                  b"<title>t</title></head><body>words</body></html>",
               headers=HTML)
    miner = proxy(robots_purpose="ai-input")
    searcher = proxy(robots_purpose="search")

    for path in ("/reserved", "/page.html"):
        refused = curl(miner, site.url(path))
        assert refused.status == 403, path
        assert "tdm-reservation" in (refused.header("X-Robotsgate-Rule") or ""), path
    assert curl(miner, site.url("/not-reserved")).status == 200

    # A search bot may have it, and is told what it may not do with it.
    page = curl(searcher, site.url("/page.html"))
    assert page.status == 200 and "words" in page.text
    assert page.header("X-Robotsgate-Usage") == "train-ai=n, ai-input=n"


def test_the_origin_cannot_speak_for_robotsgate(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nContent-Usage: train-ai=n\n")
    site.route("/x", body="x", headers={"X-Robotsgate-Usage": "train-ai=y"})
    gate = proxy(robots_purpose="search")
    assert curl(gate, site.url("/x")).header("X-Robotsgate-Usage") == "train-ai=n"
    quiet = origin(robots="User-agent: *\nAllow: /\n")
    quiet.route("/y", body="y", headers={"X-Robotsgate-Usage": "train-ai=y"})
    assert curl(gate, quiet.url("/y")).header("X-Robotsgate-Usage") is None


def test_unknown_preferences_follow_robots_usage_unknown(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    site.route("/silent", body="silent")
    site.route("/stated", body="stated", headers={"Content-Usage": "search=y"})
    lenient = proxy(robots_purpose="search")
    strict = proxy(robots_purpose="search", robots_usage_unknown="refuse")

    assert curl(lenient, site.url("/silent")).status == 200
    refused = curl(strict, site.url("/silent"))
    assert refused.status == 403
    assert "search: no preference stated (robots_usage_unknown=refuse)" in refused.text
    # The response may still state it: refuse is decided on the origin's answer.
    assert curl(strict, site.url("/stated")).status == 200


def test_monitor_mode_forwards_records_and_still_says_the_usage(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots=ATTACH_EXAMPLE)
    site.route("/page", body="page")
    site.route("/doc", body="doc", headers={"Content-Usage": "search=n"})
    gate = proxy(robots_mode="monitor", robots_purposes=["127.0.0.1=train-ai"])

    page: Resp = curl(gate, site.url("/page"))
    assert (page.status, page.text) == (200, "page")
    assert page.header("X-Robotsgate-Usage") == "train-ai=n"
    doc = curl(gate, site.url("/doc"))
    assert doc.status == 200 and doc.header("X-Robotsgate-Usage") == "train-ai=n, search=n"
    records = blocks(gate)
    # One record per refused request, whether robots.txt or the response said it.
    assert [(r["event"], r["url"].rsplit("/", 1)[1]) for r in records] == \
        [("would-block", "page"), ("would-block", "doc")]


def test_a_streamed_body_refused_on_its_headers_never_reaches_the_bot(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    secret = b"secret text " * 20_000  # 240 KB: streamed past stream_large_bodies
    site.route("/big", body=secret, headers={"Content-Usage": "train-ai=n"})
    site.route("/open", body=secret, headers={"Content-Usage": "train-ai=y"})
    gate = proxy(robots_purpose="train-ai", stream_large_bodies="10k")

    got = httpx_call(gate, site.url("/open"))
    assert got.status == 200 and got.header("X-Robotsgate-Usage") == "train-ai=y"
    assert len(got.text) == len(secret)  # streamed whole when it may be used

    try:
        refused = httpx_call(gate, site.url("/big"))
    except Exception as exc:  # the connection is cut: what a refusal mid-stream looks like
        assert "secret" not in str(exc)
    else:
        assert refused.status != 200 and "secret text" not in refused.text, refused.status
    [record] = blocks(gate)
    assert record["reason"] == "usage-preference" and record["origin_status"] == 200
    assert record["event"] == "withheld"


def chunked(body: bytes, size: int = 4096) -> bytes:
    parts = [body[i:i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


def test_a_body_of_unknown_length_refused_on_its_headers_is_cut_before_it_streams(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    # No Content-Length: mitmproxy only finds the body too large to hold once it has begun,
    # and would then stream it, headers first.
    site = origin(robots="User-agent: *\nAllow: /\n")
    secret = b"secret text " * 30_000
    site.route("/chunked", body=chunked(secret),
               headers={"Transfer-Encoding": "chunked", "Content-Usage": "train-ai=n",
                        "X-Robotsgate-Usage": "train-ai=y"})
    gate = proxy(robots_purpose="train-ai", stream_large_bodies="10k")
    try:
        got = httpx_call(gate, site.url("/chunked"))
    except Exception as exc:
        assert "secret" not in str(exc)
    else:
        assert got.status != 200 and "secret text" not in got.text, got.status
    [record] = blocks(gate)
    assert record["reason"] == "usage-preference" and record["origin_status"] == 200
    assert record["event"] == "withheld"


def test_a_path_written_another_way_has_the_same_usage(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots=ATTACH_EXAMPLE)
    gate = proxy(robots_purpose="train-ai")
    for path in ("/ai-ok/../page", "/ai-ok/%2e%2e/page", "/ai-ok/%2E%2E/page"):
        refused = raw_get(gate, site, path)
        assert refused.startswith(b"HTTP/1.1 403") and b"usage-preference" in refused, path
    assert not any(seen.path.endswith("page") for seen in site.seen), site.paths()


def raw_get(gate: Proxy, site: Origin, path: str) -> bytes:
    """A request line exactly as written (clients would resolve the dot segments)."""
    with socket.create_connection(("127.0.0.1", gate.port), timeout=10) as conn:
        conn.sendall(f"GET http://{site.host}:{site.port}{path} HTTP/1.1\r\n"
                     f"Host: {site.host}:{site.port}\r\nUser-Agent: TestBot/1.0\r\n"
                     f"Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return data


def test_no_usage_header_where_no_body_is_judged(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nContent-Usage: train-ai=y\n")
    site.route("/page", body="page")
    site.route("/same", status=304, body="")
    gate = proxy(robots_purpose="search")
    assert curl(gate, site.url("/page")).header("X-Robotsgate-Usage") == "train-ai=y"
    assert curl(gate, site.url("/page"), method="HEAD").header("X-Robotsgate-Usage") is None
    assert curl(gate, site.url("/same")).header("X-Robotsgate-Usage") is None


def test_each_content_usage_line_counts_most_restrictive_first(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    site.route("/two", body="two", headers={"Content-Usage": ["train-ai=n", "train-ai=y"]})
    site.route("/bad", body="bad", headers={"Content-Usage": ["train-ai=n", "search=y;"]})
    gate = proxy(robots_purpose="train-ai")
    assert curl(gate, site.url("/two")).status == 403  # a later y does not undo an n
    assert curl(gate, site.url("/bad")).status == 403  # an unreadable line leaves the others


def test_a_page_is_not_asked_for_in_pieces_when_its_whole_decides(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    # A TDM META split across two Range requests would be in neither piece.
    site = origin(robots="User-agent: *\nAllow: /\n")
    site.route("/page.html", body=b'<html><head><meta name="tdm-reservation" content="1">'
                                  b"</head><body>words</body></html>", headers=HTML)
    miner, plain = proxy(robots_purpose="ai-input"), proxy()
    assert curl(miner, site.url("/page.html"), headers={"Range": "bytes=0-20"}).status == 403
    assert "range" not in site.seen[-1].headers
    curl(plain, site.url("/page.html"), headers={"Range": "bytes=0-20"})
    assert site.seen[-1].headers.get("range") == "bytes=0-20"  # nothing at stake: untouched


def test_tdmrep_order_the_pages_meta_supersedes_the_header(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    # TDMRep reads its sources in order, the later superseding the earlier: a page sent with
    # `tdm-reservation: 1` whose head says <meta name="tdm-reservation" content="0"> is not
    # reserved, and "0" means "may mine", not "says nothing".
    site = origin(robots="User-agent: *\nAllow: /\n")
    site.route("/page.html", body=b'<html><head><meta name="tdm-reservation" content="0">'
                                  b"</head><body>words</body></html>",
               headers={**HTML, "tdm-reservation": "1"})
    site.route("/reserved.html", body=b'<html><head><meta name="tdm-reservation" content="1">'
                                      b"</head><body>words</body></html>",
               headers={**HTML, "tdm-reservation": "0"})
    miner = proxy(robots_purpose="train-ai")

    page = curl(miner, site.url("/page.html"))
    assert (page.status, "words" in page.text) == (200, True)
    assert page.header("X-Robotsgate-Usage") == "train-ai=y, ai-input=y"
    refused = curl(miner, site.url("/reserved.html"))
    assert refused.status == 403
    assert refused.header("X-Robotsgate-Rule") == '<meta name="tdm-reservation" content="1">'
    assert [r["url"] for r in blocks(miner)] == [site.url("/reserved.html")]


TDMREP = b"""[
  {"location": "/", "tdm-reservation": 1, "tdm-policy": "https://provider.example/policy.json"},
  {"location": "/open/*", "tdm-reservation": 0}
]"""


def test_an_origins_tdmrep_json(origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    site.route("/.well-known/tdmrep.json", body=TDMREP,
               headers={"Content-Type": "application/json"})
    site.route("/article", body="article")
    site.route("/open/article", body="open article")
    site.route("/said-0", body="not reserved here", headers={"tdm-reservation": "0"})
    plain = origin(robots="User-agent: *\nAllow: /\n")  # no tdmrep.json: a 404
    plain.route("/article", body="plain")
    miner = proxy(robots_purpose="ai-input")
    searcher = proxy(robots_purpose="search")

    refused = curl(miner, site.url("/article"))
    assert refused.status == 403 and "article" not in refused.text
    assert refused.header("X-Robotsgate-Reason") == "usage-preference"
    assert refused.header("X-Robotsgate-Rule") == (
        '/.well-known/tdmrep.json: {"location": "/", "tdm-reservation": 1}')
    opened = curl(miner, site.url("/open/article"))
    assert (opened.status, opened.text) == (200, "open article")
    assert opened.header("X-Robotsgate-Usage") == "train-ai=y, ai-input=y"
    # The answer's own header supersedes the file.
    assert curl(miner, site.url("/said-0")).status == 200
    for _ in range(3):
        assert curl(miner, plain.url("/article")).status == 200
    # A search bot is not mining: it has the page, told what it may not do with it.
    searched = curl(searcher, site.url("/article"))
    assert searched.status == 200
    assert searched.header("X-Robotsgate-Usage") == "train-ai=n, ai-input=n"

    # Fetched once per origin and proxy, as the proxy; the absent one too (its 404 kept).
    assert [s.user_agent for s in site.seen if s.path == "/.well-known/tdmrep.json"] == \
        ["robotsgate", "robotsgate"]
    assert plain.count("/.well-known/tdmrep.json") == 1
    [record] = blocks(miner)
    assert record["event"] == "withheld" and record["origin_status"] == 200
    assert record["tdm_policy"] == "https://provider.example/policy.json"
    assert record["rule"] == refused.header("X-Robotsgate-Rule") and record["line"] is None
    assert record["group"] is None and refused.header("X-Robotsgate-Line") is None


def test_tdmrep_json_is_fetched_under_the_egress_policy(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    # The file redirects to an address bots may not reach: not fetched there; what it would
    # reserve is unknown, so mining is refused (for robots_error_ttl), not let through.
    site = origin(robots="User-agent: *\nAllow: /\n")
    hidden = origin(host="127.0.0.2")
    hidden.route("/tdmrep.json", body=b'[{"location": "/", "tdm-reservation": 0}]',
                 headers={"Content-Type": "application/json"})
    site.redirect("/.well-known/tdmrep.json", hidden.url("/tdmrep.json"))
    site.route("/article", body="article")
    miner = proxy(robots_purpose="ai-input", robots_egress_allow=f"127.0.0.1:{site.port}")
    refused = curl(miner, site.url("/article"))
    assert refused.status == 403
    assert "not read" in (refused.header("X-Robotsgate-Rule") or "")
    assert not hidden.seen
