// Test harness: builds and runs the real gateway (Caddy with the schoolgate
// modules) in front of the demo school, on free loopback ports, with every
// file it writes under one temporary directory. Each test file starts its own
// stack (fresh keys, clients, consents and tokens) and stops it at the end.
//
// Nothing here special-cases the gateway for the client libraries: the tests
// use stock openid-client, the official MCP SDK and Debian's Chromium.

import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, mkdir, writeFile, readFile, rm } from 'node:fs/promises';
import { existsSync, createWriteStream } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { randomBytes, createHash } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const execFileP = promisify(execFile);

const here = path.dirname(fileURLToPath(import.meta.url));
// SCHOOLGATE_REPO runs the suite against another checkout's binaries.
export const repoRoot = path.resolve(process.env.SCHOOLGATE_REPO || path.resolve(here, '..', '..', '..'));
export const artifactsDir = path.resolve(here, '..', 'artifacts');
const caddyBin = path.join(repoRoot, 'bin', 'caddy');
const schoolBin = path.join(repoRoot, 'bin', 'demoschool');

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const MEMBER = { email: 'student@demo.school', password: 'student', sub: 'member-1' };
export const OPERATOR = { email: 'owner@demo.school', password: 'owner' };
export const VENDOR = {
  name: 'Test Agent',
  clientId: 'test-agent',
  scope: 'openid profile email account:read',
};
export const PUBLIC_TOOLS = ['get_course', 'list_events', 'list_membership_plans', 'search_catalog'];
export const MEMBER_TOOLS = ['account_query', 'my_enrollments'];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A loopback TCP port nobody listens on right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

let built;
/**
 * Builds bin/caddy and bin/demoschool with the Go toolchain (fast when the
 * build cache is warm). SCHOOLGATE_E2E_NO_BUILD=1 uses existing binaries.
 */
export function buildBinaries() {
  built ??= (async () => {
    if (process.env.SCHOOLGATE_E2E_NO_BUILD === '1' && existsSync(caddyBin) && existsSync(schoolBin)) {
      return;
    }
    for (const [out, pkg] of [
      [caddyBin, './cmd/caddy'],
      [schoolBin, './cmd/demoschool'],
    ]) {
      try {
        await execFileP('go', ['build', '-o', out, pkg], {
          cwd: repoRoot,
          maxBuffer: 16 << 20,
          timeout: 15 * 60 * 1000,
        });
      } catch (err) {
        throw new Error(`go build ${pkg} failed:\n${err.stderr || err.message}`);
      }
    }
  })();
  return built;
}

/** A child process whose output goes to a log file under artifacts/. */
class Proc {
  constructor(name, bin, args, { env, logFile }) {
    this.name = name;
    this.tail = [];
    this.exited = null;
    this.log = createWriteStream(logFile);
    this.child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    // 'close' comes once the child's output is read to its end, which may
    // be after 'exit': the log is ended only then.
    this.closed = new Promise((r) => this.child.once('close', r));
    for (const s of [this.child.stdout, this.child.stderr]) {
      s.on('data', (chunk) => {
        if (!this.log.writableEnded) this.log.write(chunk);
        this.tail.push(chunk.toString());
        if (this.tail.length > 200) this.tail.shift();
      });
    }
    this.child.on('exit', (code, signal) => {
      this.exited = { code, signal };
    });
    liveChildren.add(this.child);
    this.child.on('exit', () => liveChildren.delete(this.child));
  }

  output() {
    return this.tail.join('');
  }

  async stop() {
    if (!this.exited) {
      const done = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGTERM');
      const t = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      await done;
      clearTimeout(t);
    }
    await this.closed;
    this.log.end();
  }
}

// Children are killed if the test process goes away for any reason.
const liveChildren = new Set();
process.on('exit', () => {
  for (const c of liveChildren) {
    try {
      c.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => process.exit(130));
}

/** Polls url until it answers with the wanted status. */
export async function waitHTTP(url, { status = 200, timeoutMs = 30000, proc } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (proc?.exited) {
      throw new Error(`${proc.name} exited (${JSON.stringify(proc.exited)}) before ${url} answered:\n${proc.output()}`);
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === status) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = err.message;
    }
    await sleep(100);
  }
  throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms (last: ${last})\n${proc?.output() ?? ''}`);
}

/**
 * The loopback redirect target of the vendor client: records every request
 * it gets and answers with a small page, as a native app's local listener
 * would.
 */
async function startCallbackServer(port) {
  const hits = [];
  const server = http.createServer((req, res) => {
    hits.push(new URL(req.url, `http://127.0.0.1:${port}`));
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end('<!doctype html><title>done</title><p id="done">You can close this window.</p>');
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return { hits, close: () => new Promise((r) => server.close(() => r())) };
}

/**
 * Starts the demo school and the gateway. Returns the stack; call stop()
 * when done (it is safe to call more than once).
 *
 * options: name (log file prefix), waitForCatalog, mcpConnections ('on' |
 * 'off', the Caddyfile's initial value), gatewayOptions (more lines inside
 * the school_gateway block), caddyEnv (more environment for Caddy, e.g.
 * SSL_CERT_FILE), anyHost (the site address is http://:<port>, which
 * serves every Host header, with the issuer set explicitly: requests with a
 * foreign Host reach the gateway instead of Caddy's unmatched-host answer).
 */
export async function startStack({
  name = 'stack',
  waitForCatalog = true,
  mcpConnections = 'on',
  gatewayOptions = '',
  caddyEnv = {},
  anyHost = false,
} = {}) {
  await buildBinaries();
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'schoolgate-e2e-js-'));
  await mkdir(artifactsDir, { recursive: true });
  const [schoolPort, gwPort, adminPort, cbPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const schoolURL = `http://127.0.0.1:${schoolPort}`;
  const origin = `http://127.0.0.1:${gwPort}`;
  const callbackURL = `http://127.0.0.1:${cbPort}/callback`;

  // Nothing may touch the real home directory.
  const env = {
    ...process.env,
    HOME: tmp,
    XDG_DATA_HOME: path.join(tmp, 'xdg-data'),
    XDG_CONFIG_HOME: path.join(tmp, 'xdg-config'),
    XDG_CACHE_HOME: path.join(tmp, 'xdg-cache'),
  };

  const procs = [];
  let callback;
  const stack = {
    tmp,
    origin,
    schoolURL,
    cbPort,
    callbackURL,
    mcpURL: `${origin}/mcp`,
    adminURL: `http://127.0.0.1:${adminPort}`,
    callbackHits: () => callback?.hits ?? [],
    logs: () => procs.map((p) => `---- ${p.name} ----\n${p.output()}`).join('\n'),
    stopped: false,
    async stop() {
      if (stack.stopped) return;
      stack.stopped = true;
      await Promise.all(procs.map((p) => p.stop()));
      await callback?.close();
      await rm(tmp, { recursive: true, force: true });
    },
  };

  try {
    const school = new Proc('demoschool', schoolBin, ['-listen', `127.0.0.1:${schoolPort}`], {
      env,
      logFile: path.join(artifactsDir, `${name}-demoschool.log`),
    });
    procs.push(school);
    await waitHTTP(`${schoolURL}/healthz`, { proc: school });

    const caddyfile = `{
	admin 127.0.0.1:${adminPort}
	storage file_system ${path.join(tmp, 'caddy-storage')}
}

${anyHost ? `http://:${gwPort}` : origin} {
	school_gateway ${schoolURL} {${anyHost ? `\n\t\tissuer ${origin}` : ''}
		data ${path.join(tmp, 'data')}
		catalog ${schoolURL}/catalog.json
		vendor "${VENDOR.name}" {
			client_id ${VENDOR.clientId}
			redirect_uri ${callbackURL}
			audience member
			scopes ${VENDOR.scope}
		}
		mcp_connections ${mcpConnections}
${gatewayOptions}
	}
}
`;
    const configFile = path.join(tmp, 'Caddyfile');
    await writeFile(configFile, caddyfile);
    const caddy = new Proc('caddy', caddyBin, ['run', '--config', configFile, '--adapter', 'caddyfile'], {
      env: { ...env, ...caddyEnv },
      logFile: path.join(artifactsDir, `${name}-caddy.log`),
    });
    procs.push(caddy);
    await waitHTTP(`${origin}/.well-known/oauth-authorization-server`, { proc: caddy });

    callback = await startCallbackServer(cbPort);

    if (waitForCatalog) await waitForCatalogImport(stack);
    return stack;
  } catch (err) {
    await stack.stop();
    throw err;
  }
}

/**
 * Waits until the asynchronous catalog import is visible through the MCP
 * search_catalog tool. A gateway whose MCP server is broken is reported by
 * the tests themselves, so a timeout here only warns.
 */
async function waitForCatalogImport(stack, timeoutMs = 30000) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const client = new Client({ name: 'schoolgate-e2e-harness', version: '0.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(stack.mcpURL)));
      const res = await client.callTool({ name: 'search_catalog', arguments: { query: 'photography' } });
      if (!res.isError && catalogResultCount(res) > 0) return;
      last = JSON.stringify(res).slice(0, 300);
    } catch (err) {
      last = err.message;
    } finally {
      await client.close().catch(() => {});
    }
    await sleep(250);
  }
  console.warn(`harness: search_catalog returned no results within ${timeoutMs} ms (last: ${last})`);
}

/** Parses a tool result's JSON payload (structuredContent or the text). */
export function toolPayload(result) {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The list of items in a search_catalog result, whatever its wrapping. */
export function catalogResults(result) {
  const p = toolPayload(result);
  if (Array.isArray(p)) return p;
  if (p && typeof p === 'object') {
    for (const key of ['results', 'items', 'courses', 'hits', 'matches']) {
      if (Array.isArray(p[key])) return p[key];
    }
  }
  return [];
}

function catalogResultCount(result) {
  return catalogResults(result).length;
}

// ---------------------------------------------------------------------------
// Browser

let chromiumLoader;
/** Launches Debian's Chromium through playwright-core (no browser download). */
export async function launchBrowser() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium, or set CHROMIUM_PATH (no browser is downloaded)`);
  }
  chromiumLoader ??= import('playwright-core').then((m) => m.chromium);
  const chromium = await chromiumLoader;
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/**
 * Drives an authorization request in a real browser as a person would: signs
 * in on the school's own login page when asked, then approves (or denies) on
 * the gateway's consent page, and returns the query parameters the loopback
 * callback received. A remembered consent may skip the consent page.
 *
 * options: context (a playwright BrowserContext; a fresh one otherwise),
 * browser, callbackURL, person, decision ('approve' | 'deny'), onConsent(page)
 * (called on the consent page before deciding).
 */
export async function authorizeInBrowser(authorizationURL, options) {
  const { browser, callbackURL, person = MEMBER, decision = 'approve', onConsent } = options;
  const context = options.context ?? (await browser.newContext());
  const page = await context.newPage();
  const trail = [];
  page.on('framenavigated', (f) => {
    if (f === page.mainFrame()) trail.push(f.url());
  });
  const atCallback = (u) => String(u).startsWith(callbackURL);
  try {
    await page.goto(String(authorizationURL), { waitUntil: 'domcontentloaded' });
    for (let i = 0; i < 6; i++) {
      const url = page.url();
      if (atCallback(url)) {
        return Object.fromEntries(new URL(url).searchParams);
      }
      if (await page.locator('#approve').count()) {
        if (onConsent) await onConsent(page);
        await Promise.all([
          page.waitForURL((u) => atCallback(u), { waitUntil: 'domcontentloaded', timeout: 15000 }),
          page.click(decision === 'deny' ? '#deny' : '#approve'),
        ]);
        continue;
      }
      if (await page.locator('form[action="/login"] #email').count()) {
        await page.fill('#email', person.email);
        await page.fill('#password', person.password);
        const before = page.url();
        await Promise.all([
          page.waitForURL((u) => String(u) !== before, { waitUntil: 'domcontentloaded', timeout: 15000 }),
          page.click('form[action="/login"] button[type="submit"]'),
        ]);
        continue;
      }
      const text = (await page.locator('body').innerText().catch(() => '')).slice(0, 500);
      throw new Error(`unexpected page at ${url}: ${text}`);
    }
    throw new Error(`no redirect to ${callbackURL}; navigations: ${trail.join(' -> ')}`);
  } finally {
    await page.close().catch(() => {});
    if (!options.context) await context.close().catch(() => {});
  }
}

/**
 * An in-memory OAuthClientProvider, as an MCP host application would write
 * one, whose redirectToAuthorization drives a real browser.
 * It uses only the provider interface of the official SDK.
 */
export class TestProvider {
  /**
   * env() returns { stack, browser } when the provider is used (test files
   * create providers before their stack starts). options: interactive
   * (drive the browser on redirect), clientMetadataUrl (use a Client ID
   * Metadata Document instead of registering), person (who signs in).
   */
  constructor(env, { interactive = true, clientMetadataUrl, person = MEMBER } = {}) {
    this.env = env;
    this.interactive = interactive;
    this.person = person;
    if (clientMetadataUrl) this.clientMetadataUrl = clientMetadataUrl;
    this._clientInformation = undefined;
    this._tokens = undefined;
    this._codeVerifier = undefined;
    this._state = undefined;
    this.authorizationURL = undefined;
    this.callbackParams = undefined;
    this.invalidated = [];
  }

  get redirectUrl() {
    return this.env().stack.callbackURL;
  }

  get clientMetadata() {
    return {
      client_name: VENDOR.name,
      redirect_uris: [this.env().stack.callbackURL],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state() {
    this._state = randomBytes(16).toString('base64url');
    return this._state;
  }

  clientInformation() {
    return this._clientInformation;
  }

  saveClientInformation(info) {
    this._clientInformation = info;
  }

  tokens() {
    return this._tokens;
  }

  saveTokens(tokens) {
    this._tokens = tokens;
  }

  saveCodeVerifier(v) {
    this._codeVerifier = v;
  }

  codeVerifier() {
    if (!this._codeVerifier) throw new Error('no code verifier saved');
    return this._codeVerifier;
  }

  invalidateCredentials(scope) {
    this.invalidated.push(scope);
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'client') this._clientInformation = undefined;
    if (scope === 'all' || scope === 'verifier') this._codeVerifier = undefined;
  }

  async redirectToAuthorization(url) {
    this.authorizationURL = new URL(url);
    if (!this.interactive) return;
    const { stack, browser } = this.env();
    this.callbackParams = await authorizeInBrowser(url, { browser, callbackURL: stack.callbackURL, person: this.person });
  }
}

/**
 * A hand-built authorization request (code, PKCE S256, resource) to the
 * stack's loopback callback. Returns { url, verifier, state }.
 */
export function authorizationRequest(stack, clientID, scope) {
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(8).toString('base64url');
  const url = new URL(`${stack.origin}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientID,
    redirect_uri: stack.callbackURL,
    scope,
    state,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    resource: stack.origin,
  }).toString();
  return { url, verifier, state };
}

/** Redeems a code of authorizationRequest at the token endpoint. */
export async function redeemCode(stack, clientID, code, verifier) {
  const res = await fetch(`${stack.origin}/api/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: stack.callbackURL,
      client_id: clientID,
      code_verifier: verifier,
      resource: stack.origin,
    }),
  });
  return { status: res.status, body: await res.json() };
}

/** Signs a browser context in at the school, through the gateway. */
export async function signIn(context, origin, person = MEMBER) {
  const page = await context.newPage();
  try {
    await page.goto(`${origin}/login?return_to=${encodeURIComponent(origin + '/')}`, { waitUntil: 'domcontentloaded' });
    await page.fill('#email', person.email);
    await page.fill('#password', person.password);
    await Promise.all([
      page.waitForURL((u) => !String(u).includes('/login'), { waitUntil: 'domcontentloaded' }),
      page.click('form[action="/login"] button[type="submit"]'),
    ]);
  } finally {
    await page.close();
  }
}

/**
 * A test certificate authority and a certificate for 127.0.0.1/localhost
 * signed by it, made with the openssl command line tool. The CA file is
 * what a process is told to trust through SSL_CERT_FILE.
 */
async function makeTestPKI(dir) {
  const f = (n) => path.join(dir, n);
  const run = async (...args) => {
    try {
      await execFileP('openssl', args, { cwd: dir });
    } catch (err) {
      throw new Error(`openssl ${args[0]} failed (is openssl installed?):\n${err.stderr || err.message}`);
    }
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await run('req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2',
    '-subj', '/CN=schoolgate e2e test CA', '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  await run('req', ...ec, '-keyout', f('leaf.key'), '-out', f('leaf.csr'), '-subj', '/CN=127.0.0.1');
  await writeFile(f('leaf.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n');
  await run('x509', '-req', '-in', f('leaf.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'),
    '-CAcreateserial', '-out', f('leaf.pem'), '-days', '2', '-extfile', f('leaf.ext'));
  return { caFile: f('ca.pem'), key: await readFile(f('leaf.key')), cert: await readFile(f('leaf.pem')) };
}

/**
 * An https server on loopback, with its own CA, that serves Client ID
 * Metadata Documents: docs maps a path to a document (or to a function
 * returning one). Every request is recorded in hits.
 */
export async function startDocServer() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'schoolgate-e2e-pki-'));
  const pki = await makeTestPKI(dir);
  const docs = new Map();
  const hits = [];
  const server = https.createServer({ key: pki.key, cert: pki.cert }, (req, res) => {
    const u = new URL(req.url, 'https://127.0.0.1');
    hits.push(u.pathname);
    let doc = docs.get(u.pathname);
    if (typeof doc === 'function') doc = doc();
    if (doc === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"not found"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' });
    res.end(JSON.stringify(doc));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const base = `https://127.0.0.1:${server.address().port}`;
  return {
    caFile: pki.caFile,
    docs,
    hits,
    url: (p) => base + p,
    async close() {
      const closed = new Promise((r) => server.close(() => r()));
      server.closeAllConnections();
      await closed;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Calls the gateway's operator API on Caddy's admin endpoint (the
 * automation counterpart of the admin area). Returns { status, body }.
 */
export function adminAPI(stack, path, body) {
  // node:http rather than fetch: fetch sends Sec-Fetch-Mode, which Caddy's
  // admin endpoint (rightly) treats as a browser request needing an Origin.
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${stack.adminURL}/schoolgate${path}`,
      {
        method: payload === undefined ? 'GET' : 'POST',
        headers: payload === undefined ? {} : { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          let json;
          try {
            json = JSON.parse(text);
          } catch {
            json = text;
          }
          resolve({ status: res.statusCode, body: json });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Parses a Bearer WWW-Authenticate header value into its parameters. */
export function parseBearerChallenge(value) {
  if (!value) return null;
  const m = /^\s*Bearer(?:\s+(.*))?$/i.exec(value);
  if (!m) return null;
  const params = {};
  const re = /([A-Za-z0-9_!#$%&'*+.^`|~-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))\s*,?\s*/g;
  let p;
  while ((p = re.exec(m[1] ?? ''))) {
    params[p[1].toLowerCase()] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : p[3];
  }
  return params;
}
