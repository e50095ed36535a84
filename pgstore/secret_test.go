package pgstore

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/schoolgate/schoolgate/internal/pgcluster"
	"github.com/schoolgate/schoolgate/store"
)

var epoch = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// newKey returns a real ES256 signing key and its private scalar, the
// JWK's "d".
func newKey(t *testing.T, kid string, created time.Time) (store.StoredKey, string) {
	t.Helper()
	raw, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	blob, err := json.Marshal(priv)
	if err != nil {
		t.Fatal(err)
	}
	var fields struct{ D string }
	if err := json.Unmarshal(blob, &fields); err != nil || fields.D == "" {
		t.Fatalf("JWK %s has no d: %v", blob, err)
	}
	return store.StoredKey{KID: kid, JWK: blob, CreatedAt: created, SignFrom: created}, fields.D
}

// TestKeySecret: keys sealed under one secret do not open under another,
// and a wrong secret makes no key of its own.
func TestKeySecret(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	p := connect(t, dsn)
	a, err := p.Site(ctx, testIssuer, "secret A")
	if err != nil {
		t.Fatal(err)
	}
	k, d := newKey(t, "k1", epoch)
	if _, err := a.InitKeys(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Site(ctx, testIssuer, "secret B"); err == nil || !errors.Is(err, errWrongSecret) {
		t.Errorf("Site with another secret = %v, want the wrong-secret error", err)
	}
	if n := count(t, dsn, `SELECT count(*) FROM keys`); n != 1 {
		t.Errorf("%d keys stored, want the one first key", n)
	}
	if _, err := p.Site(ctx, testIssuer, ""); err == nil {
		t.Error("Site with an empty secret succeeded")
	}
	again, err := p.Site(ctx, testIssuer, "secret A")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := again.LoadKeys(ctx)
	if err != nil || len(keys) != 1 || !bytes.Equal(keys[0].JWK, k.JWK) {
		t.Fatalf("LoadKeys with the right secret = %v, %v", keys, err)
	}
	for _, secret := range []string{`"d":`, d} {
		if n := count(t, dsn, `SELECT count(*) FROM keys WHERE position(convert_to($1, 'UTF8') in sealed) > 0`, secret); n != 0 {
			t.Errorf("the keys table holds %q in the clear", secret)
		}
	}
}

// TestSealedKeyBoundToItsRow: a sealed key moved to another kid does not
// open, so rows cannot be swapped.
func TestSealedKeyBoundToItsRow(t *testing.T) {
	dsn := pgcluster.Database(t)
	ctx := testContext(t)
	s := openSite(t, dsn)
	k1, _ := newKey(t, "k1", epoch)
	k2, _ := newKey(t, "k2", epoch.Add(time.Hour))
	if _, err := s.InitKeys(ctx, k1); err != nil {
		t.Fatal(err)
	}
	if err := s.RotateKey(ctx, k2); err != nil {
		t.Fatal(err)
	}
	exec(t, dsn, `UPDATE keys SET sealed = (SELECT sealed FROM keys WHERE kid = 'k1') WHERE kid = 'k2'`)
	if _, err := s.LoadKeys(ctx); err == nil || !strings.Contains(err.Error(), "k2") {
		t.Errorf("LoadKeys of a swapped key = %v, want an error naming k2", err)
	}
}
