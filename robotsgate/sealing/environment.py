"""The environment a bot runs in under `robotsgate run`: the proxy, and its CA, for each
ecosystem's own variables.

Pure: the caller's environment and the run's facts in, the child's environment out.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

# Read by curl, wget, Python (urllib, requests, httpx, aiohttp with trust_env), Go, git, pip,
# npm, and Node with NODE_USE_ENV_PROXY=1; both cases, since programs read one or the other.
PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy",
                   "ALL_PROXY", "all_proxy")
# A base image's NO_PROXY=* (or a list of hosts) would send those requests around the gate.
NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy")
# The proxy's CA, for each reader: OpenSSL's default file (Python's ssl, httpx, Go, Ruby),
# requests (and pip), curl, Node (added to its own list), git.
CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                "GIT_SSL_CAINFO",
                # and the readers a machine may already point at its own bundle, which would
                # then refuse the proxy's certificates: pip, boto (AWS), httplib2, Deno, Nix's
                # OpenSSL, gRPC, the Google Cloud CLI.
                "PIP_CERT", "AWS_CA_BUNDLE", "HTTPLIB2_CA_CERTS", "DENO_CERT", "NIX_SSL_CERT_FILE",
                "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE")


@dataclass(frozen=True, slots=True)
class ProxyAddress:
    """Where the bot finds the proxy, and the name it gives itself there."""

    host: str
    port: int
    user: str | None = None  # proxy-auth credentials: the bot's name for robots_agents
    password: str | None = None

    @classmethod
    def parse(cls, url: str) -> "ProxyAddress":
        """An http:// proxy URL; raises ValueError saying what is wrong with it."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"{url!r} is not a URL: {exc}") from None
        if parts.scheme.lower() != "http" or not parts.hostname:
            raise ValueError(f"{url!r} is not an http://HOST:PORT proxy URL")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"{url!r}: a proxy URL has no path")
        user, password = parts.username, parts.password  # as written: percent-encoded
        return cls(parts.hostname, port or 80, None if user is None else unquote(user),
                   None if password is None else unquote(password))

    def url(self, *, password: str | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        credentials = ""
        if self.user is not None:
            credentials = quote(self.user, safe="")
            if self.password is not None:
                credentials += ":" + (password or quote(self.password, safe=""))
            credentials += "@"
        return f"http://{credentials}{host}:{self.port}"

    def shown(self) -> str:
        """The URL without its password: what may be printed."""
        return self.url(password="***")

    def at(self, host: str, port: int) -> "ProxyAddress":
        """The same credentials, at another address (the sealed namespace's bridge)."""
        return ProxyAddress(host, port, self.user, self.password)


def java_options(proxy: ProxyAddress, truststore: Path | None, given: str | None) -> str:
    """JAVA_TOOL_OPTIONS: Java reads no proxy variable, only system properties, and no PEM CA,
    only a trust store. Loopback is proxied too (Java's default nonProxyHosts leaves it out);
    proxy credentials cannot be given this way (Java asks an Authenticator for them)."""
    options = [f"-Dhttp.proxyHost={proxy.host}", f"-Dhttp.proxyPort={proxy.port}",
               f"-Dhttps.proxyHost={proxy.host}", f"-Dhttps.proxyPort={proxy.port}",
               "-Dhttp.nonProxyHosts="]
    if truststore is not None:
        options += [f"-Djavax.net.ssl.trustStore={truststore}",
                    "-Djavax.net.ssl.trustStoreType=PKCS12"]
    return " ".join([given, *options] if given else options)


def child_environment(given: Mapping[str, str], proxy: ProxyAddress, ca: Path,
                      truststore: Path | None) -> dict[str, str]:
    """`given` with the proxy set for every ecosystem, NO_PROXY gone and the proxy's CA
    trusted: HTTPS is only ever spoken with the proxy, so its CA is the one to trust."""
    env = {name: value for name, value in given.items() if name not in NO_PROXY_VARIABLES}
    url = proxy.url()
    env.update(dict.fromkeys(PROXY_VARIABLES, url))
    env.update(dict.fromkeys(CA_VARIABLES, str(ca)))
    env["NODE_USE_ENV_PROXY"] = "1"  # Node >= 22.21 / 24: fetch() and http(s) read the above
    env["JAVA_TOOL_OPTIONS"] = java_options(proxy, truststore, given.get("JAVA_TOOL_OPTIONS"))
    return env
