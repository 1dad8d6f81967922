// robotsgate for browsers: every request goes through the proxy.
//
// No host is sent DIRECT, and there is no "; DIRECT" fallback: robotsgate only enforces what
// goes through it, so a host sent DIRECT (an intranet name, an address, localhost) is a way
// around robots.txt, and a fallback would send everything around it whenever the proxy is
// down. No DNS helper is called either (dnsResolve, isInNet, isResolvable): the browser would
// resolve names itself, outside the proxy.
//
// Change the address when the proxy is not on the browser's machine (ROBOTSGATE_HOST and
// ROBOTSGATE_PORT in /etc/default/robotsgate).
function FindProxyForURL(url, host) {
    return "PROXY 127.0.0.1:8080";
}
