"""What robotsgate costs on top of mitmproxy itself, and what signing its requests costs.

Starts nginx as a fast local origin serving ../shared/bench/proxy-robots.txt, a plain
`mitmdump`, `mitmdump -s addon.py` (gate) and `robotsgate serve` (serve), robots.txt cached, the
bots Googlebot (whose group has no Crawl-delay), and drives them in turn in the same run with
wrk, which speaks to proxies through absolute-form request targets. For keep-alive and a new
connection per request, at concurrency 1, 10 and 50: requests/s, CPU per request, and the ratios
gate / plain and serve / plain -- for an allowed page, and for a path robotsgate answers 403
itself. Each round runs the proxies back to back (the order turning each round); a ratio is the
median of the rounds' ratios, printed with their range. Each round measures processes of its
own (`--launches`, by default one launch of every proxy per round, all started before the
first cell): one process can run 5-10% slower than another of the same code for as long as it
lives, so a run on one launch of each would carry that launch's luck into every cell.
Target: serve / plain >= 1.3 for allowed keep-alive requests (serve leaves out the mitmdump
addons nothing asked for). gate / plain is printed, not a target: the gate's target is within
3% of a script whose hooks do nothing (scripts/bench_parts.py), plus the counted-work guard in
CI (tests/test_work_budget.py).

With `--signed` (`--signed-only`: it alone), a second table measures Web Bot Auth signing, which
applies to https requests only: nginx also serves https (a self-signed certificate made at
start; the proxies run with ssl_insecure), wrk sends the proxies absolute-form https targets
over plain HTTP, and mitmproxy forwards them to the origin over TLS. Plain mitmdump, gate (not
signing) and signed (gate with robots_signing_key, a key made by `robotsgate keygen`, and
robots_signature_agent) run in the same rotating rounds, for the allowed page, keep-alive and a
new connection per request (each a TLS handshake with the origin too): requests/s, CPU per
request, signed / gate and gate / plain (medians of the rounds' ratios, with their range), and
what signing adds to the proxy's CPU per request (median of the rounds' differences). There is
one origin, so a signature is made once a second and the requests of that second reuse it
(scripts/bench_hooks.py times making one).
Target: signed / gate >= 0.95 in every cell.
The run stops rather than print a ratio when the origin did not see what it should: first each
proxy fetches a page on which nginx echoes the scheme, TLS version and Signature-Agent,
Signature-Input and Signature it received (for the signing proxies the signature must verify
with the key's public half, over the authority and Signature-Agent it covers; for the others
there must be none); then, after each cell, nginx's access log must count every request of the
signing proxies as signed and every other one as unsigned, all over TLS.

With two CPUs or more, the proxies run on a CPU of their own and nginx and wrk on another:
the proxy is what is measured, and on a shared CPU the scheduler's choices between the three
processes move a run by more than the difference sought. Each proxy gets one unmeasured warm-up
run first (in the second table, one more over https).

With `--against REV` another proxy runs robotsgate as it was at that git revision (checked out
into a temporary worktree, run with this checkout's mitmproxy), in the same rounds: the tables
then also give that revision's figures and this checkout's rps over it, measured back to back.
In the second table that revision also runs signing (then-signed) if it can sign requests
(it has robots_signature_agent); it is left out otherwise.

With `--capture` (root; `--capture-only`: it alone), a table for `robotsgate run --capture`:
each launch a `robotsgate serve` as the run starts it (`--mode regular --mode tun:NAME`, lazy
connections), its TUN interface moved into a namespace by the run's own code
(robotsgate.sealing.capture); nginx in a network namespace of its own (a veth pair), which the
capture namespace reaches only through the proxy; wrk in the capture namespace connecting to
nginx itself, with no proxy setting (capture), against wrk through the same proxy's regular
port (regular), in alternating rounds: requests/s, the proxy's CPU per request (the TUN
interface's userspace TCP stack runs in the proxy's process) and capture / regular.
scripts/bench_capture.py sets TUN beside mitmproxy's transparent and WireGuard modes.

Needs nginx and wrk (Debian: `apt-get install -y nginx wrk && service nginx stop`); `--capture`
also iproute2.

    .venv/bin/python scripts/bench_proxy.py [--seconds 5] [--rounds 5] [--launches N]
        [--concurrency 1,10,50] [--against REV] [--signed | --signed-only]
        [--capture | --capture-only]
"""

import argparse
import base64
import contextlib
import datetime
import http.client
import ipaddress
import json
import os
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MITMDUMP = Path(sys.executable).with_name("mitmdump")
TICKS = os.sysconf("SC_CLK_TCK")
# The CPUs this process may use: the last for the proxies, the others for nginx and wrk (which
# inherit this process's). One CPU: everything shares it.
_CPUS = sorted(os.sched_getaffinity(0))
PROXY_CPUS = {_CPUS[-1]} if len(_CPUS) > 1 else set()
LOAD_CPUS = set(_CPUS[:-1]) if len(_CPUS) > 1 else set(_CPUS)
ROBOTS = REPO.parent / "shared" / "bench" / "proxy-robots.txt"
USER_AGENT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
REFUSED = "google-block-0/page.html"
PAGE = b"<!doctype html><html><head><title>page</title></head><body>" + b"x" * 900 + \
    b"</body></html>\n"


def article() -> bytes:
    """A page as news and documentation sites serve them, about 50 KB, the same every run: a
    head of META and LINK tags (charset, viewport, Open Graph, stylesheets, preloads) and an
    inline script, a navigation of links, paragraphs of prose with links, emphasis and character
    references, a footer; nothing in it says anything to robots."""
    import random
    chance = random.Random(9309)
    words = ["the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on",
             "be", "by", "this", "are", "from", "at", "or", "an", "which", "have", "not", "their",
             "has", "more", "been", "its", "one", "all", "also", "new", "than", "other", "into",
             "time", "first", "these", "some", "two", "can", "may", "would", "after", "most",
             "over", "such", "only", "years", "between", "because", "system", "used", "under",
             "like", "city", "world", "state", "people", "during", "including", "through", "while",
             "where", "both", "each", "many", "later", "same", "through", "before", "season",
             "market", "history", "report", "public", "company", "number", "known", "group",
             "around", "found", "called"]

    def sentence() -> str:
        text = " ".join(chance.choice(words) for _ in range(chance.randint(8, 22)))
        return text[0].upper() + text[1:] + chance.choice([".", ".", ".", "?", " &amp; more."])

    head = ['<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="description" content="' + sentence() + '">',
            *(f'<meta property="og:{key}" content="{sentence()[:60]}">'
              for key in ("title", "description", "type", "url", "image", "site_name")),
            *(f'<meta name="twitter:{key}" content="{sentence()[:40]}">'
              for key in ("card", "site", "title")),
            '<link rel="canonical" href="https://news.example/2026/12/01/article.html">',
            *(f'<link rel="stylesheet" href="/static/css/{n}.css">' for n in range(4)),
            *(f'<link rel="preload" as="font" type="font/woff2" href="/f/{n}.woff2" '
              'crossorigin>' for n in range(3)),
            '<link rel="icon" href="/favicon.ico">',
            "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push("
            "arguments)}" + ";".join(f"var v{n}={n * 7919 % 1000}" for n in range(150)) +
            "</script>"]
    nav = "".join(f'<li><a href="/section/{n}/">{chance.choice(words).title()}</a></li>'
                  for n in range(40))
    paragraphs = []
    for n in range(90):
        parts = [sentence() for _ in range(chance.randint(3, 7))]
        link = chance.randrange(len(parts))
        parts[link] = f'<a href="/2026/{n}/{chance.choice(words)}.html">{parts[link]}</a>'
        parts[0] = f"<em>{parts[0]}</em>" if n % 5 == 0 else parts[0]
        paragraphs.append(f"<p>{' '.join(parts)} It&#39;s {chance.choice(words)}.</p>")
    footer = "".join(f'<a href="/about/{n}">{chance.choice(words)}</a> ' for n in range(30))
    page = ("<!doctype html><html lang=\"en\"><head><title>" + sentence()[:70] + "</title>" +
            "".join(head) + "</head><body><header><nav><ul>" + nav + "</ul></nav></header>" +
            "<main><article><h1>" + sentence() + "</h1>" + "\n".join(paragraphs) +
            "<!-- related stories --></article></main><footer>" + footer + "</footer>" +
            "<script src=\"/static/js/app.js\" defer></script></body></html>\n")
    return page.encode()


def page_named(name: str) -> bytes:
    """--page: "small" (PAGE), "article" (article()) or an HTML file's path."""
    if name == "small":
        return PAGE
    if name == "article":
        return article()
    path = Path(name)
    if not path.is_file():
        raise SystemExit(f"--page {name!r}: neither small, article nor a file")
    return path.read_bytes()
SIGNATURE_AGENT = "https://bots.example/.well-known/http-message-signatures-directory"
ECHO = "echo"  # on the https origin: what nginx received, as text
# The https origin's access log, a line per request: scheme, TLS version, and 1 or 0 for each of
# Signature-Agent, Signature-Input and Signature received.
TLS_LOG = "tls-access.log"
SIGNED_LINE, UNSIGNED_LINE = re.compile(r"https TLS\S+ 111"), re.compile(r"https TLS\S+ 000")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(port: int, process: subprocess.Popen[bytes], what: str,
             host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with {process.returncode}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not start on port {port}")


def certificate(workdir: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (ECDSA P-256) and its key, written to
    `workdir`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = workdir / "origin.crt", workdir / "origin.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def start_nginx(workdir: Path, tls: bool, page: bytes = PAGE, origin: "Origin | None" = None
                ) -> tuple[subprocess.Popen[bytes], int, int]:
    """nginx on a plain HTTP port and, with `tls`, on an https one (0 without), serving `page`
    as page.html; the https server logs every request to TLS_LOG and answers /echo with what
    it received. On 127.0.0.1, or (`origin`) at the address of a network namespace of its own,
    started inside it."""
    port = free_port()
    host = origin.address if origin is not None else "127.0.0.1"
    www = workdir / "www"
    www.mkdir()
    workdir.chmod(0o755)  # nginx's workers run as an unprivileged user
    # ../shared/bench's file (about 200 rules); the bots are Googlebot, whose group has no
    # Crawl-delay and disallows /google-block-0/.
    (www / "robots.txt").write_bytes(ROBOTS.read_bytes())
    (www / "page.html").write_bytes(page)
    (www / "private.html").write_bytes(page)
    tls_port, https = 0, ""
    if tls:
        tls_port = free_port()
        cert, key = certificate(workdir)
        https = f"""
    map $http_signature_agent $has_agent {{ "" 0; default 1; }}
    map $http_signature_input $has_input {{ "" 0; default 1; }}
    map $http_signature $has_signature {{ "" 0; default 1; }}
    log_format signed "$scheme $ssl_protocol $has_agent$has_input$has_signature";
    server {{
        listen 127.0.0.1:{tls_port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {www};
        access_log {workdir / TLS_LOG} signed;
        location = /{ECHO} {{
            default_type text/plain;
            return 200 "$scheme $ssl_protocol
host: $http_host
signature-agent: $http_signature_agent
signature-input: $http_signature_input
signature: $http_signature
";
        }}
    }}"""
    config = workdir / "nginx.conf"
    config.write_text(f"""
worker_processes 1;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx-error.log;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 100000000;
    types {{ text/html html; text/plain txt; }}
    server {{ listen {host}:{port}; root {www}; }}{https}
}}
""")
    inside = ["ip", "netns", "exec", origin.name] if origin is not None else []
    process = subprocess.Popen([*inside, "nginx", "-c", str(config), "-p", str(workdir)],
                               stderr=subprocess.DEVNULL)
    wait_for(port, process, "nginx", host)
    if tls:
        wait_for(tls_port, process, "nginx (https)")
    return process, port, tls_port


def declares(checkout: Path, option: str) -> bool:
    """Whether the robotsgate of `checkout` has this option (robots_ left out)."""
    return any(option in path.read_text() for path in (checkout / "robotsgate").rglob("*.py"))


def start_mitmdump(workdir: Path, name: str, checkout: Path | None, serve: bool = False,
                   extra: Sequence[str] = ()) -> tuple[subprocess.Popen[bytes], int]:
    """Plain mitmdump (`checkout` None), mitmdump with the robotsgate of `checkout`, or
    (`serve`) that checkout's `robotsgate serve`; `extra` added to its arguments."""
    port = free_port()
    args = [str(MITMDUMP), "-q", "--listen-host", "127.0.0.1", "--listen-port", str(port),
            "--set", f"confdir={workdir / name}"]
    if serve:
        args[:1] = [sys.executable, "-m", "robotsgate", "serve"]
    env = dict(os.environ)
    if checkout is not None:
        args += [] if serve else ["-s", str(checkout / "addon.py")]
        args += ["--set", f"robots_audit_log={workdir}/{name}.jsonl"]
        if declares(checkout, "egress_allow"):
            args += ["--set", "robots_egress_allow=127.0.0.1"]  # nginx is on loopback
        env["PYTHONPATH"] = str(checkout)  # its robotsgate, before this checkout's
    args += extra
    process = subprocess.Popen(args, cwd=checkout or REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=env)
    if PROXY_CPUS:
        os.sched_setaffinity(process.pid, PROXY_CPUS)
    wait_for(port, process, name)
    return process, port


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


@dataclass(frozen=True)
class Run:
    rps: float
    p50_ms: float
    cpu_us: float  # proxy CPU per request
    requests: int = 0  # answers wrk counted


_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def wrk(proxy_port: int, proxy_pid: int, url: str, connections: int, close: bool,
        seconds: int, workdir: Path, inside: str | None = None) -> Run:
    """wrk through the proxy on `proxy_port` (absolute-form targets); or (`inside`, a network
    namespace) wrk run in that namespace, connecting to `url` itself with no proxy setting: a
    captured bot's requests, which the namespace's route brings to the proxy."""
    script = workdir / "target.lua"
    host = url.split("/")[2]
    path = "/" + url.split("/", 3)[3] if inside else url
    script.write_text(
        f'wrk.path = "{path}"\nwrk.headers["Host"] = "{host}"\n'
        f'wrk.headers["User-Agent"] = "{USER_AGENT}"\n'
        + ('wrk.headers["Connection"] = "close"\n' if close else ""))
    target = f"http://{host}" if inside else f"http://127.0.0.1:{proxy_port}"
    netns = ["ip", "netns", "exec", inside] if inside else []
    before = cpu_seconds(proxy_pid)
    out = subprocess.run(
        [*netns, "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s",
         str(script), target], capture_output=True, text=True, check=True).stdout
    cpu = cpu_seconds(proxy_pid) - before
    requests = int(re.search(r"(\d+) requests in", out)[1])  # type: ignore[index]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if requests == 0:
        raise SystemExit(f"wrk made no request:\n{out}")
    if inside and re.search(r"Socket errors: connect [1-9]", out):
        raise SystemExit(f"wrk could not connect from {inside}:\n{out}")
    if errors and REFUSED not in url:  # only the 403 path may answer anything but 2xx
        raise SystemExit(f"unexpected error answers:\n{out}")
    return Run(rps, float(p50[1]) * _UNIT_MS[p50[2]] if p50 else float("nan"),
               cpu / requests * 1e6, requests)


def _cpus(cpus: set[int]) -> str:
    return ",".join(map(str, sorted(cpus)))


def worktree(rev: str, into: Path) -> Path:
    """This repository at `rev`, checked out into `into` (removed with it)."""
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(into), rev],
                   check=True)
    return into


def stop(proxies: Sequence[subprocess.Popen[bytes]], nginx: subprocess.Popen[bytes] | None,
         then: Path | None) -> None:
    """What a run started: its proxies, nginx, the other revision's worktree."""
    for process in proxies:
        process.terminate()
        process.wait(timeout=10)
    if nginx is not None:
        nginx.terminate()
        nginx.wait(timeout=10)
    if then is not None:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(then)],
                       check=False)


def keygen(path: Path) -> bytes:
    """A signing key made by this checkout's `robotsgate keygen`, written to `path`; the raw
    Ed25519 public key it prints."""
    done = subprocess.run([sys.executable, "-m", "robotsgate", "keygen", str(path)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                          text=True, check=True)
    x = json.loads(done.stdout)["keys"][0]["x"]
    return base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))


Started = dict[str, tuple[subprocess.Popen[bytes], int]]


def rotate(launches: list[Started], names: list[str], url: str, connections: int,
           close: bool, args: argparse.Namespace, workdir: Path) -> dict[str, list[Run]]:
    """`args.rounds` rounds of a wrk run on each proxy, back to back; round r on launch
    r (of as many as there are)."""
    runs: dict[str, list[Run]] = {n: [] for n in names}
    for round_ in range(args.rounds):
        # The order turns each round: a drift in the machine's speed during the cell weighs on
        # all alike.
        turn = round_ % len(names)
        started = launches[round_ % len(launches)]
        for name in names[turn:] + names[:turn]:
            process, port = started[name]
            runs[name].append(wrk(port, process.pid, url, connections, close, args.seconds,
                                  workdir))
    return runs


def ratio(runs: dict[str, list[Run]], over: str, under: str) -> tuple[float, str]:
    """The median of the rounds' rps ratios `over` / `under`, and it printed with its range.
    Each round's runs ran back to back."""
    ratios = [o.rps / u.rps for o, u in zip(runs[over], runs[under], strict=True)]
    median = statistics.median(ratios)
    return median, f"{median:5.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def cells(runs: dict[str, list[Run]], names: list[str], width: int) -> str:
    return " | ".join(f"{statistics.median(r.rps for r in runs[n]):{width}.0f} "
                      f"{statistics.median(r.cpu_us for r in runs[n]):6.0f}" for n in names)


def through(port: int, url: str) -> tuple[int, str]:
    """A GET of `url` (absolute-form, as wrk sends it) through the proxy on `port`."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", url, headers={"Host": url.split("/")[2],
                                                "User-Agent": USER_AGENT})
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


def cache_robots(port: int, url: str) -> None:
    """One request for `url` through the proxy on `port`, so that robotsgate has fetched its
    robots.txt before anything is measured; the run stops unless it was answered 200."""
    status, body = through(port, url)
    if status != 200:
        raise SystemExit(f"the proxy on port {port} answered {status} for {url}:\n{body[:500]}")


def http_table(args: argparse.Namespace, launches: list[Started], names: list[str],
               origin: str, workdir: Path) -> None:
    for started in launches:
        for name in names:
            if name != "plain":
                cache_robots(started[name][1], f"{origin}/page.html")
        for name in names:  # warm-up
            process, port = started[name]
            wrk(port, process.pid, f"{origin}/page.html", 10, False, 2, workdir)
    print(f"robotsgate vs plain mitmdump; nginx origin; wrk, {args.rounds} rotating "
          f"runs of {args.seconds:g} s per cell on {len(launches)} launches of each proxy, "
          f"medians; CPU is the proxy's per request")
    shown = {"plain": "plain", "gate": "now" if args.against else "gate", "then": "then",
             "serve": "serve"}
    head = " | ".join(f"{shown[n] + ' rps':>9} {'cpu µs':>6}" for n in names)
    ratios_head = "gate/plain (range)  serve/plain (range)" + \
        ("  now/then (range)" if args.against else "")
    print(f"{'path':9} {'conn':10} {'c':>3} | {head} | {ratios_head}")
    worst = worst_serve = float("inf")
    for path in ("page.html", REFUSED):
        for close in (False, True):
            for c in (int(x) for x in args.concurrency.split(",")):
                runs = rotate(launches, names, f"{origin}/{path}", c, close, args, workdir)
                gated, text = ratio(runs, "gate", "plain")
                served, served_text = ratio(runs, "serve", "plain")
                text += f"    {served_text}"
                if args.against:
                    text += f"  {ratio(runs, 'gate', 'then')[1]}"
                if path == "page.html":
                    worst = min(worst, gated)
                    if not close:
                        worst_serve = min(worst_serve, served)
                label = "allowed" if path == "page.html" else "403"
                print(f"{label:9} {'close' if close else 'keep-alive':10} {c:>3} | "
                      f"{cells(runs, names, 9)} | {text}", flush=True)
    print(f"allowed gate/plain, worst cell: {worst:.2f} (the gate's target is against the "
          f"floor: scripts/bench_parts.py)")
    print(f"target: allowed keep-alive serve/plain >= 1.3: worst {worst_serve:.2f}, "
          f"{'met' if worst_serve >= 1.3 else 'NOT met'}")


def verify(seen: dict[str, str], public: bytes) -> str | None:
    """Why the signature fields nginx echoed do not verify with `public` (None: they do),
    over the components their Signature-Input covers (@authority is the Host received)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    label, _, params = seen["signature-input"].partition("=")
    signature = re.fullmatch(rf"{re.escape(label)}=:([A-Za-z0-9+/=]+):", seen["signature"])
    covered = re.match(r"\(([^)]*)\)", params)
    if not label or signature is None or covered is None:
        return "Signature-Input or Signature is not one RFC 9421 signature"
    lines = []
    for component in re.findall(r'"[^"]+"(?:;key="[^"]+")?', covered[1]):
        name, _, key = component.partition(";key=")
        name = name.strip('"')
        if name == "@authority":
            value = seen["host"].lower()
        elif name in seen:
            value = seen[name]
            if key:  # a member of a Structured Fields Dictionary
                member = re.search(rf'(?:^|,)\s*{re.escape(key.strip(chr(34)))}=("[^"]*")',
                                   value)
                if member is None:
                    return f"{name} has no member {key}"
                value = member[1]
        else:
            return f"it covers {component}, which this check does not know"
        lines.append(f"{component}: {value}")
    lines.append(f'"@signature-params": {params}')
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(
            base64.b64decode(signature[1]), "\n".join(lines).encode())
    except InvalidSignature:
        return "the signature does not verify with the key's public half"
    return None


def check_echo(started: Started, names: list[str], signers: list[str], origin: str,
               public: bytes) -> str:
    """Each proxy fetches the origin's echo page: it must arrive over TLS, signed by the key
    (for `signers`) or not signed (the others). Stops the run otherwise; the signed fields
    the origin saw, for the record."""
    shown = ""
    for name in names:
        status, body = through(started[name][1], f"{origin}/{ECHO}")
        first, *rest = body.splitlines()
        seen = {name: value.strip() for name, _, value in (line.partition(":") for line in rest)}
        fields = ("signature-agent", "signature-input", "signature")
        if status != 200 or not re.fullmatch(r"https TLSv[\d.]+", first):
            raise SystemExit(f"{name}: the https origin answered {status}, saw {first!r}: "
                             f"not a request over TLS\n{body}")
        if name not in signers:
            if any(seen.get(f) for f in fields):
                raise SystemExit(f"{name} is not to sign, and the origin saw\n{body}")
            continue
        if not all(seen.get(f) for f in fields) or SIGNATURE_AGENT not in seen[fields[0]]:
            raise SystemExit(f"{name}: its request reached the origin without a Web Bot Auth "
                             f"signature as {SIGNATURE_AGENT}; the origin saw\n{body}")
        wrong = verify(seen, public)
        if wrong:
            raise SystemExit(f"{name}: {wrong}; the origin saw\n{body}")
        shown = shown or "\n".join(f"  {f}: {seen[f]}" for f in fields)
    return shown


def check_log(log: Path, offset: int, runs: dict[str, list[Run]], signers: list[str],
              connections: int, before: int) -> tuple[int, int]:
    """The origin's log since `offset`: every request the signing proxies made arrived signed,
    every other one unsigned, all over TLS. A run's requests still in flight when wrk stopped,
    one per connection at most, may arrive uncounted by wrk, in this cell or (those of the
    runs before it, with `before` connections) in the next. Stops the run otherwise; the signed
    and unsigned requests the origin saw."""
    with log.open("rb") as f:
        f.seek(offset)
        lines = Counter(f.read().decode().splitlines())
    signed = sum(n for line, n in lines.items() if SIGNED_LINE.fullmatch(line))
    unsigned = sum(n for line, n in lines.items() if UNSIGNED_LINE.fullmatch(line))
    others = {line: n for line, n in lines.items()
              if not SIGNED_LINE.fullmatch(line) and not UNSIGNED_LINE.fullmatch(line)}
    want = {kind: sum(r.requests for n, rs in runs.items() if (n in signers) == (kind == "s")
                      for r in rs) for kind in ("s", "u")}
    slack = {kind: sum(connections * len(rs) + before for n, rs in runs.items()
                       if (n in signers) == (kind == "s")) for kind in ("s", "u")}
    if others or not want["s"] <= signed <= want["s"] + slack["s"] or \
            not want["u"] <= unsigned <= want["u"] + slack["u"]:
        raise SystemExit(f"the origin's log does not match: {signed} requests signed over TLS "
                         f"for {want['s']} made by signing proxies, {unsigned} unsigned over "
                         f"TLS for {want['u']} by the others; other lines: {others}")
    return signed, unsigned


def signed_table(args: argparse.Namespace, launches: list[Started], names: list[str],
                 origin: str, workdir: Path, public: bytes) -> None:
    signers = [n for n in names if n.endswith("signed")]
    log = workdir / TLS_LOG
    fields = ""
    for started in launches:
        # Also caches robots.txt, which each robotsgate fetches over https itself.
        fields = check_echo(started, names, signers, origin, public)
        for name in names:  # warm-up over https
            process, port = started[name]
            wrk(port, process.pid, f"{origin}/page.html", 10, False, 2, workdir)
    print(f"\nWeb Bot Auth signing: https origin (nginx, self-signed, proxies with "
          f"ssl_insecure), absolute-form https targets; wrk, {args.rounds} rotating runs of "
          f"{args.seconds:g} s per cell on {len(launches)} launches of each proxy, medians; "
          f"CPU is the proxy's per request")
    print(f"signed: robots_signature_agent={SIGNATURE_AGENT}; its requests verified at the "
          f"origin with the key's public half, arriving as\n{fields}")
    if args.against and "then-signed" not in names:
        print(f"then ({args.against}) cannot sign requests: no then-signed")
    shown = {"plain": "plain", "gate": "now" if args.against else "gate", "then": "then",
             "signed": "now-signed" if args.against else "signed", "then-signed": "then-signed"}
    width = max(9, *(len(shown[n]) + 4 for n in names))
    head = " | ".join(f"{shown[n] + ' rps':>{width}} {'cpu µs':>6}" for n in names)
    ratios_head = "signed/gate (range)  +cpu µs  gate/plain (range)" + \
        ("  now/then (range)" if args.against else "") + \
        ("  then-signed/then (range)  now-signed/then-signed (range)"
         if "then-signed" in names else "")
    print(f"{'path':9} {'conn':10} {'c':>3} | {head} | {ratios_head}")
    worst = float("inf")
    total_signed = total_unsigned = 0
    before = 10  # the warm-up's connections
    for close in (False, True):
        for c in (int(x) for x in args.concurrency.split(",")):
            offset = log.stat().st_size
            runs = rotate(launches, names, f"{origin}/page.html", c, close, args, workdir)
            signed, unsigned = check_log(log, offset, runs, signers, c, before)
            before = c
            total_signed, total_unsigned = total_signed + signed, total_unsigned + unsigned
            cost, text = ratio(runs, "signed", "gate")
            worst = min(worst, cost)
            added = statistics.median(s.cpu_us - g.cpu_us
                                      for s, g in zip(runs["signed"], runs["gate"], strict=True))
            text += f"  {added:+7.0f}  {ratio(runs, 'gate', 'plain')[1]}"
            if args.against:
                text += f"  {ratio(runs, 'gate', 'then')[1]}"
            if "then-signed" in names:
                text += f"  {ratio(runs, 'then-signed', 'then')[1]:>25}" \
                        f"  {ratio(runs, 'signed', 'then-signed')[1]:>30}"
            print(f"{'allowed':9} {'close' if close else 'keep-alive':10} {c:>3} | "
                  f"{cells(runs, names, width)} | {text}", flush=True)
    print(f"the origin saw {total_signed} requests signed over TLS, all from the signing "
          f"proxies, and {total_unsigned} unsigned over TLS, all from the others")
    print(f"target: signed/gate >= 0.95 in every cell: worst {worst:.2f}, "
          f"{'met' if worst >= 0.95 else 'NOT met'}")


# --- capture: a namespace's traffic brought to the proxy (robotsgate run --capture) -----------


@dataclass(frozen=True)
class Origin:
    """A network namespace joined to this one by a veth pair: `address` inside (where an origin
    listens), `host` on this side. Nothing is routed further: the /30 is the link itself."""

    name: str
    outside: str  # the veth end in the machine's namespace
    inside: str  # the other end, in the namespace
    host: str
    address: str


def ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise SystemExit(f"ip {' '.join(args)}: {done.stderr.strip()}")


def free_network() -> ipaddress.IPv4Network:
    """A /30 of 10.200.0.0/13 that no route of this machine uses."""
    out = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True,
                         text=True, timeout=30).stdout
    used = []
    for line in out.splitlines():
        words = line.split()
        first = words[1] if words and words[0] in ("local", "broadcast", "unicast") and \
            len(words) > 1 else (words[0] if words else "")
        with contextlib.suppress(ValueError):
            used.append(ipaddress.ip_network(first, strict=False))
    for _ in range(50):
        network = ipaddress.ip_network(f"10.{200 + secrets.randbelow(54)}."
                                       f"{secrets.randbelow(256)}.{4 * secrets.randbelow(64)}/30")
        if not any(network.overlaps(other) for other in used):
            return network
    raise SystemExit("no free /30 in 10.200.0.0/13 for a namespace")


@contextlib.contextmanager
def linked_namespace(prefix: str) -> Iterator[Origin]:
    """A namespace of its own (ip netns), joined to this one by a veth pair; removed after."""
    tag = secrets.token_hex(3)
    name, outside, inside = f"{prefix}{tag}", f"{prefix}h{tag}", f"{prefix}i{tag}"
    host, address = (str(a) for a in free_network().hosts())
    ip("netns", "add", name)
    try:
        ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        ip("link", "set", inside, "netns", name)
        ip("addr", "add", f"{host}/30", "dev", outside)
        ip("link", "set", outside, "up")
        ip("-n", name, "addr", "add", f"{address}/30", "dev", inside)
        ip("-n", name, "link", "set", inside, "up")
        ip("-n", name, "link", "set", "lo", "up")
        yield Origin(name, outside, inside, host, address)
    finally:
        subprocess.run(["ip", "link", "del", outside], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)


def wait_for_link(name: str, process: subprocess.Popen[bytes]) -> None:
    """Until the network interface `name` exists (the proxy made its TUN interface)."""
    deadline = time.monotonic() + 30
    while subprocess.run(["ip", "link", "show", name], capture_output=True).returncode != 0:
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the proxy made no interface {name}")
        time.sleep(0.05)


def capture_table(args: argparse.Namespace, page: bytes, workdir: Path) -> None:
    """Requests/s captured (robotsgate run --capture: wrk in the capture namespace, connecting
    to the origin itself) against the same proxy's regular mode (wrk through it, from this
    namespace), the origin (nginx) in a namespace of its own that the capture namespace
    reaches only through the proxy."""
    sys.path.insert(0, str(REPO))
    from robotsgate.sealing.capture import CaptureNet

    where = workdir / "capture"
    where.mkdir()
    workdir.chmod(0o755)  # nginx's workers run as an unprivileged user
    nets: list[CaptureNet] = []
    proxies: list[subprocess.Popen[bytes]] = []
    nginx = None
    with linked_namespace("rgbo") as origin:
        try:
            nginx, port, _ = start_nginx(where, False, page, origin)
            url = f"http://{origin.address}:{port}/page.html"
            launches = []
            for launch in range(args.launches or args.rounds):
                net = CaptureNet.new()
                nets.append(net)
                process, proxy_port = start_mitmdump(
                    where, f"capture-{launch}", REPO, serve=True,
                    extra=[*net.proxy_args(), "--set", f"robots_egress_allow={origin.address}"])
                proxies.append(process)
                wait_for_link(net.tun, process)
                net.make()
                launches.append((process, proxy_port, net))
                cache_robots(proxy_port, url)
                for inside in (None, net.netns):  # warm-up
                    wrk(proxy_port, process.pid, url, 10, False, 2, where, inside)
            print(f"\n--capture against regular mode: the same proxy (robotsgate serve with "
                  f"--mode regular --mode tun, as robotsgate run --capture starts it); regular: "
                  f"wrk through it, absolute-form targets; capture: wrk in the capture "
                  f"namespace, connecting to the origin itself (no proxy setting); nginx in a "
                  f"namespace of its own at {origin.address}. {args.rounds} alternating runs of "
                  f"{args.seconds:g} s per cell on {len(launches)} launches; CPU is the "
                  f"proxy's per request (the TUN interface's TCP stack included)")
            print(f"{'path':9} {'conn':10} {'c':>3} | {'regular rps':>11} {'cpu µs':>6} | "
                  f"{'capture rps':>11} {'cpu µs':>6} | capture/regular (range)")
            worst = float("inf")
            for close in (False, True):
                for c in (int(x) for x in args.concurrency.split(",")):
                    runs: dict[str, list[Run]] = {"regular": [], "capture": []}
                    for round_ in range(args.rounds):
                        process, proxy_port, net = launches[round_ % len(launches)]
                        order = ["regular", "capture"]
                        for name in order if round_ % 2 == 0 else order[::-1]:
                            runs[name].append(wrk(
                                proxy_port, process.pid, url, c, close, args.seconds, where,
                                net.netns if name == "capture" else None))
                    captured, text = ratio(runs, "capture", "regular")
                    worst = min(worst, captured)
                    print(f"{'allowed':9} {'close' if close else 'keep-alive':10} {c:>3} | "
                          f"{cells(runs, ['regular', 'capture'], 11)} | {text}", flush=True)
            print(f"worst capture/regular: {worst:.2f}")
        finally:
            stop(proxies, nginx, None)
            for net in nets:
                net.remove()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=5, help="length of each wrk run")
    parser.add_argument("--rounds", type=int, default=5, help="alternating runs per cell")
    parser.add_argument("--launches", type=int, default=0,
                        help="processes started of each proxy, round r measuring launch r "
                             "(default: one per round)")
    parser.add_argument("--concurrency", default="1,10,50")
    parser.add_argument("--against", metavar="REV",
                        help="also measure robotsgate at this git revision, in the same rounds")
    parser.add_argument("--page", default="small",
                        help="the allowed page: small (974 bytes, the default), article (a "
                             "50 KB page as news and documentation sites serve them) or an "
                             "HTML file")
    signing = parser.add_mutually_exclusive_group()
    signing.add_argument("--signed", action="store_true",
                         help="also measure Web Bot Auth signing: an https origin, robotsgate "
                              "signing against robotsgate not signing, in the same rounds")
    signing.add_argument("--signed-only", action="store_true",
                         help="only that measurement")
    parser.add_argument("--capture", action="store_true",
                        help="(root) also measure robotsgate run --capture (mitmproxy's TUN "
                             "mode, wrk in the capture namespace) against regular mode")
    parser.add_argument("--capture-only", action="store_true",
                        help="only that measurement")
    args = parser.parse_args()
    if (args.capture or args.capture_only) and os.geteuid() != 0:
        parser.error("--capture needs root (a TUN interface and network namespaces)")
    if args.rounds < 1 or args.launches < 0:
        parser.error("--rounds must be at least 1 and --launches at least 0")
    for tool in ("nginx", "wrk"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing: apt-get install -y nginx wrk && "
                             "service nginx stop")
    tls = args.signed or args.signed_only
    page = page_named(args.page)

    os.sched_setaffinity(0, LOAD_CPUS)  # before nginx and wrk start: they inherit it
    with tempfile.TemporaryDirectory(prefix="robotsgate-bench-") as tmp:
        workdir = Path(tmp)
        if args.capture_only:
            print(f"the allowed page: {args.page}, {len(page):,} bytes")
            print(f"proxies on CPU {_cpus(PROXY_CPUS) or 'shared'}, nginx and wrk on CPU "
                  f"{_cpus(LOAD_CPUS)}")
            capture_table(args, page, workdir)
            return 0
        then = worktree(args.against, workdir / "then") if args.against else None
        launches: list[Started] = []
        nginx = None
        try:
            nginx, origin_port, tls_port = start_nginx(workdir, tls, page)
            # The https origin's certificate is self-signed.
            insecure = ("--set", "ssl_insecure=true") if tls else ()
            wanted: dict[str, tuple[Path | None, tuple[str, ...]]] = {
                "plain": (None, insecure), "gate": (REPO, insecure)}
            if not args.signed_only:
                wanted["serve"] = (REPO, ())
            if then is not None:
                wanted["then"] = (then, insecure)
            public = b""
            if tls:
                key = workdir / "signing.pem"
                public = keygen(key)
                signs = ("--set", f"robots_signing_key={key}",
                         "--set", f"robots_signature_agent={SIGNATURE_AGENT}")
                wanted["signed"] = (REPO, insecure + signs)
                if then is not None and declares(then, "signature_agent"):
                    wanted["then-signed"] = (then, insecure + signs)
            for launch in range(args.launches or args.rounds):
                started: Started = {}
                launches.append(started)
                for name, (checkout, extra) in wanted.items():
                    started[name] = start_mitmdump(workdir, f"{name}-{launch}", checkout,
                                                   serve=name == "serve", extra=extra)
            names = list(wanted)
            if args.against:
                print(f"then: robotsgate at {args.against}; now: this checkout")
            print(f"the allowed page: {args.page}, {len(page):,} bytes")
            print(f"proxies on CPU {_cpus(PROXY_CPUS) or 'shared'}, nginx and wrk on CPU "
                  f"{_cpus(LOAD_CPUS)}")
            if not args.signed_only:
                http_table(args, launches, [n for n in ("plain", "gate", "serve", "then")
                                            if n in names],
                           f"http://127.0.0.1:{origin_port}", workdir)
            if tls:
                signed_table(args, launches, [n for n in ("plain", "gate", "signed", "then",
                                                          "then-signed") if n in names],
                             f"https://127.0.0.1:{tls_port}", workdir, public)
        finally:
            stop([process for started in launches for process, _ in started.values()],
                 nginx, then)
        if args.capture:
            capture_table(args, page, workdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
