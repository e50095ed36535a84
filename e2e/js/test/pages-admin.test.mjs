// The admin area's pages an operator reads, on a phone and on a desktop,
// in a real Chromium, by a browser in each language of the pages: the
// overview (with a metadata-document client's long https client_id), an
// application's people, the activity of an application and of a person,
// an application's connection doctor,
// the school's usage and the application form, at 360 and 1280 px. None
// scrolls sideways and axe-core finds no serious or critical violation
// (pagecheck.mjs). Until the admin area is translated its pages may answer
// in English whatever the browser asks; in any other language, it must be
// the one asked.

import { before, after } from 'node:test';
import { MEMBER, OPERATOR, VENDOR } from './harness.mjs';
import { OVERVIEW, everyPageInEveryLanguage, signedInContext, startPagesStack } from './pagecheck.mjs';

// True once the admin area is translated: then its pages must be in the
// language asked, as the member's pages are.
const ADMIN_TRANSLATED = true;

let setup; // startPagesStack's
let owner; // a signed-in context

before(async () => {
  setup = await startPagesStack('pages-admin', MEMBER);
  owner = await signedInContext(setup.browser, setup.stack.origin, OPERATOR);
});

after(async () => {
  await setup?.stop();
});


everyPageInEveryLanguage([
  { name: 'admin overview', context: () => owner, url: () => setup.stack.origin + OVERVIEW, status: 200, mark: '#metadata' },
  {
    name: 'admin people',
    context: () => owner,
    url: () => `${setup.stack.origin}${OVERVIEW}/people?client_id=${encodeURIComponent(VENDOR.clientId)}`,
    status: 200,
    mark: 'tr.person button.disconnect',
  },
  {
    name: 'admin application activity',
    context: () => owner,
    url: () => `${setup.stack.origin}${OVERVIEW}/activity?client_id=${encodeURIComponent(VENDOR.clientId)}`,
    status: 200,
    mark: 'tr.event td.address code',
  },
  {
    // Every application's events, the long metadata-document client_id among them.
    name: 'admin person activity',
    context: () => owner,
    url: () => `${setup.stack.origin}${OVERVIEW}/activity?subject=${encodeURIComponent(MEMBER.sub)}`,
    status: 200,
    mark: 'tr.event td.client code',
  },
  {
    name: 'admin connection doctor',
    context: () => owner,
    url: () => `${setup.stack.origin}${OVERVIEW}/doctor?client_id=${encodeURIComponent(VENDOR.clientId)}`,
    status: 200,
    mark: 'tr.step td.when',
  },
  {
    name: 'admin usage',
    context: () => owner,
    url: () => `${setup.stack.origin}/oauth/admin/usage`,
    status: 200,
    mark: '#usage-requests td.figure',
  },
  { name: 'admin application form', context: () => owner, url: () => `${setup.stack.origin}${OVERVIEW}/new`, status: 200, mark: 'textarea#redirect_uris' },
].map((spec) => ({ ...spec, translated: ADMIN_TRANSLATED })));
