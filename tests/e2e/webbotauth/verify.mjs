// Verifies one request as a site using Cloudflare's web-bot-auth package would, holding only
// the signature agent's published key directory (a JWK Set).
//
// stdin:  {"request": {"method": "GET", "url": "https://host:port/path", "headers": {...}},
//          "directory": {"keys": [JWK, ...]}}
// stdout: {"ok": true, "keyid": ..., "kid": ..., "created": ..., "expires": ..., "base": ...}
//         or {"ok": false, "error": ..., "base": ... (when the package got that far)}
// exit:   0 when the signature verifies, 1 when it does not, 2 on bad input.
//
// The package's verify() reads the clock itself (Date.now() in web-bot-auth, new Date() in
// http-message-sig) and takes none: there is no "now" to pass here, and the clock is not faked.
// A signature that has expired is made by a proxy whose own clock is late (the tests inject it).

import { verify, jwkToKeyID, helpers } from "web-bot-auth";
import { verifierFromJWK } from "web-bot-auth/crypto";

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

let input;
try {
  input = JSON.parse(await readStdin());
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: `bad input: ${error.message}` }));
  process.exit(2);
}

// The directory's keys by their RFC 7638 thumbprint, computed by the package (keyid is that
// thumbprint in Web Bot Auth), not by the "kid" the directory claims.
const keys = new Map();
for (const jwk of input.directory.keys ?? []) {
  keys.set(await jwkToKeyID(jwk, helpers.WEBCRYPTO_SHA256, helpers.BASE64URL_DECODE), jwk);
}

const { method, url, headers } = input.request;
const request = new Request(url, { method, headers });
const seen = {};
try {
  await verify(request, async (data, signature, params) => {
    seen.base = data;
    const jwk = keys.get(params.keyid);
    if (jwk === undefined) {
      throw new Error(`no key in the directory has keyid ${params.keyid}`);
    }
    await (await verifierFromJWK(jwk))(data, signature, params);
    Object.assign(seen, {
      keyid: params.keyid,
      kid: jwk.kid,
      created: params.created.getTime() / 1000,
      expires: params.expires.getTime() / 1000,
    });
  });
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: error.message, ...seen }));
  process.exit(1);
}
console.log(JSON.stringify({ ok: true, ...seen }));
