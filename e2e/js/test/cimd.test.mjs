// Client ID Metadata Documents end to end: the official MCP SDK client
// uses the https URL of its metadata document as client_id (no
// registration), the gateway fetches the document from a loopback https
// server whose CA Caddy trusts through SSL_CERT_FILE (allowed here by
// allow_private_networks), a browser signs in, and the token works at
// /mcp. Unreviewed, such a client gets read and identity scopes only; the
// operator lifts that through the admin API.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  startStack,
  startDocServer,
  launchBrowser,
  authorizeInBrowser,
  adminAPI,
  authorizationRequest,
  TestProvider,
  toolPayload,
  PUBLIC_TOOLS,
  MEMBER_TOOLS,
} from './harness.mjs';

let docs;
let stack;
let browser;
let agentURL;

before(async () => {
  docs = await startDocServer();
  stack = await startStack({
    name: 'cimd',
    caddyEnv: { SSL_CERT_FILE: docs.caFile },
    gatewayOptions: '\t\tmetadata_documents {\n\t\t\tallow_private_networks\n\t\t}',
  });
  browser = await launchBrowser();
  agentURL = docs.url('/agents/doc-agent.json');
  docs.docs.set('/agents/doc-agent.json', () => ({
    client_id: agentURL,
    client_name: 'Doc Agent',
    client_uri: docs.url('/'),
    redirect_uris: [stack.callbackURL],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  }));
  docs.docs.set('/agents/impostor.json', () => ({
    client_id: docs.url('/agents/someone-else.json'),
    client_name: 'Impostor',
    redirect_uris: [stack.callbackURL],
  }));
  docs.docs.set('/agents/foreign-redirect.json', () => ({
    client_id: docs.url('/agents/foreign-redirect.json'),
    redirect_uris: ['https://evil.example/callback'],
  }));
});

after(async () => {
  await browser?.close();
  await stack?.stop();
  await docs?.close();
});

function recordingFetch(log) {
  return async (url, init = {}) => {
    log.push({ url: String(url), method: init.method ?? 'GET' });
    return fetch(url, init);
  };
}

const authorizationURL = (clientID, scope) => authorizationRequest(stack, clientID, scope).url;

describe('the MCP SDK with a client metadata document URL', () => {
  const provider = new TestProvider(() => ({ stack, browser }), {
    clientMetadataUrl: 'https://placeholder.invalid/x',
  });
  let member;

  test('auth() uses the document URL as client_id, without registering, and gets tokens', async () => {
    provider.clientMetadataUrl = agentURL;
    const log = [];
    const first = await auth(provider, { serverUrl: stack.mcpURL, fetchFn: recordingFetch(log) });
    assert.equal(first, 'REDIRECT');
    assert.ok(!log.some((e) => e.url.endsWith('/api/oauth/register')), 'no dynamic registration');
    assert.equal(provider.authorizationURL.searchParams.get('client_id'), agentURL);
    const cb = provider.callbackParams;
    assert.ok(cb.code, `a code: ${JSON.stringify(cb)}`);
    assert.equal(cb.iss, stack.origin);
    assert.ok(docs.hits.includes('/agents/doc-agent.json'), 'the gateway fetched the document');

    const second = await auth(provider, { serverUrl: stack.mcpURL, authorizationCode: cb.code });
    assert.equal(second, 'AUTHORIZED');
    assert.ok(provider.tokens().access_token);
  });

  test('the token opens the member tools at /mcp', async () => {
    assert.ok(provider.tokens(), 'needs the tokens of the previous test');
    member = new Client({ name: 'doc-agent', version: '1.0.0' });
    await member.connect(new StreamableHTTPClientTransport(new URL(stack.mcpURL), { authProvider: provider }));
    const list = await member.listTools();
    assert.deepEqual(list.tools.map((t) => t.name).sort(), [...PUBLIC_TOOLS, ...MEMBER_TOOLS].sort());
    const res = await member.callTool({ name: 'my_enrollments', arguments: {} });
    assert.ok(!res.isError, JSON.stringify(toolPayload(res)).slice(0, 300));
    await member.close();
  });

  test('the operator sees the client, unreviewed and limited to read and identity scopes', async () => {
    const { status, body } = await adminAPI(stack, `/clients?issuer=${encodeURIComponent(stack.origin)}`);
    assert.equal(status, 200, JSON.stringify(body));
    const c = body.find((x) => x.client_id === agentURL);
    assert.ok(c, `listed: ${JSON.stringify(body)}`);
    assert.equal(c.kind, 'metadata');
    assert.equal(c.client_name, 'Doc Agent');
    assert.equal(c.reviewed, false);
    assert.ok(!c.allowed_scopes.includes('account:write'));
  });

  test('unreviewed, account:write is refused with invalid_scope; reviewed, it is granted', async () => {
    const cb = await authorizeInBrowser(authorizationURL(agentURL, 'openid account:write'), {
      browser,
      callbackURL: stack.callbackURL,
    });
    assert.equal(cb.error, 'invalid_scope', JSON.stringify(cb));

    const review = await adminAPI(stack, '/clients/review', {
      issuer: stack.origin,
      client_id: agentURL,
      scopes: ['openid', 'profile', 'email', 'account:read', 'account:write'],
      reviewed: true,
    });
    assert.equal(review.status, 200, JSON.stringify(review.body));
    assert.ok(review.body.allowed_scopes.includes('account:write'));

    const ok = await authorizeInBrowser(authorizationURL(agentURL, 'openid account:write'), {
      browser,
      callbackURL: stack.callbackURL,
    });
    assert.ok(ok.code, JSON.stringify(ok));
  });
});

describe('documents the gateway refuses', () => {
  for (const [name, p, want] of [
    ['a document whose client_id is another URL', '/agents/impostor.json', 'must equal its URL'],
    ['a redirect URI off the document host', '/agents/foreign-redirect.json', 'must be on'],
    ['a missing document', '/agents/missing.json', 'HTTP 404'],
  ]) {
    test(`${name}: an error page, never a redirect`, async () => {
      const res = await fetch(authorizationURL(docs.url(p), 'openid'), { redirect: 'manual' });
      const body = await res.text();
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('location'), null);
      assert.match(body, /invalid_client_metadata/);
      assert.ok(body.includes(want), body.slice(0, 500));
    });
  }

  test('an http client_id URL is refused', async () => {
    const res = await fetch(authorizationURL(docs.url('/agents/doc-agent.json').replace('https:', 'http:'), 'openid'), {
      redirect: 'manual',
    });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /https URL/);
  });
});
