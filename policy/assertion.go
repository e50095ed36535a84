package policy

import (
	"sync"
	"sync/atomic"
	"time"
)

// assertionSlot keeps the signed identity assertion of one validated
// token. The token validator caches *Token values for a few seconds and
// every request in that window shares the pointer, so a slot here signs
// once per validation instead of once per request. The policy package
// never looks inside: to it an assertion is an opaque string.
type assertionSlot struct {
	cur atomic.Pointer[signedAssertion] // read lock-free on every request
	mu  sync.Mutex                      // serializes signing, so concurrent first requests sign once
}

type signedAssertion struct {
	audience string
	value    string
	expires  time.Time
}

// AssertionSigner signs an assertion for a token and reports when it
// expires.
type AssertionSigner func() (value string, expires time.Time, err error)

// Assertion returns the token's assertion for audience, calling sign the
// first time, when the audience differs from the cached one, or once the
// cached assertion has expired. Errors are not cached.
func (t *Token) Assertion(audience string, now time.Time, sign AssertionSigner) (string, error) {
	if a := t.assertion.cur.Load(); a.usable(audience, now) {
		return a.value, nil
	}
	t.assertion.mu.Lock()
	defer t.assertion.mu.Unlock()
	if a := t.assertion.cur.Load(); a.usable(audience, now) {
		return a.value, nil
	}
	value, expires, err := sign()
	if err != nil {
		return "", err
	}
	t.assertion.cur.Store(&signedAssertion{audience: audience, value: value, expires: expires})
	return value, nil
}

func (a *signedAssertion) usable(audience string, now time.Time) bool {
	return a != nil && a.audience == audience && now.Before(a.expires)
}
