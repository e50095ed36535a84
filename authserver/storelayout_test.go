package authserver

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/sitepath"
)

// A school's store keeps its top level one page from its first token flow
// on: a registration, code exchanges, a refused one, refreshes (the top
// level reaches about 3.6 KB of its 4 in this run). Split, it would stay
// split until the next open (bbolt joins pages only after deletes), and
// every transaction would open its buckets through two levels and commit
// a branch page more: about 20 allocations an exchange.
func TestStoreRootStaysOnePage(t *testing.T) {
	f := newFixture(t)
	f.srv.limits = newLimiters(RateLimits{})
	check := func(after string) {
		t.Helper()
		if one, err := boltstore.RootOnePage(f.store); err != nil || !one {
			t.Fatalf("after %s, the store's top level is not one page (%v)", after, err)
		}
	}
	m := f.tokens()
	check("the first exchange")
	rec := f.serve("POST", sitepath.Register, strings.NewReader(`{"redirect_uris":["http://127.0.0.1:1/cb"]}`),
		map[string]string{"Content-Type": "application/json"})
	if rec.Code != http.StatusCreated {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	check("a registration")
	v, c := pkce()
	code := f.code(authParams(c), v)
	if status, _ := f.exchange(code, v+"x"); status != http.StatusBadRequest {
		t.Fatalf("exchange with another verifier: %d", status)
	}
	for i := 0; i < 50; i++ {
		status, next := f.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {m["refresh_token"].(string)}, "client_id": {memberClient}})
		if status != http.StatusOK {
			t.Fatalf("refresh: %d %v", status, next)
		}
		m = next
		f.tokens()
		check(fmt.Sprintf("refresh and exchange %d", i+1))
	}
}
