// Test harness: builds and runs the real gateway (Caddy with the schoolgate
// modules) in front of the demo school, on free loopback ports, with every
// file it writes under one temporary directory. Each test file starts its own
// stack (fresh keys, clients, consents and tokens) and stops it at the end.
//
// Nothing here special-cases the gateway for the client libraries: the tests
// use stock openid-client, the official MCP SDK and Debian's Chromium.

import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, mkdir, writeFile, rm } from 'node:fs/promises';
import { existsSync, createWriteStream } from 'node:fs';
import http from 'node:http';
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
    for (const s of [this.child.stdout, this.child.stderr]) {
      s.on('data', (chunk) => {
        this.log.write(chunk);
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
    if (this.exited) {
      this.log.end();
      return;
    }
    const done = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await done;
    clearTimeout(t);
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
 */
export async function startStack({ name = 'stack', waitForCatalog = true } = {}) {
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

http://127.0.0.1:${gwPort} {
	school_gateway ${schoolURL} {
		data ${path.join(tmp, 'data')}
		catalog ${schoolURL}/catalog.json
		vendor "${VENDOR.name}" {
			client_id ${VENDOR.clientId}
			redirect_uri ${callbackURL}
			audience member
			scopes ${VENDOR.scope}
		}
		mcp_connections on
	}
}
`;
    const configFile = path.join(tmp, 'Caddyfile');
    await writeFile(configFile, caddyfile);
    const caddy = new Proc('caddy', caddyBin, ['run', '--config', configFile, '--adapter', 'caddyfile'], {
      env,
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
