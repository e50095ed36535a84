// Discovery: what a stock, strict client reads before anything else.
// openid-client (OIDC Discovery and RFC 8414), oauth4webapi's RFC 9728
// processing and the MCP SDK's own metadata discovery all accept the
// gateway's documents; the gateway's namespaces answer JSON 404s for
// unknown paths; discovery carries CORS.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import * as oauth from 'oauth4webapi';
import {
  discoverOAuthProtectedResourceMetadata,
  discoverAuthorizationServerMetadata,
  discoverOAuthServerInfo,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { startStack, VENDOR } from './harness.mjs';

let stack;
let origin;

before(async () => {
  stack = await startStack({ name: 'discovery', waitForCatalog: false });
  origin = stack.origin;
});

after(async () => {
  await stack?.stop();
});

const insecure = { execute: [client.allowInsecureRequests] };

test('openid-client discovery (OpenID Connect Discovery) succeeds', async () => {
  const config = await client.discovery(new URL(origin), VENDOR.clientId, undefined, client.None(), insecure);
  const md = config.serverMetadata();
  assert.equal(md.issuer, origin);
  assert.equal(md.authorization_endpoint, `${origin}/oauth/authorize`);
  assert.equal(md.token_endpoint, `${origin}/api/oauth/token`);
  assert.equal(md.userinfo_endpoint, `${origin}/api/oauth/userinfo`);
  assert.equal(md.revocation_endpoint, `${origin}/api/oauth/revoke`);
  assert.equal(md.introspection_endpoint, `${origin}/api/oauth/introspect`);
  assert.equal(md.registration_endpoint, `${origin}/api/oauth/register`);
  assert.equal(md.jwks_uri, `${origin}/.well-known/jwks.json`);
  assert.deepEqual(md.response_types_supported, ['code']);
  assert.deepEqual(md.code_challenge_methods_supported, ['S256']);
  assert.ok(md.grant_types_supported.includes('authorization_code'));
  assert.ok(md.grant_types_supported.includes('refresh_token'));
  assert.ok(md.token_endpoint_auth_methods_supported.includes('none'));
  assert.ok(md.token_endpoint_auth_methods_supported.includes('client_secret_post'));
  assert.ok(md.id_token_signing_alg_values_supported.includes('ES256'));
  assert.equal(md.authorization_response_iss_parameter_supported, true);
  assert.equal(md.client_id_metadata_document_supported, true);
  for (const s of ['openid', 'profile', 'email', 'account:read']) {
    assert.ok(md.scopes_supported.includes(s), `scopes_supported lacks ${s}`);
  }
  // The WorkOS-style agent_auth extension is unsupported: nothing may
  // invite a client to try it.
  assert.equal(md.identity_endpoint, undefined);
  assert.equal(md.agent_auth, undefined);
});

test('openid-client discovery (RFC 8414 authorization server metadata) succeeds', async () => {
  const config = await client.discovery(new URL(origin), VENDOR.clientId, undefined, client.None(), {
    ...insecure,
    algorithm: 'oauth2',
  });
  const md = config.serverMetadata();
  assert.equal(md.issuer, origin);
  assert.equal(md.token_endpoint, `${origin}/api/oauth/token`);
});

test('openid-client refuses the gateway over plain http unless allowed (sanity of the strict client)', async () => {
  await assert.rejects(client.discovery(new URL(origin), VENDOR.clientId, undefined, client.None()), /HTTPS|https/);
});

test('JWKS publishes an ES256 P-256 key with a kid', async () => {
  const res = await fetch(`${origin}/.well-known/jwks.json`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^application\/(jwk-set\+)?json/);
  const jwks = await res.json();
  assert.ok(Array.isArray(jwks.keys) && jwks.keys.length >= 1);
  const k = jwks.keys[0];
  assert.equal(k.kty, 'EC');
  assert.equal(k.crv, 'P-256');
  assert.ok(k.kid, 'the key has a kid');
  assert.ok(!k.d, 'no private key material is published');
  for (const key of jwks.keys) assert.ok(!key.d, 'no private key material is published');
});

test('RFC 9728 protected resource metadata: resource is the origin, authorization_servers contains it', async () => {
  // oauth4webapi processes the document strictly, including the RFC 9728
  // check that `resource` equals the identifier it was fetched for.
  const res = await oauth.resourceDiscoveryRequest(new URL(origin), { [oauth.allowInsecureRequests]: true });
  const prm = await oauth.processResourceDiscoveryResponse(new URL(origin), res);
  assert.equal(prm.resource, origin);
  assert.ok(prm.authorization_servers.includes(origin));
  assert.ok(prm.scopes_supported.includes('account:read'));
  assert.ok(prm.bearer_methods_supported.includes('header'));
  // Operator scopes must not be advertised here: a client that requests
  // everything advertised would ask for a mix no single client may hold.
  assert.ok(!prm.scopes_supported.includes('courses:write'));
});

test('MCP SDK discovery from the /mcp URL finds the root metadata and the authorization server', async () => {
  const prm = await discoverOAuthProtectedResourceMetadata(`${origin}/mcp`);
  assert.equal(prm.resource, origin);
  assert.deepEqual(prm.authorization_servers, [origin]);
  const asm = await discoverAuthorizationServerMetadata(origin);
  assert.equal(asm.issuer, origin);
  const info = await discoverOAuthServerInfo(`${origin}/mcp`);
  assert.equal(info.authorizationServerUrl, origin);
  assert.equal(info.authorizationServerMetadata.registration_endpoint, `${origin}/api/oauth/register`);
  assert.equal(info.resourceMetadata.resource, origin);
});

async function expectJSON404(path) {
  const res = await fetch(`${origin}${path}`, { redirect: 'manual' });
  const body = await res.text();
  assert.equal(res.status, 404, `${path}: status ${res.status}, body ${body.slice(0, 200)}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/, `${path}: content-type`);
  const json = JSON.parse(body);
  assert.equal(typeof json.error, 'string', `${path}: error member`);
  return json;
}

test('path-suffixed protected resource metadata is a JSON 404 or a consistent document', async () => {
  const res = await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`);
  if (res.status === 404) {
    await res.body?.cancel();
    await expectJSON404('/.well-known/oauth-protected-resource/mcp');
    return;
  }
  assert.equal(res.status, 200);
  // A document there must name the resource it describes (RFC 9728 §3.3),
  // and a strict client must accept it.
  const prm = await oauth.processResourceDiscoveryResponse(new URL(`${origin}/mcp`), res);
  assert.ok(prm.authorization_servers.includes(origin));
});

test('unknown /.well-known/oauth-* and /api/oauth/* paths are JSON 404s, never the legacy site', async () => {
  await expectJSON404('/.well-known/oauth-foo');
  await expectJSON404('/.well-known/oauth-authorization-server/extra');
  await expectJSON404('/api/oauth/nope');
  await expectJSON404('/api/oauth/token/extra');
});

test('discovery documents carry CORS for browser-based clients', async () => {
  for (const path of [
    '/.well-known/oauth-protected-resource',
    '/.well-known/oauth-authorization-server',
    '/.well-known/openid-configuration',
    '/.well-known/jwks.json',
  ]) {
    const res = await fetch(`${origin}${path}`, { headers: { Origin: 'https://app.example' } });
    await res.arrayBuffer();
    assert.equal(res.status, 200, path);
    const acao = res.headers.get('access-control-allow-origin');
    assert.ok(acao === '*' || acao === 'https://app.example', `${path}: Access-Control-Allow-Origin is ${acao}`);
  }
  // A preflight for the MCP SDK's discovery request header succeeds.
  const pre = await fetch(`${origin}/.well-known/oauth-protected-resource`, {
    method: 'OPTIONS',
    headers: {
      Origin: 'https://app.example',
      'Access-Control-Request-Method': 'GET',
      'Access-Control-Request-Headers': 'mcp-protocol-version',
    },
  });
  await pre.arrayBuffer();
  assert.ok(pre.status === 200 || pre.status === 204, `preflight status ${pre.status}`);
  const allowHeaders = (pre.headers.get('access-control-allow-headers') ?? '').toLowerCase();
  assert.ok(
    allowHeaders === '*' || allowHeaders.includes('mcp-protocol-version'),
    `preflight Access-Control-Allow-Headers is "${allowHeaders}"`,
  );
});

test('no CORS on the authorization endpoint', async () => {
  const res = await fetch(`${origin}/oauth/authorize?client_id=${VENDOR.clientId}`, {
    headers: { Origin: 'https://app.example' },
    redirect: 'manual',
  });
  await res.arrayBuffer();
  assert.equal(res.headers.get('access-control-allow-origin'), null);
});
