"""robotsgate.config.options: every option declared once, read into one frozen Settings, checked
with errors that name the option; no proxy needed."""

from dataclasses import FrozenInstanceError, fields
from typing import Any

import pytest
from support.driver import driven

from robotsgate.config.options import NAMES, OPTIONS, Rebuilds, Settings


def defaults() -> dict[str, Any]:
    return {spec.name: spec.default for spec in OPTIONS}


def read(**changed: Any) -> Settings:
    values = defaults() | changed
    return Settings.read(values.__getitem__)


def test_every_settings_field_is_an_option_and_the_defaults_read_back() -> None:
    assert [spec.attribute for spec in OPTIONS] == [f.name for f in fields(Settings)]
    assert all(name.startswith("robots_") for name in NAMES)
    assert read() == Settings()


def test_settings_are_frozen() -> None:
    with pytest.raises(FrozenInstanceError):
        Settings().mode = "monitor"  # type: ignore[misc]


def test_the_proxy_registers_exactly_the_declared_options(tmp_path) -> None:
    with driven(robots_audit_log=str(tmp_path / "a.jsonl")) as addon:
        registered = {name for name in addon.tctx.options.keys()  # noqa: SIM118
                      if name.startswith("robots_")}
        assert registered == NAMES
        for spec in OPTIONS:  # with the declared help and default
            option = addon.tctx.options._options[spec.name]
            assert option.help == spec.help and option.default == spec.default


@pytest.mark.parametrize(("name", "value", "message"), [
    ("robots_mode", "enforcee", "robots_mode must be one of enforce, monitor; got 'enforcee'"),
    ("robots_cache_ttl", 0, "robots_cache_ttl must be a whole number from 1 to 86400; got 0"),
    ("robots_agent", "My Bot", "robots_agent: must be a product token"),
    ("robots_agents", ("10.0.0.0/8 CrawlerBot",), "robots_agents: "),
    ("robots_redis", "http://localhost", "robots_redis: must "),
    ("robots_redis_prefix", "", "robots_redis_prefix: must "),
    ("robots_signature_profiles", ("shop.example=rfc",),
     "robots_signature_profiles: each entry is HOST=PROFILE"),
    ("robots_signature_profiles", ("shop.example",), "robots_signature_profiles: each entry"),
    ("robots_signature_profiles", ("*.=ietf",), "robots_signature_profiles: each entry"),
    ("robots_signature_profiles", ("a.example=ietf", "A.example=cloudflare"),
     "robots_signature_profiles: a.example is given twice"),
    ("robots_signing_asked", ("*", "News Bot"), "robots_signing_asked: must be a product token"),
])
def test_a_bad_value_is_refused_naming_its_option(name: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        read(**{name: value})
    assert str(refused.value).startswith(message)


def test_lists_become_tuples_so_settings_compare_by_value() -> None:
    settings = read(robots_agents=["10.0.0.0/8=CrawlerBot"])
    assert settings.agents == ("10.0.0.0/8=CrawlerBot",)
    assert settings == read(robots_agents=["10.0.0.0/8=CrawlerBot"])


@pytest.mark.parametrize(("name", "value", "rebuilds"), [
    ("robots_semantics", "google", {Rebuilds.GATE}),
    ("robots_cache_size", 10, {Rebuilds.GATE}),
    ("robots_strip", True, {Rebuilds.PAGES}),
    ("robots_audit_keep", 2, {Rebuilds.AUDIT}),
    ("robots_metrics_port", 9100, {Rebuilds.METRICS}),
    # Read on every request: changing them forgets nothing (no cached robots.txt is lost).
    ("robots_agent", "MyBot", {Rebuilds.NOTHING}),
    ("robots_mode", "monitor", {Rebuilds.NOTHING}),
])
def test_a_change_says_what_it_rebuilds(name: str, value: Any, rebuilds: set[Rebuilds]) -> None:
    assert read(**{name: value}).changed(Settings()) == rebuilds
    assert Settings().changed(None) == set(Rebuilds)
    assert Settings().changed(Settings()) == set()


async def test_changing_robots_agent_keeps_the_cached_robots_txt(tmp_path) -> None:
    with driven(robots_audit_log=str(tmp_path / "a.jsonl")) as addon:
        gate = addon.gate
        addon.configure(robots_agent="MyBot")
        assert addon.gate is gate
        addon.configure(robots_cache_size=10)
        assert addon.gate is not gate


def test_the_configuration_loads_without_redis_or_mitmproxy() -> None:
    # robotsgate.config.options is read by check, lint and the docs' reference too: it must not pull
    # in the Redis client (nor mitmproxy, nor an HTTP client) just to know the options.
    import subprocess
    import sys

    code = ("import sys, robotsgate.config.options as o; o.Settings; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'redis', 'mitmproxy', 'httpx'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
