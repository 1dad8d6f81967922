// Fetches URLs through the proxy named by HTTP_PROXY / HTTPS_PROXY, with Node's own modules only.
//
//   eval "$(scripts/proxy-env.sh)"       # the proxy variables and NODE_EXTRA_CA_CERTS
//   node deploy/clients/fetch.mjs https://example.com/ https://example.com/private/x
//
// Prints one JSON line per URL: {"url", "status", "body"}.
//
// Node before 22.21 / 24.0 reads no proxy variable at all, and its fetch() cannot be given a
// proxy without the undici package; so this asks the proxy itself, as any proxy client does:
// an http URL is sent to the proxy whole ("GET http://host/path"), an https one goes through a
// CONNECT tunnel in which Node's TLS checks the proxy's certificate for that host against its
// CA list, to which NODE_EXTRA_CA_CERTS (read when Node starts) adds robotsgate's CA.
// NO_PROXY is not read: every URL goes through the proxy.
// On Node >= 22.21 or >= 24.0, `NODE_USE_ENV_PROXY=1` makes fetch() do all this by itself.

import http from "node:http";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";

function proxyFor(url) {
  const name = url.protocol === "https:" ? "https_proxy" : "http_proxy";
  const value = process.env[name] || process.env[name.toUpperCase()];
  if (!value) throw new Error(`${name.toUpperCase()} is not set (see scripts/proxy-env.sh)`);
  const proxy = new URL(value);
  if (proxy.protocol !== "http:") throw new Error(`${name}: an http:// proxy URL, not ${value}`);
  return proxy;
}

function defaultPort(url) {
  return url.port || (url.protocol === "https:" ? "443" : "80");
}

// The response of one request, its body read whole.
function send(module, options) {
  return new Promise((resolve, reject) => {
    const request = module.request(options, (response) => {
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode,
                                         body: Buffer.concat(chunks).toString("utf8") }));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end();
  });
}

// A socket to url's host and port through the proxy (CONNECT host:port).
function tunnel(proxy, url) {
  const target = `${url.hostname}:${defaultPort(url)}`;
  return new Promise((resolve, reject) => {
    const request = http.request({ host: proxy.hostname, port: proxy.port || 80,
                                   method: "CONNECT", path: target, headers: { host: target } });
    request.on("connect", (response, socket) => {
      if (response.statusCode === 200) resolve(socket);
      else reject(new Error(`the proxy refused CONNECT ${target}: ${response.statusCode}`));
    });
    request.on("error", reject);
    request.end();
  });
}

async function get(address) {
  const url = new URL(address);
  const proxy = proxyFor(url);
  if (url.protocol === "http:") {
    return send(http, { host: proxy.hostname, port: proxy.port || 80, path: url.href,
                        headers: { host: url.host } });
  }
  if (url.protocol !== "https:") throw new Error(`not an http(s) URL: ${address}`);
  const socket = await tunnel(proxy, url);
  // SNI carries names only; the certificate is checked against the host either way.
  const servername = net.isIP(url.hostname) ? undefined : url.hostname;
  return send(https, {
    host: url.hostname, port: defaultPort(url), path: url.pathname + url.search,
    // With no agent, Node makes the connection with createConnection (an agent would open
    // one of its own, straight to the host).
    createConnection: () => tls.connect({ socket, host: url.hostname, servername }),
  });
}

for (const address of process.argv.slice(2)) {
  const { status, body } = await get(address);
  process.stdout.write(JSON.stringify({ url: address, status, body }) + "\n");
}
