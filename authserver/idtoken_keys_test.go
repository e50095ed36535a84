package authserver

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/sitepath"
)

// An ID token is issued only while discovery lists the
// ID-token fields, i.e. while a published key may sign. Without one the
// exchange still succeeds (the client falls back to UserInfo).
func TestNoIDTokenWhileNoKeyMaySign(t *testing.T) {
	f := newFixture(t)
	v, c := pkce()
	code := f.code(authParams(c), v)
	f.srv.keys.mu.Lock()
	for i := range f.srv.keys.keys {
		f.srv.keys.keys[i].SignFrom = f.clock.Now().Add(time.Hour)
	}
	f.srv.keys.mu.Unlock()

	rec := f.serve("GET", sitepath.OIDCConfig, nil, nil)
	if strings.Contains(rec.Body.String(), "id_token_signing_alg_values_supported") {
		t.Fatal("discovery lists ID-token fields while no key may sign")
	}
	status, m := f.exchange(code, v)
	if status != http.StatusOK || m["access_token"] == nil {
		t.Fatalf("exchange: %d %v", status, m)
	}
	if _, ok := m["id_token"]; ok {
		t.Error("an id_token was issued while no key may sign")
	}
}
