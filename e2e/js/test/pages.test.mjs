// The pages members read most, on a phone and on a desktop, in a real
// Chromium, in every language of the pages: the consent page and the
// member's connected applications, each asked for in each of the six
// (Accept-Language), at 360 and 1280 px wide. Each is
// in the language asked (<html lang>), none scrolls sideways (the
// document is no wider than the window, every "All its permissions" list
// opened), and axe-core finds no serious or critical violation
// (pagecheck.mjs). The consent title fits four lines on a phone in every
// language, the keyboard reaches Disconnect with a visible focus ring,
// and a self-registered application's consent page warns that the school
// did not review it, naming the host it comes from; each connected
// application shows its recent activity in words. Pages are found by
// id, class and data attributes, not by their English words. The
// Disconnect confirmation and the error page get the same checks in
// pages-confirm.test.mjs, the admin area's pages in pages-admin.test.mjs
// (a file each, so that each keeps within a file's time limit).
//
// SCREENSHOTS=1 also writes the consent and connected-applications pages
// at 390 px (a phone), in English and in German, to docs/screenshots/,
// for docs/operator.md.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { mkdir } from 'node:fs/promises';
import { authorizationRequest, repoRoot, MEMBER, OPERATOR, VENDOR } from './harness.mjs';
import {
  APPLICATIONS,
  WIDTHS,
  everyPageInEveryLanguage,
  openPage,
  signedInContext,
  startPagesStack,
} from './pagecheck.mjs';

let setup; // startPagesStack's
let member; // signed-in contexts
let owner;

before(async () => {
  setup = await startPagesStack('pages', MEMBER);
  member = setup.member;
  owner = await signedInContext(setup.browser, setup.stack.origin, OPERATOR);
});

after(async () => {
  await setup?.stop();
});

// Each page: who opens it, how, and an element that proves it is the page
// meant (not a login page or another error).
const PAGES = [
  {
    name: 'consent',
    context: () => member,
    // A new request each time, for an application never allowed.
    url: () => authorizationRequest(setup.stack, setup.freshID, 'openid profile account:read').url.toString(),
    status: 200,
    mark: '#approve',
    // On a phone, the title takes at most four lines in every language.
    atWidth: async (page, width, lang) => {
      if (width !== 360) return;
      const lines = await page.evaluate(() => {
        const h1 = document.querySelector('h1');
        return h1.getBoundingClientRect().height / parseFloat(getComputedStyle(h1).lineHeight);
      });
      assert.ok(Math.round(lines) <= 4, `the consent title in ${lang} takes ${lines.toFixed(1)} lines at 360 px`);
    },
  },
  { name: 'connected applications', context: () => member, url: () => setup.stack.origin + APPLICATIONS, status: 200, mark: 'tr.grant button.disconnect' },
].map((spec) => ({ ...spec, translated: true }));

everyPageInEveryLanguage(PAGES);

test('each connected application shows its recent activity in words: last used from where, its latest events', async () => {
  const page = await openPage(PAGES[1], WIDTHS[1]);
  try {
    for (const id of [VENDOR.clientId, setup.appID, setup.agentURL]) {
      const row = `tr.grant[data-client-id="${id}"]`;
      assert.match(await page.textContent(`${row} .used-from`), /^from \S+$/, id);
      const events = await page.locator(`${row} details.activity li.event`).allTextContents();
      assert.ok(events.length >= 1 && events.length <= 3, `${id}: ${events}`);
      // The newest is the code's redemption, by the application.
      assert.match(events[0], /^Application signed in, (just now|\d+ minutes? ago) from \S+$/, `${id}: ${events}`);
    }
  } finally {
    await page.close();
  }
});

test('a self-registered application\'s consent page warns that the school did not review it, naming its host', async () => {
  const { stack } = setup;
  // Registered as a command-line tool would (RFC 7591): an operator's
  // client, so the owner is the one asked.
  const reg = await fetch(`${stack.origin}/api/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Self Registered Tool', redirect_uris: [stack.callbackURL], token_endpoint_auth_method: 'none' }),
  });
  const client = await reg.json();
  assert.equal(reg.status, 201, JSON.stringify(client));
  const redirectHost = new URL(stack.callbackURL).host;
  for (const lang of ['en', 'de']) {
    const spec = {
      name: 'self-registered consent',
      context: () => owner,
      url: () => authorizationRequest(stack, client.client_id, 'openid courses:read').url.toString(),
      status: 200,
      mark: '#approve',
    };
    const page = await openPage(spec, 390, lang);
    try {
      const school = (await page.textContent('#school')).trim();
      assert.ok(school.length > 0, 'the title names the school');
      assert.equal(await page.getAttribute('#trust', 'class'), 'error', 'a warning, not a notice');
      const trust = await page.textContent('#trust');
      assert.ok(trust.includes(school), `the warning names the school: ${trust}`);
      assert.match(trust, lang === 'en' ? /^Not reviewed by / : /^Nicht von .* geprüft/);
      assert.equal((await page.textContent('#client-host')).trim(), redirectHost);
      assert.equal((await page.textContent('#redirect-host')).trim(), redirectHost);
    } finally {
      await page.close();
    }
  }
});

describe('the keyboard', () => {
  for (const width of WIDTHS) {
    test(`reaches Disconnect by Tab at ${width} px, with a visible focus ring, without scrolling sideways`, async () => {
      const page = await openPage(PAGES[1], width);
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
  test('the consent and connected-applications pages on a phone (390 px), in English and German', async (t) => {
    const dir = path.join(repoRoot, 'docs', 'screenshots');
    await mkdir(dir, { recursive: true });
    for (const [spec, lang, file] of [
      [PAGES[0], 'en', 'consent-phone.png'],
      [PAGES[1], 'en', 'applications-phone.png'],
      [PAGES[0], 'de', 'consent-phone-de.png'],
      [PAGES[1], 'de', 'applications-phone-de.png'],
    ]) {
      const page = await openPage(spec, 390, lang);
      try {
        // The first application's permissions opened, to show them.
        if (await page.locator('details.all-scopes').count()) await page.click('details.all-scopes summary');
        await page.screenshot({ path: path.join(dir, file), fullPage: true });
        t.diagnostic(`wrote ${path.join(dir, file)}`);
      } finally {
        await page.close();
      }
    }
  });
});
