"""What reading page-level robots signals costs the proxy per HTML response.

    .venv/bin/python scripts/bench_pages.py [--repeats R]

Times robotsgate.pages.Pages.annotate (what the response hook calls) on generated pages, best of
R runs, as milliseconds and pages per second: a 100 KiB page with no signal (the byte check
skips it), one that names robots only in its text (it is parsed, nothing is found), the same
page with META nofollow and with a nofollow section (its links are remembered), strip mode, and
pages at the 2 MiB cap. The ratio is against the standard library's html.parser doing nothing
but parse the same page: a yardstick that does not change with robotsgate.
"""

import argparse
import sys
import time
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from robotsgate.pages import MAX_PAGE_BYTES, PageConfig, Pages

ROW = ('<div class="item"><h2>Item {i}</h2><p>Some descriptive text about item {i}, &amp; a '
       'little more of it.</p><a href="/items/{i}?ref=list">item {i}</a></div>\n')


def make_page(size: int, head: str = "", section: bool = False) -> bytes:
    rows: list[str] = []
    total = 0
    i = 0
    while total < size:
        row = ROW.format(i=i)
        if section and i == 10:
            row = f'<!-- robots content="nofollow" -->{row}<!-- /robots -->\n'
        rows.append(row)
        total += len(row)
        i += 1
    return (f"<!DOCTYPE html><html><head><title>t</title>{head}"
            f'<meta charset="utf-8"></head><body>{"".join(rows)}</body></html>').encode()


def best(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    pages = Pages(PageConfig(), time.time, time.monotonic)
    stripping = Pages(PageConfig(strip=True), time.time, time.monotonic)
    nofollow = '<meta name="robots" content="nofollow">'
    cases = [
        ("100 KiB, no signal", pages, make_page(100 * 1024)),
        ("100 KiB, 'robots' in text", pages,
         make_page(100 * 1024, "<title>robots and their friends</title>")),
        ("100 KiB, META nofollow", pages, make_page(100 * 1024, nofollow)),
        ("100 KiB, nofollow section", pages, make_page(100 * 1024, section=True)),
        ("100 KiB, section, strip", stripping, make_page(100 * 1024, section=True)),
        ("2 MiB, no signal", pages, make_page(MAX_PAGE_BYTES - 1024)),
        ("2 MiB, META nofollow", pages, make_page(MAX_PAGE_BYTES - 1024, nofollow)),
    ]
    print(f"{'page':30s} {'annotate':>10s} {'pages/s':>8s} {'html.parser':>11s} {'ratio':>6s}")
    for name, glue, body in cases:
        def annotate(glue: Pages = glue, body: bytes = body) -> object:
            return glue.annotate(url="http://example.com/p", method="GET", status=200,
                                 agent=None, user_agent="BenchBot/1.0",
                                 content_type="text/html; charset=utf-8", x_robots_tag=[],
                                 raw=body)

        def bare(body: bytes = body) -> None:
            p = HTMLParser()
            p.feed(body.decode())
            p.close()

        cost = best(annotate, args.repeats)
        baseline = best(bare, args.repeats)
        print(f"{name:30s} {cost * 1000:7.2f} ms {1 / cost:8.0f} {baseline * 1000:8.2f} ms "
              f"{cost / baseline:6.2f}")


if __name__ == "__main__":
    main()
