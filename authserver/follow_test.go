package authserver

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/store"
)

// sharedStore stands for a store that several instances share: a change
// made through it reaches every watcher, as a notification would.
type sharedStore struct {
	store.Store
	mu       sync.Mutex
	watchers []func(store.Change)
}

func (s *sharedStore) Watch(fn func(store.Change)) func() {
	s.mu.Lock()
	s.watchers = append(s.watchers, fn)
	s.mu.Unlock()
	return func() {}
}

func (s *sharedStore) announce(c store.Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fn := range s.watchers {
		fn(c)
	}
}

func (s *sharedStore) RevokeGrant(ctx context.Context, id string) error {
	err := s.Store.RevokeGrant(ctx, id)
	s.announce(store.ChangeTokens)
	return err
}

func (s *sharedStore) RotateKey(ctx context.Context, k store.StoredKey) error {
	err := s.Store.RotateKey(ctx, k)
	s.announce(store.ChangeKeys)
	return err
}

// TestFollowOtherInstances: a revocation and a key rotation made at one
// instance are seen at once by another whose caches hold the old state.
func TestFollowOtherInstances(t *testing.T) {
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "school.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	shared := &sharedStore{Store: bolt}
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	cfg := Config{Issuer: issuer, SessionURL: "https://school.example/api/session", Now: func() time.Time { return now }}
	ctx := context.Background()
	a, err := New(ctx, cfg, shared)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(ctx, cfg, shared)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.keys.KIDs(), b.keys.KIDs()) || len(a.keys.KIDs()) != 1 {
		t.Fatalf("instances started with keys %v and %v; want one and the same", a.keys.KIDs(), b.keys.KIDs())
	}

	raw := prefixAccess + "follow-test-token"
	grantID := "grant-1"
	code := &store.Code{Request: store.AuthRequest{ClientID: "app"}, ExpiresAt: now.Add(time.Minute)}
	if err := shared.PutCode(ctx, "code", code); err != nil {
		t.Fatal(err)
	}
	err = shared.RedeemCode(ctx, "code", func(*store.Code) (*store.Grant, []store.IssuedToken, error) {
		return &store.Grant{ID: grantID, ClientID: "app", Audience: store.AudienceMember},
			[]store.IssuedToken{{Hash: hashToken(raw), Token: &store.Token{Kind: store.TokenAccess, GrantID: grantID,
				ClientID: "app", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.LookupAccessToken(ctx, raw); err != nil {
		t.Fatalf("live token refused at b: %v", err)
	}
	// b has the token cached; a revokes it.
	if err := a.store.RevokeGrant(ctx, grantID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.LookupAccessToken(ctx, raw); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("revoked token at b: %v, want ErrInvalidToken", err)
	}

	kid, _, err := a.RotateKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(b.keys.KIDs(), kid) {
		t.Errorf("b's keys %v lack the key %s rotated at a", b.keys.KIDs(), kid)
	}
}
