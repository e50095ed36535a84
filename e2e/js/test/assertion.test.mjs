// The signed identity assertion (identity_assertion on) verified with jose,
// by the backend contract's own JavaScript example: the code block under "The
// signed identity assertion" is taken from docs/backend-contract.md, pointed at this stack and
// run. A real assertion the gateway forwarded to the school verifies; a
// tampered one, one checked for another audience and the member's ID
// token (same keys) do not.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  startStack,
  launchBrowser,
  authorizeInBrowser,
  authorizationRequest,
  redeemCode,
  repoRoot,
  MEMBER,
  VENDOR,
} from './harness.mjs';

let stack;
let browser;
let tokens;

before(async () => {
  stack = await startStack({ name: 'assertion', waitForCatalog: false, gatewayOptions: '\t\tidentity_assertion on' });
  browser = await launchBrowser();
  const { url, verifier } = authorizationRequest(stack, VENDOR.clientId, VENDOR.scope);
  const params = await authorizeInBrowser(url, { browser, callbackURL: stack.callbackURL });
  const res = await redeemCode(stack, VENDOR.clientId, params.code, verifier);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  tokens = res.body;
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

/**
 * The backend contract's example as a module, with its ISSUER and AUDIENCE set as
 * an operator would set them.
 */
let loaded = 0;
async function readmeExample({ issuer, audience }) {
  const readme = await readFile(path.join(repoRoot, 'docs', 'backend-contract.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## The signed identity assertion'));
  const match = section.match(/```js\n([\s\S]*?)```/);
  assert.ok(match, 'docs/backend-contract.md has a JavaScript example under "The signed identity assertion"');
  let code = match[1];
  for (const [name, value] of [
    ['ISSUER', issuer],
    ['AUDIENCE', audience],
  ]) {
    const re = new RegExp(`const ${name} = '[^']*';`);
    assert.match(code, re, `the example sets ${name}`);
    code = code.replace(re, `const ${name} = ${JSON.stringify(value)};`);
  }
  // The module lives under the stack's temporary directory; jose is this
  // suite's own dependency.
  code = code.replace(`from 'jose'`, `from ${JSON.stringify(import.meta.resolve('jose'))}`);
  const file = path.join(stack.tmp, `readme-example-${++loaded}.mjs`);
  await writeFile(file, code);
  return import(pathToFileURL(file).href);
}

/** What the school received with the last protected request. */
async function forwardedAssertion() {
  const rec = await (await fetch(`${stack.schoolURL}/__demo/last-request`)).json();
  const values = rec.headers['X-School-Assertion'];
  assert.equal(values?.length, 1, `one X-School-Assertion forwarded: ${JSON.stringify(rec.headers)}`);
  return values[0];
}

test('the Account API call carries an assertion that the README example verifies with jose', async () => {
  const res = await fetch(`${stack.origin}/account/graphql`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${tokens.access_token}`,
      'content-type': 'application/json',
      'x-school-assertion': 'forged-by-the-client',
    },
    body: JSON.stringify({ query: '{ viewer { id } }' }),
  });
  assert.equal(res.status, 200, await res.text());
  const assertion = await forwardedAssertion();
  assert.notEqual(assertion, 'forged-by-the-client');

  const { schoolIdentity } = await readmeExample({ issuer: stack.origin, audience: stack.schoolURL });
  const claims = await schoolIdentity({ 'x-school-assertion': assertion });
  assert.equal(claims.iss, stack.origin);
  assert.equal(claims.aud, stack.schoolURL, 'aud defaults to the upstream origin');
  assert.equal(claims.sub, MEMBER.sub);
  assert.equal(claims.email, MEMBER.email);
  assert.deepEqual(claims.roles, ['student']);
  assert.deepEqual(claims.scope.split(' ').sort(), VENDOR.scope.split(' ').sort());
  assert.equal(claims.client_id, VENDOR.clientId);
  assert.equal(claims.token_audience, 'member');
  assert.ok(claims.exp - claims.iat <= 300 && claims.exp > Date.now() / 1000, `exp ${claims.exp}, iat ${claims.iat}`);

  const header = JSON.parse(Buffer.from(assertion.split('.')[0], 'base64url'));
  assert.equal(header.typ, 'school-assertion+jwt');
  assert.equal(header.alg, 'ES256');
  const jwks = await (await fetch(`${stack.origin}/.well-known/jwks.json`)).json();
  assert.ok(jwks.keys.some((k) => k.kid === header.kid), `kid ${header.kid} is published`);
});

test('the README example refuses what is not a valid assertion for this server', async () => {
  const assertion = await forwardedAssertion();
  const { schoolIdentity } = await readmeExample({ issuer: stack.origin, audience: stack.schoolURL });
  const [h, p, s] = assertion.split('.');
  const claims = JSON.parse(Buffer.from(p, 'base64url'));
  const tampered = [h, Buffer.from(JSON.stringify({ ...claims, sub: 'operator-1' })).toString('base64url'), s].join('.');

  await assert.rejects(schoolIdentity({}), /X-School-Assertion/, 'missing');
  await assert.rejects(schoolIdentity({ 'x-school-assertion': tampered }), { code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
  // The same keys sign ID tokens; typ tells them apart.
  await assert.rejects(schoolIdentity({ 'x-school-assertion': tokens.id_token }), { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'typ' });

  const elsewhere = await readmeExample({ issuer: stack.origin, audience: 'http://elsewhere.example' });
  await assert.rejects(elsewhere.schoolIdentity({ 'x-school-assertion': assertion }), { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'aud' });
});
