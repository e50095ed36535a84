// The MCP server at /mcp with the official MCP TypeScript SDK: anonymous
// catalog tools, then the SDK's own OAuth machinery end to end (RFC 9728
// discovery from /mcp, RFC 8414, dynamic registration returning the vendor
// client, scope selection from the protected resource metadata, resource
// indicator, PKCE) with a real browser signing in, then member tools with
// the token, and challenges for bad tokens (never a silent anonymous
// fallback).

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  startStack,
  launchBrowser,
  TestProvider,
  parseBearerChallenge,
  toolPayload,
  catalogResults,
  MEMBER,
  VENDOR,
  PUBLIC_TOOLS,
  MEMBER_TOOLS,
} from './harness.mjs';

let stack;
let origin;
let browser;

before(async () => {
  stack = await startStack({ name: 'mcp' });
  origin = stack.origin;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

async function connect(transportOptions) {
  const client = new Client({ name: 'schoolgate-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(stack.mcpURL), transportOptions);
  await client.connect(transport);
  return client;
}

const toolNames = (list) => list.tools.map((t) => t.name).sort();

describe('anonymous', () => {
  let anon;
  before(async () => {
    anon = await connect();
  });
  after(async () => {
    await anon?.close();
  });

  test('tools/list has exactly the public tools', async () => {
    const list = await anon.listTools();
    assert.deepEqual(toolNames(list), PUBLIC_TOOLS);
    for (const t of list.tools) {
      assert.equal(t.inputSchema.type, 'object', `${t.name} has an object input schema`);
      assert.ok(t.description, `${t.name} has a description`);
    }
  });

  let slug;
  test('search_catalog finds courses', async () => {
    const res = await anon.callTool({ name: 'search_catalog', arguments: { query: 'photography' } });
    assert.ok(!res.isError, JSON.stringify(res));
    const results = catalogResults(res);
    assert.ok(results.length > 0, `results: ${JSON.stringify(toolPayload(res)).slice(0, 500)}`);
    const slugs = results.map((r) => r.slug).filter(Boolean);
    assert.ok(slugs.length > 0, 'results carry slugs');
    const course = results.find((r) => r.slug && (!r.kind || /course/i.test(r.kind)) && (!r.type || /course/i.test(r.type)));
    slug = (course ?? results[0]).slug;
    assert.ok(slugs.includes('photography-fundamentals'), `photography-fundamentals among ${slugs}`);
    for (const r of results) {
      if (r.url) assert.ok(r.url.startsWith(`${origin}/`), `result URLs are on the site origin: ${r.url}`);
    }
  });

  test('search_catalog filters by kind and limits the results', async () => {
    const res = await anon.callTool({ name: 'search_catalog', arguments: { query: 'photo', kind: 'event', limit: 2 } });
    assert.ok(!res.isError, JSON.stringify(res));
    const results = catalogResults(res);
    assert.ok(results.length >= 1 && results.length <= 2, `1 or 2 results: ${results.length}`);
    for (const r of results) assert.equal(r.kind, 'event');
    const bad = await anon.callTool({ name: 'search_catalog', arguments: { query: 'x', kind: 'spaceship' } }).catch((e) => ({ thrown: e }));
    assert.ok(bad.thrown || bad.isError === true, 'an unknown kind is refused');
  });

  test('get_course returns the course found by search', async () => {
    assert.ok(slug, 'needs a slug from search_catalog');
    const res = await anon.callTool({ name: 'get_course', arguments: { slug } });
    assert.ok(!res.isError, JSON.stringify(res));
    const text = JSON.stringify(toolPayload(res));
    assert.ok(text.includes(slug), `the course payload names ${slug}: ${text.slice(0, 300)}`);
    assert.ok(/title/i.test(text), 'the course payload has a title');
  });

  test('get_course with an unknown slug is a tool error, not a protocol error', async () => {
    const res = await anon.callTool({ name: 'get_course', arguments: { slug: 'no-such-course-xyz' } });
    assert.equal(res.isError, true);
  });

  test('list_events and list_membership_plans answer', async () => {
    const ev = await anon.callTool({ name: 'list_events', arguments: {} });
    assert.ok(!ev.isError, JSON.stringify(ev));
    assert.ok(JSON.stringify(toolPayload(ev)).includes('winter-light-photo-walk'));
    const mp = await anon.callTool({ name: 'list_membership_plans', arguments: {} });
    assert.ok(!mp.isError, JSON.stringify(mp));
  });

  test('member tools are not callable anonymously', async () => {
    const res = await anon.callTool({ name: 'my_enrollments', arguments: {} }).catch((e) => ({ thrown: e }));
    assert.ok(res.thrown || res.isError === true, `anonymous my_enrollments must fail: ${JSON.stringify(res)}`);
  });
});

/** A fetch that records what the SDK sends, for assertions. */
function recordingFetch(log) {
  return async (url, init = {}) => {
    const entry = { url: String(url), method: init.method ?? 'GET', body: init.body ? String(init.body) : undefined };
    log.push(entry);
    const res = await fetch(url, init);
    entry.status = res.status;
    return res;
  };
}

describe('member via the SDK OAuth flow', () => {
  const provider = new TestProvider(() => ({ stack, browser }));
  let member;

  test('auth() discovers, registers (vendor client), authorizes with PKCE + resource and exchanges the code', async () => {
    const log = [];
    const first = await auth(provider, { serverUrl: stack.mcpURL, fetchFn: recordingFetch(log) });
    assert.equal(first, 'REDIRECT');

    // Dynamic registration with the vendor's name and redirect URI returns
    // the vendor's client.
    const reg = log.find((e) => e.url === `${origin}/api/oauth/register`);
    assert.ok(reg, `the SDK registered: ${log.map((e) => `${e.method} ${e.url} ${e.status}`).join('; ')}`);
    assert.equal(reg.status, 201);
    assert.equal(provider.clientInformation().client_id, VENDOR.clientId);

    // The authorization request the SDK built from the metadata.
    const u = provider.authorizationURL;
    assert.equal(`${u.origin}${u.pathname}`, `${origin}/oauth/authorize`);
    assert.equal(u.searchParams.get('client_id'), VENDOR.clientId);
    assert.equal(u.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(u.searchParams.get('resource'), origin);
    assert.deepEqual(u.searchParams.get('scope').split(' ').sort(), VENDOR.scope.split(' ').sort());

    // What came back to the loopback redirect URI.
    const cb = provider.callbackParams;
    assert.ok(cb.code, `a code: ${JSON.stringify(cb)}`);
    assert.equal(cb.state, provider._state);
    assert.equal(cb.iss, origin);

    const second = await auth(provider, {
      serverUrl: stack.mcpURL,
      authorizationCode: cb.code,
      fetchFn: recordingFetch(log),
    });
    assert.equal(second, 'AUTHORIZED');
    const tokens = provider.tokens();
    assert.ok(tokens.access_token.startsWith('sgat_'));
    assert.ok(tokens.refresh_token);
    const tokenReq = log.findLast((e) => e.url === `${origin}/api/oauth/token`);
    assert.equal(new URLSearchParams(tokenReq.body).get('resource'), origin);
  });

  test('with the token, tools/list adds the member tools', async () => {
    assert.ok(provider.tokens(), 'needs the tokens of the previous test');
    member = await connect({ authProvider: provider });
    const list = await member.listTools();
    assert.deepEqual(toolNames(list), [...PUBLIC_TOOLS, ...MEMBER_TOOLS].sort());
  });

  test('my_enrollments returns member-1 enrolled courses', async () => {
    assert.ok(member, 'needs the member connection');
    const res = await member.callTool({ name: 'my_enrollments', arguments: {} });
    assert.ok(!res.isError, JSON.stringify(res));
    const text = JSON.stringify(toolPayload(res));
    for (const slug of ['photography-fundamentals', 'portrait-photography', 'editing-in-lightroom', 'smartphone-photography']) {
      assert.ok(text.includes(slug), `my_enrollments names ${slug}: ${text.slice(0, 400)}`);
    }
    assert.ok(!text.includes('landscape-photography'), "another member's course is not shown");
    assert.ok(text.includes('pf-03-exposure-triangle') && text.includes('754'), 'lastWatchedLecture is shown');
  });

  test('account_query runs a read-only query for the member', async () => {
    assert.ok(member, 'needs the member connection');
    const res = await member.callTool({ name: 'account_query', arguments: { query: '{ viewer { id email } }' } });
    assert.ok(!res.isError, JSON.stringify(res));
    const text = JSON.stringify(toolPayload(res));
    assert.ok(text.includes(MEMBER.sub) && text.includes(MEMBER.email), text.slice(0, 300));
  });

  test('account_query: a mutation without account:write is challenged for account:read and account:write', async () => {
    assert.ok(member, 'needs the member connection');
    // 403 insufficient_scope naming every scope the call needs; this SDK
    // answers it with a refresh, which cannot add account:write, and
    // reports the 403 (see "step-up with the v1 SDK" below).
    const raw = await fetch(stack.mcpURL, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${provider.tokens().access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'account_query', arguments: { query: 'mutation { updateProgress(slug: "x") { ok } }' } },
      }),
    });
    assert.equal(raw.status, 403);
    const ch = parseBearerChallenge(raw.headers.get('www-authenticate'));
    assert.equal(ch?.error, 'insufficient_scope');
    assert.equal(ch?.scope, 'account:read account:write');
    assert.equal(ch?.resource_metadata, `${origin}/.well-known/oauth-protected-resource`);
    await assert.rejects(
      member.callTool({ name: 'account_query', arguments: { query: 'mutation { updateProgress(slug: "x") { ok } }' } }),
      (err) => err.code === 403,
    );
  });

  test('a revoked access token: the SDK follows the 401 challenge and refreshes transparently', async () => {
    assert.ok(provider.tokens(), 'needs the tokens');
    const old = provider.tokens();
    const res = await fetch(`${origin}/api/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: old.access_token, client_id: VENDOR.clientId }),
    });
    assert.equal(res.status, 200);
    await member?.close();
    member = await connect({ authProvider: provider });
    const list = await member.listTools();
    assert.ok(toolNames(list).includes('my_enrollments'));
    assert.notEqual(provider.tokens().access_token, old.access_token, 'the SDK refreshed');
    assert.notEqual(provider.tokens().refresh_token, old.refresh_token, 'the refresh token rotated');
    await member.close();
  });

  test('an invalid token with no way to refresh: the SDK restarts authorization (UnauthorizedError)', async () => {
    const p = new TestProvider(() => ({ stack, browser }), { interactive: false });
    p.saveClientInformation(provider.clientInformation());
    p.saveTokens({ access_token: 'sgat_invalid', token_type: 'Bearer', issuer: provider.tokens().issuer });
    await assert.rejects(connect({ authProvider: p }), (err) => err instanceof UnauthorizedError);
    assert.ok(p.authorizationURL, 'the SDK started a new authorization from the challenge');
    assert.equal(p.authorizationURL.searchParams.get('resource'), origin);
  });
});

describe('bad tokens are never served as anonymous', () => {
  test('the SDK with an invalid bearer header fails to connect with HTTP 401', async () => {
    await assert.rejects(
      connect({ requestInit: { headers: { Authorization: 'Bearer sgat_invalid' } } }),
      (err) => err instanceof UnauthorizedError || err.code === 401 || /401/.test(err.message),
    );
  });

  test('raw initialize with an invalid token: 401 invalid_token with resource_metadata', async () => {
    const res = await fetch(stack.mcpURL, {
      method: 'POST',
      headers: {
        Authorization: 'Bearer sgat_invalid',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
      }),
    });
    assert.equal(res.status, 401);
    const ch = parseBearerChallenge(res.headers.get('www-authenticate'));
    assert.equal(ch?.error, 'invalid_token');
    assert.equal(ch?.resource_metadata, `${origin}/.well-known/oauth-protected-resource`);
    assert.match(res.headers.get('access-control-expose-headers') ?? '', /www-authenticate/i);
  });
});

// Step-up with the v1 SDK (1.32.2): its transport meets the 403
// insufficient_scope of a member tool called with a token granted without
// account:read and tries to upscope, but with a refresh token in hand it
// refreshes instead of authorizing again, and a refresh cannot widen a
// grant (RFC 6749 §6): the call is challenged again and the SDK gives up
// with a 403 error. The gateway's answers are the challenge both times.
describe('step-up with the v1 SDK', () => {
  const provider = new TestProvider(() => ({ stack, browser }));

  test('the SDK refreshes on the 403 challenge and then reports it', async () => {
    assert.equal(await auth(provider, { serverUrl: stack.mcpURL, scope: 'openid profile' }), 'REDIRECT');
    assert.equal(await auth(provider, { serverUrl: stack.mcpURL, authorizationCode: provider.callbackParams.code }), 'AUTHORIZED');
    const first = provider.tokens();
    assert.deepEqual(first.scope.split(' ').sort(), ['openid', 'profile']);
    const authorizations = provider.authorizationURL;

    const seen = [];
    const recording = async (url, init = {}) => {
      const res = await fetch(url, init);
      seen.push({ url: String(url), status: res.status, body: init.body ? String(init.body) : '', challenge: res.headers.get('www-authenticate') });
      return res;
    };
    const client = new Client({ name: 'schoolgate-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(stack.mcpURL), { authProvider: provider, fetch: recording }));
    try {
      const list = await client.listTools();
      assert.deepEqual(toolNames(list), [...PUBLIC_TOOLS, ...MEMBER_TOOLS].sort(), 'a member token without the scope still lists the member tools');
      await assert.rejects(client.callTool({ name: 'my_enrollments', arguments: {} }), (err) => err.code === 403 && /after trying upscoping/.test(err.message));
    } finally {
      await client.close();
    }
    // The Bearer challenge with the error, then the school's DPoP one
    // (dpop allowed, the default), as the Account API answers; fetch joins
    // the two header values.
    const want = `Bearer error="insufficient_scope", error_description="the access token lacks the scope account:read", scope="account:read", resource_metadata="${origin}/.well-known/oauth-protected-resource", ` +
      `DPoP algs="ES256 ES384 ES512 EdDSA Ed25519 PS256 PS384 PS512 RS256 RS384 RS512", resource_metadata="${origin}/.well-known/oauth-protected-resource"`;
    const challenges = seen.filter((e) => e.status === 403);
    assert.equal(challenges.length, 2, JSON.stringify(seen));
    for (const c of challenges) assert.equal(c.challenge, want);
    const refresh = seen.find((e) => e.url === `${origin}/api/oauth/token`);
    assert.equal(new URLSearchParams(refresh?.body).get('grant_type'), 'refresh_token', 'between the two, a refresh');
    assert.equal(provider.authorizationURL, authorizations, 'and no new authorization');
    assert.notEqual(provider.tokens().access_token, first.access_token);
  });
});
