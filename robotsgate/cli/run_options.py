"""`robotsgate run`'s command line: what it says (RUN_HELP), how it is read (RunOptions), and
who a sealed bot runs as (bot_user).

Its own module because reading the line is pure and checked on its own (tests/sealing/test_run.py),
while run.py starts processes: a proxy, the bot, its seal.
"""

import pwd
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from robotsgate.protocol import is_product_token
from robotsgate.sealing.environment import ProxyAddress
from robotsgate.sealing.namespace import RunAs

# The run's own failures: statuses no bot's exit is mistaken for (as env, timeout and docker
# run have them): 125 the run itself (a usage mistake, a proxy that did not start, a bot that
# could not be sealed), 126 CMD cannot be executed, 127 CMD not found.
RUN_ERROR, NOT_EXECUTABLE, NOT_FOUND = 125, 126, 127

RUN_HELP = """\
usage: robotsgate run [--agent TOKEN] [--sealed | --capture] [--user NAME] [serve options]
                      -- CMD [ARGS...]
       robotsgate run --proxy URL [--ca FILE] [--agent TOKEN] [--sealed] [--user NAME]
                      -- CMD [ARGS...]

Run one bot behind the gate: start a proxy (robotsgate serve, on a free port of 127.0.0.1) or
use a running one (--proxy), run CMD with its environment pointing at it, and when CMD ends,
stop the proxy, print one summary (requests, forwarded, refused by reason, delayed, per host,
the audit log) and exit with CMD's status.

  robotsgate run --agent MyBot -- python mybot.py

CMD's environment: HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (each in both cases) name the proxy;
NO_PROXY and no_proxy are removed; the proxy's CA is in SSL_CERT_FILE (OpenSSL, Python, Go),
REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, NODE_EXTRA_CA_CERTS and GIT_SSL_CAINFO; NODE_USE_ENV_PROXY=1
(Node >= 22.21 / 24); JAVA_TOOL_OPTIONS gets the proxy's system properties and a trust store
holding the CA. A program that reads none of these goes around the proxy: --sealed stops it.

options:
  --agent TOKEN   the bot's product token, which robots.txt is obeyed as: the proxy a run
                  starts has robots_agent=TOKEN; a running proxy (--proxy) is given it as the
                  proxy-auth user name (http://TOKEN@host:port: see robots_agents and
                  proxyauth). Without it, each request's User-Agent names the bot.
  --proxy URL     use the proxy running at http://[USER[:PASSWORD]@]HOST:PORT instead of
                  starting one; its counts are its own, so the summary says less
  --ca FILE       with --proxy: that proxy's CA certificate (default:
                  ~/.mitmproxy/mitmproxy-ca-cert.pem)
  --sealed        run CMD in a network namespace of its own whose only way out is the proxy:
                  loopback only, the proxy on its 127.0.0.1; anything else is "network
                  unreachable". Made through a user namespace, so no privilege is needed where
                  the kernel allows them; where it refuses, nothing is run (status 125). A
                  system-call filter refuses Unix sockets (EPERM: a socket on the filesystem,
                  such as D-Bus's or Docker's, would be a way out), io_uring and pushing
                  characters into the terminal (TIOCSTI).
  --capture       (root) sealed, and everything CMD sends reaches the proxy all the same
                  (mitmproxy's TUN mode): a bot that ignores every proxy setting is gated, not
                  cut off. Its requests are decided for the host their Host (or TLS server
                  name) names, which must be at the address it connected to; DNS is answered
                  by the proxy's resolver; QUIC and any other UDP are refused; all audited.
  --user NAME     (root, with --sealed or --capture) the unprivileged user CMD runs as.
                  Sealed by root, CMD is never root: without --user it runs as the user who
                  called sudo (SUDO_UID), and with neither the run refuses (status 125).
  -h, --help      this help

Any other option before -- goes to the proxy's command line (robotsgate serve, mitmdump's
options), e.g. --set robots_mode=monitor --set robots_audit_log=run.jsonl.

Exit status: CMD's own; 128+N when a signal N ended it (SIGINT, SIGTERM, SIGHUP, SIGQUIT and
SIGUSR1/2 sent to the run are passed on to CMD; Ctrl-C reaches CMD, which has the terminal);
125 when the run itself fails (a usage mistake, a proxy that does not start, a bot that cannot
be sealed), 126 when CMD cannot be executed, 127 when it is not found.
"""

_OWN_FLAGS = ("--agent", "--proxy", "--ca", "--user")  # take a value
_OWN_SWITCHES = ("--sealed", "--capture")
class RunError(Exception):
    """The run cannot go on (a usage mistake, a proxy that did not start): said in one line,
    status 125."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    command: tuple[str, ...]
    agent: str | None = None
    proxy: ProxyAddress | None = None  # a running proxy; None: the run starts one
    ca: Path | None = None
    sealed: bool = False
    serve_args: tuple[str, ...] = ()
    capture: bool = False  # sealed, its traffic brought to the proxy (TUN mode)
    user: str | None = None  # --user: the unprivileged user a root run gives a sealed bot

    @classmethod
    def parse(cls, argv: Sequence[str]) -> "RunOptions":
        if "--" not in argv:
            raise RunError("put -- before the bot's command: robotsgate run [OPTIONS] -- "
                             "CMD [ARGS...]")
        split = list(argv).index("--")
        before, command = list(argv[:split]), tuple(argv[split + 1:])
        if not command:
            raise RunError("no command after --: robotsgate run [OPTIONS] -- CMD [ARGS...]")
        own: dict[str, str] = {}
        switches: set[str] = set()
        serve_args: list[str] = []
        tokens = iter(before)
        for token in tokens:
            name, has_value, value = token.partition("=")
            if name in _OWN_FLAGS:
                if not has_value:
                    value = next(tokens, "")
                    if not value:
                        raise RunError(f"{name} needs a value")
                own[name] = value
            elif token in _OWN_SWITCHES:
                switches.add(token)
            else:
                serve_args.append(token)
        agent = own.get("--agent")
        if agent is not None and not is_product_token(agent):
            raise RunError(f"--agent {agent!r}: must be a product token (letters, '-' and "
                             f"'_'), as robots.txt names bots")
        proxy = None
        if "--proxy" in own:
            try:
                proxy = ProxyAddress.parse(own["--proxy"])
            except ValueError as exc:
                raise RunError(f"--proxy: {exc}") from None
            if serve_args:
                raise RunError(f"{serve_args[0]}: with --proxy the run starts no proxy, so "
                                 f"it takes no serve options (give them to that proxy)")
            if agent is not None:
                if proxy.user is not None and proxy.user != agent:
                    raise RunError(f"--agent {agent} and --proxy's user name "
                                     f"{proxy.user!r} name two bots: give one")
                # A password as well: some clients (requests) send no user name without one.
                proxy = ProxyAddress(proxy.host, proxy.port, agent,
                                     "run" if proxy.password is None else proxy.password)
        elif "--ca" in own:
            raise RunError("--ca names a running proxy's CA: give it with --proxy (the proxy "
                             "a run starts uses its confdir's)")
        elif agent is not None and any(arg.startswith(("robots_agent=", "robots_agents="))
                                       for arg in serve_args):
            raise RunError("--agent and --set robots_agent(s) both name the bot: give one")
        ca = Path(own["--ca"]).expanduser() if "--ca" in own else None
        capture = "--capture" in switches
        if capture and proxy is not None:
            raise RunError("--capture brings the bot's traffic to the proxy the run starts: "
                           "it takes no --proxy")
        sealed = "--sealed" in switches or capture
        user = own.get("--user")
        if user is not None and not sealed:
            raise RunError(f"--user {user}: only a sealed bot (--sealed or --capture) is run as "
                           f"another user")
        return cls(command, agent, proxy, ca, sealed, tuple(serve_args), capture, user)


def serve_setting(args: Sequence[str], name: str) -> str | None:
    """The last `--set NAME=VALUE` (or `--set=NAME=VALUE`) of a serve command line."""
    found = None
    for i, arg in enumerate(args):
        given = args[i + 1] if arg == "--set" and i + 1 < len(args) else \
            arg.removeprefix("--set=") if arg.startswith("--set=") else None
        if given is not None and given.startswith(name + "="):
            found = given[len(name) + 1:]
    return found


def bot_user(options: RunOptions, euid: int, environ: Mapping[str, str]) -> RunAs | None:
    """Who a sealed bot runs as when root runs it: --user, else the user who called sudo; None
    when the run is not root's or the bot is not sealed (it runs as the caller)."""
    if not options.sealed:
        return None
    if euid != 0:
        if options.user is not None and _account(options.user).uid != euid:
            raise RunError(f"--user {options.user}: only root runs a bot as another user")
        return None
    if options.user is not None:
        user = _account(options.user)
    elif environ.get("SUDO_UID", "0").isdigit() and int(environ.get("SUDO_UID", "0")) != 0:
        user = _account(environ["SUDO_UID"])
    else:
        raise RunError("run by root, the sealed bot would be root over this machine's files "
                       "(its Unix sockets, its configuration): name an unprivileged user for "
                       "it with --user NAME (a user of its own: useradd --system crawler)")
    if user.uid == 0:
        raise RunError(f"--user {options.user}: the bot's user must not be root")
    return user


def _account(name: str) -> RunAs:
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
    except (KeyError, OverflowError):
        raise RunError(f"--user {name}: no such user") from None
    return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir)
