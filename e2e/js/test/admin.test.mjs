// The operator's admin area ("Developers → OAuth applications") in a real
// Chromium: the school owner signs in, turns MCP connections on, creates a
// member application and hands its client_id over; a student then
// authorizes that application and its token works at the Account API.
// Turning the switch off again disconnects the application.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  startStack,
  launchBrowser,
  signIn,
  authorizeInBrowser,
  authorizationRequest,
  redeemCode,
  artifactsDir,
  MEMBER,
  OPERATOR,
} from './harness.mjs';

const AREA = '/oauth/admin/applications';

let stack;
let browser;
let operator; // the owner's browser context, signed in
const stackTokens = []; // access tokens the application got

before(async () => {
  stack = await startStack({ name: 'admin', mcpConnections: 'off', waitForCatalog: false });
  browser = await launchBrowser();
  operator = await browser.newContext();
  await signIn(operator, stack.origin, OPERATOR);
});

after(async () => {
  await operator?.close();
  await browser?.close();
  await stack?.stop();
});

/** Opens the area's overview in the operator's browser. */
async function overview() {
  const page = await operator.newPage();
  const res = await page.goto(stack.origin + AREA, { waitUntil: 'domcontentloaded' });
  assert.equal(res.status(), 200);
  return { page, res };
}

/** Submits the form the button belongs to and waits for the next page. */
async function submit(page, selector) {
  const before = page.url();
  await Promise.all([page.waitForNavigation({ waitUntil: 'domcontentloaded' }), page.click(selector)]);
  return before;
}

describe('MCP connections and member applications', () => {
  let clientID;

  test('switched off, the area shows only the switch; the owner turns it on', async () => {
    const { page, res } = await overview();
    try {
      const h = res.headers();
      assert.equal(h['x-frame-options'], 'DENY');
      assert.match(h['content-security-policy'], /frame-ancestors 'none'/);
      assert.equal(h['cache-control'], 'no-store');
      assert.equal(await page.textContent('#mcp-state'), 'off');
      assert.equal(await page.locator('#new-app').count(), 0);
      await submit(page, '#mcp-toggle');
      assert.equal(new URL(page.url()).pathname, AREA);
      assert.equal(await page.textContent('#mcp-state'), 'on');
      assert.equal(await page.locator('#new-app').count(), 1);
    } finally {
      await page.close();
    }
  });

  test('the owner creates a public member application and reads its client_id', async () => {
    const { page } = await overview();
    try {
      await Promise.all([page.waitForNavigation({ waitUntil: 'domcontentloaded' }), page.click('#new-app')]);
      await page.fill('#name', 'Study Planner');
      await page.fill('#redirect_uris', stack.callbackURL);
      for (const scope of ['openid', 'profile', 'account:read']) {
        await page.check(`input[name="scope"][value="${scope}"]`);
      }
      await page.check('#type-public');
      await submit(page, 'form button[type="submit"].primary');
      clientID = (await page.textContent('#client-id')).trim();
      assert.match(clientID, /^app_/);
      assert.equal(await page.locator('#client-secret').count(), 0, 'a public application has no secret');
      await page.screenshot({ path: path.join(artifactsDir, 'admin-created.png'), fullPage: true });

      // Reloading the overview lists it.
      await page.goto(stack.origin + AREA, { waitUntil: 'domcontentloaded' });
      assert.match(await page.textContent('#apps'), /Study Planner/);
    } finally {
      await page.close();
    }
  });

  test('a form posted without the CSRF token is refused, even with the session cookie', async () => {
    // The page's own CSP forbids script fetches, so the forged POST comes
    // from the context's request API, which carries the same cookies.
    const res = await operator.request.post(`${stack.origin}/oauth/admin/mcp-connections`, {
      form: { enabled: 'off' },
      maxRedirects: 0,
    });
    assert.equal(res.status(), 403);
    const { page } = await overview();
    try {
      assert.equal(await page.textContent('#mcp-state'), 'on');
    } finally {
      await page.close();
    }
  });

  test('a student authorizes the application and its token reads the Account API', async () => {
    assert.ok(clientID, 'needs the application of the previous test');
    const req = authorizationRequest(stack, clientID, 'openid account:read');
    const cb = await authorizeInBrowser(req.url, {
      browser,
      callbackURL: stack.callbackURL,
      person: MEMBER,
      onConsent: async (page) => assert.match(await page.textContent('body'), /Study Planner/),
    });
    assert.ok(cb.code, JSON.stringify(cb));
    assert.equal(cb.state, req.state);
    const tok = await redeemCode(stack, clientID, cb.code, req.verifier);
    assert.equal(tok.status, 200, JSON.stringify(tok.body));
    const api = await fetch(`${stack.origin}/account/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tok.body.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ viewer { email } }' }),
    });
    assert.equal(api.status, 200);
    assert.equal((await api.json()).data.viewer.email, MEMBER.email);
    stackTokens.push(tok.body.access_token);
  });

  test('a student cannot open the admin area', async () => {
    const context = await browser.newContext();
    try {
      await signIn(context, stack.origin, MEMBER);
      const page = await context.newPage();
      const res = await page.goto(stack.origin + AREA, { waitUntil: 'domcontentloaded' });
      assert.equal(res.status(), 403);
    } finally {
      await context.close();
    }
  });

  test('turned off, the application cannot authorize and its token stops working', async () => {
    const { page } = await overview();
    try {
      await submit(page, '#mcp-toggle');
      assert.equal(await page.textContent('#mcp-state'), 'off');
    } finally {
      await page.close();
    }
    const res = await fetch(authorizationRequest(stack, clientID, 'openid').url, { redirect: 'manual' });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('location'), null);
    const api = await fetch(`${stack.origin}/account/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stackTokens[0]}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ viewer { email } }' }),
    });
    assert.equal(api.status, 401);
  });
});
