package authserver

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/store"
)

// A new key, the first one and every rotated one, is named by 8
// base64url characters, the start of its RFC 7638 thumbprint, in the
// JWKS as in what it signs.
func TestNewKeysHaveCompactKIDs(t *testing.T) {
	f := newFixture(t)
	keys := f.srv.Keys()
	f.clock.Advance(time.Second)
	rotated, err := keys.Rotate(context.Background(), f.clock.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := keys.JWKS(f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	kids := keys.KIDs()
	if len(kids) != 2 || kids[0] == kids[1] || kids[1] != rotated || set.Len() != 2 {
		t.Fatalf("kids %q and %d published keys, want two different ones", kids, set.Len())
	}
	for _, kid := range kids {
		pub, ok := set.LookupKeyID(kid)
		if !ok {
			t.Fatalf("kid %q is not in the JWKS %s", kid, raw)
		}
		thumb, err := pub.Thumbprint(crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		if want := base64.RawURLEncoding.EncodeToString(thumb)[:8]; kid != want {
			t.Errorf("kid %q, want %q: the first 8 characters of the key's thumbprint", kid, want)
		}
	}
	tok, err := keys.Sign([]byte(`{"sub":"member-1"}`), f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	msg, err := jws.Parse(tok)
	if err != nil {
		t.Fatal(err)
	}
	if kid, _ := msg.Signatures()[0].ProtectedHeaders().KeyID(); kid != rotated {
		t.Errorf("signed with kid %q, want the rotated key's %q", kid, rotated)
	}
}

// A key stored before kids were compact keeps its kid, the whole
// thumbprint: tokens it signed name it, and verifiers cache the JWKS by
// kid.
func TestStoredKeyKeepsItsKID(t *testing.T) {
	raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := jwk.AssignKeyID(priv); err != nil {
		t.Fatal(err)
	}
	_ = priv.Set(jwk.AlgorithmKey, jwa.ES256())
	old, _ := priv.KeyID()
	blob, err := json.Marshal(priv)
	if err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	ctx := context.Background()
	if _, err := st.InitKeys(ctx, store.StoredKey{KID: old, JWK: blob, CreatedAt: now, SignFrom: now}); err != nil {
		t.Fatal(err)
	}
	keys, err := LoadKeys(ctx, st, now)
	if err != nil {
		t.Fatal(err)
	}
	published, _ := keys.JWKS(now)
	tok, err := keys.signTyped([]byte(`{"sub":"member-1"}`), AssertionType, now)
	if err != nil {
		t.Fatal(err)
	}
	hdr, _ := base64.RawURLEncoding.DecodeString(strings.SplitN(string(tok), ".", 2)[0])
	if len(old) != 43 || !strings.Contains(string(published), `"kid":"`+old+`"`) || !strings.Contains(string(hdr), `"kid":"`+old+`"`) {
		t.Errorf("stored kid %q: JWKS %s, header %s; want it kept in both", old, published, hdr)
	}
}
