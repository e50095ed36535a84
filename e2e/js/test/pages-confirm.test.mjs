// The Disconnect confirmation and the error page, as members read them,
// by a Chromium in each language of the pages at 360 and 1280 px: each in
// the language asked (<html lang>), no sideways scrolling, no serious or
// critical axe-core violation (pagecheck.mjs), as pages.test.mjs checks
// the consent and connected-applications pages.

import { before, after } from 'node:test';
import { MEMBER } from './harness.mjs';
import { APPLICATIONS, everyPageInEveryLanguage, startPagesStack } from './pagecheck.mjs';

let setup; // startPagesStack's
let member; // a signed-in context

before(async () => {
  setup = await startPagesStack('pages-confirm', MEMBER);
  member = setup.member;
});

after(async () => {
  await setup?.stop();
});


everyPageInEveryLanguage([
  {
    name: 'disconnect confirmation',
    context: () => member,
    url: () => setup.stack.origin + APPLICATIONS,
    // Reached by the list's Disconnect button, a form POST.
    via: (page) => page.click('tr.grant button.disconnect'),
    status: 200,
    mark: '#confirm',
  },
  {
    name: 'error',
    context: () => member,
    url: () => `${setup.stack.origin}/oauth/authorize?response_type=code&client_id=no-such-client`,
    status: 400,
    mark: '#error',
  },
].map((spec) => ({ ...spec, translated: true })));
