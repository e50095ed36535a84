// The connection doctor end to end: openid-client, a certified RP
// library, made to fail the way a client most often does — the code
// redeemed with the PKCE verifier of another attempt — and then the
// doctor names the step and the reason through the admin API, the
// command line, the admin page in Chromium in English and German, and on
// the member's own page (and not on another member's).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import * as client from 'openid-client';
import { startStack, launchBrowser, authorizeInBrowser, signIn, adminAPI, repoRoot, MEMBER, OPERATOR, VENDOR } from './harness.mjs';

const execFileP = promisify(execFile);
const SECOND = { email: 'second@demo.school', password: 'student2', sub: 'member-2' };

let stack;
let browser;
let config;
let secrets = [];

before(async () => {
  stack = await startStack({ name: 'doctor', waitForCatalog: false });
  browser = await launchBrowser();
  config = await client.discovery(new URL(stack.origin), VENDOR.clientId, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

test('a code redeemed with another attempt\'s verifier: the doctor names the step and why', async () => {
  const student = await browser.newContext();
  await signIn(student, stack.origin, MEMBER);
  const codeVerifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: stack.callbackURL,
    scope: VENDOR.scope,
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state: client.randomState(),
    resource: stack.origin,
  });
  const params = await authorizeInBrowser(url, { browser, context: student, callbackURL: stack.callbackURL });
  assert.ok(params.code, JSON.stringify(params));
  const callback = new URL(stack.callbackURL);
  callback.search = new URLSearchParams(params).toString();
  const other = client.randomPKCECodeVerifier();
  secrets = [params.code, codeVerifier, other];
  await assert.rejects(
    client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: other, expectedState: params.state }, { resource: stack.origin }),
    (err) => err.error === 'invalid_grant',
  );

  // The admin API.
  const q = `/doctor?issuer=${encodeURIComponent(stack.origin)}&client_id=${VENDOR.clientId}`;
  const api = await adminAPI(stack, q);
  assert.equal(api.status, 200, JSON.stringify(api.body));
  const stopped = api.body.stopped;
  assert.ok(stopped, JSON.stringify(api.body));
  assert.equal(stopped.step, 'token');
  assert.equal(stopped.reason, 'verifier_mismatch');
  assert.equal(stopped.error, 'invalid_grant');
  assert.equal(stopped.sub, MEMBER.sub);
  assert.match(stopped.why, /PKCE verifier does not match/);
  const passed = api.body.steps.filter((s) => s.outcome === 'passed').map((s) => s.step);
  for (const step of ['authorize', 'signin', 'code']) assert.ok(passed.includes(step), `${step} not passed: ${passed}`);
  const text = JSON.stringify(api.body);
  for (const s of secrets) assert.ok(!text.includes(s), 'the doctor holds a secret of the attempt');
  assert.ok(!text.includes(MEMBER.email), 'the doctor holds an e-mail');
  const de = await adminAPI(stack, q + '&lang=de');
  assert.match(de.body.stopped.why, /PKCE-Verifier passt nicht/);

  // The command line.
  const cli = await execFileP(path.join(repoRoot, 'bin', 'caddy'),
    ['schoolgate', 'doctor', '--address', stack.adminURL.replace('http://', ''), '--issuer', stack.origin, VENDOR.clientId]);
  const fromCLI = JSON.parse(cli.stdout);
  assert.equal(fromCLI.stopped.reason, 'verifier_mismatch', cli.stdout);

  // The admin page, in English and in German.
  for (const [locale, want] of [['en-US', 'Its latest attempt stopped at code exchanged for tokens'], ['de-DE', 'beim Schritt Code gegen Tokens getauscht stehen']]) {
    const owner = await browser.newContext({ locale });
    await signIn(owner, stack.origin, OPERATOR);
    const page = await owner.newPage();
    await page.goto(`${stack.origin}/oauth/admin/applications`);
    await page.click(`tr[data-client-id="${VENDOR.clientId}"] a.doctor-link`);
    const notice = await page.textContent('#stopped');
    assert.ok(notice.includes(want), `${locale}: ${notice}`);
    assert.ok(await page.$('tr.step.refused[data-reason="verifier_mismatch"]'), `${locale}: no refused row`);
    await owner.close();
  }

  // The member's page shows their attempt in words; another member's does not.
  const mine = await student.newPage();
  await mine.goto(`${stack.origin}/oauth/account/applications`);
  const attempt = await mine.textContent(`#stopped li[data-client-id="${VENDOR.clientId}"]`);
  assert.match(attempt, /tried to connect .*; it stopped because the PKCE verifier does not match/);
  assert.ok(!attempt.includes('invalid_grant'));
  const second = await browser.newContext();
  await signIn(second, stack.origin, SECOND);
  const theirs = await second.newPage();
  await theirs.goto(`${stack.origin}/oauth/account/applications`);
  assert.equal(await theirs.$('#stopped'), null, 'another member sees the attempt');
  await student.close();
  await second.close();
});

test('a redirect URI that differs by a slash: the doctor names the authorization request and the URI sent', async () => {
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: stack.callbackURL + '/',
    scope: VENDOR.scope,
    code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
    code_challenge_method: 'S256',
    resource: stack.origin,
  });
  const res = await fetch(url, { redirect: 'manual' });
  assert.equal(res.status, 400, 'an unregistered redirect URI gets an error page, never a redirect');
  const api = await adminAPI(stack, `/doctor?issuer=${encodeURIComponent(stack.origin)}&client_id=${VENDOR.clientId}`);
  assert.equal(api.status, 200, JSON.stringify(api.body));
  const { stopped } = api.body;
  assert.equal(stopped?.step, 'authorize', JSON.stringify(api.body));
  assert.equal(stopped.reason, 'redirect_uri_unregistered');
  assert.equal(stopped.detail, stack.callbackURL + '/');
  assert.match(stopped.why, /often a slash or a port differs/);
});
