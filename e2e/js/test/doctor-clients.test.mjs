// The connection doctor against stock clients: each way an application
// most often fails to connect, produced by an unmodified client library
// (the MCP TypeScript SDK, oauth4webapi) doing what it does, and then the
// doctor's answer through the admin API names the step and the reason
// (authserver/doctor.go). doctor.test.mjs covers the other two kinds with
// openid-client (another attempt's PKCE verifier, a redirect URI with a
// trailing slash) and the doctor's other views.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as oauth from 'oauth4webapi';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  startStack,
  startDocServer,
  launchBrowser,
  authorizeInBrowser,
  adminAPI,
  TestProvider,
  VENDOR,
} from './harness.mjs';

let docs;
let stack;
let browser;
let as;

const insecure = { [oauth.allowInsecureRequests]: true };

before(async () => {
  docs = await startDocServer();
  stack = await startStack({
    name: 'doctor-clients',
    waitForCatalog: false,
    caddyEnv: { SSL_CERT_FILE: docs.caFile },
    // No second use of a rotated refresh token, so that the reuse below
    // is one; metadata documents from the loopback document server.
    gatewayOptions: '\t\trefresh_grace 0\n\t\tmetadata_documents {\n\t\t\tallow_private_networks\n\t\t}',
  });
  browser = await launchBrowser();
  const issuer = new URL(stack.origin);
  as = await oauth.processDiscoveryResponse(issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
});

after(async () => {
  await browser?.close();
  await stack?.stop();
  await docs?.close();
});

/** The doctor's answer for clientID through the admin API. */
async function doctor(clientID) {
  const api = await adminAPI(stack, `/doctor?issuer=${encodeURIComponent(stack.origin)}&client_id=${encodeURIComponent(clientID)}`);
  assert.equal(api.status, 200, JSON.stringify(api.body));
  return api.body;
}

/** Asserts that the doctor's latest refusal of clientID is step/reason. */
async function assertStopped(clientID, step, reason) {
  const body = await doctor(clientID);
  const { stopped } = body;
  assert.ok(stopped, `nothing stopped: ${JSON.stringify(body)}`);
  assert.equal(stopped.step, step, JSON.stringify(body));
  assert.equal(stopped.reason, reason, JSON.stringify(body));
  assert.ok(stopped.why && !stopped.why.startsWith('doctor.'), `the reason in words: ${JSON.stringify(stopped)}`);
  return stopped;
}

/**
 * oauth4webapi's authorization code flow for the configured vendor,
 * through a real browser: the tokens, for the kinds that need some.
 */
async function vendorTokens(scope) {
  const client = { client_id: VENDOR.clientId };
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: stack.callbackURL,
    scope,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    resource: stack.origin,
  }).toString();
  const cb = await authorizeInBrowser(url, { browser, callbackURL: stack.callbackURL });
  const params = oauth.validateAuthResponse(as, client, new URLSearchParams(cb), state);
  const res = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, stack.callbackURL, verifier,
    { additionalParameters: { resource: stack.origin }, ...insecure });
  return oauth.processAuthorizationCodeResponse(as, client, res);
}

test('the MCP SDK with a metadata document the gateway cannot fetch: metadata, metadata_status', async () => {
  // The document's URL answers 404: the SDK uses it as client_id as the
  // specification says, and the gateway fails to fetch it.
  const docURL = docs.url('/agents/missing.json');
  const provider = new TestProvider(() => ({ stack, browser }), { interactive: false, clientMetadataUrl: docURL });
  assert.equal(await auth(provider, { serverUrl: stack.mcpURL }), 'REDIRECT');
  assert.equal(provider.authorizationURL.searchParams.get('client_id'), docURL);
  const res = await fetch(provider.authorizationURL, { redirect: 'manual' });
  assert.equal(res.status, 400, 'an unfetchable document gets an error page, never a redirect');
  const stopped = await assertStopped(docURL, 'metadata', 'metadata_status');
  assert.equal(stopped.error, 'invalid_client_metadata');
  assert.match(stopped.detail, /HTTP 404/);
});

test('the MCP SDK with a metadata document the gateway refuses: metadata, metadata_content', async () => {
  // A document that names another client_id than its own URL.
  const docURL = docs.url('/agents/other-id.json');
  docs.docs.set('/agents/other-id.json', () => ({
    client_id: docs.url('/agents/someone-else.json'),
    client_name: 'Other Id',
    redirect_uris: [stack.callbackURL],
    token_endpoint_auth_method: 'none',
  }));
  const provider = new TestProvider(() => ({ stack, browser }), { interactive: false, clientMetadataUrl: docURL });
  assert.equal(await auth(provider, { serverUrl: stack.mcpURL }), 'REDIRECT');
  const res = await fetch(provider.authorizationURL, { redirect: 'manual' });
  assert.equal(res.status, 400);
  const stopped = await assertStopped(docURL, 'metadata', 'metadata_content');
  assert.match(stopped.detail, /client_id must equal its URL/);
});

test('the MCP SDK asking an unreviewed client\'s refused scope: authorize, scope_not_allowed naming it', async () => {
  // A metadata-document client nobody has reviewed may ask for read and
  // identity scopes only: account:write is not among them.
  const docURL = docs.url('/agents/unreviewed.json');
  docs.docs.set('/agents/unreviewed.json', () => ({
    client_id: docURL,
    client_name: 'Unreviewed Agent',
    redirect_uris: [stack.callbackURL],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  }));
  const provider = new TestProvider(() => ({ stack, browser }), { interactive: false, clientMetadataUrl: docURL });
  assert.equal(await auth(provider, { serverUrl: stack.mcpURL, scope: 'openid account:write' }), 'REDIRECT');
  assert.equal(provider.authorizationURL.searchParams.get('client_id'), docURL);
  const res = await fetch(provider.authorizationURL, { redirect: 'manual' });
  assert.equal(res.status, 302);
  assert.equal(new URL(res.headers.get('location')).searchParams.get('error'), 'invalid_scope');
  const stopped = await assertStopped(docURL, 'authorize', 'scope_not_allowed');
  assert.equal(stopped.detail, 'account:write');
  assert.equal(stopped.error, 'invalid_scope');
  const passed = (await doctor(docURL)).steps.filter((s) => s.outcome === 'passed').map((s) => s.step);
  assert.ok(passed.includes('metadata'), `metadata not passed: ${passed}`);
});

test('oauth4webapi with a resource of another origin: authorize, resource_wrong naming it', async () => {
  // oauth4webapi leaves the authorization URL to its caller: the resource
  // parameter (RFC 8707) names the gateway's sibling, not the gateway.
  const wrong = 'https://other-school.example';
  const url = new URL(as.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: VENDOR.clientId,
    redirect_uri: stack.callbackURL,
    scope: VENDOR.scope,
    state: oauth.generateRandomState(),
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
    code_challenge_method: 'S256',
    resource: wrong,
  }).toString();
  const res = await fetch(url, { redirect: 'manual' });
  assert.equal(res.status, 302);
  const back = new URL(res.headers.get('location'));
  assert.equal(back.searchParams.get('error'), 'invalid_target');
  assert.throws(() => oauth.validateAuthResponse(as, { client_id: VENDOR.clientId }, back.searchParams, oauth.skipStateCheck),
    (err) => err.error === 'invalid_target');
  const stopped = await assertStopped(VENDOR.clientId, 'authorize', 'resource_wrong');
  assert.equal(stopped.detail, wrong);
});

test('the MCP SDK calling a member tool with a token lacking account:read: use, insufficient_scope naming it', async () => {
  // The SDK registers dynamically; its client_name is the configured
  // integration's, so registration finds that client.
  const provider = new TestProvider(() => ({ stack, browser }));
  assert.equal(await auth(provider, { serverUrl: stack.mcpURL, scope: 'openid profile' }), 'REDIRECT');
  assert.equal(await auth(provider, { serverUrl: stack.mcpURL, authorizationCode: provider.callbackParams.code }), 'AUTHORIZED');
  const clientID = provider.clientInformation().client_id;
  const mcp = new Client({ name: 'doctor-e2e', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(stack.mcpURL), { authProvider: provider }));
  try {
    // The SDK meets the 403, tries to upscope by a refresh (which cannot
    // widen the grant) and reports the 403.
    await assert.rejects(mcp.callTool({ name: 'my_enrollments', arguments: {} }), (err) => err.code === 403);
  } finally {
    await mcp.close();
  }
  const stopped = await assertStopped(clientID, 'use', 'insufficient_scope');
  assert.equal(stopped.detail, 'account:read');
  assert.equal(stopped.error, 'insufficient_scope');
  const passed = (await doctor(clientID)).steps.filter((s) => s.outcome === 'passed').map((s) => s.step);
  for (const step of ['register', 'authorize', 'code', 'token', 'refresh']) assert.ok(passed.includes(step), `${step} not passed: ${passed}`);
});

test('oauth4webapi with a member token at an operator endpoint: use, wrong_audience', async () => {
  const tokens = await vendorTokens('account:read');
  // The admin API wants an operator's token; oauth4webapi reports the
  // 403 challenge.
  await assert.rejects(
    oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${stack.origin}/admin/api/courses`), undefined, undefined, insecure),
    (err) => err instanceof oauth.WWWAuthenticateChallengeError && err.status === 403 &&
      err.cause[0]?.parameters?.error === 'insufficient_scope',
  );
  const stopped = await assertStopped(VENDOR.clientId, 'use', 'wrong_audience');
  assert.equal(stopped.sub, 'member-1');
});

test('oauth4webapi presenting a rotated refresh token again: refresh, refresh_reuse', async () => {
  const client = { client_id: VENDOR.clientId };
  const tokens = await vendorTokens('account:read');
  assert.ok(tokens.refresh_token, 'a refresh token');
  const refresh = (rt) => oauth.refreshTokenGrantRequest(as, client, oauth.None(), rt,
    { additionalParameters: { resource: stack.origin }, ...insecure }).then((res) => oauth.processRefreshTokenResponse(as, client, res));
  const rotated = await refresh(tokens.refresh_token);
  assert.ok(rotated.access_token);
  await assert.rejects(refresh(tokens.refresh_token), (err) => err.error === 'invalid_grant');
  const stopped = await assertStopped(VENDOR.clientId, 'refresh', 'refresh_reuse');
  assert.equal(stopped.error, 'invalid_grant');
  const text = JSON.stringify(await doctor(VENDOR.clientId));
  for (const secret of [tokens.refresh_token, rotated.refresh_token, tokens.access_token]) {
    assert.ok(!text.includes(secret), 'the doctor holds a token');
  }
});

// Not produced here: a token used at another origin (wrong_origin). A
// school issues tokens for no resource but itself (resource_wrong above)
// and another school's token is unknown to it, so no client, stock or
// not, can hold this school's token bound elsewhere; the guard's origin
// check is unit tested in package policy. The wrong audience above is
// the use refusal a client can meet.
