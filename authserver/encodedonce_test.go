package authserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/sitepath"
)

// The JWKS is encoded once per key set: a second request gets the same
// bytes, a rotation publishes the new key at once, and a retired key
// leaves the set once its ID tokens have expired.
func TestJWKSEncodedOncePerKeySet(t *testing.T) {
	f := newFixture(t)
	keys := f.srv.Keys()
	old := keys.KIDs()[0]
	a, _ := keys.JWKS(f.clock.Now())
	b, _ := keys.JWKS(f.clock.Now())
	if &a[0] != &b[0] {
		t.Error("the unchanged key set was encoded again")
	}
	kid, err := keys.Rotate(context.Background(), f.clock.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.serve("GET", sitepath.JWKS, nil, nil).Body.String(); !strings.Contains(got, kid) || !strings.Contains(got, old) {
		t.Fatalf("after a rotation the JWKS is %s, want %s and %s", got, old, kid)
	}
	f.clock.Advance(time.Hour + idTokenTTL + 2*time.Minute)
	if got := f.serve("GET", sitepath.JWKS, nil, nil).Body.String(); !strings.Contains(got, kid) || strings.Contains(got, old) {
		t.Errorf("after the old key's ID tokens expired the JWKS is %s, want %s alone", got, kid)
	}
}

// The discovery documents are encoded once, as the maps would encode,
// and follow whether a key may sign.
func TestDiscoveryEncodedOnce(t *testing.T) {
	f := newFixture(t)
	get := func() string { return f.serve("GET", sitepath.OIDCConfig, nil, nil).Body.String() }
	want, _ := json.Marshal(f.srv.authorizationServerMetadata(true, f.srv.keys.CanSign(f.clock.Now())))
	if got := get(); got != string(want)+"\n" || got != get() {
		t.Fatalf("discovery %s, want %s", got, want)
	}
	setSignFrom := func(at time.Time) {
		f.srv.keys.mu.Lock()
		for i := range f.srv.keys.keys {
			f.srv.keys.keys[i].SignFrom = at
		}
		f.srv.keys.mu.Unlock()
	}
	setSignFrom(f.clock.Now().Add(time.Hour))
	if got := get(); strings.Contains(got, "id_token_signing_alg_values_supported") {
		t.Error("discovery lists ID-token fields while no key may sign")
	}
	setSignFrom(f.clock.Now())
	if got := get(); !strings.Contains(got, "id_token_signing_alg_values_supported") {
		t.Error("discovery lacks ID-token fields once a key may sign again")
	}
}
