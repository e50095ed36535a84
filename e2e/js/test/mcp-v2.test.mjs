// The MCP server at /mcp with the v2 MCP TypeScript SDK client
// (@modelcontextprotocol/client): anonymous catalog tools with the plain
// 2025 handshake and with the SDK's version negotiation (server/discover,
// protocol 2026-07-28), then the v2 SDK's own OAuth machinery end to end —
// auth() with an OAuthClientProvider written to the v2 interface (per-issuer
// credentials, persisted discovery state for the callback-leg issuer binding
// of SEP-2352, RFC 9207 `iss` passed back) — with dynamic registration
// returning the vendor client, a real browser signing in, the token exchange
// with the resource indicator, then the member tools, and a refresh after
// the access token is revoked.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client, StreamableHTTPClientTransport, auth } from '@modelcontextprotocol/client';
import {
  startStack,
  launchBrowser,
  authorizeInBrowser,
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
  stack = await startStack({ name: 'mcp-v2' });
  origin = stack.origin;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

/**
 * An in-memory OAuthClientProvider written to the v2 SDK's interface, as an
 * MCP host would: client information and tokens are kept per authorization
 * server (the `issuer` of the ctx argument; a call without ctx, the
 * transport's per-request read, gets the latest tokens), and the discovery
 * state is persisted with the code verifier so that auth() can check on the
 * callback leg that the code goes back to the server that issued it.
 * redirectToAuthorization drives a real browser.
 */
class V2Provider {
  constructor(env, { person = MEMBER } = {}) {
    this.env = env;
    this.person = person;
    this.clients = new Map();
    this.tokenSets = new Map();
    this.latestTokens = undefined;
    this._discovery = undefined;
    this._codeVerifier = undefined;
    this._state = undefined;
    this.authorizationURL = undefined;
    this.callbackParams = undefined;
    this.invalidated = [];
  }

  get redirectUrl() {
    return this.env().stack.callbackURL;
  }

  get clientMetadata() {
    return {
      client_name: VENDOR.name,
      redirect_uris: [this.env().stack.callbackURL],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state() {
    this._state = randomBytes(16).toString('base64url');
    return this._state;
  }

  clientInformation(ctx) {
    return ctx ? this.clients.get(ctx.issuer) : undefined;
  }

  saveClientInformation(info, ctx) {
    this.clients.set(ctx?.issuer ?? info.issuer, info);
  }

  tokens(ctx) {
    return ctx ? this.tokenSets.get(ctx.issuer) : this.latestTokens;
  }

  saveTokens(tokens, ctx) {
    this.tokenSets.set(ctx?.issuer ?? tokens.issuer, tokens);
    this.latestTokens = tokens;
  }

  saveCodeVerifier(v) {
    this._codeVerifier = v;
  }

  codeVerifier() {
    if (!this._codeVerifier) throw new Error('no code verifier saved');
    return this._codeVerifier;
  }

  saveDiscoveryState(state) {
    this._discovery = state;
  }

  discoveryState() {
    return this._discovery;
  }

  invalidateCredentials(scope) {
    this.invalidated.push(scope);
    if (scope === 'all' || scope === 'tokens') {
      this.tokenSets.clear();
      this.latestTokens = undefined;
    }
    if (scope === 'all' || scope === 'client') this.clients.clear();
    if (scope === 'all' || scope === 'verifier') this._codeVerifier = undefined;
    if (scope === 'all' || scope === 'discovery') this._discovery = undefined;
  }

  async redirectToAuthorization(url) {
    this.authorizationURL = new URL(url);
    const { stack: s, browser: b } = this.env();
    this.callbackParams = await authorizeInBrowser(url, { browser: b, callbackURL: s.callbackURL, person: this.person });
  }
}

async function connect({ transportOptions, clientOptions } = {}) {
  const client = new Client({ name: 'schoolgate-e2e-v2', version: '1.0.0' }, clientOptions);
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.mcpURL), transportOptions));
  return client;
}

const toolNames = (list) => list.tools.map((t) => t.name).sort();

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

describe('anonymous', () => {
  let anon;
  before(async () => {
    anon = await connect();
  });
  after(async () => {
    await anon?.close();
  });

  test('connects with the 2025-11-25 initialize handshake', () => {
    assert.equal(anon.getNegotiatedProtocolVersion(), '2025-11-25');
    assert.equal(anon.getServerVersion()?.name, 'schoolgate');
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
    const slugs = results.map((r) => r.slug);
    assert.ok(slugs.includes('photography-fundamentals'), `photography-fundamentals among ${slugs}`);
    for (const r of results) assert.ok(r.url.startsWith(`${origin}/`), `result URLs are on the site origin: ${r.url}`);
    slug = results.find((r) => r.kind === 'course')?.slug;
    assert.ok(slug, 'a course among the results');
  });

  test('get_course returns the course found by search', async () => {
    assert.ok(slug, 'needs a slug from search_catalog');
    const res = await anon.callTool({ name: 'get_course', arguments: { slug } });
    assert.ok(!res.isError, JSON.stringify(res));
    const course = toolPayload(res);
    assert.equal(course.slug, slug, JSON.stringify(course).slice(0, 300));
    assert.ok(course.title, 'the course has a title');
  });

  test('member tools are not callable anonymously', async () => {
    const res = await anon.callTool({ name: 'my_enrollments', arguments: {} }).catch((e) => ({ thrown: e }));
    assert.ok(res.thrown || res.isError === true, `anonymous my_enrollments must fail: ${JSON.stringify(res)}`);
  });

  test("with the SDK's version negotiation: server/discover, protocol 2026-07-28", async () => {
    const log = [];
    const modern = await connect({
      transportOptions: { fetch: recordingFetch(log) },
      clientOptions: { versionNegotiation: { mode: 'auto' } },
    });
    try {
      assert.equal(modern.getNegotiatedProtocolVersion(), '2026-07-28');
      assert.ok(log.some((e) => e.body?.includes('"server/discover"')), 'the client probed with server/discover');
      assert.ok(!log.some((e) => e.body?.includes('"initialize"')), 'no fallback to initialize');
      assert.deepEqual(toolNames(await modern.listTools()), PUBLIC_TOOLS);
      const res = await modern.callTool({ name: 'search_catalog', arguments: { query: 'photography', limit: 2 } });
      assert.ok(!res.isError, JSON.stringify(res));
      assert.equal(catalogResults(res).length, 2);
    } finally {
      await modern.close();
    }
  });
});

describe('member via the v2 SDK OAuth flow', () => {
  const provider = new V2Provider(() => ({ stack, browser }));
  let member;

  after(async () => {
    await member?.close();
  });

  test('auth() discovers, registers (vendor client), authorizes with PKCE + resource and exchanges the code', async () => {
    const log = [];
    const first = await auth(provider, { serverUrl: stack.mcpURL, fetchFn: recordingFetch(log) });
    assert.equal(first, 'REDIRECT');
    const trail = () => log.map((e) => `${e.method} ${e.url} ${e.status}`).join('; ');

    // RFC 9728 from the MCP URL, then RFC 8414 of the issuer it names.
    assert.ok(log.some((e) => e.url.startsWith(`${origin}/.well-known/oauth-protected-resource`) && e.status === 200), trail());
    assert.ok(log.some((e) => e.url === `${origin}/.well-known/oauth-authorization-server` && e.status === 200), trail());
    assert.equal(provider.discoveryState()?.authorizationServerMetadata?.issuer, origin);

    // Dynamic registration with the vendor's name and the loopback redirect
    // URI returns the vendor's client.
    const reg = log.find((e) => e.url === `${origin}/api/oauth/register`);
    assert.ok(reg, `the SDK registered: ${trail()}`);
    assert.equal(reg.status, 201);
    const sent = JSON.parse(reg.body);
    assert.equal(sent.client_name, VENDOR.name);
    assert.deepEqual(sent.redirect_uris, [stack.callbackURL]);
    // OpenID Connect Dynamic Client Registration: a loopback redirect URI
    // is a native application's, and the server holds the SDK to it.
    assert.equal(sent.application_type, 'native');
    const info = provider.clientInformation({ issuer: origin });
    assert.equal(info?.client_id, VENDOR.clientId);
    assert.equal(info.issuer, origin, 'the SDK stamps the client information with the issuer');

    // The authorization request the SDK built from the metadata.
    const u = provider.authorizationURL;
    assert.equal(`${u.origin}${u.pathname}`, `${origin}/oauth/authorize`);
    assert.equal(u.searchParams.get('client_id'), VENDOR.clientId);
    assert.equal(u.searchParams.get('redirect_uri'), stack.callbackURL);
    assert.equal(u.searchParams.get('code_challenge_method'), 'S256');
    assert.ok(u.searchParams.get('code_challenge'));
    assert.equal(u.searchParams.get('resource'), origin);
    assert.equal(u.searchParams.get('state'), provider._state);
    // The scopes of the protected resource metadata, and offline_access,
    // which the SDK adds because the authorization server metadata lists it
    // (with prompt=consent, OpenID Connect Core §11); the vendor was not
    // configured with it and is not refused for it.
    const scope = `${VENDOR.scope} offline_access`;
    assert.deepEqual(u.searchParams.get('scope').split(' ').sort(), scope.split(' ').sort());
    assert.equal(u.searchParams.get('prompt'), 'consent');

    // What came back to the loopback redirect URI after the member signed
    // in and approved in the browser.
    const cb = provider.callbackParams;
    assert.ok(cb?.code, `a code: ${JSON.stringify(cb)}`);
    assert.equal(cb.state, provider._state);
    assert.equal(cb.iss, origin);

    const second = await auth(provider, {
      serverUrl: stack.mcpURL,
      authorizationCode: cb.code,
      iss: cb.iss,
      fetchFn: recordingFetch(log),
    });
    assert.equal(second, 'AUTHORIZED');
    const tokens = provider.tokens({ issuer: origin });
    assert.ok(tokens?.access_token.startsWith('sgat_'), JSON.stringify(tokens));
    assert.ok(tokens.refresh_token);
    assert.deepEqual(tokens.scope.split(' ').sort(), scope.split(' ').sort());
    assert.equal(tokens.issuer, origin, 'the SDK stamps the tokens with the issuer');
    assert.equal(provider.tokens(), tokens, 'the latest tokens for the transport');
    const tokenReq = log.findLast((e) => e.url === `${origin}/api/oauth/token`);
    assert.equal(tokenReq.status, 200);
    const form = new URLSearchParams(tokenReq.body);
    assert.equal(form.get('grant_type'), 'authorization_code');
    assert.equal(form.get('resource'), origin);
    assert.equal(form.get('client_id'), VENDOR.clientId);
    assert.ok(form.get('code_verifier'));
  });

  test('with the token, tools/list adds my_enrollments and account_query', async () => {
    assert.ok(provider.tokens(), 'needs the tokens of the previous test');
    member = await connect({ transportOptions: { authProvider: provider } });
    const list = await member.listTools();
    assert.deepEqual(toolNames(list), [...PUBLIC_TOOLS, ...MEMBER_TOOLS].sort());
  });

  test("my_enrollments returns the member's enrolled courses", async () => {
    assert.ok(member, 'needs the member connection');
    const res = await member.callTool({ name: 'my_enrollments', arguments: {} });
    assert.ok(!res.isError, JSON.stringify(res));
    const text = JSON.stringify(toolPayload(res));
    for (const slug of ['photography-fundamentals', 'portrait-photography', 'editing-in-lightroom', 'smartphone-photography']) {
      assert.ok(text.includes(slug), `my_enrollments names ${slug}: ${text.slice(0, 400)}`);
    }
    assert.ok(!text.includes('landscape-photography'), "another member's course is not shown");
  });

  test('account_query answers for the member', async () => {
    assert.ok(member, 'needs the member connection');
    const res = await member.callTool({ name: 'account_query', arguments: { query: '{ viewer { id email } }' } });
    assert.ok(!res.isError, JSON.stringify(res));
    const text = JSON.stringify(toolPayload(res));
    assert.ok(text.includes(MEMBER.sub) && text.includes(MEMBER.email), text.slice(0, 300));
  });

  test('a revoked access token: the v2 transport follows the 401 and refreshes, on protocol 2026-07-28', async () => {
    assert.ok(provider.tokens(), 'needs the tokens');
    const old = provider.tokens();
    const res = await fetch(`${origin}/api/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: old.access_token, client_id: VENDOR.clientId }),
    });
    assert.equal(res.status, 200);
    await member?.close();
    member = await connect({
      transportOptions: { authProvider: provider },
      clientOptions: { versionNegotiation: { mode: 'auto' } },
    });
    assert.equal(member.getNegotiatedProtocolVersion(), '2026-07-28');
    const list = await member.listTools();
    assert.deepEqual(toolNames(list), [...PUBLIC_TOOLS, ...MEMBER_TOOLS].sort());
    assert.notEqual(provider.tokens().access_token, old.access_token, 'the SDK refreshed');
    assert.notEqual(provider.tokens().refresh_token, old.refresh_token, 'the refresh token rotated');
    const enr = await member.callTool({ name: 'my_enrollments', arguments: {} });
    assert.ok(!enr.isError, JSON.stringify(enr));
    assert.ok(JSON.stringify(toolPayload(enr)).includes('photography-fundamentals'));
  });
});

// Step-up (MCP authorization, scope challenge handling; SEP-2350): the v2
// transport meets the 403 insufficient_scope of a member tool called with
// a token granted without account:read, authorizes again for the union of
// what it holds and what the challenge names (refresh cannot widen a grant,
// so it forces a new authorization), and the host finishes that
// authorization as any redirect and repeats the call, which succeeds.
describe('step-up with the v2 SDK', () => {
  const provider = new V2Provider(() => ({ stack, browser }));
  let member;
  const seen = [];
  const recording = async (url, init = {}) => {
    const res = await fetch(url, init);
    seen.push({ url: String(url), status: res.status, challenge: res.headers.get('www-authenticate') });
    return res;
  };

  after(async () => {
    await member?.close();
  });

  test('a token without account:read, a 403 challenge, a new authorization with the union, the call again', async () => {
    const first = await auth(provider, { serverUrl: stack.mcpURL, scope: 'openid profile' });
    assert.equal(first, 'REDIRECT');
    const cb = provider.callbackParams;
    assert.equal(
      await auth(provider, { serverUrl: stack.mcpURL, authorizationCode: cb.code, iss: cb.iss, scope: 'openid profile' }),
      'AUTHORIZED',
    );
    const granted = provider.tokens().scope.split(' ');
    assert.ok(!granted.includes('account:read'), `granted ${granted}`);

    const transport = new StreamableHTTPClientTransport(new URL(stack.mcpURL), { authProvider: provider, fetch: recording });
    member = new Client({ name: 'schoolgate-e2e-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await member.connect(transport);
    const list = await member.listTools();
    assert.deepEqual(toolNames(list), [...PUBLIC_TOOLS, ...MEMBER_TOOLS].sort(), 'a member token without the scope still lists the member tools');
    const described = list.tools.find((t) => t.name === 'my_enrollments').description;
    assert.ok(described.endsWith('Needs a member sign-in with scope account:read.'), described);

    const before = provider.authorizationURL;
    await assert.rejects(member.callTool({ name: 'my_enrollments', arguments: {} }), (err) => err.name === 'UnauthorizedError' || /Unauthorized/.test(String(err)));
    const challenged = seen.find((e) => e.status === 403);
    assert.ok(challenged, `a 403: ${JSON.stringify(seen)}`);
    assert.equal(
      challenged.challenge,
      // The Bearer challenge with the error, then the school's DPoP one
      // (dpop allowed, the default), as the Account API answers; fetch
      // joins the two header values.
      `Bearer error="insufficient_scope", error_description="the access token lacks the scope account:read", scope="account:read", resource_metadata="${origin}/.well-known/oauth-protected-resource", ` +
        `DPoP algs="ES256 ES384 ES512 EdDSA Ed25519 PS256 PS384 PS512 RS256 RS384 RS512", resource_metadata="${origin}/.well-known/oauth-protected-resource"`,
    );
    // The SDK started a new authorization (the browser approved it) for
    // what it held and what the challenge named.
    const u = provider.authorizationURL;
    assert.notEqual(u, before, 'a new authorization');
    const asked = u.searchParams.get('scope').split(' ');
    for (const s of [...granted, 'account:read']) assert.ok(asked.includes(s), `the step-up asked for ${asked}: lacks ${s}`);
    assert.equal(u.searchParams.get('resource'), origin);

    await transport.finishAuth(provider.callbackParams.code, provider.callbackParams.iss);
    assert.ok(provider.tokens().scope.split(' ').includes('account:read'), provider.tokens().scope);
    const res = await member.callTool({ name: 'my_enrollments', arguments: {} });
    assert.ok(!res.isError, JSON.stringify(res));
    assert.ok(JSON.stringify(toolPayload(res)).includes('photography-fundamentals'));
  });
});
