// The pages people use, on a phone and on a desktop, in a real Chromium:
// the consent page, the member's connected applications, the admin
// overview, its people page and application form, and the error page,
// each at 360 and 1280 px wide. None may scroll sideways (the document is
// no wider than the window), axe-core finds no serious or critical
// violation, and the keyboard reaches Disconnect with a visible focus
// ring. Pages are found by id, class and data attributes, not by their
// English words.
//
// axe-core runs through playwright's page.evaluate, which the DevTools
// protocol runs beside the page's Content-Security-Policy rather than
// under it: the pages keep their strict policy (no inline or foreign
// script) while they are checked.
//
// SCREENSHOTS=1 also writes the consent and connected-applications pages
// at 390 px (a phone) to docs/screenshots/, for docs/operator.md.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import {
  startStack,
  startDocServer,
  launchBrowser,
  signIn,
  authorizeInBrowser,
  authorizationRequest,
  redeemCode,
  adminAPI,
  repoRoot,
  MEMBER,
  OPERATOR,
  VENDOR,
} from './harness.mjs';

const axeSource = createRequire(import.meta.url)('axe-core').source;

const WIDTHS = [360, 1280];
const APPLICATIONS = '/oauth/account/applications';
const OVERVIEW = '/oauth/admin/applications';

let docs;
let stack;
let browser;
let member; // browser contexts, signed in
let owner;
let appID;
let agentURL;
let freshID; // an application nobody has allowed yet: a first consent

before(async () => {
  docs = await startDocServer();
  stack = await startStack({
    name: 'pages',
    waitForCatalog: false,
    caddyEnv: { SSL_CERT_FILE: docs.caFile },
    gatewayOptions: '\t\tmetadata_documents {\n\t\t\tallow_private_networks\n\t\t}',
  });
  // A metadata document client with a long https client_id and a member
  // application with every kind of column the overview has.
  agentURL = docs.url('/agents/a-rather-long-document-name-for-a-phone-screen.json');
  docs.docs.set('/agents/a-rather-long-document-name-for-a-phone-screen.json', () => ({
    client_id: agentURL,
    client_name: 'Doc Agent',
    redirect_uris: [stack.callbackURL],
    token_endpoint_auth_method: 'none',
  }));
  const created = await adminAPI(stack, '/clients', {
    issuer: stack.origin,
    client_name: 'Study Planner',
    redirect_uris: [stack.callbackURL],
    scopes: ['openid', 'profile', 'account:read'],
    confidential: false,
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  appID = created.body.client_id;
  const fresh = await adminAPI(stack, '/clients', {
    issuer: stack.origin,
    client_name: 'Homework Helper',
    redirect_uris: [stack.callbackURL],
    scopes: ['openid', 'profile', 'account:read'],
    confidential: false,
  });
  assert.equal(fresh.status, 201, JSON.stringify(fresh.body));
  freshID = fresh.body.client_id;
  browser = await launchBrowser();
  [member, owner] = await Promise.all([browser.newContext(), browser.newContext()]);
  await signIn(member, stack.origin, MEMBER);
  await signIn(owner, stack.origin, OPERATOR);
  for (const [id, scope] of [
    [VENDOR.clientId, VENDOR.scope],
    [appID, 'openid profile account:read'],
    [agentURL, 'openid account:read'],
  ]) {
    const req = authorizationRequest(stack, id, scope);
    const cb = await authorizeInBrowser(req.url, { browser, context: member, callbackURL: stack.callbackURL });
    assert.ok(cb.code, JSON.stringify(cb));
    const tok = await redeemCode(stack, id, cb.code, req.verifier);
    assert.equal(tok.status, 200, JSON.stringify(tok.body));
  }
});

after(async () => {
  await browser?.close();
  await stack?.stop();
  await docs?.close();
});

// Each page: who opens it, how, and an element that proves it is the page
// meant (not a login page or another error).
const PAGES = [
  {
    name: 'consent',
    context: () => member,
    // A new request each time, for an application never allowed.
    url: () => authorizationRequest(stack, freshID, 'openid profile account:read').url.toString(),
    status: 200,
    mark: '#approve',
  },
  { name: 'connected applications', context: () => member, url: () => stack.origin + APPLICATIONS, status: 200, mark: 'tr.grant button.disconnect' },
  {
    name: 'disconnect confirmation',
    context: () => member,
    url: () => stack.origin + APPLICATIONS,
    // Reached by the list's Disconnect button, a form POST.
    via: (page) => page.click('tr.grant button.disconnect'),
    status: 200,
    mark: '#confirm',
  },
  { name: 'admin overview', context: () => owner, url: () => stack.origin + OVERVIEW, status: 200, mark: '#metadata' },
  {
    name: 'admin people',
    context: () => owner,
    url: () => `${stack.origin}${OVERVIEW}/people?client_id=${encodeURIComponent(VENDOR.clientId)}`,
    status: 200,
    mark: 'tr.person button.disconnect',
  },
  { name: 'admin application form', context: () => owner, url: () => `${stack.origin}${OVERVIEW}/new`, status: 200, mark: 'textarea#redirect_uris' },
  {
    name: 'error',
    context: () => member,
    url: () => `${stack.origin}/oauth/authorize?response_type=code&client_id=no-such-client`,
    status: 400,
    mark: '#error',
  },
];

/** Opens a page at a window width and checks it is the page meant. */
async function open(spec, width) {
  const page = await spec.context().newPage();
  await page.setViewportSize({ width, height: 800 });
  let res = await page.goto(spec.url(), { waitUntil: 'load' });
  if (spec.via) {
    [res] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.request().isNavigationRequest()),
      page.waitForURL((u) => u !== spec.url(), { waitUntil: 'load' }),
      spec.via(page),
    ]);
  }
  assert.equal(res.status(), spec.status, `${spec.name} at ${width} px: ${page.url()}`);
  assert.ok(await page.locator(spec.mark).count(), `${spec.name} at ${width} px shows ${spec.mark}`);
  assert.match(res.headers()['content-security-policy'], /default-src 'none'; style-src 'self';/);
  return page;
}

/** The axe-core violations of impact serious or critical on the page. */
async function seriousViolations(page) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return {
      passes: r.passes.length,
      violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) })),
    };
  });
  assert.ok(result.passes > 0, 'axe-core ran its rules');
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

describe('every page at 360 and 1280 px', () => {
  for (const spec of PAGES) {
    for (const width of WIDTHS) {
      test(`${spec.name} at ${width} px: no sideways scrolling, no serious axe-core violation`, async () => {
        const page = await open(spec, width);
        try {
          const { scrollWidth, innerWidth } = await page.evaluate(() => ({
            scrollWidth: document.documentElement.scrollWidth,
            innerWidth: window.innerWidth,
          }));
          assert.ok(scrollWidth <= innerWidth, `${spec.name} at ${width} px lays out ${scrollWidth} px wide`);
          assert.deepEqual(await seriousViolations(page), [], `${spec.name} at ${width} px`);
        } finally {
          await page.close();
        }
      });
    }
  }
});

test('the consent title at 360 px takes at most four lines', async () => {
  const page = await open(PAGES[0], 360);
  try {
    const lines = await page.evaluate(() => {
      const h1 = document.querySelector('h1');
      return h1.getBoundingClientRect().height / parseFloat(getComputedStyle(h1).lineHeight);
    });
    assert.ok(Math.round(lines) <= 4, `the title takes ${lines.toFixed(1)} lines`);
  } finally {
    await page.close();
  }
});

describe('the keyboard', () => {
  for (const width of WIDTHS) {
    test(`reaches Disconnect by Tab at ${width} px, with a visible focus ring, without scrolling sideways`, async () => {
      const page = await open(PAGES[1], width);
      try {
        let reached = false;
        for (let i = 0; i < 40 && !reached; i++) {
          await page.keyboard.press('Tab');
          reached = await page.evaluate(() => document.activeElement?.matches('button.disconnect') ?? false);
        }
        assert.ok(reached, 'Tab reaches a Disconnect button');
        const ring = await page.evaluate(() => {
          const el = document.activeElement;
          const s = getComputedStyle(el);
          const box = el.getBoundingClientRect();
          return {
            focusVisible: el.matches(':focus-visible'),
            outline: s.outlineStyle === 'none' ? 'none' : `${s.outlineStyle} ${s.outlineWidth}`,
            boxShadow: s.boxShadow,
            left: box.left,
            right: box.right,
            innerWidth: window.innerWidth,
            scrollX: window.scrollX,
          };
        });
        assert.ok(ring.focusVisible, 'the button matches :focus-visible');
        assert.ok(ring.outline !== 'none' || ring.boxShadow !== 'none', `focus ring: ${JSON.stringify(ring)}`);
        // Focus scrolls a control into view; on a page too wide it scrolls
        // sideways to get there.
        assert.ok(ring.scrollX === 0 && ring.left >= 0 && ring.right <= ring.innerWidth, `Disconnect is on screen: ${JSON.stringify(ring)}`);
      } finally {
        await page.close();
      }
    });
  }
});

describe('screenshots', { skip: process.env.SCREENSHOTS !== '1' && 'set SCREENSHOTS=1 to write docs/screenshots/' }, () => {
  test('the consent and connected-applications pages on a phone (390 px)', async (t) => {
    const dir = path.join(repoRoot, 'docs', 'screenshots');
    await mkdir(dir, { recursive: true });
    for (const [spec, file] of [
      [PAGES[0], 'consent-phone.png'],
      [PAGES[1], 'applications-phone.png'],
    ]) {
      const page = await open(spec, 390);
      try {
        await page.screenshot({ path: path.join(dir, file), fullPage: true });
        t.diagnostic(`wrote ${path.join(dir, file)}`);
      } finally {
        await page.close();
      }
    }
  });
});
