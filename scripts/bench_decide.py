"""Decision speed of robotsgate's robots.txt engine next to Protego and urllib.robotparser.

    .venv/bin/python scripts/bench_decide.py [--against REV] [--rounds N] [--repeats R]

Two workloads, each decided by every library, best of R runs:

- shop: ../shared/bench/shop-robots.txt (a large shop's file, about 200 rules in four groups,
  half of them with '*' or '$') and the 20,000 requests of shop-requests.tsv: the workload the
  target is judged on (robotsgate at least 5 times Protego's speed);
- wiki: this script's own file (about 200 rules, mostly literal prefixes, like the lists
  Wikipedia and Amazon publish) and 34 URLs x 6 agents, repeated to --decisions.

With --against REV, robotsgate as it was at that git revision (a temporary worktree) is measured
in the same run: each round runs this checkout and REV one after the other in fresh processes,
N rounds, and the table shows both, their ratio (now/then: below 1 is faster now), and each one's
speed next to Protego measured in the same process. A last table times one pathological wildcard
rule against a 5,000-character path, where a backtracking matcher explodes.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.robotparser import RobotFileParser

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO.parent / "shared" / "bench"
# The robotsgate measured: this checkout, or (the child of --against) another revision's.
sys.path.insert(0, os.environ.get("ROBOTSGATE_BENCH_ROOT", str(REPO)))

from protego import Protego  # noqa: E402

from robotsgate.protocol import RobotsTxt  # noqa: E402

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


def workloads(decisions: int) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """name -> (robots.txt, [(agent, URL)])."""
    rows = [line.split("\t") for line in
            (BENCH / "shop-requests.tsv").read_text().splitlines()[1:] if line]
    return {"shop": ((BENCH / "shop-robots.txt").read_text(),
                     [(agent, url) for agent, url in rows]),
            "wiki": (realistic_robots(), queries(decisions))}


def deciders(text: str, *, slow: bool) -> list[tuple[str, Callable[[str, str], bool]]]:
    rfc = RobotsTxt.parse(text)
    google = RobotsTxt.parse(text, semantics="google")
    protego = Protego.parse(text)
    out: list[tuple[str, Callable[[str, str], bool]]] = [
        ("robotsgate rfc9309", lambda agent, url: rfc.decide(agent, url).allowed),
        ("robotsgate google", lambda agent, url: google.decide(agent, url).allowed),
        ("Protego", lambda agent, url: protego.can_fetch(url, agent)),
    ]
    if slow:
        stdlib = RobotFileParser()
        stdlib.parse(text.splitlines())
        out.append(("urllib.robotparser", lambda agent, url: stdlib.can_fetch(agent, url)))
    return out


def measure(text: str, work: list[tuple[str, str]], repeats: int, *, slow: bool
            ) -> dict[str, tuple[float, int]]:
    """library -> (seconds per decision, decisions disallowed)."""
    found = {}
    for name, decide in deciders(text, slow=slow):
        for agent, url in work[:500]:  # warm caches (compiled policies, matched groups)
            decide(agent, url)

        def run(decide: Callable[[str, str], bool] = decide) -> None:
            for agent, url in work:
                decide(agent, url)

        cost = best_of(repeats, run) / len(work)
        found[name] = (cost, sum(not decide(agent, url) for agent, url in work))
    return found


def describe(name: str, text: str, work: list[tuple[str, str]]) -> str:
    robots = RobotsTxt.parse(text)
    rules = [rule for group in robots.groups for rule in group.rules]
    wild = sum("*" in rule.pattern or rule.pattern.endswith("$") for rule in rules)
    return (f"{name}: {len(text.encode()):,} bytes, {len(robots.groups)} groups, {len(rules)} "
            f"rules ({wild} with '*' or '$'), {len(work):,} decisions per run")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--decisions", type=int, default=20_000,
                         help="decisions per run of the wiki workload (the shop's are its own)")
    options.add_argument("--repeats", type=int, default=5, help="runs, the best one kept")
    options.add_argument("--against", metavar="REV",
                         help="also measure robotsgate at this git revision, interleaved")
    options.add_argument("--rounds", type=int, default=3,
                         help="with --against: rounds, each running both revisions")
    options.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = options.parse_args()
    loads = workloads(args.decisions)
    if args.child:  # one process's measures, for --against
        print(json.dumps({name: {lib: cost for lib, (cost, _) in
                                 measure(text, work, args.repeats, slow=False).items()}
                          for name, (text, work) in loads.items()}))
        return
    print(f"Python {sys.version.split()[0]}; best of {args.repeats} runs")
    for name, (text, work) in loads.items():
        print(describe(name, text, work))
    if args.against:
        against(args, loads)
    else:
        for name, (text, work) in loads.items():
            table(name, measure(text, work, args.repeats, slow=True))
    pathological(args.repeats)


def table(name: str, found: dict[str, tuple[float, int]]) -> None:
    print()
    header = f"{name:<22}{'µs / decision':>15}{'vs Protego':>14}{'disallowed':>12}"
    print(header)
    print("-" * len(header))
    protego_cost = found["Protego"][0]
    for library, (cost, disallowed) in found.items():
        ratio = protego_cost / cost
        speed = f"{ratio:.1f}x faster" if ratio >= 1 else f"{1 / ratio:.1f}x slower"
        print(f"{library:<22}{cost * 1e6:>15.2f}{speed:>14}{disallowed:>12,}")
    ratio = protego_cost / found["robotsgate rfc9309"][0]
    if name == "shop":
        print(f"target robotsgate (rfc9309) >= 5x faster than Protego: {ratio:.1f}x, "
              f"{'met' if ratio >= 5 else 'NOT met'}")


def against(args: argparse.Namespace, loads: dict[str, object]) -> None:
    """This checkout and REV, each round in fresh processes one after the other."""
    with tempfile.TemporaryDirectory(prefix="bench-decide-") as workdir:
        then = Path(workdir) / "then"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(then),
                        args.against], check=True)
        try:
            rounds: dict[str, list[dict[str, dict[str, float]]]] = {"now": [], "then": []}
            for _ in range(args.rounds):
                for which, root in (("now", REPO), ("then", then)):
                    done = subprocess.run(
                        [sys.executable, __file__, "--child", "--repeats", str(args.repeats),
                         "--decisions", str(args.decisions)],
                        env={**os.environ, "ROBOTSGATE_BENCH_ROOT": str(root)},
                        capture_output=True, text=True, check=True)
                    rounds[which].append(json.loads(done.stdout))
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(then)],
                           check=False)
    print(f"\nnow: this checkout; then: {args.against}; {args.rounds} interleaved rounds, "
          "each figure the best of its round's runs, the range over rounds")
    header = (f"{'workload':<9}{'library':<20}{'now µs':>14}{'then µs':>14}{'now/then':>12}"
              f"{'now vs Protego':>16}{'then vs Protego':>17}")
    print(header)
    print("-" * len(header))

    def span(values: list[float], digits: int = 2) -> str:
        return f"{min(values):.{digits}f}-{max(values):.{digits}f}"
    for name in loads:
        for library in ("robotsgate rfc9309", "robotsgate google"):
            now = [r[name][library] * 1e6 for r in rounds["now"]]
            then_ = [r[name][library] * 1e6 for r in rounds["then"]]
            ratio = [a / b for a, b in zip(now, then_, strict=True)]
            vs_now = [r[name]["Protego"] / r[name][library] for r in rounds["now"]]
            vs_then = [r[name]["Protego"] / r[name][library] for r in rounds["then"]]
            print(f"{name:<9}{library:<20}{span(now):>14}{span(then_):>14}{span(ratio):>12}"
                  f"{span(vs_now, 1) + 'x':>16}{span(vs_then, 1) + 'x':>17}")
    worst = min(r["shop"]["Protego"] / r["shop"]["robotsgate rfc9309"] for r in rounds["now"])
    print(f"target robotsgate (rfc9309) >= 5x faster than Protego on shop: worst round "
          f"{worst:.1f}x, {'met' if worst >= 5 else 'NOT met'}")


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
