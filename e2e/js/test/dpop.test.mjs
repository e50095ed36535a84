// DPoP (RFC 9449) with stock clients: openid-client and oauth4webapi make
// the proofs, the gateway binds tokens to their keys. Authorization code +
// PKCE + DPoP (with dpop_jkt), UserInfo, the Account API, the MCP member
// tools and a refresh with the same key; a refresh with another key, the
// token as a bearer token and a replayed proof refused; then a school with
// `dpop required nonce`: the clients follow use_dpop_nonce by themselves,
// and a bearer token request is refused with invalid_dpop_proof.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import * as oauth from 'oauth4webapi';
import { startStack, launchBrowser, authorizeInBrowser, toolPayload, MEMBER, VENDOR } from './harness.mjs';

const ACCOUNT_QUERY = `{ viewer { id email } }`;

let browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** Signs the member in and approves; returns the callback URL and PKCE verifier. */
async function authorize(stack, config, context, extra = {}) {
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: stack.callbackURL,
    scope: VENDOR.scope,
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    resource: stack.origin,
    ...extra,
  });
  const params = await authorizeInBrowser(url, { browser, context, callbackURL: stack.callbackURL });
  const callback = new URL(stack.callbackURL);
  callback.search = new URLSearchParams(params).toString();
  return { callback, codeVerifier, state };
}

/** The DPoP challenge's parameters in a WWW-Authenticate value, if any. */
function dpopChallenge(header) {
  const m = /(?:^|,\s*)DPoP\s+(.*)$/i.exec(header ?? '');
  if (!m) return null;
  const params = {};
  for (const p of m[1].matchAll(/([A-Za-z0-9_]+)="((?:[^"\\]|\\.)*)"/g)) params[p[1]] = p[2];
  return params;
}

async function mcpCall(config, stack, accessToken, DPoP, name) {
  const res = await client.fetchProtectedResource(
    config,
    accessToken,
    new URL(stack.mcpURL),
    'POST',
    JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } }),
    new Headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' }),
    { DPoP },
  );
  assert.equal(res.status, 200);
  const text = await res.text();
  // A JSON answer, or one server-sent event holding it.
  const json = JSON.parse(text.startsWith('{') ? text : text.split('\n').find((l) => l.startsWith('data:')).slice(5));
  return json.result;
}

describe('a school that allows DPoP', () => {
  let stack;
  let config;
  let context;
  before(async () => {
    stack = await startStack({ name: 'dpop', waitForCatalog: false });
    context = await browser.newContext();
    config = await client.discovery(new URL(stack.origin), VENDOR.clientId, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
  });
  after(async () => {
    await context?.close();
    await stack?.stop();
  });

  let key;
  let DPoP;
  let tokens;

  test('the metadata lists the proof algorithms; bearer tokens are accepted too', async () => {
    const as = config.serverMetadata();
    assert.ok(as.dpop_signing_alg_values_supported.includes('ES256'));
    assert.ok(!as.dpop_signing_alg_values_supported.some((a) => a.startsWith('HS')));
    const prm = await (await fetch(`${stack.origin}/.well-known/oauth-protected-resource`)).json();
    assert.equal(prm.dpop_bound_access_tokens_required, false);
    assert.ok(prm.dpop_signing_alg_values_supported.includes('EdDSA'));
  });

  test('openid-client: code + PKCE + DPoP with dpop_jkt gives a DPoP token bound to the key', async () => {
    key = await client.randomDPoPKeyPair('ES256');
    DPoP = client.getDPoPHandle(config, key);
    const jkt = await DPoP.calculateThumbprint();
    const { callback, codeVerifier, state } = await authorize(stack, config, context, { dpop_jkt: jkt });
    tokens = await client.authorizationCodeGrant(
      config,
      callback,
      { pkceCodeVerifier: codeVerifier, expectedState: state, idTokenExpected: true },
      { resource: stack.origin },
      { DPoP },
    );
    assert.equal(tokens.token_type.toLowerCase(), 'dpop');
    assert.equal(tokens.claims().sub, MEMBER.sub, 'the ID token as ever');
    const introspection = await client.tokenIntrospection(config, tokens.access_token);
    assert.equal(introspection.cnf?.jkt, jkt);
    assert.equal(introspection.token_type, 'DPoP');
  });

  test('UserInfo, the Account API and the MCP member tools with fresh proofs', async () => {
    assert.ok(tokens, 'needs the tokens');
    const info = await client.fetchUserInfo(config, tokens.access_token, MEMBER.sub, { DPoP });
    assert.equal(info.email, MEMBER.email);
    const res = await client.fetchProtectedResource(
      config,
      tokens.access_token,
      new URL(`${stack.origin}/account/graphql`),
      'POST',
      JSON.stringify({ query: ACCOUNT_QUERY }),
      new Headers({ 'content-type': 'application/json' }),
      { DPoP },
    );
    assert.equal(res.status, 200);
    assert.equal((await res.json()).data.viewer.email, MEMBER.email);
    const result = await mcpCall(config, stack, tokens.access_token, DPoP, 'my_enrollments');
    assert.ok(!result.isError, JSON.stringify(result).slice(0, 300));
    assert.ok(JSON.stringify(toolPayload(result)).length > 2);
  });

  test('the bound token as a bearer token, and a replayed proof, are refused', async () => {
    assert.ok(tokens, 'needs the tokens');
    const asBearer = await fetch(`${stack.origin}/account/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: ACCOUNT_QUERY }),
    });
    assert.equal(asBearer.status, 401);
    const challenges = asBearer.headers.get('www-authenticate');
    assert.match(challenges, /^Bearer error="invalid_token"/);
    assert.ok(dpopChallenge(challenges)?.algs.split(' ').includes('ES256'), challenges);

    // A proof as oauth4webapi makes it, sent twice.
    let proof;
    const handle = oauth.DPoP({ client_id: VENDOR.clientId }, key);
    const headers = new Headers();
    await handle.addProof(new URL(`${stack.origin}/api/oauth/userinfo`), headers, 'GET', tokens.access_token);
    proof = headers.get('dpop');
    const send = () =>
      fetch(`${stack.origin}/api/oauth/userinfo`, { headers: { authorization: `DPoP ${tokens.access_token}`, dpop: proof } });
    assert.equal((await send()).status, 200);
    const replay = await send();
    assert.equal(replay.status, 401);
    const ch = dpopChallenge(replay.headers.get('www-authenticate'));
    assert.equal(ch?.error, 'invalid_dpop_proof');
    assert.match(ch.error_description, /used before/);
  });

  test('a refresh with the same key is bound to it; one with another key is invalid_grant and changes nothing', async () => {
    assert.ok(tokens, 'needs the tokens');
    const other = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
    await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token, undefined, { DPoP: other }), (err) => {
      assert.equal(err.error, 'invalid_grant');
      return true;
    });
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token, undefined, { DPoP });
    assert.equal(refreshed.token_type.toLowerCase(), 'dpop');
    const info = await client.fetchUserInfo(config, refreshed.access_token, MEMBER.sub, { DPoP });
    assert.equal(info.sub, MEMBER.sub);
  });

  test('oauth4webapi: code + PKCE + DPoP with an Ed25519 key, UserInfo', async () => {
    const as = config.serverMetadata();
    const c = { client_id: VENDOR.clientId };
    const edKey = await oauth.generateKeyPair('Ed25519');
    const handle = oauth.DPoP(c, edKey);
    const { callback, codeVerifier, state } = await authorize(stack, config, context);
    const params = oauth.validateAuthResponse(as, c, callback, state);
    const response = await oauth.authorizationCodeGrantRequest(as, c, oauth.None(), params, stack.callbackURL, codeVerifier, {
      DPoP: handle,
      additionalParameters: { resource: stack.origin },
      [oauth.allowInsecureRequests]: true,
    });
    const result = await oauth.processAuthorizationCodeResponse(as, c, response);
    assert.equal(result.token_type, 'dpop');
    const info = await oauth.processUserInfoResponse(
      as,
      c,
      MEMBER.sub,
      await oauth.userInfoRequest(as, c, result.access_token, { DPoP: handle, [oauth.allowInsecureRequests]: true }),
    );
    assert.equal(info.email, MEMBER.email);
  });
});

describe('a school that requires DPoP with nonces', () => {
  let stack;
  let config;
  let context;
  before(async () => {
    stack = await startStack({ name: 'dpop-required', waitForCatalog: false, gatewayOptions: '\t\tdpop required nonce' });
    context = await browser.newContext();
    config = await client.discovery(new URL(stack.origin), VENDOR.clientId, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
  });
  after(async () => {
    await context?.close();
    await stack?.stop();
  });

  test('the clients follow use_dpop_nonce by themselves; a bearer token request is invalid_dpop_proof', async () => {
    const prm = await (await fetch(`${stack.origin}/.well-known/oauth-protected-resource`)).json();
    assert.equal(prm.dpop_bound_access_tokens_required, true);

    const bearer = await fetch(`${stack.origin}/api/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'sgrt_x', client_id: VENDOR.clientId }),
    });
    assert.equal(bearer.status, 400);
    assert.equal((await bearer.json()).error, 'invalid_dpop_proof');

    // Without a nonce the token endpoint answers use_dpop_nonce and
    // DPoP-Nonce; openid-client retries with it.
    const probe = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
    const headers = new Headers();
    await probe.addProof(new URL(`${stack.origin}/api/oauth/token`), headers, 'POST');
    const first = await fetch(`${stack.origin}/api/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: headers.get('dpop') },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'sgrt_x', client_id: VENDOR.clientId }),
    });
    assert.equal(first.status, 400);
    assert.equal((await first.json()).error, 'use_dpop_nonce');
    assert.ok(first.headers.get('dpop-nonce'));

    const DPoP = client.getDPoPHandle(config, await client.randomDPoPKeyPair('PS256'));
    const { callback, codeVerifier, state } = await authorize(stack, config, context);
    const tokens = await client.authorizationCodeGrant(
      config,
      callback,
      { pkceCodeVerifier: codeVerifier, expectedState: state, idTokenExpected: true },
      { resource: stack.origin },
      { DPoP },
    );
    assert.equal(tokens.token_type.toLowerCase(), 'dpop');
    const info = await client.fetchUserInfo(config, tokens.access_token, MEMBER.sub, { DPoP });
    assert.equal(info.sub, MEMBER.sub);
    const result = await mcpCall(config, stack, tokens.access_token, DPoP, 'my_enrollments');
    assert.ok(!result.isError, JSON.stringify(result).slice(0, 300));
    // A bearer token is refused at the resources with the DPoP challenge alone.
    const asBearer = await fetch(`${stack.origin}/account/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: ACCOUNT_QUERY }),
    });
    assert.equal(asBearer.status, 401);
    assert.match(asBearer.headers.get('www-authenticate'), /^DPoP error="invalid_token"/);
  });
});
