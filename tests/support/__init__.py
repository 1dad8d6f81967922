"""Helpers the tests share, imported as `from support.<module> import ...`.

Fixtures stay in the conftest.py files, where pytest finds them; what a test module calls or
builds itself lives here, so that no test module imports a conftest.py or another test module.

- `clock`: `FakeClock`, wall clock, monotonic clock and sleep in one, moving only when someone
  sleeps or the test moves it.
- `origins`: `Origins`, answers from a table through httpx.MockTransport, counted; `ok(body)`.
- `gate`: `request_for(url)`, a gate Request; `wire_gate(...)`, the gate built bottom-up as the
  proxy builds it, every part at hand (`Wired`); `make_gate`, `req`: the short forms.
- `driver`: `driven(...)`, robotsgate's addons driven as mitmproxy drives them (`Driven`).
- `strategies`: Hypothesis strategies of robots.txt inputs (files, lines, agents, URLs,
  semantics).
- `relay`: `Relay`, a TCP relay in front of a real server that can lose its answers.
- `reference`: RFC 9309 matching and longest-match decisions, written plainly, to compare with.

`tests/` is on sys.path when pytest runs (its conftest.py sits in a directory without an
__init__.py), which is also how `e2e` and `protocol` are imported from the top-level tests.
"""
