// npm pretest: builds bin/caddy and bin/demoschool before the test files
// run, so a cold Go build cache does not count against a file's timeout.
// The harness builds again (a no-op when up to date) so that a single
// `node --test test/x.test.mjs` works too.
import { buildBinaries, repoRoot } from './test/harness.mjs';

const started = Date.now();
await buildBinaries();
console.log(`built bin/caddy and bin/demoschool in ${repoRoot} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
