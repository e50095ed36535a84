package school

import (
	"cmp"
	"io"
	"net/http"
	"sync"

	"github.com/schoolgate/schoolgate/store"
)

// legacyTransport makes the school's own calls (session lookup, the MCP
// tools' Account API calls, an admin OpenAPI URL) within the school's
// bound: each holds a place until its response body is closed, and none
// is made without one. Their time is bounded by their client's Timeout.
// Its refusals are counted through observe, the metrics' observer: no
// request was answered 503 or 504 for them, so they are not the usage's.
type legacyTransport struct {
	base    http.RoundTripper
	legacy  *Legacy
	observe Observer
}

func (t *legacyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.legacy.enter(req.Context()) {
		t.observe.Refusal(store.CauseLegacyBusy)
		if req.Body != nil {
			req.Body.Close() // RoundTrip closes the body, even on an error
		}
		return nil, errLegacyBusy
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		t.legacy.leave()
		if isTimeout(err) {
			t.observe.Refusal(store.CauseLegacyTimeout)
		}
		return nil, err
	}
	resp.Body = &placeBody{ReadCloser: resp.Body, leave: t.legacy.leave}
	return resp, nil
}

// placeBody gives the call's place back when its body is closed.
type placeBody struct {
	io.ReadCloser
	once  sync.Once
	leave func()
}

func (b *placeBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.leave)
	return err
}

// legacyClients are the school's clients for its own calls on its legacy
// side, made from the configured one: every call within the bound, and
// the session lookup, which a person waits on, bounded more tightly.
func legacyClients(c *http.Client, l *Legacy, o Observer, issuer string) (calls, session *http.Client) {
	calls = new(http.Client)
	*calls = *c
	calls.Transport = tracingTransport{issuer: issuer,
		base: pausingTransport{&legacyTransport{base: cmp.Or[http.RoundTripper](c.Transport, http.DefaultTransport), legacy: l, observe: o}}}
	session = new(http.Client)
	*session = *calls
	if session.Timeout <= 0 || session.Timeout > sessionLookupTimeout {
		session.Timeout = sessionLookupTimeout
	}
	return calls, session
}
