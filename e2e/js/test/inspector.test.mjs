// The MCP Inspector's command-line mode (@modelcontextprotocol/inspector-cli,
// the `mcp-inspector-cli --cli` a developer runs against a server) over
// Streamable HTTP: anonymous tools/list and tools/call, and a bad bearer
// header refused rather than served as anonymous.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startStack, PUBLIC_TOOLS } from './harness.mjs';

const require = createRequire(import.meta.url);
const pkgDir = path.dirname(require.resolve('@modelcontextprotocol/inspector-cli/package.json'));
const bin = path.join(pkgDir, require(path.join(pkgDir, 'package.json')).bin['mcp-inspector-cli']);

let stack;

before(async () => {
  stack = await startStack({ name: 'inspector' });
});

after(async () => {
  await stack?.stop();
});

/**
 * Runs `mcp-inspector-cli --cli <url> --transport http ...args` and returns
 * { code, stdout, stderr, json }.
 *
 * The working directory is the package's build directory: inspector-cli
 * 1.0.3 checks for its own package.json with fs.existsSync("../package.json")
 * (relative to the working directory) but imports it relative to the module,
 * so from any directory without a ../package.json it fails with "Cannot
 * find module .../@modelcontextprotocol/package.json".
 */
function inspector(...args) {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, '--cli', stack.mcpURL, '--transport', 'http', ...args],
      { cwd: path.dirname(bin), timeout: 60000, maxBuffer: 8 << 20 },
      (err, stdout, stderr) => {
        let json;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr, json });
      },
    );
  });
}

test('tools/list lists exactly the public tools', async () => {
  const r = await inspector('--method', 'tools/list');
  assert.equal(r.code, 0, `exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  assert.ok(r.json, `JSON on stdout: ${r.stdout.slice(0, 300)}`);
  assert.deepEqual(r.json.tools.map((t) => t.name).sort(), PUBLIC_TOOLS);
  for (const t of r.json.tools) {
    assert.equal(t.inputSchema?.type, 'object', `${t.name} has an object input schema`);
    assert.ok(t.description, `${t.name} has a description`);
  }
});

test('tools/call search_catalog returns courses', async () => {
  const r = await inspector('--method', 'tools/call', '--tool-name', 'search_catalog', '--tool-arg', 'query=photography', '--tool-arg', 'limit=3');
  assert.equal(r.code, 0, `exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  assert.ok(r.json, `JSON on stdout: ${r.stdout.slice(0, 300)}`);
  assert.notEqual(r.json.isError, true, r.stdout.slice(0, 500));
  const results = r.json.structuredContent?.results;
  assert.ok(Array.isArray(results) && results.length > 0 && results.length <= 3, r.stdout.slice(0, 500));
  assert.ok(results.map((x) => x.slug).includes('photography-fundamentals'), r.stdout.slice(0, 500));
  for (const x of results) assert.ok(x.url.startsWith(`${stack.origin}/`), `result URLs are on the site origin: ${x.url}`);
  // The text content carries the same payload for clients that read only text.
  const text = r.json.content.find((c) => c.type === 'text')?.text ?? '';
  assert.deepEqual(JSON.parse(text), r.json.structuredContent);
});

test('an invalid bearer token is refused, not served as anonymous', async () => {
  const r = await inspector('--method', 'tools/list', '--header', 'Authorization: Bearer sgat_invalid');
  assert.notEqual(r.code, 0, `the CLI must fail: ${r.stdout.slice(0, 300)}`);
  assert.match(r.stdout + r.stderr, /401|unauthori[sz]ed|invalid_token/i);
  assert.equal(r.json?.tools, undefined, 'no tool list');
});
