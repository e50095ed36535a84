package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/schoolgate/schoolgate/authserver"
)

func testClients(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	clients := []*authserver.Client{
		{ID: "app-1", Name: "One", Kind: authserver.KindApp, RedirectURIs: []string{"https://one.example/cb"}, IssuedAt: epoch},
		{ID: "app-2", Name: "Two", Kind: authserver.KindApp, SecretHash: "5e", IssuedAt: epoch},
		{ID: "cli-1", Name: "CLI", Kind: authserver.KindLoopback, RegistrationKey: "k1", IssuedAt: epoch},
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
	}{{authserver.KindApp, 2}, {authserver.KindLoopback, 1}, {authserver.KindMetadata, 0}} {
		if n, err := s.CountClientsByKind(ctx, c.kind); n != c.want || err != nil {
			t.Errorf("CountClientsByKind(%s) = %d, %v; want %d", c.kind, n, err, c.want)
		}
	}
	if err := s.DeleteClient(ctx, "app-2"); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetClient(ctx, "app-2")
	wantErr(t, "GetClient after DeleteClient", err, authserver.ErrNotFound)
	wantErr(t, "DeleteClient twice", s.DeleteClient(ctx, "app-2"), authserver.ErrNotFound)
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
