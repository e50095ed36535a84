// Native apps as RFC 8252 wants them, with openid-client (built on
// oauth4webapi) registering loopback clients dynamically (RFC 7591) and a
// real browser at the school's login and consent page:
// - a loopback redirect URI does not prove which program is asking
//   (§8.6), so the person sees the consent page on every authorization,
//   prompt=none answers consent_required, and a deny answers
//   access_denied, each with iss and state;
// - a loopback client may register with client_secret_post and a secret of
//   its own installation (§8.5); the token, introspection and revocation
//   endpoints then want that secret.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { startStack, launchBrowser, authorizeInBrowser, OPERATOR } from './harness.mjs';

let stack;
let origin;
let browser;
let context;

before(async () => {
  stack = await startStack({ name: 'native', waitForCatalog: false });
  origin = stack.origin;
  browser = await launchBrowser();
  // One browser profile: the operator signs in once and stays signed in,
  // as on a person's own machine.
  context = await browser.newContext();
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

/** Registers a loopback client with openid-client; returns its Configuration. */
async function register(redirectURI, authMethod) {
  return client.dynamicClientRegistration(
    new URL(origin),
    {
      client_name: `native ${authMethod}`,
      application_type: 'native',
      redirect_uris: [redirectURI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: authMethod,
    },
    authMethod === 'client_secret_post' ? client.ClientSecretPost() : client.None(),
    { execute: [client.allowInsecureRequests] },
  );
}

/**
 * One authorization as the operator in the shared browser profile. Returns
 * the callback, the PKCE verifier and state, and what the consent page
 * showed (null when there was none).
 */
async function authorize(config, redirectURI, { prompt, decision = 'approve' } = {}) {
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectURI,
    scope: 'openid courses:read',
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    ...(prompt ? { prompt } : {}),
  });
  let consent = null;
  const params = await authorizeInBrowser(url, {
    browser,
    context,
    callbackURL: redirectURI,
    person: OPERATOR,
    decision,
    onConsent: async (page) => {
      const note = page.locator('#approved-before');
      consent = {
        approvedBefore: (await note.count()) ? await note.textContent() : null,
        scopes: await page.locator('#scopes').textContent(),
      };
    },
  });
  const callback = new URL(redirectURI);
  callback.search = new URLSearchParams(params).toString();
  return { callback, params, codeVerifier, state, consent };
}

/**
 * Expects the call to fail with HTTP 401 invalid_client. A client that
 * authenticated in the body gets no WWW-Authenticate challenge (RFC 6749
 * §5.2), so oauth4webapi reports the body's error; should a challenge come,
 * the body is read here.
 */
async function refusedAsInvalidClient(call) {
  const err = await call.then(
    () => assert.fail('expected invalid_client'),
    (e) => e,
  );
  assert.equal(err.status, 401, String(err));
  const error = err.error ?? (await err.response?.json())?.error;
  assert.equal(error, 'invalid_client', String(err));
}

test('a loopback app is asked on every authorization; prompt=none answers consent_required and a deny access_denied, with iss and state', async () => {
  const redirectURI = `http://127.0.0.1:${stack.cbPort}/native-public`;
  const config = await register(redirectURI, 'none');

  const first = await authorize(config, redirectURI);
  assert.ok(first.consent, 'the first authorization shows the consent page');
  assert.equal(first.consent.approvedBefore, null, 'nothing was approved before');
  const tokens = await client.authorizationCodeGrant(config, first.callback, {
    pkceCodeVerifier: first.codeVerifier,
    expectedState: first.state,
  });
  assert.ok(tokens.access_token.startsWith('sgat_'));

  // The second authorization of the same client by the same signed-in
  // person: the page again, describing the earlier approval.
  const second = await authorize(config, redirectURI);
  assert.ok(second.consent, 'the second authorization shows the consent page again');
  assert.match(second.consent.approvedBefore ?? '', /You approved this before/);
  assert.match(second.consent.approvedBefore ?? '', /asked every time/);
  assert.match(second.consent.scopes, /Read the school's courses \(approved before\)\s*courses:read/);
  assert.ok(second.params.code, JSON.stringify(second.params));
  assert.equal(second.params.iss, origin);

  // prompt=none cannot be answered with a code.
  const silent = await authorize(config, redirectURI, { prompt: 'none' });
  assert.equal(silent.consent, null, 'prompt=none shows no page');
  assert.equal(silent.params.error, 'consent_required', JSON.stringify(silent.params));
  assert.equal(silent.params.iss, origin);
  assert.equal(silent.params.state, silent.state);
  assert.equal(silent.params.code, undefined);
  await assert.rejects(
    client.authorizationCodeGrant(config, silent.callback, { pkceCodeVerifier: silent.codeVerifier, expectedState: silent.state }),
    (err) => err.code === 'OAUTH_AUTHORIZATION_RESPONSE_ERROR' && err.error === 'consent_required',
  );

  // The person says no on the repeated page.
  const denied = await authorize(config, redirectURI, { decision: 'deny' });
  assert.ok(denied.consent?.approvedBefore, 'the page was shown, describing the earlier approval');
  assert.equal(denied.params.error, 'access_denied', JSON.stringify(denied.params));
  assert.equal(denied.params.iss, origin);
  assert.equal(denied.params.state, denied.state);
  assert.equal(denied.params.code, undefined);
  await assert.rejects(
    client.authorizationCodeGrant(config, denied.callback, { pkceCodeVerifier: denied.codeVerifier, expectedState: denied.state }),
    (err) => err.code === 'OAUTH_AUTHORIZATION_RESPONSE_ERROR' && err.error === 'access_denied',
  );
});

test('a loopback app registers with client_secret_post: the flow completes with its secret and is refused without it', async () => {
  const redirectURI = `http://127.0.0.1:${stack.cbPort}/native-confidential`;
  const config = await register(redirectURI, 'client_secret_post');
  const meta = config.clientMetadata();
  assert.equal(meta.token_endpoint_auth_method, 'client_secret_post');
  assert.ok(meta.client_secret?.startsWith('sgcs_'), 'a secret, shown in the registration answer');
  assert.equal(meta.client_secret_expires_at, 0, 'the secret does not expire');

  // The same registration again is a new client with a new secret.
  const again = await register(redirectURI, 'client_secret_post');
  assert.notEqual(again.clientMetadata().client_id, meta.client_id);
  assert.notEqual(again.clientMetadata().client_secret, meta.client_secret);

  // The same client without its secret, and with a wrong one.
  const withoutSecret = new client.Configuration(config.serverMetadata(), meta.client_id, undefined, client.None());
  const wrongSecret = new client.Configuration(config.serverMetadata(), meta.client_id, undefined,
    client.ClientSecretPost('sgcs_not-the-secret'));
  client.allowInsecureRequests(withoutSecret);
  client.allowInsecureRequests(wrongSecret);

  const { callback, codeVerifier, state, consent } = await authorize(config, redirectURI);
  assert.ok(consent, 'the consent page is shown');
  const checks = { pkceCodeVerifier: codeVerifier, expectedState: state };
  // Refused client authentication leaves the code unused.
  await refusedAsInvalidClient(client.authorizationCodeGrant(withoutSecret, callback, checks));
  await refusedAsInvalidClient(client.authorizationCodeGrant(wrongSecret, callback, checks));
  const tokens = await client.authorizationCodeGrant(config, callback, checks);
  assert.ok(tokens.access_token.startsWith('sgat_'));
  assert.equal(tokens.claims().aud, meta.client_id);

  const courses = await client.fetchProtectedResource(config, tokens.access_token, new URL(`${origin}/admin/api/courses`), 'GET');
  assert.equal(courses.status, 200);

  await refusedAsInvalidClient(client.tokenIntrospection(withoutSecret, tokens.access_token));
  assert.equal((await client.tokenIntrospection(config, tokens.access_token)).active, true);
  await refusedAsInvalidClient(client.refreshTokenGrant(withoutSecret, tokens.refresh_token));
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
  await refusedAsInvalidClient(client.tokenRevocation(withoutSecret, refreshed.refresh_token));
  await client.tokenRevocation(config, refreshed.refresh_token, { token_type_hint: 'refresh_token' });
  assert.equal((await client.tokenIntrospection(config, refreshed.access_token)).active, false, 'revocation ended the grant');
});

test('loopback registration with client_secret_basic is refused with invalid_client_metadata naming what is supported', async () => {
  const res = await fetch(`${origin}/api/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'native basic',
      redirect_uris: [`http://127.0.0.1:${stack.cbPort}/native-basic`],
      token_endpoint_auth_method: 'client_secret_basic',
    }),
  });
  assert.equal(res.status, 400);
  const body = await res.json();
  assert.equal(body.error, 'invalid_client_metadata');
  assert.match(body.error_description, /none or client_secret_post/);
  const meta = await (await fetch(`${origin}/.well-known/oauth-authorization-server`)).json();
  assert.deepEqual(meta.token_endpoint_auth_methods_supported, ['none', 'client_secret_post']);
});
