package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

func testSettings(t *testing.T, s store.Store) {
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

func testKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	if keys, err := s.LoadKeys(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("LoadKeys of a new store = %v, %v", keys, err)
	}
	a := store.StoredKey{KID: "a", JWK: []byte(`{"kty":"EC"}`), CreatedAt: epoch, SignFrom: epoch}
	b := store.StoredKey{KID: "b", JWK: []byte(`{"kty":"EC","x":"1"}`), CreatedAt: epoch.Add(time.Hour), SignFrom: epoch.Add(2 * time.Hour)}
	c := store.StoredKey{KID: "c", JWK: []byte(`{"kty":"EC","x":"2"}`), CreatedAt: epoch.Add(3 * time.Hour), SignFrom: epoch.Add(4 * time.Hour)}
	keys, err := s.InitKeys(ctx, a)
	if err != nil || len(keys) != 1 || keys[0].KID != "a" {
		t.Fatalf("InitKeys of a new store = %v, %v; want the first key", keys, err)
	}
	// A second first start finds the key stored and stores none of its own.
	if keys, err := s.InitKeys(ctx, b); err != nil || len(keys) != 1 || keys[0].KID != "a" {
		t.Fatalf("InitKeys again = %v, %v; want the stored key alone", keys, err)
	}
	for _, k := range []store.StoredKey{b, c} {
		if err := s.RotateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	// Each rotation retires the keys still signing at its new key's start;
	// a key retired before keeps its date.
	a.RetiredAt, b.RetiredAt = b.SignFrom, c.SignFrom
	keys, err = s.LoadKeys(ctx)
	if err != nil || len(keys) != 3 {
		t.Fatalf("LoadKeys = %d keys, %v; want 3", len(keys), err)
	}
	want := map[string]store.StoredKey{"a": a, "b": b, "c": c}
	for _, got := range keys {
		w := want[got.KID]
		if !bytes.Equal(got.JWK, w.JWK) || !got.CreatedAt.Equal(w.CreatedAt) ||
			!got.SignFrom.Equal(w.SignFrom) || !got.RetiredAt.Equal(w.RetiredAt) {
			t.Errorf("key %s = %+v, want %+v", got.KID, got, w)
		}
	}
}

func testInitSetting(t *testing.T, s store.Store) {
	ctx := context.Background()
	if v, err := s.InitSetting(ctx, "switch", []byte("on")); err != nil || string(v) != "on" {
		t.Fatalf("InitSetting of a new key = %q, %v; want on", v, err)
	}
	if v, err := s.InitSetting(ctx, "switch", []byte("off")); err != nil || string(v) != "on" {
		t.Errorf("InitSetting again = %q, %v; want the first value, on", v, err)
	}
	if err := s.PutSetting(ctx, "switch", []byte("off")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.InitSetting(ctx, "switch", []byte("on")); err != nil || string(v) != "off" {
		t.Errorf("InitSetting after PutSetting = %q, %v; want off", v, err)
	}
}

// testPutSettingRevoking: switching off revokes the grants of the clients
// of one kind, and only those, with the setting.
func testPutSettingRevoking(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, c := range []*store.Client{
		{ID: "app-1", Kind: store.KindApp}, {ID: "app-2", Kind: store.KindApp},
		{ID: "cli-1", Kind: store.KindLoopback},
	} {
		if err := s.PutClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	_, a := grantOf(t, s, "app-1")
	_, b := grantOf(t, s, "app-2")
	_, c := grantOf(t, s, "cli-1")
	n, err := s.PutSettingRevoking(ctx, "apps", []byte("off"), store.KindApp)
	if err != nil || n != 2 {
		t.Fatalf("PutSettingRevoking = %d, %v; want 2 grants", n, err)
	}
	if v, err := s.GetSetting(ctx, "apps"); err != nil || string(v) != "off" {
		t.Errorf("setting = %q, %v; want off", v, err)
	}
	if !revoked(t, s, a.access) || !revoked(t, s, b.refresh) {
		t.Error("a grant of the kind survived")
	}
	if revoked(t, s, c.access) {
		t.Error("a grant of another kind was revoked")
	}
	if n, err := s.PutSettingRevoking(ctx, "apps", []byte("off"), store.KindApp); err != nil || n != 0 {
		t.Errorf("again = %d, %v; want 0", n, err)
	}
}

func testCatalog(t *testing.T, s store.Store) {
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
