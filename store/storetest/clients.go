package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/schoolgate/schoolgate/store"
)

func testClients(t *testing.T, s store.Store) {
	ctx := context.Background()
	clients := []*store.Client{
		{ID: "app-1", Name: "One", Kind: store.KindApp, RedirectURIs: []string{"https://one.example/cb"}, IssuedAt: epoch},
		{ID: "app-2", Name: "Two", Kind: store.KindApp, SecretHash: "5e", IssuedAt: epoch},
		{ID: "cli-1", Name: "CLI", Kind: store.KindLoopback, RegistrationKey: "k1", IssuedAt: epoch},
	}
	for _, c := range clients {
		if err := s.PutClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetClient(ctx, "app-2")
	if err != nil || got.Name != "Two" || got.SecretHash != "5e" || !got.IssuedAt.Equal(epoch) {
		t.Fatalf("GetClient = %+v, %v", got, err)
	}
	renamed := *clients[0]
	renamed.Name = "Uno"
	if err := s.PutClient(ctx, &renamed); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetClient(ctx, "app-1"); got == nil || got.Name != "Uno" {
		t.Fatalf("PutClient did not replace: %+v", got)
	}
	for _, c := range []struct {
		kind string
		want int
	}{{store.KindApp, 2}, {store.KindLoopback, 1}, {store.KindMetadata, 0}} {
		if n, err := s.CountClientsByKind(ctx, c.kind); n != c.want || err != nil {
			t.Errorf("CountClientsByKind(%s) = %d, %v; want %d", c.kind, n, err, c.want)
		}
	}
	_, live := grantOf(t, s, "app-2")
	_, other := grantOf(t, s, "app-1")
	if n, err := s.DeleteClient(ctx, "app-2"); err != nil || n != 1 {
		t.Fatalf("DeleteClient = %d, %v; want its one grant revoked", n, err)
	}
	if !revoked(t, s, live.access) || revoked(t, s, other.access) {
		t.Error("DeleteClient revoked the wrong grants")
	}
	_, err = s.GetClient(ctx, "app-2")
	wantErr(t, "GetClient after DeleteClient", err, store.ErrNotFound)
	_, err = s.DeleteClient(ctx, "app-2")
	wantErr(t, "DeleteClient twice", err, store.ErrNotFound)
	list, err := s.ListClients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"app-1", "cli-1"}) {
		t.Errorf("ListClients = %v", ids)
	}
}

func testCreateClient(t *testing.T, s store.Store) {
	ctx := context.Background()
	mk := func(id, kind, key string) *store.Client {
		return &store.Client{ID: id, Name: id, Kind: kind, RegistrationKey: key, IssuedAt: epoch}
	}
	for _, c := range []struct {
		name     string
		client   *store.Client
		limit    int
		wantID   string
		existing bool
		err      error
	}{
		{"new", mk("cli-1", store.KindLoopback, "k1"), 3, "cli-1", false, nil},
		{"same key", mk("cli-2", store.KindLoopback, "k1"), 3, "cli-1", true, nil},
		{"same key, other kind", mk("app-1", store.KindApp, "k1"), 0, "app-1", false, nil},
		{"no key", mk("cli-3", store.KindLoopback, ""), 3, "cli-3", false, nil},
		{"another no key", mk("cli-4", store.KindLoopback, ""), 3, "cli-4", false, nil},
		{"over the limit", mk("cli-5", store.KindLoopback, "k5"), 3, "", false, store.ErrClientLimit},
		{"existing key over the limit", mk("cli-6", store.KindLoopback, "k1"), 3, "cli-1", true, nil},
		{"same id", mk("cli-3", store.KindLoopback, ""), 0, "cli-3", true, nil},
		{"no limit", mk("cli-7", store.KindLoopback, ""), 0, "cli-7", false, nil},
	} {
		got, existing, err := s.CreateClient(ctx, c.client, c.limit)
		if !errors.Is(err, c.err) || (err == nil && (got.ID != c.wantID || existing != c.existing)) {
			t.Errorf("%s: CreateClient = %+v, %v, %v; want %s, %v, %v", c.name, got, existing, err, c.wantID, c.existing, c.err)
		}
	}
	if n, _ := s.CountClientsByKind(ctx, store.KindLoopback); n != 4 {
		t.Errorf("%d loopback clients stored, want 4", n)
	}
	if _, err := s.GetClient(ctx, "cli-2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a duplicate registration was stored: %v", err)
	}
}
