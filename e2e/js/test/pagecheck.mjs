// What pages.test.mjs and pages-admin.test.mjs share: a stack whose
// pages have something to show (a member connected to a vendor, a member
// application and a metadata-document client with a long https
// client_id; an application nobody allowed yet, for a first consent),
// browser contexts signed in per language, and the check every page gets
// in every language at 360 and 1280 px. A language is asked for as a
// browser set to it asks, by Accept-Language, a page at a time in one
// signed-in context: a sign-in per language would cost more than the
// pages' checks. applications.test.mjs checks a German browser (its
// locale) end to end.
//
// axe-core runs through playwright's page.evaluate, which the DevTools
// protocol runs beside the page's Content-Security-Policy rather than
// under it: the pages keep their strict policy (no inline or foreign
// script) while they are checked.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
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
  VENDOR,
} from './harness.mjs';

const axeSource = createRequire(import.meta.url)('axe-core').source;

export const WIDTHS = [360, 1280];
// The languages of the pages (i18n.Languages), each a browser
// locale whose Accept-Language asks for it.
export const LANGUAGES = { en: 'en-US', de: 'de-DE', fr: 'fr-FR', it: 'it-IT', es: 'es-ES', pt: 'pt-PT' };
export const APPLICATIONS = '/oauth/account/applications';
export const OVERVIEW = '/oauth/admin/applications';

/**
 * Starts the stack and the browser and connects the member (signed in
 * in a context of its own) to the vendor, a member application and a
 * metadata-document client. Returns { docs, stack, browser, member (that
 * context), appID, agentURL, freshID, stop }.
 */
export async function startPagesStack(name, member) {
  const docs = await startDocServer();
  const stack = await startStack({
    name,
    waitForCatalog: false,
    caddyEnv: { SSL_CERT_FILE: docs.caFile },
    gatewayOptions: '\t\tmetadata_documents {\n\t\t\tallow_private_networks\n\t\t}',
  });
  const agentURL = docs.url('/agents/a-rather-long-document-name-for-a-phone-screen.json');
  docs.docs.set('/agents/a-rather-long-document-name-for-a-phone-screen.json', () => ({
    client_id: agentURL,
    client_name: 'Doc Agent',
    redirect_uris: [stack.callbackURL],
    token_endpoint_auth_method: 'none',
  }));
  const ids = [];
  for (const clientName of ['Study Planner', 'Homework Helper']) {
    const created = await adminAPI(stack, '/clients', {
      issuer: stack.origin,
      client_name: clientName,
      redirect_uris: [stack.callbackURL],
      scopes: ['openid', 'profile', 'account:read'],
      confidential: false,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ids.push(created.body.client_id);
  }
  const [appID, freshID] = ids;
  const browser = await launchBrowser();
  const context = await browser.newContext();
  await signIn(context, stack.origin, member);
  for (const [id, scope] of [
    [VENDOR.clientId, VENDOR.scope],
    [appID, 'openid profile account:read'],
    [agentURL, 'openid account:read'],
  ]) {
    const req = authorizationRequest(stack, id, scope);
    const cb = await authorizeInBrowser(req.url, { browser, context, callbackURL: stack.callbackURL });
    assert.ok(cb.code, JSON.stringify(cb));
    const tok = await redeemCode(stack, id, cb.code, req.verifier);
    assert.equal(tok.status, 200, JSON.stringify(tok.body));
  }
  const stop = async () => {
    await browser?.close();
    await stack?.stop();
    await docs?.close();
  };
  return { docs, stack, browser, member: context, appID, agentURL, freshID, stop };
}

/** A context, signed in as person. */
export async function signedInContext(browser, origin, person) {
  const context = await browser.newContext();
  await signIn(context, origin, person);
  return context;
}

/**
 * Opens a page at a window width, asking for a language, and checks it is
 * the page meant. spec: name, context(), url(), via(page) (an action that
 * leads to the page, a form POST), status, mark (a selector the page has).
 */
export async function openPage(spec, width, lang = 'en') {
  const page = await spec.context().newPage();
  await page.setExtraHTTPHeaders({ 'accept-language': `${LANGUAGES[lang]},${lang};q=0.9` });
  await page.setViewportSize({ width, height: 800 });
  let res = await page.goto(spec.url(), { waitUntil: 'load' });
  if (spec.via) {
    [res] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.request().isNavigationRequest()),
      page.waitForURL((u) => u !== spec.url(), { waitUntil: 'load' }),
      spec.via(page),
    ]);
  }
  assert.equal(res.status(), spec.status, `${spec.name} in ${lang} at ${width} px: ${page.url()}`);
  assert.ok(await page.locator(spec.mark).count(), `${spec.name} in ${lang} at ${width} px shows ${spec.mark}`);
  assert.match(res.headers()['content-security-policy'], /default-src 'none'; style-src 'self';/);
  return page;
}

/** The axe-core violations of impact serious or critical on the page. */
export async function seriousViolations(page) {
  // Once a page: sending and compiling axe-core costs more than a run.
  if (!(await page.evaluate(() => typeof axe !== 'undefined'))) await page.evaluate(axeSource);
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

/**
 * Registers, for each page of specs, a test per language: the page is in
 * the language asked (<html lang>; a spec with translated false may still
 * answer in English), and at 360 and 1280 px it does not scroll sideways
 * (every details element opened), passes the spec's own check, if any
 * (atWidth(page, width, lang)), and axe-core finds no serious or
 * critical violation. One page at a time: on a busy machine pages side
 * by side only compete for the processor.
 */
export function everyPageInEveryLanguage(specs) {
  describe('every page in every language at 360 and 1280 px', () => {
    for (const spec of specs) {
      describe(spec.name, () => {
        for (const lang of Object.keys(LANGUAGES)) {
          test(`${spec.name} in ${lang}: the language asked, no sideways scrolling, no serious axe-core violation`, () => checkPage(spec, lang));
        }
      });
    }
  });
}

async function checkPage(spec, lang) {
  // Opened once, at the narrower width, and widened: the media queries
  // apply as they would to a page loaded at that width.
  const page = await openPage(spec, WIDTHS[0], lang);
  try {
    const htmlLang = await page.getAttribute('html', 'lang');
    if (spec.translated) {
      assert.equal(htmlLang, lang, `${spec.name} asked in ${lang}`);
    } else {
      assert.ok(htmlLang === lang || htmlLang === 'en', `${spec.name} asked in ${lang} answers in ${htmlLang}`);
    }
    // The widest the page gets: every details element open.
    await page.evaluate(() => document.querySelectorAll('details').forEach((d) => { d.open = true; }));
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 800 });
      const { scrollWidth, innerWidth } = await page.evaluate(() => ({
        scrollWidth: document.documentElement.scrollWidth,
        innerWidth: window.innerWidth,
      }));
      assert.equal(innerWidth, width);
      assert.ok(scrollWidth <= innerWidth, `${spec.name} in ${lang} at ${width} px lays out ${scrollWidth} px wide`);
      await spec.atWidth?.(page, width, lang);
      assert.deepEqual(await seriousViolations(page), [], `${spec.name} in ${lang} at ${width} px`);
    }
  } finally {
    await page.close();
  }
}
