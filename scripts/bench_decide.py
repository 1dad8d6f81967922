"""Decision speed of robotsgate's robots.txt engine next to Protego and urllib.robotparser.

    .venv/bin/python scripts/bench_decide.py [--decisions N] [--repeats R]

One robots.txt typical of a large site (about 200 rules in several groups, literal prefixes and
wildcards, like the lists Wikipedia and Amazon publish) is parsed once by each library; then the
same mix of URLs and agents is decided N times (100,000 by default), best of R runs, and the
cost per decision is printed with its ratio to Protego. A second table times one pathological
wildcard rule against a 5,000-character path, where a backtracking matcher explodes.
"""

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.robotparser import RobotFileParser

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protego import Protego

from robotsgate.protocol import RobotsTxt

# --------------------------------------------------------------------------------------------
# A realistic robots.txt
# --------------------------------------------------------------------------------------------

WIKI_SPECIAL = ["Search", "Random", "RecentChanges", "Export", "Book", "Contributions",
                "Log", "Watchlist", "WhatLinksHere", "Preferences", "MovePage", "Block",
                "Undelete", "Userlogin", "CreateAccount", "Emailuser", "ListUsers",
                "PrefixIndex", "AllPages", "Cite", "Newpages", "Upload", "ComparePages"]
WIKI_NAMESPACES = ["Wikipedia:Articles_for_deletion/", "Wikipedia:Votes_for_deletion/",
                   "Wikipedia:Copyright_problems/", "Wikipedia:Requests_for_arbitration/",
                   "Wikipedia:Sockpuppet_investigations/",
                   "Wikipedia:Administrators%27_noticeboard",
                   "Wikipedia_talk:Articles_for_deletion/", "Wikipedia:Long-term_abuse",
                   "Wikipedia:Mediation_Committee/", "Wikipedia:Requests_for_comment/",
                   "Wikipedia:Suspected_sock_puppets/", "Wikipedia:Deletion_review/",
                   "User:", "User_talk:", "Talk:", "Template_talk:"]
SHOP_PATHS = ["/exec/obidos/account-access-login", "/exec/obidos/change-style",
              "/exec/obidos/flex-sign-in", "/exec/obidos/handle-buy-box",
              "/exec/obidos/tg/cm/member/",
              "/gp/aw/help/id=sss", "/gp/cart", "/gp/flex", "/gp/product/e-mail-friend",
              "/gp/product/product-availability", "/gp/product/rate-this-item",
              "/gp/sign-in", "/gp/reader", "/gp/sitbv3/reader", "/gp/richpub/syltguides/create",
              "/gp/history", "/gp/item-dispatch", "/gp/gfix", "/gp/wishlist/universal",
              "/gp/customer-reviews/write-a-review.html", "/gp/registry/wishlist/*/reserve",
              "/gp/structured-ratings/actions/get-experience.html", "/gp/offer-listing/",
              "/gp/slredirect/", "/gp/help/customer/express/c2c/", "/gp/pdp/rate-this-item",
              "/gp/music/wma-pop-up", "/gp/customer-images", "/gp/associates/",
              "/gp/video/detail/*/ref=atv_dp_", "/hz/wishlist/", "/hz/contact-us/",
              "/ap/signin", "/ap/register", "/ap/cnep", "/ap/forgotpassword", "/checkout/",
              "/dp/product-description/", "/dp/shipping/", "/dp/twister-update/",
              "/dp/e-mail-friend/",
              "/dp/rate-this-item/", "/product-reviews/*/ref=cm_cr_arp_d_paging",
              "/*/product-reviews/", "/*/dp/*/ref=sr_", "/*/b/*?rh=", "/*?ie=UTF8&*psc=",
              "/*&pf_rd_", "/*?*sessionid=", "/*.pdf$", "/*.json$", "/s?k=*&rh=", "/s?*&page=",
              "/b?ie=UTF8&node=*&bbn=", "/gp/search/", "/gp/bestsellers/*/ref=zg_bs_pg_"]
# Special pages of the language editions, written raw (UTF-8) as most sites do.
LOCAL_SPECIAL = [("de", "Spezial:"), ("fr", "Spécial:"), ("es", "Especial:"), ("it", "Speciale:"),
                 ("nl", "Speciaal:"), ("pl", "Specjalna:"), ("pt", "Especial:"),
                 ("ru", "Служебная:"), ("ja", "特別:"), ("fi", "Toiminnot:"), ("no", "Spesial:"),
                 ("cs", "Speciální:"), ("ko", "특수:"), ("uk", "Спеціальна:"), ("tr", "Özel:"),
                 ("ar", "خاص:"), ("he", "מיוחד:"), ("ca", "Especial:"), ("hu", "Speciális:"),
                 ("da", "Speciel:"), ("id", "Istimewa:"), ("vi", "Đặc_biệt:"), ("el", "Ειδικό:"),
                 ("sv", "Special:"), ("zh", "Special:"), ("ro", "Special:")]
SHOP_ALLOWS = ["/gp/help/customer/display.html", "/gp/offer-listing/B0", "/wishlist/universal*",
               "/wishlist/vendor-button*", "/wishlist/get-button*", "/gp/wishlist/ipad-install*",
               "/gp/dmusic/promotions/AmazonMusicUnlimited", "/gp/video/dvd", "/s?k=",
               "/b?node=", "/dp/", "/*/dp/"]


def realistic_robots() -> str:
    lines = ["# robots.txt for a large site", "", "Sitemap: https://www.example.org/sitemap.xml",
             "Sitemap: https://www.example.org/sitemap-products.xml", ""]
    for bot in ("MJ12bot", "Mediapartners-Google*", "UbiCrawler", "DOC", "Zao",
                "sitecheck.internetseer.com", "Zealbot", "MSIECrawler", "SiteSnagger",
                "WebStripper", "WebCopier", "Fetch",
                "Offline Explorer", "Teleport", "TeleportPro", "WebZIP", "linko", "HTTrack",
                "Microsoft.URL.Control", "Xenu", "larbin", "libwww", "ZyBORG", "Download Ninja",
                "wget", "grub-client", "k2spider", "NPBot", "WebReaper"):
        lines.append(f"User-agent: {bot}")
    lines += ["Disallow: /", ""]
    lines += ["User-agent: Googlebot", "User-agent: Bingbot", "Crawl-delay: 1",
              "Allow: /w/api.php?action=mobileview&", "Allow: /w/load.php?",
              "Allow: /api/rest_v1/?doc", "Disallow: /w/", "Disallow: /api/", "Disallow: /trap/",
              "Disallow: /wiki/Special:", "Disallow: /*?*action=edit", "Disallow: /*/cart",
              "Disallow: /gp/cart", "Disallow: /*.pdf$", ""]
    lines += ["User-agent: *", "Crawl-delay: 2", "Allow: /w/api.php?action=mobileview&",
              "Allow: /w/load.php?", "Allow: /api/rest_v1/?doc", "Disallow: /w/", "Disallow: /api/",
              "Disallow: /trap/", "Disallow: /wiki/Special:", "Disallow: /wiki/Spezial:",
              "Disallow: /wiki/Spesial:", "Disallow: /wiki/Special%3A",
              "Disallow: /wiki/Spezial%3A",
              "Disallow: /*?*action=edit", "Disallow: /*?*action=history", "Disallow: /*?*oldid=",
              "Disallow: /*?*diff=", "Disallow: /*?*printable=yes"]
    for name in WIKI_SPECIAL:
        lines.append(f"Disallow: /wiki/Special:{name}")
        lines.append(f"Disallow: /wiki/Special%3A{name}")
    for namespace in WIKI_NAMESPACES:
        lines.append(f"Disallow: /wiki/{namespace}")
        lines.append(f"Disallow: /wiki/{namespace.replace(':', '%3A')}")
    lines += [f"Disallow: {path}" for path in SHOP_PATHS]
    lines += [f"Allow: {path}" for path in SHOP_ALLOWS]
    lines += [f"Disallow: /{lang}/wiki/{special}" for lang, special in LOCAL_SPECIAL]
    lines.append("")
    return "\n".join(lines)


AGENTS = ["ExampleBot", "ExampleBot", "ExampleBot", "Googlebot", "bingbot", "wget"]

URLS = [
    "https://www.example.org/",
    "https://www.example.org/wiki/Main_Page",
    "https://www.example.org/wiki/Robots_exclusion_standard",
    "https://www.example.org/wiki/Special:Search?search=robots&go=Go",
    "https://www.example.org/wiki/Special:RecentChanges",
    "https://www.example.org/wiki/Wikipedia:Articles_for_deletion/Some_page",
    "https://www.example.org/wiki/User:Example/sandbox",
    "https://www.example.org/wiki/Talk:Python_(programming_language)",
    "https://www.example.org/w/index.php?title=Robots&action=edit",
    "https://www.example.org/w/index.php?title=Robots&oldid=123456",
    "https://www.example.org/w/load.php?modules=startup&only=scripts",
    "https://www.example.org/w/api.php?action=mobileview&page=Robots",
    "https://www.example.org/api/rest_v1/page/summary/Robots",
    "https://www.example.org/wiki/%E3%83%AD%E3%83%9C%E3%83%83%E3%83%88",
    "https://www.example.org/wiki/Caf%C3%A9",
    "https://www.example.org/de/wiki/Spezial:Suche",
    "https://www.example.org/ru/wiki/%D0%A1%D0%BB%D1%83%D0%B6%D0%B5%D0%B1%D0%BD%D0%B0%D1%8F:Search",
    "https://www.example.org/ja/wiki/特別:検索",
    "https://www.example.org/dp/B08N5WRWNW",
    "https://www.example.org/Some-Product-Name/dp/B08N5WRWNW/ref=sr_1_1?keywords=robot",
    "https://www.example.org/Some-Product-Name/product-reviews/B08N5WRWNW",
    "https://www.example.org/gp/cart/view.html?ref_=nav_cart",
    "https://www.example.org/gp/help/customer/display.html?nodeId=508510",
    "https://www.example.org/gp/offer-listing/B08N5WRWNW",
    "https://www.example.org/s?k=robot+vacuum&rh=n%3A1055398",
    "https://www.example.org/s?k=robot+vacuum",
    "https://www.example.org/b?ie=UTF8&node=16225009011&bbn=1",
    "https://www.example.org/manuals/robot-x1.pdf",
    "https://www.example.org/manuals/robot-x1.pdf?download=1",
    "https://www.example.org/static/css/site.css",
    "https://www.example.org/images/logo.png",
    "https://www.example.org/checkout/step1",
    "https://www.example.org/ap/signin?openid.return_to=https%3A%2F%2Fwww.example.org%2F",
    "https://www.example.org/product?id=1&sessionid=abcdef",
]

# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


def best_of(repeats: int, run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def queries(count: int) -> list[tuple[str, str]]:
    pairs = [(agent, url) for url in URLS for agent in AGENTS]
    return [pairs[i % len(pairs)] for i in range(count)]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--decisions", type=int, default=100_000)
    options.add_argument("--repeats", type=int, default=5)
    args = options.parse_args()

    text = realistic_robots()
    work = queries(args.decisions)

    rfc = RobotsTxt.parse(text)
    google = RobotsTxt.parse(text, semantics="google")
    protego = Protego.parse(text)
    stdlib = RobotFileParser()
    stdlib.parse(text.splitlines())

    deciders: list[tuple[str, Callable[[str, str], bool]]] = [
        ("robotsgate rfc9309", lambda agent, url: rfc.decide(agent, url).allowed),
        ("robotsgate google", lambda agent, url: google.decide(agent, url).allowed),
        ("Protego", lambda agent, url: protego.can_fetch(url, agent)),
        ("urllib.robotparser", lambda agent, url: stdlib.can_fetch(agent, url)),
    ]

    rules = sum(len(group.rules) for group in rfc.groups)
    print(f"robots.txt: {len(text):,} bytes, {len(rfc.groups)} groups, {rules} rules "
          f"({sum('*' in r.pattern for g in rfc.groups for r in g.rules)} with '*'); "
          f"{len(URLS)} URLs x {len(AGENTS)} agents")
    print(f"{args.decisions:,} decisions per run, best of {args.repeats} runs "
          f"(Python {sys.version.split()[0]})")
    print()

    per_decision: dict[str, float] = {}
    disallowed: dict[str, int] = {}
    for name, decide in deciders:
        for agent, url in work[:500]:  # warm caches (compiled policies, matched groups)
            decide(agent, url)

        def run(decide: Callable[[str, str], bool] = decide) -> None:
            for agent, url in work:
                decide(agent, url)

        per_decision[name] = best_of(args.repeats, run) / len(work)
        disallowed[name] = sum(not decide(agent, url) for agent, url in work[:len(URLS) *
                                                                            len(AGENTS)])

    header = f"{'library':<22}{'µs / decision':>15}{'vs Protego':>14}{'disallowed':>13}"
    print(header)
    print("-" * len(header))
    protego_cost = per_decision["Protego"]
    for name, cost in per_decision.items():
        ratio = protego_cost / cost
        speed = f"{ratio:.1f}x faster" if ratio >= 1 else f"{1 / ratio:.1f}x slower"
        print(f"{name:<22}{cost * 1e6:>15.2f}{speed:>14}"
              f"{disallowed[name]:>8} / {len(URLS) * len(AGENTS)}")
    ratio = protego_cost / per_decision["robotsgate rfc9309"]
    verdict = "met" if ratio >= 5 else "NOT met"
    print(f"\ntarget robotsgate (rfc9309) >= 5x faster than Protego: {ratio:.1f}x, {verdict}")

    pathological(args.repeats)


def pathological(repeats: int) -> None:
    rule = "/*a*a*a*a*a*a*a*a*b"
    text = f"User-agent: *\nDisallow: {rule}\n"
    cases = [("no match (5,000 x 'a')", "/" + "a" * 4999, True),
             ("match (4,998 x 'a' + 'b')", "/" + "a" * 4998 + "b", False)]
    print(f"\nDisallow: {rule} against a 5,000-character path (µs per decision, best of "
          f"{max(repeats, 5)})")
    header = f"{'path':<28}{'robotsgate rfc9309':>20}{'robotsgate google':>19}{'Protego':>12}"
    print(header)
    print("-" * len(header))
    rfc = RobotsTxt.parse(text)
    google = RobotsTxt.parse(text, semantics="google")
    protego = Protego.parse(text)
    worst = 0.0
    for label, path, expected in cases:
        url = "https://www.example.org" + path
        assert rfc.decide("bot", url).allowed is expected
        assert google.decide("bot", url).allowed is expected
        assert protego.can_fetch(url, "bot") is expected
        costs = [best_of(max(repeats, 5), decide)
                 for decide in (lambda url=url: rfc.decide("bot", url),
                                lambda url=url: google.decide("bot", url),
                                lambda url=url: protego.can_fetch(url, "bot"))]
        worst = max(worst, costs[0], costs[1])
        print(f"{label:<28}{costs[0] * 1e6:>20.1f}{costs[1] * 1e6:>19.1f}{costs[2] * 1e6:>12.1f}")
    verdict = "met" if worst < 1e-3 else "NOT met"
    print(f"\ntarget < 1 ms per decision: worst {worst * 1e6:.1f} µs, {verdict}")


if __name__ == "__main__":
    main()
