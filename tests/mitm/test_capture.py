"""A captured bot's DNS (robotsgate run --capture), driven without a proxy: answered by the
proxy, never relayed to the server the bot chose."""

import pytest
from mitmproxy.net.dns import response_codes
from mitmproxy.proxy.mode_specs import ProxyMode
from mitmproxy.test import tflow
from support.driver import documentation_address, driven

from robotsgate.mitm.capture import Capture


def captured_question():
    flow = tflow.tdnsflow()
    flow.client_conn.proxy_mode = ProxyMode.parse("tun:rgtun0")
    return flow


async def test_a_captured_question_is_answered_by_the_proxys_resolver(tmp_path) -> None:
    with driven(robots_audit_log=str(tmp_path / "a.jsonl")) as addon:
        flow = captured_question()
        await Capture(addon.runtime).dns_request(flow)
    assert flow.response is not None
    assert flow.response.response_code == response_codes.NOERROR
    assert [record.ipv4_address.compressed for record in flow.response.answers] == \
        [(await documentation_address("dns.google", 443))[0]]


async def test_a_fault_while_answering_is_servfail_never_relayed(tmp_path) -> None:
    """mitmproxy relays a DNS question its hooks left unanswered to the server the bot chose:
    a fault of the proxy's must leave an answer all the same (fail closed)."""
    async def broken(host: str, port: int) -> list[str]:
        raise RuntimeError("a fault of the proxy's")

    with driven(robots_audit_log=str(tmp_path / "a.jsonl"), lookup=broken) as addon:
        flow = captured_question()
        with pytest.raises(RuntimeError):
            await Capture(addon.runtime).dns_request(flow)
    assert flow.response is not None
    assert flow.response.response_code == response_codes.SERVFAIL
