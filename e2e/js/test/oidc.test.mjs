// The whole OpenID Connect flow with openid-client (a certified RP library,
// built on oauth4webapi) as the pre-registered vendor client `test-agent`
// (public, auth method none): authorization code + PKCE S256 + resource
// indicator, a real browser signing in at the school and approving, then
// the token, ID token, UserInfo, Account API, refresh, introspection and
// revocation, each through the library's own strict checks.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { startStack, launchBrowser, authorizeInBrowser, parseBearerChallenge, MEMBER, OPERATOR, VENDOR } from './harness.mjs';

const ACCOUNT_QUERY = `{ viewer { id email enrolledCourses(first: 5) { nodes { slug expireDate hasLifetimeAccess lastWatchedLecture { lectureId positionSeconds } } } } }`;

let stack;
let origin;
let browser;
let context;
let config;

before(async () => {
  stack = await startStack({ name: 'oidc', waitForCatalog: false });
  origin = stack.origin;
  browser = await launchBrowser();
  context = await browser.newContext();
  config = await client.discovery(new URL(origin), VENDOR.clientId, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

/** Starts an authorization request; returns what the token request needs. */
async function authorize(extra = {}, browserOptions = {}) {
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: stack.callbackURL,
    scope: VENDOR.scope,
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    resource: origin,
    ...extra,
  });
  const params = await authorizeInBrowser(url, {
    browser,
    context,
    callbackURL: stack.callbackURL,
    ...browserOptions,
  });
  const callback = new URL(stack.callbackURL);
  callback.search = new URLSearchParams(params).toString();
  return { callback, params, codeVerifier, state, nonce };
}

function b64urlJSON(part) {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
}

async function graphql(accessToken) {
  const res = await client.fetchProtectedResource(
    config,
    accessToken,
    new URL(`${origin}/account/graphql`),
    'POST',
    JSON.stringify({ query: ACCOUNT_QUERY }),
    new Headers({ 'content-type': 'application/json', accept: 'application/json' }),
  );
  return res;
}

// Shared across the flow's steps, in order.
let tokens;

test('authorization code + PKCE S256 + resource: openid-client verifies iss, the ES256 ID token, nonce and aud', async () => {
  const { callback, params, codeVerifier, state, nonce } = await authorize();
  // RFC 9207: the issuer comes back with the code.
  assert.equal(params.iss, origin);
  assert.equal(params.state, state);
  assert.ok(params.code, 'a code');

  tokens = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true },
    { resource: origin },
  );
  assert.equal(tokens.token_type.toLowerCase(), 'bearer');
  assert.ok(tokens.access_token.startsWith('sgat_'), 'opaque access token with its prefix');
  assert.ok(tokens.refresh_token.startsWith('sgrt_'), 'opaque refresh token with its prefix');
  assert.ok(tokens.expires_in > 0);
  assert.ok(tokens.id_token, 'an id_token for scope openid');

  const claims = tokens.claims();
  assert.equal(claims.sub, MEMBER.sub);
  assert.equal(claims.iss, origin);
  assert.equal(claims.aud, VENDOR.clientId);
  assert.equal(claims.nonce, nonce);
  assert.equal(claims.email, MEMBER.email);
  assert.ok(claims.name, 'name (scope profile)');
  assert.equal(claims.exp - claims.iat, 600, 'the ID token lives 10 minutes');

  // The signature was verified by openid-client against the JWKS; the
  // header names ES256 and the kid of a published key.
  const header = b64urlJSON(tokens.id_token.split('.')[0]);
  assert.equal(header.alg, 'ES256');
  const jwks = await (await fetch(`${origin}/.well-known/jwks.json`)).json();
  assert.ok(jwks.keys.some((k) => k.kid === header.kid), `kid ${header.kid} is published`);

  // Scope granted (RFC 6749 §5.1: present when it differs; when present it
  // must be what was asked for here).
  if (tokens.scope !== undefined) {
    assert.deepEqual(tokens.scope.split(' ').sort(), VENDOR.scope.split(' ').sort());
  }

});

test('UserInfo returns the member claims', async () => {
  assert.ok(tokens, 'needs the tokens of the first test');
  const info = await client.fetchUserInfo(config, tokens.access_token, MEMBER.sub);
  assert.equal(info.sub, MEMBER.sub);
  assert.equal(info.email, MEMBER.email);
  assert.equal(typeof info.name, 'string');
  assert.ok(info.org_id, 'org_id');
  assert.ok(Array.isArray(info.roles) && info.roles.length > 0, 'roles');
});

test('the Account API answers the member query with the access token', async () => {
  assert.ok(tokens, 'needs the tokens of the first test');
  const res = await graphql(tokens.access_token);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  const viewer = body.data.viewer;
  assert.equal(viewer.id, MEMBER.sub);
  assert.equal(viewer.email, MEMBER.email);
  const nodes = viewer.enrolledCourses.nodes;
  assert.ok(nodes.length >= 1 && nodes.length <= 5);
  const pf = nodes.find((n) => n.slug === 'photography-fundamentals');
  assert.ok(pf, `photography-fundamentals among ${nodes.map((n) => n.slug)}`);
  assert.equal(pf.hasLifetimeAccess, true);
  assert.equal(pf.lastWatchedLecture.lectureId, 'pf-03-exposure-triangle');
  assert.equal(pf.lastWatchedLecture.positionSeconds, 754);
  const pp = nodes.find((n) => n.slug === 'portrait-photography');
  assert.ok(pp);
  assert.equal(pp.hasLifetimeAccess, false);
  assert.equal(pp.expireDate, '2027-06-30');
});

test('introspection (RFC 7662) shows the token active and bound to the origin', async () => {
  assert.ok(tokens, 'needs the tokens of the first test');
  const info = await client.tokenIntrospection(config, tokens.access_token);
  assert.equal(info.active, true);
  assert.equal(info.client_id, VENDOR.clientId);
  assert.equal(info.sub, MEMBER.sub);
  const aud = Array.isArray(info.aud) ? info.aud : [info.aud];
  assert.ok(aud.some((a) => a === origin || a === `${origin}/`), `aud ${JSON.stringify(info.aud)} names ${origin}`);
  assert.ok(info.scope.split(' ').includes('account:read'));
  assert.ok(info.exp > Date.now() / 1000);
});

test('refresh rotates the tokens and carries no id_token', async () => {
  assert.ok(tokens, 'needs the tokens of the first test');
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token, { resource: origin });
  assert.ok(refreshed.access_token.startsWith('sgat_'));
  assert.notEqual(refreshed.access_token, tokens.access_token);
  assert.ok(refreshed.refresh_token, 'a rotated refresh token');
  assert.notEqual(refreshed.refresh_token, tokens.refresh_token, 'the refresh token rotates');
  assert.equal(refreshed.id_token, undefined, 'refresh responses carry no id_token');

  const info = await client.tokenIntrospection(config, refreshed.access_token);
  assert.equal(info.active, true);
  const aud = Array.isArray(info.aud) ? info.aud : [info.aud];
  assert.ok(aud.some((a) => a === origin || a === `${origin}/`));

  // A refresh without the resource parameter works as well (RFC 8707 makes
  // it optional at refresh; the MCP SDK and others omit or send it).
  const again = await client.refreshTokenGrant(config, refreshed.refresh_token);
  assert.notEqual(again.access_token, refreshed.access_token);
  assert.equal(again.id_token, undefined);

  const res = await graphql(again.access_token);
  assert.equal(res.status, 200);
  assert.equal((await res.json()).data.viewer.id, MEMBER.sub);
  tokens = { ...tokens, access_token: again.access_token, refresh_token: again.refresh_token };
});

test('offline_access (OpenID Connect Core §11): in the authorization server metadata only, granted beside the scopes the vendor was configured with, with a refresh token', async () => {
  // test-agent is configured with `${VENDOR.scope}`: a stock client adding
  // offline_access on its own must not be refused for it.
  assert.ok(config.serverMetadata().scopes_supported.includes('offline_access'));
  const prm = await (await fetch(`${origin}/.well-known/oauth-protected-resource`)).json();
  assert.ok(!prm.scopes_supported.includes('offline_access'), 'a refresh token is no resource requirement');

  const scope = `${VENDOR.scope} offline_access`;
  let consentScopes;
  const { callback, params, codeVerifier, state, nonce } = await authorize({ scope, prompt: 'consent' }, {
    onConsent: async (page) => {
      consentScopes = await page.locator('#scopes').innerText();
    },
  });
  assert.ok(params.code, `a code, got ${JSON.stringify(params)}`);
  assert.match(consentScopes, /Stay connected when you are not using it\s*offline_access/);

  const t = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true },
    { resource: origin },
  );
  assert.ok(t.refresh_token?.startsWith('sgrt_'), 'a refresh token');
  assert.deepEqual(t.scope.split(' ').sort(), scope.split(' ').sort(), 'the scope granted, offline_access with it');
  assert.equal((await client.tokenIntrospection(config, t.access_token)).scope, t.scope);

  const refreshed = await client.refreshTokenGrant(config, t.refresh_token, { resource: origin });
  assert.ok(refreshed.refresh_token && refreshed.refresh_token !== t.refresh_token, 'a rotated refresh token');
  assert.deepEqual(refreshed.scope.split(' ').sort(), scope.split(' ').sort());
  const res = await graphql(refreshed.access_token);
  assert.equal(res.status, 200);
});

test('revocation (RFC 7009): the Account API then answers 401 invalid_token with resource_metadata', async () => {
  assert.ok(tokens, 'needs the tokens of the first test');
  await client.tokenRevocation(config, tokens.access_token);
  const err = await graphql(tokens.access_token).then(
    (res) => assert.fail(`expected a challenge, got HTTP ${res.status}`),
    (e) => e,
  );
  // oauth4webapi parsed the WWW-Authenticate challenge strictly.
  assert.equal(err.code, 'OAUTH_WWW_AUTHENTICATE_CHALLENGE', String(err));
  assert.equal(err.status, 401);
  const bearer = err.cause.find((c) => c.scheme === 'bearer');
  assert.ok(bearer, 'a Bearer challenge');
  assert.equal(bearer.parameters.error, 'invalid_token');
  assert.equal(bearer.parameters.resource_metadata, `${origin}/.well-known/oauth-protected-resource`);

  const info = await client.tokenIntrospection(config, tokens.access_token);
  assert.equal(info.active, false);
});

test('a request without a token gets 401 invalid_token with the challenge', async () => {
  const res = await fetch(`${origin}/account/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: ACCOUNT_QUERY }),
  });
  assert.equal(res.status, 401);
  const ch = parseBearerChallenge(res.headers.get('www-authenticate'));
  assert.ok(ch, `a Bearer challenge: ${res.headers.get('www-authenticate')}`);
  assert.equal(ch.resource_metadata, `${origin}/.well-known/oauth-protected-resource`);
  assert.equal(ch.error, 'invalid_token');
  const body = await res.json();
  assert.equal(body.error, 'invalid_token');
});

test('a made-up token gets 401 invalid_token', async () => {
  const err = await graphql('sgat_invalid').then(
    (res) => assert.fail(`expected a challenge, got HTTP ${res.status}`),
    (e) => e,
  );
  assert.equal(err.status, 401);
  assert.equal(err.cause.find((c) => c.scheme === 'bearer')?.parameters.error, 'invalid_token');
});

test('deny at consent: redirect with error=access_denied, state and iss; openid-client reports it', async () => {
  const { callback, params, codeVerifier, state } = await authorize({ prompt: 'consent' }, { decision: 'deny' });
  assert.equal(params.error, 'access_denied');
  assert.equal(params.iss, origin);
  assert.equal(params.state, state);
  assert.equal(params.code, undefined);
  await assert.rejects(
    client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: codeVerifier, expectedState: state }, { resource: origin }),
    (err) => err.code === 'OAUTH_AUTHORIZATION_RESPONSE_ERROR' && err.error === 'access_denied',
  );
});

test('a loopback redirect does not prove the client: prompt=none answers consent_required, and the page comes back saying it was approved before', async () => {
  // test-agent's redirect URI is a loopback address: any program on the
  // person's machine could listen there, so a remembered consent is not
  // enough to answer without asking (RFC 8252 §8.6).
  const silent = await authorize({ prompt: 'none' });
  assert.equal(silent.params.error, 'consent_required', JSON.stringify(silent.params));
  assert.equal(silent.params.iss, origin);
  assert.equal(silent.params.state, silent.state);
  assert.equal(silent.params.code, undefined);
  await assert.rejects(
    client.authorizationCodeGrant(config, silent.callback, { pkceCodeVerifier: silent.codeVerifier, expectedState: silent.state }, { resource: origin }),
    (err) => err.code === 'OAUTH_AUTHORIZATION_RESPONSE_ERROR' && err.error === 'consent_required',
  );

  let approvedBefore;
  const { callback, params, codeVerifier, state, nonce } = await authorize({}, {
    onConsent: async (page) => {
      const note = page.locator('#approved-before');
      approvedBefore = (await note.count()) ? await note.textContent() : null;
    },
  });
  assert.match(approvedBefore ?? '', /You approved this before/, 'the consent page is shown again and says so');
  assert.ok(params.code, `a code, got ${JSON.stringify(params)}`);
  const t = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce },
    { resource: origin },
  );
  assert.equal(t.claims().sub, MEMBER.sub);
});

test('an authorization code is single use; a replay revokes what the first exchange issued', async () => {
  const { callback, codeVerifier, state, nonce } = await authorize();
  const checks = { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce };
  const first = await client.authorizationCodeGrant(config, callback, checks, { resource: origin });
  assert.equal((await client.tokenIntrospection(config, first.access_token)).active, true);
  await assert.rejects(
    client.authorizationCodeGrant(config, callback, checks, { resource: origin }),
    (err) => err.code === 'OAUTH_RESPONSE_BODY_ERROR' && err.error === 'invalid_grant',
  );
  assert.equal((await client.tokenIntrospection(config, first.access_token)).active, false);
  await assert.rejects(client.refreshTokenGrant(config, first.refresh_token), (err) => err.error === 'invalid_grant');
});

test('a wrong PKCE verifier or a missing resource is refused at the token endpoint', async () => {
  const a = await authorize();
  await assert.rejects(
    client.authorizationCodeGrant(
      config,
      a.callback,
      { pkceCodeVerifier: client.randomPKCECodeVerifier(), expectedState: a.state, expectedNonce: a.nonce },
      { resource: origin },
    ),
    (err) => err.error === 'invalid_grant',
  );
  const b = await authorize();
  await assert.rejects(
    client.authorizationCodeGrant(config, b.callback, { pkceCodeVerifier: b.codeVerifier, expectedState: b.state, expectedNonce: b.nonce }),
    (err) => err.error === 'invalid_target',
  );
});

test('a loopback app registers with openid-client (RFC 7591) and an operator authorizes it', async () => {
  const redirectURI = `http://127.0.0.1:${stack.cbPort}/cli`;
  const opConfig = await client.dynamicClientRegistration(
    new URL(origin),
    {
      client_name: 'E2E CLI',
      application_type: 'native',
      redirect_uris: [redirectURI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    client.None(),
    { execute: [client.allowInsecureRequests] },
  );
  const clientId = opConfig.clientMetadata().client_id;
  assert.ok(clientId && clientId !== VENDOR.clientId, `a new client id: ${clientId}`);

  const ownerContext = await browser.newContext();
  try {
    const start = async (scope) => {
      const codeVerifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(opConfig, {
        redirect_uri: redirectURI,
        scope,
        code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
      });
      const params = await authorizeInBrowser(url, {
        browser,
        context: ownerContext,
        callbackURL: redirectURI,
        person: OPERATOR,
      });
      const callback = new URL(redirectURI);
      callback.search = new URLSearchParams(params).toString();
      return { callback, params, codeVerifier, state };
    };

    // account:read is reserved to the member audience.
    const refused = await start('openid account:read');
    assert.equal(refused.params.error, 'invalid_scope');
    assert.equal(refused.params.iss, origin);

    const { callback, codeVerifier, state } = await start('openid courses:read');
    const t = await client.authorizationCodeGrant(opConfig, callback, { pkceCodeVerifier: codeVerifier, expectedState: state });
    assert.equal(t.claims().aud, clientId);
    assert.ok(t.claims().roles.includes('owner'));

    const courses = await client.fetchProtectedResource(opConfig, t.access_token, new URL(`${origin}/admin/api/courses`), 'GET');
    assert.equal(courses.status, 200);

    // An operator token does not read member data.
    const err = await client
      .fetchProtectedResource(
        opConfig,
        t.access_token,
        new URL(`${origin}/account/graphql`),
        'POST',
        JSON.stringify({ query: ACCOUNT_QUERY }),
        new Headers({ 'content-type': 'application/json' }),
      )
      .then(
        (res) => assert.fail(`expected a challenge, got HTTP ${res.status}`),
        (e) => e,
      );
    assert.equal(err.status, 403);
    assert.equal(err.cause.find((c) => c.scheme === 'bearer')?.parameters.error, 'insufficient_scope');
  } finally {
    await ownerContext.close();
  }
});

test('revoking the refresh token (RFC 7009) ends the grant', async () => {
  const { callback, codeVerifier, state, nonce } = await authorize();
  const t = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce },
    { resource: origin },
  );
  await client.tokenRevocation(config, t.refresh_token, { token_type_hint: 'refresh_token' });
  await assert.rejects(client.refreshTokenGrant(config, t.refresh_token), (err) => err.error === 'invalid_grant');
  assert.equal((await client.tokenIntrospection(config, t.refresh_token)).active, false);
  // RFC 7009 §2.1: access tokens of the same grant SHOULD go too.
  assert.equal((await client.tokenIntrospection(config, t.access_token)).active, false, 'the access token of the revoked grant');
});
