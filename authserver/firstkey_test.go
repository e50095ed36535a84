package authserver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/store"
)

// A site's first start signs with the key it made, without parsing back
// the JSON it stored; a restart parses the stored key, and both sign
// tokens the JWKS verifies alike.
func TestFirstStartSignsWithTheKeyMade(t *testing.T) {
	parsed := 0
	parse := parseSigningKey
	parseSigningKey = func(sk store.StoredKey) (signingKey, error) {
		parsed++
		return parse(sk)
	}
	t.Cleanup(func() { parseSigningKey = parse })
	path := filepath.Join(t.TempDir(), "school.db")
	ctx := context.Background()
	now := time.Now()
	start := func() *Keys {
		st, err := boltstore.Open(path, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		k, err := loadKeys(ctx, st, now, map[string][]byte{"mcp_connections": []byte("on")})
		if err != nil {
			t.Fatal(err)
		}
		jws, err := k.Sign([]byte(`{"sub":"a"}`), now)
		if err != nil {
			t.Fatal(err)
		}
		set, err := k.JWKS(now)
		if err != nil {
			t.Fatal(err)
		}
		verifyWithSet(t, jws, set)
		st.Close()
		return k
	}
	first := start()
	if parsed != 0 {
		t.Errorf("the first start parsed %d keys, want none", parsed)
	}
	again := start()
	if parsed != 1 {
		t.Errorf("the restart parsed %d keys, want 1", parsed)
	}
	if first.keys[0].KID != again.keys[0].KID {
		t.Errorf("the restart's key %s, the first start's %s", again.keys[0].KID, first.keys[0].KID)
	}
}

// verifyWithSet fails the test unless the key set verifies the JWS.
func verifyWithSet(t *testing.T, token, set []byte) {
	t.Helper()
	keys, err := jwk.Parse(set)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jws.Verify(token, jws.WithKeySet(keys, jws.WithRequireKid(true))); err != nil {
		t.Errorf("the JWKS does not verify the token: %v", err)
	}
}
