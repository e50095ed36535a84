package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
)

func testSettings(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	for _, v := range [][]byte{[]byte("on"), []byte("off"), {0, 1, 2}} {
		if err := s.PutSetting(ctx, "switch", v); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetSetting(ctx, "switch"); err != nil || !bytes.Equal(got, v) {
			t.Errorf("GetSetting = %q, %v; want %q", got, err, v)
		}
	}
}

func testKeys(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	if keys, err := s.LoadKeys(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("LoadKeys of a new store = %v, %v", keys, err)
	}
	a := authserver.StoredKey{KID: "a", JWK: []byte(`{"kty":"EC"}`), CreatedAt: epoch, SignFrom: epoch}
	b := authserver.StoredKey{KID: "b", JWK: []byte(`{"kty":"EC","x":"1"}`), CreatedAt: epoch.Add(time.Hour), SignFrom: epoch.Add(2 * time.Hour)}
	for _, k := range []authserver.StoredKey{a, b} {
		if err := s.SaveKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	a.RetiredAt = b.SignFrom
	if err := s.SaveKey(ctx, a); err != nil {
		t.Fatal(err)
	}
	keys, err := s.LoadKeys(ctx)
	if err != nil || len(keys) != 2 {
		t.Fatalf("LoadKeys = %d keys, %v; want 2", len(keys), err)
	}
	for _, got := range keys {
		want := a
		if got.KID == "b" {
			want = b
		}
		if !bytes.Equal(got.JWK, want.JWK) || !got.CreatedAt.Equal(want.CreatedAt) ||
			!got.SignFrom.Equal(want.SignFrom) || !got.RetiredAt.Equal(want.RetiredAt) {
			t.Errorf("key %s = %+v, want %+v", got.KID, got, want)
		}
	}
}

func testCatalog(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	if raw, err := s.LoadCatalog(ctx); err != nil || raw != nil {
		t.Fatalf("LoadCatalog of a new store = %q, %v; want nil, nil", raw, err)
	}
	for _, feed := range []string{`{"items":[]}`, `{"items":[{"id":"c1"}]}`} {
		if err := s.SaveCatalog(ctx, []byte(feed)); err != nil {
			t.Fatal(err)
		}
		if raw, err := s.LoadCatalog(ctx); err != nil || string(raw) != feed {
			t.Errorf("LoadCatalog = %q, %v; want %q", raw, err, feed)
		}
	}
}
