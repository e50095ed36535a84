// Connected applications in a real Chromium through a real Caddy: a
// student authorizes a member application on two devices and a Client ID
// Metadata Document client, sees each application once on their own page
// with the scopes in words ("Connected on 2 devices"), and disconnects the
// member application with the page's own form and its confirmation. Both devices' access
// tokens are refused at the Account API on the next request and both
// refresh tokens get invalid_grant, while the other application keeps
// working, and its next authorization asks for consent afresh. A second
// student sees and ends none of it; the owner sees how many people are
// connected to each application, disconnects a person, and ends both
// devices of a person through the admin API.

import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  startStack,
  startDocServer,
  launchBrowser,
  signIn,
  authorizeInBrowser,
  authorizationRequest,
  redeemCode,
  adminAPI,
  artifactsDir,
  MEMBER,
  OPERATOR,
} from './harness.mjs';

const PAGE = '/oauth/account/applications';
const SECOND = { email: 'second@demo.school', password: 'student2', sub: 'member-2' };

let docs;
let stack;
let browser;
let student; // browser contexts, signed in
let phone; // the student's second device
let second;
let owner;
let appID; // the member application's client_id
let agentURL; // the metadata document client's client_id
const tokens = {}; // by client_id: the student's token response

before(async () => {
  docs = await startDocServer();
  stack = await startStack({
    name: 'applications',
    waitForCatalog: false,
    caddyEnv: { SSL_CERT_FILE: docs.caFile },
    gatewayOptions: '\t\tmetadata_documents {\n\t\t\tallow_private_networks\n\t\t}',
  });
  agentURL = docs.url('/agents/doc-agent.json');
  docs.docs.set('/agents/doc-agent.json', () => ({
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
  browser = await launchBrowser();
  [student, phone, second, owner] = await Promise.all([
    browser.newContext(),
    browser.newContext(),
    browser.newContext(),
    browser.newContext(),
  ]);
  await signIn(student, stack.origin, MEMBER);
  await signIn(phone, stack.origin, MEMBER);
  await signIn(second, stack.origin, SECOND);
  await signIn(owner, stack.origin, OPERATOR);
});

after(async () => {
  await browser?.close();
  await stack?.stop();
  await docs?.close();
});

/** Authorizes clientID in a signed-in context and redeems the code. */
async function connect(context, clientID, scope, onConsent) {
  const req = authorizationRequest(stack, clientID, scope);
  const cb = await authorizeInBrowser(req.url, { browser, context, callbackURL: stack.callbackURL, onConsent });
  assert.ok(cb.code, JSON.stringify(cb));
  const tok = await redeemCode(stack, clientID, cb.code, req.verifier);
  assert.equal(tok.status, 200, JSON.stringify(tok.body));
  return tok.body;
}

async function accountAPI(accessToken) {
  const res = await fetch(`${stack.origin}/account/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ viewer { email } }' }),
  });
  return res.status;
}

async function refresh(clientID, refreshToken) {
  const res = await fetch(`${stack.origin}/api/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientID }),
  });
  return { status: res.status, body: await res.json() };
}

/** Opens a page of the site in a context. */
async function open(context, pathAndQuery) {
  const page = await context.newPage();
  const res = await page.goto(stack.origin + pathAndQuery, { waitUntil: 'domcontentloaded' });
  return { page, res };
}

const row = (clientID) => `tr.grant[data-client-id="${clientID}"]`;

/** Both refresh tokens of a disconnected application get invalid_grant. */
async function assertEnded(clientID, toks, what) {
  for (const [i, tok] of toks.entries()) {
    assert.equal(await accountAPI(tok.access_token), 401, `${what}: device ${i + 1}'s access token is refused at once`);
    const r = await refresh(clientID, tok.refresh_token);
    assert.equal(r.status, 400, `${what}: device ${i + 1}'s refresh`);
    assert.equal(r.body.error, 'invalid_grant');
  }
}

describe('a student disconnects one of two applications', () => {
  test('the student connects a member application on two devices and a metadata-document client', async () => {
    tokens[appID] = await connect(student, appID, 'openid profile account:read');
    tokens.phone = await connect(phone, appID, 'openid account:read');
    tokens[agentURL] = await connect(student, agentURL, 'openid account:read');
    for (const tok of [tokens[appID], tokens.phone, tokens[agentURL]]) {
      assert.equal(await accountAPI(tok.access_token), 200);
    }
  });

  test('the page lists each application once, with its kind, scopes in words and devices', async (t) => {
    const { page, res } = await open(student, PAGE);
    try {
      assert.equal(res.status(), 200);
      const h = res.headers();
      assert.equal(h['x-frame-options'], 'DENY');
      assert.equal(h['cache-control'], 'no-store');
      assert.match(await page.textContent('#person'), /student@demo\.school/);
      assert.equal(await page.locator('tr.grant').count(), 2, 'one row per application, not per authorization');
      const app = await page.textContent(row(appID));
      assert.match(app, /Study Planner/);
      assert.match(app, /Member application/);
      assert.match(app, /Connected on 2 devices/);
      assert.match(app, /profile/);
      assert.match(app, /account:read/);
      const agent = await page.textContent(row(agentURL));
      assert.match(agent, /Doc Agent/);
      assert.match(agent, /Application published at 127\.0\.0\.1:\d+/);
      assert.match(agent, /account:read/);
      assert.doesNotMatch(agent, /profile/);
      assert.doesNotMatch(agent, /devices/);
      assert.equal(await page.getAttribute(`${row(appID)} input[name="client_id"]`, 'value'), appID);
      assert.equal(await page.locator(`${row(appID)} input[name="grant_id"]`).count(), 0);
      const shot = path.join(artifactsDir, 'applications-member.png');
      await page.screenshot({ path: shot, fullPage: true });
      t.diagnostic(`screenshot of the member's page: ${shot}`);
    } finally {
      await page.close();
    }
  });

  test('the page shows when each was authorized and last used, a refresh included', async () => {
    const r = await refresh(agentURL, tokens[agentURL].refresh_token);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    tokens[agentURL] = r.body;
    const { page } = await open(student, PAGE);
    try {
      for (const id of [appID, agentURL]) {
        for (const cell of ['since', 'last-used']) {
          // Recent: in words, the exact time in the element's datetime and on hover.
          const time = `${row(id)} .${cell} time`;
          assert.match(await page.textContent(time), /^(just now|\d+ (minute|hour|day)s? ago)$/);
          assert.match(await page.getAttribute(time, 'datetime'), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
          assert.match(await page.getAttribute(time, 'title'), /^\d{1,2} [A-Z][a-z]+ \d{4}, \d\d:\d\d UTC$/);
        }
      }
    } finally {
      await page.close();
    }
  });

  test('a browser in German gets the consent page and the applications page in German', async () => {
    const german = await browser.newContext({ locale: 'de-CH' });
    try {
      await signIn(german, stack.origin, MEMBER);
      // Denied, so that no grant is added to what the other tests count.
      const req = authorizationRequest(stack, appID, 'openid account:read');
      const cb = await authorizeInBrowser(req.url, {
        browser, context: german, callbackURL: stack.callbackURL, decision: 'deny',
        onConsent: async (page) => {
          assert.equal(await page.getAttribute('html', 'lang'), 'de');
          assert.equal((await page.textContent('#approve')).trim(), 'Erlauben');
          assert.match(await page.textContent('#scopes'), /Ihre Einschreibungen, Ihren Kursfortschritt/);
        },
      });
      assert.equal(cb.error, 'access_denied', JSON.stringify(cb));
      const page = await german.newPage();
      try {
        const res = await page.goto(stack.origin + PAGE, { waitUntil: 'domcontentloaded' });
        assert.equal(res.headers()['content-language'], 'de');
        assert.equal(await page.textContent('h1'), 'Verbundene Anwendungen');
        assert.match(await page.textContent(`${row(appID)} .last-used time`), /^(gerade eben|vor \d+ (Minuten?|Stunden?|Tag|Tagen))$/);
        assert.match(await page.textContent(`${row(appID)} .disconnect`), /^Trennen/);
        // The confirmation in German; Cancel goes back and ends nothing.
        await Promise.all([
          page.waitForURL((u) => new URL(u).pathname === `${PAGE}/disconnect`, { waitUntil: 'domcontentloaded' }),
          page.click(`${row(appID)} button.disconnect`),
        ]);
        assert.match(await page.textContent('h1'), /trennen\?$/);
        assert.equal((await page.textContent('#confirm')).trim(), 'Trennen');
        await Promise.all([
          page.waitForURL((u) => new URL(u).pathname === PAGE, { waitUntil: 'domcontentloaded' }),
          page.click('#cancel'),
        ]);
        assert.equal(await page.locator(row(appID)).count(), 1, 'Cancel disconnected nothing');
      } finally {
        await page.close();
      }
    } finally {
      await german.close();
    }
  });

  test('a second student sees neither and cannot disconnect them', async () => {
    tokens.second = await connect(second, appID, 'openid account:read');
    const { page } = await open(second, PAGE);
    try {
      assert.match(await page.textContent('#person'), /second@demo\.school/);
      assert.equal(await page.locator('tr.grant').count(), 1, 'only their own grant');
      assert.equal(await page.locator(row(agentURL)).count(), 0);
      assert.doesNotMatch(await page.textContent(row(appID)), /devices/);
      const csrf = await page.getAttribute(`${row(appID)} input[name="csrf_token"]`, 'value');
      // Their own valid form, naming the application only the first
      // student connected.
      const forged = await second.request.post(`${stack.origin}${PAGE}/disconnect`, {
        form: { client_id: agentURL, csrf_token: csrf, confirm: 'yes' },
        headers: { origin: stack.origin },
        maxRedirects: 0,
      });
      assert.equal(forged.status(), 404);
      assert.match(await forged.text(), /Nothing was changed/);
      // A cross-site form.
      const cross = await second.request.post(`${stack.origin}${PAGE}/disconnect`, {
        form: { client_id: appID, csrf_token: csrf, confirm: 'yes' },
        headers: { origin: 'https://evil.example' },
        maxRedirects: 0,
      });
      assert.equal(cross.status(), 403);
    } finally {
      await page.close();
    }
    for (const tok of [tokens[appID], tokens.phone, tokens[agentURL]]) {
      assert.equal(await accountAPI(tok.access_token), 200, "the first student's grants survived");
    }
    assert.equal(await accountAPI(tokens.second.access_token), 200, "the second student's grant survived");
  });

  test('the student disconnects the member application: both devices stop working, nothing else', async () => {
    const { page } = await open(student, PAGE);
    try {
      // The button asks first: a confirmation that names the application
      // and what it loses, and changes nothing until confirmed.
      await Promise.all([
        page.waitForURL((u) => new URL(u).pathname === `${PAGE}/disconnect`, { waitUntil: 'domcontentloaded' }),
        page.click(`${row(appID)} button.disconnect`),
      ]);
      const appName = await page.textContent('#client-name');
      assert.ok(appName.length > 0, 'the confirmation names the application');
      assert.match(await page.textContent('#loses'), /on every device/);
      assert.ok((await page.textContent('#loses')).includes(appName));
      assert.equal(await accountAPI(tokens[appID].access_token), 200, 'the confirmation alone changed nothing');
      await Promise.all([
        page.waitForURL((u) => new URL(u).searchParams.get('done') === 'disconnected', { waitUntil: 'domcontentloaded' }),
        page.click('#confirm'),
      ]);
      assert.match(await page.textContent('#notice'), /disconnected.*on every device/);
      assert.equal(await page.locator(row(appID)).count(), 0);
      assert.equal(await page.locator(row(agentURL)).count(), 1);
    } finally {
      await page.close();
    }
    await assertEnded(appID, [tokens[appID], tokens.phone], 'the page\'s Disconnect');
    assert.equal(await accountAPI(tokens[agentURL].access_token), 200, 'the other application still works');
    const other = await refresh(agentURL, tokens[agentURL].refresh_token);
    assert.equal(other.status, 200, JSON.stringify(other.body));
    tokens[agentURL] = other.body;
    assert.equal(await accountAPI(tokens.second.access_token), 200, "the second student's grant is theirs");
  });

  test('the disconnected application must ask again: the consent page, with nothing approved before', async () => {
    let approvedBefore;
    const req = authorizationRequest(stack, appID, 'openid profile account:read');
    const cb = await authorizeInBrowser(req.url, {
      browser,
      context: student,
      callbackURL: stack.callbackURL,
      onConsent: async (page) => {
        approvedBefore = await page.locator('#approved-before').count();
      },
    });
    assert.equal(approvedBefore, 0, 'the consent page was shown, remembering nothing');
    assert.ok(cb.code);
    // The application not disconnected is still remembered.
    let remembered;
    const again = await authorizeInBrowser(authorizationRequest(stack, agentURL, 'openid account:read').url, {
      browser,
      context: student,
      callbackURL: stack.callbackURL,
      onConsent: async (page) => {
        remembered = await page.locator('#approved-before').count();
      },
    });
    assert.ok(again.code);
    assert.notEqual(remembered, 0, 'the other application is remembered');
  });
});

describe('the owner', () => {
  test('sees how many people are connected to each application', async () => {
    const { page, res } = await open(owner, '/oauth/admin/applications');
    try {
      assert.equal(res.status(), 200);
      const count = async (id) => (await page.textContent(`#connected tr[data-client-id="${id}"] .count`)).trim();
      assert.equal(await count(appID), '1', 'the second student');
      assert.equal(await count(agentURL), '1', 'the student');
    } finally {
      await page.close();
    }
    const api = await adminAPI(stack, `/grants?issuer=${encodeURIComponent(stack.origin)}`);
    assert.equal(api.status, 200, JSON.stringify(api.body));
    assert.equal(api.body.clients.find((c) => c.client_id === agentURL)?.people, 1);
    assert.equal(api.body.clients.find((c) => c.client_id === agentURL)?.grants, 1);
    const people = await adminAPI(stack, `/grants?issuer=${encodeURIComponent(stack.origin)}&client_id=${encodeURIComponent(appID)}`);
    assert.deepEqual(people.body.grants.map((g) => g.email), [SECOND.email]);
  });

  test('disconnects a person from an application', async () => {
    const { page } = await open(owner, `/oauth/admin/applications/people?client_id=${encodeURIComponent(agentURL)}`);
    try {
      assert.match(await page.textContent('#people'), /Sam Student <student@demo\.school>/);
      assert.equal(await page.textContent('#people-count'), '1');
      await Promise.all([
        page.waitForURL((u) => new URL(u).searchParams.get('done') === 'disconnected', { waitUntil: 'domcontentloaded' }),
        page.click(`tr.person[data-subject="${MEMBER.sub}"] button.disconnect`),
      ]);
      assert.equal(await page.textContent('#people-count'), '0');
      assert.equal(await page.locator('#no-people').count(), 1);
    } finally {
      await page.close();
    }
    assert.equal(await accountAPI(tokens[agentURL].access_token), 401);
    const { page: mine } = await open(student, PAGE);
    try {
      assert.equal(await mine.locator('tr.grant').count(), 0);
      assert.equal(await mine.locator('#no-grants').count(), 1);
    } finally {
      await mine.close();
    }
  });

  test('ends both devices of a person through the admin API', async () => {
    tokens[appID] = await connect(student, appID, 'openid account:read');
    tokens.phone = await connect(phone, appID, 'openid account:read');
    const issuer = stack.origin;
    const counts = await adminAPI(stack, `/grants?issuer=${encodeURIComponent(issuer)}`);
    const app = counts.body.clients.find((c) => c.client_id === appID);
    assert.deepEqual([app?.people, app?.grants], [2, 3], 'the two students, by three authorizations');
    for (const [body, status] of [
      [{ issuer, subject: MEMBER.sub }, 400],
      [{ issuer, client_id: appID, grant_id: 'x', subject: MEMBER.sub }, 400],
      [{ issuer, client_id: appID }, 400],
      [{ issuer, client_id: appID, subject: 'member-9' }, 404],
    ]) {
      const r = await adminAPI(stack, '/grants/revoke', body);
      assert.equal(r.status, status, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    }
    const r = await adminAPI(stack, '/grants/revoke', { issuer, client_id: appID, subject: MEMBER.sub });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.revoked, true);
    assert.equal(r.body.grants_ended, 2);
    await assertEnded(appID, [tokens[appID], tokens.phone], 'the admin API');
    assert.equal(await accountAPI(tokens.second.access_token), 200, "the second student's grant is theirs");
  });

  test('a student cannot open the people page', async () => {
    const { page, res } = await open(student, `/oauth/admin/applications/people?client_id=${encodeURIComponent(appID)}`);
    await page.close();
    assert.equal(res.status(), 403);
  });
});

describe('in German, end to end', () => {
  test('a student allows an application on the German consent page, then disconnects it from the German page with its confirmation', async () => {
    const created = await adminAPI(stack, '/clients', {
      issuer: stack.origin,
      client_name: 'Lernplaner',
      redirect_uris: [stack.callbackURL],
      scopes: ['openid', 'profile', 'account:read'],
      confidential: false,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.client_id;
    const german = await browser.newContext({ locale: 'de-DE' });
    try {
      await signIn(german, stack.origin, MEMBER);
      const tok = await connect(german, id, 'openid account:read', async (page) => {
        assert.equal(await page.getAttribute('html', 'lang'), 'de');
        assert.match(await page.textContent('h1'), /^Lernplaner Zugriff auf .+ erlauben\?$/);
        assert.match(await page.textContent('#scopes'), /Ihre Einschreibungen, Ihren Kursfortschritt/);
        assert.equal((await page.textContent('#approve')).trim(), 'Erlauben');
      });
      assert.equal(await accountAPI(tok.access_token), 200, 'the token of the German consent works');

      const page = await german.newPage();
      try {
        const res = await page.goto(stack.origin + PAGE, { waitUntil: 'domcontentloaded' });
        assert.equal(res.headers()['content-language'], 'de');
        assert.equal(await page.getAttribute('html', 'lang'), 'de');
        assert.equal(await page.textContent('h1'), 'Verbundene Anwendungen');
        assert.equal(await page.textContent(`${row(id)} .summary`), 'Kann Ihre Kurse, Ihren Fortschritt und Ihre Bestellungen lesen');
        await Promise.all([
          page.waitForURL((u) => new URL(u).pathname === `${PAGE}/disconnect`, { waitUntil: 'domcontentloaded' }),
          page.click(`${row(id)} button.disconnect`),
        ]);
        assert.equal(await page.getAttribute('html', 'lang'), 'de');
        assert.equal(await page.textContent('h1'), 'Lernplaner trennen?');
        assert.match(await page.textContent('#loses'), /^Lernplaner verliert sofort den Zugriff .* auf jedem Gerät/);
        assert.match(await page.textContent('#scopes'), /Ihre Einschreibungen, Ihren Kursfortschritt/);
        assert.equal(await accountAPI(tok.access_token), 200, 'the confirmation alone changed nothing');
        await Promise.all([
          page.waitForURL((u) => new URL(u).searchParams.get('done') === 'disconnected', { waitUntil: 'domcontentloaded' }),
          page.click('#confirm'),
        ]);
        assert.match(await page.textContent('#notice'), /^Die Anwendung wurde getrennt\./);
        assert.equal(await page.locator(row(id)).count(), 0, 'the application is gone from the list');
      } finally {
        await page.close();
      }
      await assertEnded(id, [tok], 'the German Disconnect');
    } finally {
      await german.close();
    }
  });
});
