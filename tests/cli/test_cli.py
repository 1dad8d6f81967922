"""`robotsgate check | lint | show`, run as the installed command on real files and against a
real origin server on 127.0.0.1 (tests/e2e/origins.py); `report` is in test_report.py."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.machine import clean_env
from e2e.origins import Origin, Reply, serving

from robotsgate.protocol import MAX_BYTES

ROBOTSGATE = Path(sys.executable).parent / "robotsgate"

# Line numbers matter: the commands name them.
ROBOTS = """\
# the test origin
User-agent: MyBot
Crawl-delay: 2
Request-rate: 3/1m
Visit-time: 0000-2359
Disallow: /private
Allow: /private/open

User-agent: *
Disallow: /

Sitemap: https://example.com/sitemap.xml
Sitemap: https://example.com/news.xml
License: https://rsl.example/license.xml
"""

LINTED = """\
Disallow: /nowhere
User-agent: *
Disalow: /typo
Noindex: /x
Disallow: /a
Allow: /a*
Disallow: private
"""


def run(*args: str, stdin: bytes | None = None,
        module: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "robotsgate"] if module else [str(ROBOTSGATE)]
    return subprocess.run([*command, *args], input=stdin.decode() if stdin else None,
                          capture_output=True, text=True, timeout=60, env=clean_env())


def field(output: str, name: str) -> str:
    found = re.search(rf"^{re.escape(name)}:\s+(.*)$", output, re.MULTILINE)
    assert found, f"no {name!r} in\n{output}"
    return found[1]


@pytest.fixture
def site() -> Iterator[Origin]:
    with serving(ROBOTS) as origin:
        yield origin


# -- check ------------------------------------------------------------------------------------


def test_check_disallowed_names_rule_line_group_and_extensions(site: Origin) -> None:
    done = run("check", site.url("/private/x?y=1"), "--agent", "MyBot")
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert field(out, "result") == "DISALLOWED"
    assert field(out, "rule") == "Disallow: /private (line 6)"
    assert field(out, "group") == "MyBot (line 2)"
    assert field(out, "robots.txt") == site.robots_url
    sha = hashlib.sha256(ROBOTS.encode()).hexdigest()
    assert field(out, "status") == f"HTTP 200, {len(ROBOTS)} bytes, sha256 {sha}"
    assert field(out, "crawl-delay") == "2 s"
    assert field(out, "request-rate") == "3/60s: one request every 20 s"
    assert field(out, "visit-time").startswith("0000-2359 UTC")
    assert re.findall(r"^sitemap:\s+(.*)$", out, re.MULTILINE) == [
        "https://example.com/sitemap.xml", "https://example.com/news.xml"]
    assert field(out, "license") == "https://rsl.example/license.xml (line 14; RSL)"
    assert field(out, "proxy") == "answers 403 (disallowed)"
    # Fetched the way the proxy fetches: once, with the bot's name as User-Agent.
    assert [s.user_agent for s in site.robots_fetches()] == ["MyBot"]
    assert not site.saw("/private/x?y=1")


RSL = """<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/">
    <license><permits type="usage">search ai-input</permits></license>
  </content>
  <content url="/premium/*" server="https://licensing.example/token">
    <license><prohibits type="usage">ai-all</prohibits></license>
  </content>
</rsl>
"""


def test_check_reads_the_sites_rsl_licences_and_answers_as_the_proxy_would() -> None:
    with serving("") as origin:
        origin.set_robots(f"User-agent: *\nAllow: /\nLicense: {origin.url('/license.xml')}\n"
                          f"License: {origin.url('/gone.xml')}\nLicense: license.xml\n")
        origin.route("/license.xml", 200, RSL, {"Content-Type": "application/rsl+xml"})
        origin.route("/gone.xml", 404, "gone\n")
        done = run("check", origin.url("/premium/a"), "--agent", "MyBot", "--purpose",
                   "train-ai,search", "--json")
        checked = json.loads(done.stdout)
        # search is licensed, train-ai is not, and the content names a licence server: the
        # proxy asks none, so it refuses (robotsgate.licensing.licenses).
        assert checked["proxy_answer"] == 403 and checked["reason"] == "license-required"
        found, gone, relative = checked["licenses"]
        assert found["applies"] == {"content": "/premium/*", "line": 5,
                                    "servers": ["https://licensing.example/token"]}
        assert found["purposes"]["train-ai"]["answer"] == "prohibited"
        assert "ai-all" in found["purposes"]["train-ai"]["evidence"]
        assert found["purposes"]["search"]["answer"] == "permitted"
        assert (gone["error"], gone["applies"]) == ("HTTP 404", None)
        assert relative["error"] == "not a full URL: nothing to fetch"
        text = run("check", origin.url("/premium/a"), "--agent", "MyBot").stdout
        # A bot that declares nothing is not refused for its use; the licence is still shown.
        assert field(text, "proxy") == "forwards it"
        assert field(text, "  applies") == ('<content url="/premium/*"> (line 5); licence '
                                            'server https://licensing.example/token')
        assert field(text, "  train-ai").startswith("prohibited: ")
        # The documents were fetched as the proxy fetches them: under its own name, never the
        # bot's.
        assert {s.user_agent for s in origin.seen if s.path.endswith(".xml")} == {"robotsgate"}


def test_check_allowed_exits_0(site: Origin) -> None:
    done = run("check", site.url("/private/open/page"), "--agent", "MyBot")
    assert done.returncode == 0, done.stdout + done.stderr
    assert field(done.stdout, "result") == "allowed"
    assert field(done.stdout, "rule") == "Allow: /private/open (line 7)"


def test_check_reads_a_whole_user_agent_header_as_the_proxy_does(site: Origin) -> None:
    header = "Mozilla/5.0 (compatible; MyBot/2.1; +https://example.com/bot)"
    done = run("check", site.url("/public"), "--agent", header)
    assert done.returncode == 0
    assert field(done.stdout, "group") == "MyBot (line 2)"
    # Fetched as the proxy fetches for a bot named by its User-Agent alone: as itself.
    assert [s.user_agent for s in site.robots_fetches()] == ["robotsgate"]
    other = run("check", site.url("/public"), "--agent", "curl/8.0")
    assert other.returncode == 1
    assert field(other.stdout, "group") == "* (line 9)"


def test_check_shows_what_the_site_wrote_with_its_controls_escaped(site: Origin) -> None:
    site.set_robots(b"User-agent: *\nDisallow: /p\x1b[2J\x07\nSitemap: http://x/\x1b]0;t\x07\n")
    done = run("check", site.url("/p%1B[2J%07"), "--agent", "MyBot", "--contact",
               "https://bots.example/about")
    assert done.returncode == 1
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert field(done.stdout, "rule") == "Disallow: /p\\x1b[2J\\x07 (line 2)"
    assert field(done.stdout, "sitemap") == "http://x/\\x1b]0;t\\x07"
    # Fetched as the proxy would fetch it for MyBot.
    assert [s.user_agent for s in site.robots_fetches()] == ["MyBot (+https://bots.example/about)"]


def test_check_without_an_agent_decides_as_a_bot_that_names_itself_nowhere(
        site: Origin) -> None:
    done = run("check", site.url("/private/x"))
    assert done.returncode == 1
    assert field(done.stdout, "agent") == "*"


def test_check_says_how_a_name_that_is_no_token_is_read(site: Origin) -> None:
    done = run("check", site.url("/public"), "--agent", "MJ12bot")
    assert "MJ12bot is not a product token" in field(done.stdout, "note")
    assert "bot, mj" in field(done.stdout, "note")


def test_check_with_a_file_fetches_nothing(site: Origin, tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text(ROBOTS)
    done = run("check", site.url("/private/x"), "--agent", "MyBot", "--robots", str(robots))
    assert done.returncode == 1
    assert field(done.stdout, "rule") == "Disallow: /private (line 6)"
    assert str(robots) in field(done.stdout, "robots.txt")
    assert site.seen == []
    piped = run("check", "http://example.com/private/open", "--agent", "MyBot", "--robots", "-",
                stdin=ROBOTS.encode())
    assert piped.returncode == 0


def test_check_without_robots_txt_allows_everything(site: Origin) -> None:
    site.set_robots("gone", status=404)
    done = run("check", site.url("/private/x"), "--agent", "MyBot")
    assert done.returncode == 0
    assert field(done.stdout, "status") == "HTTP 404: no robots.txt, so no restrictions"
    assert field(done.stdout, "group") == "none applies to this agent"


def test_check_an_unreachable_robots_txt_is_a_complete_disallow(site: Origin) -> None:
    site.set_robots("down", status=503)
    done = run("check", site.url("/anything"), "--agent", "MyBot")
    assert done.returncode == 1
    assert field(done.stdout, "status").startswith("unreachable (HTTP 503): complete disallow")
    assert field(done.stdout, "proxy") == "answers 503 (robots-unavailable)"


def test_check_follows_redirects_and_says_so(site: Origin) -> None:
    site.set_robots(handler=lambda seen: Reply(301, "", {"Location": "/real-robots.txt"}))
    site.route("/real-robots.txt", body=ROBOTS)
    done = run("check", site.url("/private/x"), "--agent", "MyBot")
    assert done.returncode == 1
    assert field(done.stdout, "redirected") == f"to {site.url('/real-robots.txt')}"


def test_check_json(site: Origin) -> None:
    done = run("check", site.url("/private/x"), "--agent", "MyBot", "--json", module=True)
    assert done.returncode == 1
    facts = json.loads(done.stdout)
    assert facts["allowed"] is False
    assert (facts["rule"], facts["line"], facts["group"]) == ("Disallow: /private", 6, ["MyBot"])
    assert facts["crawl_delay"] == 2
    assert facts["request_rate"] == {"requests": 3, "seconds": 60.0, "interval": 20.0}
    assert facts["robots_status"] == 200 and facts["robots_url"] == site.robots_url


@pytest.mark.parametrize("args", [
    ["check", "ftp://example.com/x", "--agent", "MyBot"],
    ["check", "not a url", "--agent", "MyBot"],
    ["check", "http://example.com/x", "--agent", "MyBot", "--robots", "/nonexistent"],
    ["check", "http://example.com/x", "--agent", "MyBot", "--semantics", "strict"],
    [],
])
def test_check_errors_exit_2(args: list[str]) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert done.stderr.strip()


# -- lint -------------------------------------------------------------------------------------


def test_lint_a_file_lists_findings_with_lines(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(b"\xef\xbb\xbf" + LINTED.encode() + b"Disallow: /caf\xe9\n")
    done = run("lint", str(path))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{path}:1: bom: byte order mark skipped",
        f"{path}:1: outside-group: Disallow outside any group (no User-agent above): ignored",
        f"{path}:3: misspelling: 'Disalow' read as 'disallow'",
        f"{path}:4: unknown-directive: unknown directive 'Noindex'",
        f"{path}:5: shadowed: Disallow: /a never applies: Allow: /a* (line 6) matches every "
        "path it matches and is longer, so it takes precedence",
        f"{path}:7: never-matches: Disallow: private never matches: paths start with '/' (a "
        "pattern starts with '/' or '*')",
        f"{path}:8: encoding: bytes that are not UTF-8",
        f"{path}: 7 findings",
    ]


def test_lint_a_clean_file_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_text(ROBOTS)
    done = run("lint", str(path))
    assert (done.returncode, done.stdout) == (0, f"{path}: no findings\n")


def test_lint_a_site_fetches_its_robots_txt(site: Origin) -> None:
    site.set_robots(LINTED)
    done = run("lint", site.url("/"), "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["source"] == site.robots_url
    assert [(f["line"], f["kind"]) for f in report["findings"]] == [
        (1, "outside-group"), (3, "misspelling"), (4, "unknown-directive"), (5, "shadowed"),
        (7, "never-matches")]
    assert site.paths() == ["/robots.txt"]


def test_lint_sees_a_body_over_500_kib_that_the_fetch_cut(site: Origin) -> None:
    site.set_robots("User-agent: *\nDisallow: /x\n" + "# padding\n" * (MAX_BYTES // 10 + 10))
    done = run("lint", site.robots_url)
    assert done.returncode == 1
    assert re.search(r"robots\.txt: size: body is 512,\d{3} bytes \(Content-Length\)",
                     done.stdout), done.stdout


def test_lint_a_site_without_robots_txt_is_an_error(site: Origin) -> None:
    site.set_robots("nothing", status=404)
    done = run("lint", site.url("/"))
    assert done.returncode == 2
    assert "HTTP 404" in done.stderr and "no restrictions" in done.stderr


def test_lint_reads_standard_input_and_the_1994_reading() -> None:
    body = b"User-agent: *\nDisallow: /\nAllow: /public\n"
    assert run("lint", "-", stdin=body).returncode == 0
    done = run("lint", "-", "--semantics", "classic", stdin=body)
    assert done.returncode == 1
    assert "-:3: shadowed: Allow: /public never applies" in done.stdout


def test_lint_an_unreadable_file_exits_2(tmp_path: Path) -> None:
    done = run("lint", str(tmp_path / "missing.txt"))
    assert done.returncode == 2 and "cannot read" in done.stderr


# -- show, help -------------------------------------------------------------------------------


def test_show_prints_an_archived_robots_txt(tmp_path: Path) -> None:
    sha = hashlib.sha256(ROBOTS.encode()).hexdigest()
    (tmp_path / sha).write_text(ROBOTS)
    (tmp_path / f"{sha}.json").write_text(json.dumps(
        {"url": "http://a.example/robots.txt", "status": 200,
         "fetched_at": "2026-03-01T09:59:00.000+00:00"}))
    done = run("show", sha, "--archive", str(tmp_path))
    assert done.returncode == 0
    assert done.stdout == ("# http://a.example/robots.txt (HTTP 200), fetched "
                           "2026-03-01T09:59:00.000+00:00\n" + ROBOTS)
    assert run("show", "0" * 64, "--archive", str(tmp_path)).returncode == 2
    # As git does: the first digits are enough when they name one file, as in a report.
    short = run("show", sha[:8].upper(), "--archive", str(tmp_path))
    assert (short.returncode, short.stdout) == (0, done.stdout)


def test_show_refuses_a_prefix_that_names_several_or_too_few_digits(tmp_path: Path) -> None:
    for name in ("abcdef" + "0" * 58, "abcdef" + "1" * 58):  # two files, one 6-digit start
        (tmp_path / name).write_text("User-agent: *\n")
    too_short = run("show", "abcde", "--archive", str(tmp_path))
    assert too_short.returncode == 2 and "6 to 64 hex digits" in too_short.stderr
    several = run("show", "abcdef", "--archive", str(tmp_path))
    assert several.returncode == 2 and "give more digits" in several.stderr


@pytest.mark.parametrize("module", [False, True])
def test_help_lists_the_commands(module: bool) -> None:
    done = run("--help", module=module)
    assert done.returncode == 0
    for command in ("serve", "check", "lint", "report", "show"):
        assert command in done.stdout
    for command in ("serve", "check", "lint", "report", "show"):
        sub = run(command, "--help", module=module)
        assert sub.returncode == 0
        assert sub.stdout.startswith(f"usage: robotsgate {command} ")


def test_the_console_script_is_installed() -> None:
    assert os.access(ROBOTSGATE, os.X_OK)


# -- the command itself ----------------------------------------------------------------------


def test_version_help_and_usage_mistakes() -> None:
    version = run("--version")
    assert version.returncode == 0 and re.fullmatch(r"robotsgate \S+\n", version.stdout)
    bare = run()
    assert bare.returncode == 2 and "COMMAND" in bare.stderr and "check" in bare.stderr
    for command in ("check", "lint", "report", "show"):
        helped = run("help", command)
        assert helped.returncode == 0 and f"usage: robotsgate {command}" in helped.stdout
    assert "usage: robotsgate serve" in run("help", "serve").stdout
    assert run("help").returncode == 0
    wrong = run("help", "bogus")
    assert wrong.returncode == 2 and "help takes one of" in wrong.stderr


def test_show_says_when_the_archive_is_not_there(tmp_path: Path) -> None:
    done = run("show", "abcdef", "--archive", str(tmp_path / "nodir"))
    assert done.returncode == 2
    assert "no such folder" in done.stderr


def test_report_reads_the_proxys_default_log_by_default(tmp_path: Path) -> None:
    record = {"ts": "2026-03-01T10:00:00.000+00:00", "event": "block", "reason": "disallowed",
              "status": 403, "agent": "MyBot", "url": "http://a.example/x"}
    (tmp_path / "robots-audit.jsonl").write_text(json.dumps(record) + "\n")
    done = subprocess.run([str(ROBOTSGATE), "report"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 0 and "blocks: 1 " in done.stdout


# -- usage mistakes say what was meant --------------------------------------------------------


@pytest.mark.parametrize(("args", "said"), [
    (["check", "--agnet", "MyBot", "http://example.com/"], "did you mean --agent?"),
    (["report", "--topp", "3"], "did you mean --top?"),
    (["lint", "--semantcs", "google", "-"], "did you mean --semantics?"),
    (["chek", "http://example.com/"], "did you mean check?"),
])
def test_a_misspelled_flag_or_command_is_answered_with_the_one_meant(
        args: list[str], said: str) -> None:
    done = run(*args)
    assert done.returncode == 2
    [error] = [line for line in done.stderr.splitlines() if "error:" in line]
    assert error.endswith(said), done.stderr
    assert done.stderr.startswith(f"usage: robotsgate {args[0] if args[0] != 'chek' else ''}")


def test_a_flag_like_no_other_gets_no_guess() -> None:
    done = run("check", "--zzzzzz", "http://example.com/")
    assert done.returncode == 2
    assert "unrecognized arguments: --zzzzzz" in done.stderr and "did you mean" not in done.stderr


# -- options ----------------------------------------------------------------------------------


def test_options_prints_every_option_with_its_help_as_the_site_does() -> None:
    """The same rows as the site's Options page (robotsgate.config.reference), for a terminal."""
    from robotsgate.config.options import OPTIONS

    done = run("options")
    assert done.returncode == 0, done.stderr
    names = re.findall(r"^(robots_\w+)  \(default: ", done.stdout, re.MULTILINE)
    assert names == [spec.name for spec in OPTIONS]
    words = " ".join(done.stdout.split())
    for spec in OPTIONS:
        assert " ".join(spec.help.split()) in words, spec.name
    assert "(default: robots-audit.jsonl)" in done.stdout
    assert run("help", "options").stdout == done.stdout


def test_options_with_a_word_prints_the_options_whose_name_has_it() -> None:
    done = run("options", "redis")
    assert done.returncode == 0
    assert re.findall(r"^(robots_\w+)  ", done.stdout, re.MULTILINE) == [
        "robots_redis", "robots_redis_prefix", "robots_redis_fallback"]  # as declared
    nothing = run("options", "no-such-word")
    assert nothing.returncode == 2 and "no option's name has 'no-such-word'" in nothing.stderr


def test_help_serve_points_at_the_options_command_not_at_a_page_of_the_checkout() -> None:
    """docs/operating/options.md is, in a checkout, a placeholder the site's build fills in."""
    done = run("help", "serve")
    assert done.returncode == 0
    assert "docs/operating/options.md" not in done.stdout
    assert "`robotsgate options`" in done.stdout


def test_serve_options_lists_robotsgates_options_first() -> None:
    """As mitmdump --options writes options (a config.yaml, each with its help), robotsgate's
    first and all together, then mitmproxy's own: 53 of ours were mixed into 721 lines."""
    from robotsgate.config.options import NAMES

    done = run("serve", "--options")
    assert done.returncode == 0, done.stderr
    keys = re.findall(r"^(\w+):", done.stdout, re.MULTILINE)
    assert set(keys[:len(NAMES)]) == NAMES
    assert not NAMES & set(keys[len(NAMES):])
    assert {"listen_port", "proxyauth", "ssl_insecure"} <= set(keys[len(NAMES):])
    assert done.stdout.startswith("# robotsgate's options")
