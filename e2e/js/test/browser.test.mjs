// What a person's browser sees: the school's own sign-in through the
// gateway, the gateway's consent page (its content and protective
// headers), the error page for a request that must not redirect, and the
// machine-readable documents.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { startStack, launchBrowser, signIn, artifactsDir, MEMBER, VENDOR } from './harness.mjs';

let stack;
let origin;
let browser;

before(async () => {
  stack = await startStack({ name: 'browser' });
  origin = stack.origin;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

function authorizationURL(overrides = {}) {
  const verifier = randomBytes(32).toString('base64url');
  const params = {
    response_type: 'code',
    client_id: VENDOR.clientId,
    redirect_uri: stack.callbackURL,
    scope: VENDOR.scope,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: randomBytes(12).toString('base64url'),
    resource: origin,
    ...overrides,
  };
  const u = new URL(`${origin}/oauth/authorize`);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return u;
}

describe('sign-in and consent', () => {
  let context;
  before(async () => {
    context = await browser.newContext();
  });
  after(async () => {
    await context?.close();
  });

  test('a browser that is not signed in is sent to the school login and back to the consent page', async () => {
    const page = await context.newPage();
    try {
      await page.goto(String(authorizationURL()), { waitUntil: 'domcontentloaded' });
      const login = new URL(page.url());
      assert.equal(login.origin, origin, 'the login page is served through the gateway');
      assert.equal(login.pathname, '/login');
      const back = new URL(login.searchParams.get('return_to'));
      assert.equal(`${back.origin}${back.pathname}`, `${origin}/oauth/authorize`);
      // The school's own stylesheet applies under its strict policy.
      await page.waitForLoadState('load');
      assert.equal(await page.locator('header').evaluate((el) => getComputedStyle(el).display), 'flex');
      await page.fill('#email', MEMBER.email);
      await page.fill('#password', MEMBER.password);
      await Promise.all([
        page.waitForURL((u) => String(u).startsWith(`${origin}/oauth/authorize`), { waitUntil: 'domcontentloaded' }),
        page.click('form[action="/login"] button[type="submit"]'),
      ]);
      assert.equal(await page.locator('#approve').count(), 1, 'the consent page is shown');
    } finally {
      await page.close();
    }
  });

  test('the consent page: school, client name, scopes in words, the signed-in person and protective headers', async () => {
    const page = await context.newPage();
    const violations = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    const stylesheets = [];
    page.on('response', (r) => {
      if (r.request().resourceType() === 'stylesheet') stylesheets.push(r);
    });
    try {
      const resp = await page.goto(String(authorizationURL({ prompt: 'consent' })), { waitUntil: 'load' });
      assert.equal(resp.status(), 200);
      assert.equal(await page.locator('#approve').count(), 1, 'the consent page is shown');
      await page.screenshot({ path: path.join(artifactsDir, 'consent.png'), fullPage: true });

      const h = await resp.allHeaders();
      assert.equal(h['x-frame-options']?.toUpperCase(), 'DENY');
      assert.match(h['content-security-policy'] ?? '', /frame-ancestors 'none'/);
      assert.match(h['content-security-policy'] ?? '', /style-src 'self';/);
      assert.doesNotMatch(h['content-security-policy'] ?? '', /unsafe-inline/);
      assert.equal(h['referrer-policy'], 'no-referrer');
      assert.match(h['cache-control'] ?? '', /no-store/);
      assert.equal(h['access-control-allow-origin'], undefined, 'no CORS on the authorization endpoint');

      // The one stylesheet comes from the gateway, under a name that
      // changes with its content, and the strict policy lets it apply.
      assert.equal(stylesheets.length, 1, 'one stylesheet');
      const sheet = stylesheets[0];
      assert.equal(sheet.status(), 200);
      assert.match(sheet.url(), new RegExp(`^${origin}/oauth/assets/pages-[0-9a-f]{12}\\.css$`));
      assert.match((await sheet.allHeaders())['cache-control'] ?? '', /immutable/);
      const approve = await page.locator('#approve').evaluate((el) => getComputedStyle(el).backgroundColor);
      assert.equal(approve, 'rgb(26, 95, 180)', 'the stylesheet is applied');
      assert.deepEqual(violations, [], 'nothing on the page breaks its Content-Security-Policy');

      // The school is named, with the origin it is asked for beneath.
      assert.equal(await page.locator('#school').innerText(), 'Demo School of Photography');
      assert.equal(await page.locator('#origin').innerText(), origin);

      const body = await page.locator('body').innerText();
      assert.ok(body.includes(VENDOR.name), 'the client name is shown');
      assert.ok(body.includes(MEMBER.email), 'the signed-in person is shown');
      assert.equal(await page.locator('#deny').count(), 1, 'a deny button');

      // Every requested scope is explained in words, not only by its name.
      const scopeItems = await page.locator('#scopes li').allInnerTexts();
      const scopesText = scopeItems.length ? scopeItems.join('\n') : body;
      for (const scope of VENDOR.scope.split(' ')) {
        const line = scopesText.split('\n').find((l) => l.includes(scope));
        assert.ok(line, `scope ${scope} is listed`);
        const words = line.replace(scope, '').replace(/[^A-Za-z ]/g, ' ').trim().split(/\s+/).filter(Boolean);
        assert.ok(words.length >= 2, `scope ${scope} is explained in words: "${line}"`);
      }

      // The form carries a CSRF token.
      const hidden = await page.locator('form input[type="hidden"]').evaluateAll((els) =>
        els.map((e) => ({ name: e.name, value: e.value })),
      );
      assert.ok(hidden.some((i) => /csrf/i.test(i.name) && i.value.length >= 16), `a CSRF token: ${JSON.stringify(hidden.map((i) => i.name))}`);
    } finally {
      await page.close();
    }
  });

  test('approving sends the browser to the registered redirect URI with code, state and iss', async () => {
    const page = await context.newPage();
    try {
      const u = authorizationURL({ prompt: 'consent' });
      await page.goto(String(u), { waitUntil: 'domcontentloaded' });
      await Promise.all([
        page.waitForURL((x) => String(x).startsWith(stack.callbackURL), { waitUntil: 'domcontentloaded' }),
        page.click('#approve'),
      ]);
      const cb = new URL(page.url());
      assert.ok(cb.searchParams.get('code'));
      assert.equal(cb.searchParams.get('state'), u.searchParams.get('state'));
      assert.equal(cb.searchParams.get('iss'), origin);
    } finally {
      await page.close();
    }
  });

  test('an unregistered redirect_uri gets an error page and never a redirect', async () => {
    const page = await context.newPage();
    const evil = `http://127.0.0.1:${stack.cbPort}/evil`;
    const hitsBefore = stack.callbackHits().length;
    const requests = [];
    page.on('request', (r) => requests.push(r.url()));
    try {
      const resp = await page.goto(String(authorizationURL({ redirect_uri: evil })), { waitUntil: 'domcontentloaded' });
      assert.equal(resp.status(), 400);
      assert.equal(new URL(page.url()).origin, origin, 'the browser stays at the gateway');
      assert.equal(resp.request().redirectedFrom(), null, 'no redirect happened');
      const text = await page.locator('body').innerText();
      assert.match(text, /redirect/i, `the error names the redirect URI problem: ${text}`);
      const h = await resp.allHeaders();
      assert.equal(h['x-frame-options']?.toUpperCase(), 'DENY');
      assert.ok(!requests.some((r) => r.startsWith(`http://127.0.0.1:${stack.cbPort}`)), 'nothing was sent to the redirect host');
      assert.equal(stack.callbackHits().length, hitsBefore);
    } finally {
      await page.close();
    }
  });

  test('an unknown client_id gets an error page and never a redirect', async () => {
    const page = await context.newPage();
    try {
      const resp = await page.goto(String(authorizationURL({ client_id: 'no-such-client' })), { waitUntil: 'domcontentloaded' });
      assert.equal(resp.status(), 400);
      assert.equal(new URL(page.url()).origin, origin);
      assert.equal(resp.request().redirectedFrom(), null);
    } finally {
      await page.close();
    }
  });

  test('a consent form posted from another site is refused', async () => {
    // The page at the callback origin (another origin than the gateway)
    // submits a form to the consent endpoint, as a cross-site forgery would.
    const page = await context.newPage();
    try {
      await page.goto(`${stack.callbackURL}?x=1`, { waitUntil: 'domcontentloaded' });
      await page.setContent(
        `<form id="f" method="post" action="${origin}/oauth/consent"><input name="request" value="x"><input name="csrf_token" value="y"><button id="go" name="decision" value="approve">go</button></form>`,
      );
      const [resp] = await Promise.all([
        page.waitForResponse((r) => r.url() === `${origin}/oauth/consent`),
        page.click('#go'),
      ]);
      assert.ok(resp.status() >= 400 && resp.status() < 500, `status ${resp.status()}`);
      assert.equal(resp.headers()['location'], undefined, 'no redirect');
      await page.waitForLoadState('domcontentloaded');
      assert.ok(!page.url().startsWith(stack.callbackURL + '?code') && !page.url().includes('code='), 'no code was issued');
    } finally {
      await page.close();
    }
  });
});

describe('a browser-based client on another origin (CORS)', () => {
  test('reads discovery, calls /mcp, and reads the 401 challenge of a bad token', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      // A page on a loopback origin other than the gateway's, as a local
      // browser-based MCP client or SPA would be.
      await page.goto(`${stack.callbackURL}?spa=1`, { waitUntil: 'domcontentloaded' });
      const out = await page.evaluate(async (origin) => {
        const r = {};
        const prm = await fetch(`${origin}/.well-known/oauth-protected-resource`, {
          headers: { 'MCP-Protocol-Version': '2025-06-18' },
        });
        r.prm = (await prm.json()).resource;
        const asm = await fetch(`${origin}/.well-known/oauth-authorization-server`);
        r.issuer = (await asm.json()).issuer;
        const init = {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'spa', version: '0' } },
        };
        const mcp = await fetch(`${origin}/mcp`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2025-06-18',
          },
          body: JSON.stringify(init),
        });
        r.mcpStatus = mcp.status;
        r.mcpBody = await mcp.text();
        const bad = await fetch(`${origin}/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer sgat_invalid' },
          body: JSON.stringify(init),
        });
        r.badStatus = bad.status;
        r.badChallenge = bad.headers.get('www-authenticate');
        const tok = await fetch(`${origin}/api/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'grant_type=authorization_code&code=nope&client_id=test-agent',
        });
        r.tokenStatus = tok.status;
        r.tokenError = (await tok.json()).error;
        return r;
      }, origin);
      assert.equal(out.prm, origin);
      assert.equal(out.issuer, origin);
      assert.equal(out.mcpStatus, 200, out.mcpBody.slice(0, 300));
      assert.match(out.mcpBody, /"protocolVersion"/);
      assert.equal(out.badStatus, 401);
      assert.match(out.badChallenge ?? '', /^Bearer .*error="invalid_token"/);
      assert.match(out.badChallenge ?? '', /resource_metadata="[^"]+"/);
      assert.equal(out.tokenStatus, 400);
      assert.ok(['invalid_request', 'invalid_grant'].includes(out.tokenError), `token error readable: ${out.tokenError}`);
    } finally {
      await page.close();
      await context.close();
    }
  });

  // A JSON POST from another origin needs a CORS preflight; the gateway
  // answers it so browser clients can read the challenge and the data.
  test('the Account API can be called from a browser on another origin (preflight)', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${stack.callbackURL}?spa=2`, { waitUntil: 'domcontentloaded' });
      const out = await page.evaluate(async (origin) => {
        try {
          const gql = await fetch(`${origin}/account/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ query: '{ viewer { id } }' }),
          });
          return { status: gql.status, challenge: gql.headers.get('www-authenticate') };
        } catch (e) {
          return { error: String(e) };
        }
      }, origin);
      assert.equal(out.error, undefined, `the browser blocked the request: ${out.error}`);
      assert.equal(out.status, 401);
      assert.match(out.challenge ?? '', /resource_metadata=/);
    } finally {
      await page.close();
      await context.close();
    }
  });
});

describe('documents', () => {
  let context;
  before(async () => {
    context = await browser.newContext();
  });
  after(async () => {
    await context?.close();
  });

  async function load(p) {
    const page = await context.newPage();
    try {
      const resp = await page.goto(`${origin}${p}`, { waitUntil: 'domcontentloaded' });
      assert.equal(resp.status(), 200, `${p} status`);
      return { headers: await resp.allHeaders(), body: await resp.text() };
    } finally {
      await page.close();
    }
  }

  test('/openapi.json is OpenAPI 3.0 JSON for this origin with the oauth2 scheme', async () => {
    const { headers, body } = await load('/openapi.json');
    assert.match(headers['content-type'], /^application\/(vnd\.oai\.openapi\+)?json/);
    const doc = JSON.parse(body);
    assert.match(doc.openapi, /^3\.0\.\d+$/);
    assert.ok(doc.info?.title && doc.info?.version, 'info.title and info.version');
    assert.ok(doc.paths && doc.paths['/account/graphql'], 'describes /account/graphql');
    assert.ok((doc.servers ?? []).some((s) => s.url === origin || s.url === `${origin}/`), 'servers names the origin');
    const schemes = Object.values(doc.components?.securitySchemes ?? {});
    const oauth2 = schemes.find((s) => s.type === 'oauth2');
    assert.ok(oauth2, 'an oauth2 security scheme');
    const ac = oauth2.flows?.authorizationCode;
    assert.ok(ac, 'with the authorizationCode flow');
    assert.equal(ac.authorizationUrl, `${origin}/oauth/authorize`);
    assert.equal(ac.tokenUrl, `${origin}/api/oauth/token`);
    assert.ok('account:read' in ac.scopes);
  });

  test('/auth.md walks through authentication with this site\u2019s URLs', async () => {
    const { headers, body } = await load('/auth.md');
    assert.match(headers['content-type'], /^text\/(markdown|plain)/);
    assert.ok(body.includes(`${origin}/api/oauth/token`), 'names the token endpoint');
    assert.ok(body.includes(`${origin}/.well-known/oauth-protected-resource`) || body.includes('/.well-known/oauth-protected-resource'));
    assert.match(body, /S256/);
  });

  test('/llms.txt is in llmstxt.org form', async () => {
    const { headers, body } = await load('/llms.txt');
    assert.match(headers['content-type'], /^text\/(plain|markdown)/);
    assert.match(body, /^# \S/, 'starts with an H1 title');
    assert.match(body, /\[[^\]]+\]\([^)]+\)/, 'has links');
  });

  test('/pricing.md shows what the site sells', async () => {
    const { headers, body } = await load('/pricing.md');
    assert.match(headers['content-type'], /^text\/(markdown|plain)/);
    assert.match(body, /^#/m);
    assert.ok(/Photography Fundamentals/.test(body), 'lists catalog courses');
    assert.match(body, /EUR|€|\$|USD/);
  });
});
