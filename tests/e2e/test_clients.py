"""End to end, the documented client recipes: each client, run as a user runs it, through a real
``mitmdump -s addon.py`` to real origins, over http and https.

Every client is configured only by what the HTTPS page (docs/getting-started/https.md) says: the
environment that ``eval "$(scripts/proxy-env.sh ADDRESS CONFDIR)"`` leaves (proxy variables and
the CA variable each client reads), the example programs of deploy/clients/ (a Scrapy spider, a
Python, a Node.js and a Go fetcher), and for Chromium its certificate store and command-line
flags, read from the page. For
each: an allowed page reaches the origin and comes back whole, a disallowed one is answered 403
by the proxy with its explanation and never reaches the origin, the audit log records that block
and nothing else, and without the CA variable an https request fails: the variable named is the
one that makes the client trust the proxy.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import ssl
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from mitmproxy import certs

from .clients import (
    CLIENT_RECIPES,
    RECIPE_TIMEOUT,
    ClientFailed,
    Fetched,
    curl_recipe,
    recipe_env,
    run_json_client,
    wget_recipe,
    without,
)
from .machine import REPO, clean_env, require_tool
from .origins import Origin, page_body
from .proxy import Proxy

OriginFactory = Callable[..., Origin]
ProxyFactory = Callable[..., Proxy]

ROBOTS = "User-agent: *\nDisallow: /private\n"
ALLOWED = "/public/page?x=1"
DISALLOWED = "/private/page"
REFUSAL = "Forbidden by robots.txt: disallowed by Disallow: /private (line 2)"


@dataclass(frozen=True)
class Recipe:
    """How a client is run, and the variables its trust in the proxy's CA comes from."""

    run: Callable[[Mapping[str, str], Sequence[str]], list[Fetched]]
    ca_vars: tuple[str, ...]


def python_client(name: str) -> Callable[[Mapping[str, str], Sequence[str]], list[Fetched]]:
    def run(env: Mapping[str, str], urls: Sequence[str]) -> list[Fetched]:
        return run_json_client([sys.executable, str(CLIENT_RECIPES / "fetch.py"), name, *urls],
                               env)
    return run


def node_client(env: Mapping[str, str], urls: Sequence[str]) -> list[Fetched]:
    node = require_tool("node", "nodejs", package="nodejs")
    return run_json_client([node, str(CLIENT_RECIPES / "fetch.mjs"), *urls], env)


RECIPES: dict[str, Recipe] = {
    # curl also reads SSL_CERT_FILE (and SSL_CERT_DIR), as OpenSSL's own tools do.
    "curl": Recipe(curl_recipe, ("CURL_CA_BUNDLE", "SSL_CERT_FILE")),
    "wget": Recipe(wget_recipe, ("WGETRC",)),
    # requests falls back to CURL_CA_BUNDLE, which proxy-env.sh exports too.
    "requests": Recipe(python_client("requests"), ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")),
    "httpx": Recipe(python_client("httpx"), ("SSL_CERT_FILE",)),
    "urllib": Recipe(python_client("urllib"), ("SSL_CERT_FILE",)),
    "aiohttp": Recipe(python_client("aiohttp"), ("SSL_CERT_FILE",)),
    "node": Recipe(node_client, ("NODE_EXTRA_CA_CERTS",)),
}


def start_site(scheme: str, origin: OriginFactory, https_origin: OriginFactory) -> Origin:
    return (https_origin if scheme == "https" else origin)("127.0.0.2", robots=ROBOTS)


def assert_gated(allowed: Fetched, refused: Fetched, site: Origin, gate: Proxy,
                 host: str | None = None) -> None:
    """The allowed page came from the origin, the disallowed one from the proxy, and the audit
    log holds that one block."""
    assert (allowed.status, allowed.body) == (200, page_body(ALLOWED).decode()), allowed
    assert refused.status == 403, refused
    assert refused.body.startswith(REFUSAL), refused.body
    assert f"robots.txt: {site.url('/robots.txt', host=host)}" in refused.body
    assert [p for p in site.paths() if p != "/robots.txt"] == [ALLOWED]
    [record] = gate.wait_audit(1)
    assert (record["event"], record["reason"], record["status"]) == ("block", "disallowed", 403)
    assert record["url"] == site.url(DISALLOWED, host=host)


# --- the clients that read proxy-env.sh's variables ---------------------------------------------


@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest.mark.parametrize("name", sorted(RECIPES))
def test_client_configured_by_proxy_env_is_gated(
    name: str, scheme: str, origin: OriginFactory, https_origin: OriginFactory,
    proxy: ProxyFactory,
) -> None:
    site = start_site(scheme, origin, https_origin)
    gate = proxy(trust_test_ca=True)

    allowed, refused = RECIPES[name].run(recipe_env(gate), [site.url(ALLOWED),
                                                            site.url(DISALLOWED)])

    assert_gated(allowed, refused, site, gate)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_without_its_ca_variable_a_client_refuses_the_proxys_certificate(
    name: str, https_origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = https_origin("127.0.0.2", robots=ROBOTS)
    gate = proxy(trust_test_ca=True)
    recipe = RECIPES[name]

    with pytest.raises(ClientFailed) as failed:
        recipe.run(without(recipe_env(gate), recipe.ca_vars), [site.url(ALLOWED)])

    assert "certificate" in str(failed.value).lower(), failed.value
    assert [p for p in site.paths() if p != "/robots.txt"] == []


# --- Scrapy --------------------------------------------------------------------------------------

SPIDER = CLIENT_RECIPES / "scrapy_spider.py"
SPIDER_AGENT = "ExampleBot/1.0 (+https://example.com/bot)"


def html(*links: str) -> str:
    anchors = "".join(f'<a href="{link}">{link}</a>\n' for link in links)
    return f"<!doctype html><html><body>\n{anchors}</body></html>\n"


def crawlable_site(site: Origin) -> Origin:
    """A home page linking to two public pages and a disallowed one; one public page links to
    the other and to another disallowed one. (No link leads back to the start page, which Scrapy
    fetches once more if linked: its start requests are never filtered as duplicates.)"""
    headers = {"Content-Type": "text/html; charset=utf-8"}
    site.route("/", body=html("/public/a", "/private/x", "/public/b"), headers=headers)
    site.route("/public/a", body=html("/private/y", "/public/b"), headers=headers)
    return site


def crawl(gate: Proxy, start: str, workdir: Path, env: Mapping[str, str] | None = None
          ) -> tuple[list[dict[str, Any]], str]:
    """`scrapy runspider` of the example spider: its items and its log."""
    workdir.mkdir(parents=True, exist_ok=True)
    items = workdir / "items.jsonl"
    # HOME: Scrapy keeps job files under ~/.local/state; the crawl must not write outside.
    env = env if env is not None else recipe_env(gate, {"HOME": str(workdir)})
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", str(SPIDER), "-a", f"start={start}",
         "-O", str(items), "-s", "LOG_LEVEL=INFO"],
        env=dict(env), cwd=workdir, capture_output=True, text=True, timeout=RECIPE_TIMEOUT)
    assert done.returncode == 0, done.stderr
    lines = items.read_text().splitlines() if items.exists() else []
    return [json.loads(line) for line in lines], done.stderr


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_scrapy_spider_crawls_only_what_robots_txt_allows(
    scheme: str, origin: OriginFactory, https_origin: OriginFactory, proxy: ProxyFactory,
    tmp_path: Path,
) -> None:
    site = crawlable_site(start_site(scheme, origin, https_origin))
    gate = proxy(trust_test_ca=True)

    items, log = crawl(gate, site.url("/"), tmp_path / "crawl")

    got = {item["url"]: (item["status"], item["robotsgate_reason"]) for item in items}
    assert got == {
        site.url("/"): (200, None),
        site.url("/public/a"): (200, None),
        site.url("/public/b"): (200, None),
        site.url("/private/x"): (403, "disallowed"),
        site.url("/private/y"): (403, "disallowed"),
    }, log
    assert all(item["text"].startswith(REFUSAL) for item in items if item["status"] == 403)
    pages = [s for s in site.seen if s.path != "/robots.txt"]
    assert sorted(s.path for s in pages) == ["/", "/public/a", "/public/b"]
    assert {s.user_agent for s in pages} == {SPIDER_AGENT}
    blocks = gate.wait_audit(2)
    assert sorted(r["url"] for r in blocks) == [site.url("/private/x"), site.url("/private/y")]
    assert {r["user_agent"] for r in blocks} == {SPIDER_AGENT}


def test_scrapy_spider_verifies_the_proxy_with_ssl_cert_file(
    https_origin: OriginFactory, proxy: ProxyFactory, tmp_path: Path
) -> None:
    site = crawlable_site(https_origin("127.0.0.2", robots=ROBOTS))
    gate = proxy(trust_test_ca=True)
    env = without(recipe_env(gate, {"HOME": str(tmp_path)}), ["SSL_CERT_FILE"])

    items, log = crawl(gate, site.url("/"), tmp_path / "crawl", env)

    # DOWNLOAD_VERIFY_CERTIFICATES: without the proxy's CA nothing is accepted.
    assert items == []
    assert "certificate verify failed" in log
    assert [p for p in site.paths() if p != "/robots.txt"] == []


# --- Go ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NamedSite:
    """An origin reached by this machine's host name, and the CA its certificate is from."""

    origin: Origin
    name: str
    ca: Path | None


def this_machines_name() -> tuple[str, str]:
    """(host name, the IPv4 address it resolves to): a name Go sends through a proxy."""
    name = socket.gethostname()
    try:
        [address, *_] = {info[4][0] for info in socket.getaddrinfo(name, None, socket.AF_INET)}
    except (OSError, ValueError):
        pytest.fail(f"this machine's name {name!r} does not resolve (add it to /etc/hosts)",
                    pytrace=False)
    if name == "localhost" or address == name:
        pytest.fail(f"this machine's name {name!r} is no host name Go would proxy",
                    pytrace=False)
    return name, str(address)


def server_context_for(name: str, directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a certificate for ``name`` from a new CA, and that CA's file."""
    store = certs.CertStore.from_store(directory, "origin", 2048)
    entry = store.get_cert(name, [x509.DNSName(name)])
    chain = directory / "origin.pem"
    key = entry.privatekey.private_bytes(serialization.Encoding.PEM,
                                         serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption())
    chain.write_bytes(entry.cert.to_pem() + key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(chain)
    return context, directory / "origin-ca-cert.pem"


@pytest.fixture
def named_site(tmp_path: Path) -> Iterator[Callable[[str], NamedSite]]:
    started: list[Origin] = []

    def start(scheme: str) -> NamedSite:
        name, address = this_machines_name()
        context, ca = (server_context_for(name, tmp_path / "origin-ca") if scheme == "https"
                       else (None, None))
        try:
            site = Origin(address, tls=context)
        except OSError as error:
            pytest.fail(f"this machine's name {name!r} resolves to {address}, which is not "
                        f"one of its own addresses: {error}", pytrace=False)
        started.append(site)
        site.set_robots(ROBOTS)
        return NamedSite(site, name, ca)

    yield start
    for site in started:
        site.stop()


def go_client(env: Mapping[str, str], urls: Sequence[str], cache: Path) -> list[Fetched]:
    go = require_tool("go", package="golang-go")
    # Only the standard library is used: nothing is downloaded, and the build cache is the
    # test's own.
    build = {"GOCACHE": str(cache / "build"), "GOPATH": str(cache / "gopath"),
             "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local"}
    return run_json_client([go, "run", str(CLIENT_RECIPES / "fetch.go"), *urls],
                           {**env, **build})


@pytest.fixture(scope="session")
def go_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("go")


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_go_net_http_is_gated_for_a_site_named_by_host_name(
    scheme: str, named_site: Callable[[str], NamedSite], proxy: ProxyFactory, go_cache: Path
) -> None:
    site = named_site(scheme)
    gate = proxy(**({"ssl_verify_upstream_trusted_ca": str(site.ca)} if site.ca else {}))
    env = recipe_env(gate)
    urls = [site.origin.url(ALLOWED, host=site.name), site.origin.url(DISALLOWED, host=site.name)]

    allowed, refused = go_client(env, urls, go_cache)

    assert_gated(allowed, refused, site.origin, gate, host=site.name)
    if scheme == "https":
        with pytest.raises(ClientFailed, match="x509: certificate signed by unknown authority"):
            go_client(without(env, ["SSL_CERT_FILE"]), urls[:1], go_cache)


def test_go_never_proxies_a_loopback_address(
    origin: OriginFactory, proxy: ProxyFactory, go_cache: Path
) -> None:
    # Why the recipe's sites are named by host name: net/http's rule, which NO_PROXY cannot undo.
    site = origin("127.0.0.2", robots=ROBOTS)
    gate = proxy()

    [straight] = go_client(recipe_env(gate), [site.url(DISALLOWED)], go_cache)

    assert (straight.status, straight.body) == (200, page_body(DISALLOWED).decode())
    assert site.paths() == [DISALLOWED]
    assert gate.audit() == []


# --- Chromium ------------------------------------------------------------------------------------

# The HTTPS page's steps, read from it: a certificate store in a new $HOME/.pki/nssdb, with
# robotsgate's CA trusted to identify web sites (the CA's path is the test proxy's), and
# Chromium's command line but for the proxy's address and the URL.
def _https_page_steps() -> tuple[str, tuple[str, ...]]:
    page = (REPO / "docs" / "getting-started" / "https.md").read_text()
    block = page.split("```sh\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    store, trust, chromium = block.splitlines()
    steps = f"{store} && {trust.replace('~/.mitmproxy/mitmproxy-ca-cert.pem', '\"$CA\"')}"
    argv = shlex.split(chromium)
    assert argv[0] == "chromium" and argv[1].startswith("--proxy-server=") \
        and argv[-3:] == ["--headless", "--dump-dom", "https://example.com/"], chromium
    return steps, tuple(argv[2:-3])


NSSDB_STEPS, CHROMIUM_FLAGS = _https_page_steps()


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_headless_chromium_as_the_https_page_says_is_gated(
    scheme: str, origin: OriginFactory, https_origin: OriginFactory, proxy: ProxyFactory,
    tmp_path: Path,
) -> None:
    browser = require_tool("chromium", "chromium-browser")
    require_tool("certutil", package="libnss3-tools")
    site = start_site(scheme, origin, https_origin)
    gate = proxy(trust_test_ca=True)
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env({"HOME": str(home), "CA": str(gate.ca)})
    made = subprocess.run(["bash", "-c", NSSDB_STEPS], env=env, capture_output=True, text=True,
                          timeout=60)
    assert made.returncode == 0, made.stderr
    # Chromium refuses to run as root inside its sandbox.
    root = ["--no-sandbox"] if os.geteuid() == 0 else []

    def dump_dom(url: str) -> str:
        done = subprocess.run(
            [browser, "--headless", *root, f"--user-data-dir={tmp_path / 'profile'}",
             f"--proxy-server={gate.url}", *CHROMIUM_FLAGS, "--dump-dom", url],
            env=env, capture_output=True, text=True, timeout=RECIPE_TIMEOUT)
        assert done.returncode == 0, done.stderr
        return done.stdout

    allowed, refused = dump_dom(site.url(ALLOWED)), dump_dom(site.url(DISALLOWED))

    assert page_body(ALLOWED).decode().strip() in allowed, allowed
    assert REFUSAL in refused, refused
    assert ALLOWED in site.paths() and not any(p.startswith("/private") for p in site.paths())
    # Chromium's own requests (an update check at start) are decided too: only this site's
    # records are this test's.
    mine = [r for r in gate.audit() if r["url"].startswith(site.url("/"))]
    assert [(r["reason"], r["url"]) for r in mine] == [("disallowed", site.url(DISALLOWED))]
