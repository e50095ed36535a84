// Runs server scenarios of the official MCP conformance suite
// (@modelcontextprotocol/conformance) against the real gateway's /mcp.
//
// The suite needs Node >= 22; this project's Node 22 comes from npm (the
// `node` package, pinned in package.json) and every scenario runs on
// node_modules/node/bin/node. This script itself runs on any Node >= 20
// (under `npm test` it is that Node 22 too, npm puts node_modules/.bin
// first on PATH). The stack is the one of the JavaScript end-to-end tests
// (../js/test/harness.mjs, which needs nothing from ../js/node_modules when
// waitForCatalog is off): bin/caddy in front of bin/demoschool on free
// loopback ports, built with Go first.
//
// Every check of every scenario must pass: the CLI exits non-zero on a
// failed check, and this script also reads each scenario's checks.json and
// fails on anything that is not SUCCESS (a WARNING included), so a change in
// the CLI's exit-code rules cannot hide a failure.
//
//   npm ci && npm test                 all scenarios below
//   node run.mjs ping tools-list       some of them

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from '../js/test/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const node22 = path.join(here, 'node_modules', 'node', 'bin', 'node');
const cli = path.join(here, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

// The scenarios that apply to this server: initialization, ping, tool
// listing, and DNS-rebinding protection (Host/Origin validation). The
// others need the suite's own test tools, prompts and resources
// (test_simple_text, test_prompt_with_arguments, ...), which a school's
// gateway does not have.
//
// Where each one runs: the first three on the stack as docs/operator.md
// configures a site (site address http://127.0.0.1:<port>).
// dns-rebinding-protection sends Host: evil.example.com; on that stack
// Caddy's own host routing never hands such a request to the gateway and
// answers it with its empty unmatched-host 200, which the scenario (wanting
// a 4xx) cannot tell from success. So it runs on a stack whose site
// address serves every Host (http://:<port>, issuer set explicitly), where
// the gateway's own Host/Origin validation is what stands between a
// rebinding page and /mcp; and probeHostBound checks that on the
// host-bound stack such a request gets nothing from /mcp.
const SCENARIOS = {
  'server-initialize': 'hostBound',
  ping: 'hostBound',
  'tools-list': 'hostBound',
  'dns-rebinding-protection': 'anyHost',
};

/** Runs a command with inherited output; kills it after timeoutMs. */
function run(bin, args, { timeoutMs = 120000, ...opts } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'inherit', 'inherit'], ...opts });
    const timer = setTimeout(() => {
      console.error(`timed out after ${timeoutMs} ms: ${path.basename(bin)} ${args.join(' ')}`);
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? (signal ? 128 : 1));
    });
  });
}

async function main() {
  const wanted = process.argv.slice(2);
  for (const w of wanted) if (!SCENARIOS[w]) throw new Error(`unknown scenario ${w}; known: ${Object.keys(SCENARIOS).join(', ')}`);
  const scenarios = wanted.length ? wanted : Object.keys(SCENARIOS);
  for (const [what, file] of [['Node 22 (npm package "node")', node22], ['@modelcontextprotocol/conformance', cli]]) {
    if (!existsSync(file)) throw new Error(`${what} is not installed at ${file}: run npm ci in ${here}`);
  }

  const out = await mkdtemp(path.join(os.tmpdir(), 'schoolgate-conformance-'));
  const results = [];
  try {
    for (const kind of ['hostBound', 'anyHost']) {
      const mine = scenarios.filter((s) => SCENARIOS[s] === kind);
      if (!mine.length) continue;
      const stack = await startStack({ name: `conformance-${kind}`, waitForCatalog: false, anyHost: kind === 'anyHost' });
      const before = results.length;
      try {
        console.log(`\n== gateway ${stack.mcpURL} (site address ${kind === 'anyHost' ? 'http://:<port>' : stack.origin})`);
        if (kind === 'hostBound') results.push(await probeHostBound(stack));
        for (const scenario of mine) {
          console.log(`\n== conformance server --scenario ${scenario}`);
          const dir = path.join(out, scenario);
          const code = await run(node22, [cli, 'server', '--url', stack.mcpURL, '--scenario', scenario, '--output-dir', dir], {
            cwd: here,
          });
          const checks = await readChecks(dir);
          const bad = checks.filter((c) => c.status !== 'SUCCESS');
          const ok = code === 0 && checks.length > 0 && bad.length === 0;
          for (const c of checks) {
            if (c.details?.statusCode !== undefined) {
              console.log(`   ${c.id}: Host ${c.details.hostHeader} -> HTTP ${c.details.statusCode} ${JSON.stringify(c.details.body ?? null).slice(0, 160)}`);
            }
          }
          results.push({ scenario, ok, code, checks: checks.length, bad });
        }
      } finally {
        if (results.slice(before).some((r) => !r.ok)) console.log(`\ngateway logs:\n${stack.logs()}`);
        await stack.stop();
      }
    }
  } finally {
    await rm(out, { recursive: true, force: true });
  }

  console.log('\n== conformance summary');
  for (const r of results) {
    console.log(`${r.ok ? 'ok    ' : 'FAILED'} ${r.scenario} (${r.checks} checks${r.code === undefined ? '' : `, exit ${r.code}`})`);
    for (const c of r.bad) console.log(`         ${c.status} ${c.id}: ${c.errorMessage ?? c.description}`);
  }
  const passed = results.filter((r) => r.ok).length;
  console.log(`conformance: ${passed} passed, ${results.length - passed} failed`);
  return passed === results.length ? 0 : 1;
}

/**
 * On the host-bound stack, the scenario's rebinding request (a foreign Host
 * and Origin) must get no MCP answer: no JSON-RPC result, whoever answers.
 */
async function probeHostBound(stack) {
  const scenario = 'host-bound site: a foreign Host gets no MCP answer';
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'rebinding-probe', version: '0' } },
  });
  const res = await new Promise((resolve, reject) => {
    const req = http.request(
      stack.mcpURL,
      {
        method: 'POST',
        headers: {
          Host: 'evil.example.com',
          Origin: 'http://evil.example.com',
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
      },
      (r) => {
        let text = '';
        r.setEncoding('utf8');
        r.on('data', (c) => (text += c));
        r.on('end', () => resolve({ status: r.statusCode, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  const leaked = /"result"|serverInfo|protocolVersion/.test(res.text);
  console.log(`probe: POST /mcp with Host evil.example.com -> HTTP ${res.status}, ${res.text.length} bytes${leaked ? ' WITH AN MCP ANSWER' : ''}`);
  return {
    scenario,
    ok: !leaked,
    checks: 1,
    bad: leaked ? [{ status: 'FAILURE', id: 'host-bound-rebinding', errorMessage: `HTTP ${res.status}: ${res.text.slice(0, 200)}` }] : [],
  };
}

/** The checks of one scenario run: the CLI writes <dir>/server-<scenario>-<time>/checks.json. */
async function readChecks(dir) {
  const checks = [];
  let entries = [];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return checks;
  }
  for (const e of entries) {
    const f = path.join(dir, e.name, 'checks.json');
    if (e.isDirectory() && existsSync(f)) checks.push(...JSON.parse(await readFile(f, 'utf8')));
  }
  return checks;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
