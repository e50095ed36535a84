package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// BenchmarkRedeemPages reports the pages a code's redemption writes
// (pages/op, bbolt's own count, the meta page aside) and the allocations
// of its store call, in a file without fsync that holds 2,000 earlier
// flows of 500 people: the code rewritten, the grant and its two index
// keys, an access and a refresh token, the audit event. Each page is one
// pwrite in bbolt's commit, and each leaf it writes is first read whole
// into a node: what the store's share of an exchange is made of.
func BenchmarkRedeemPages(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "school.db"), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := NoSync(s); err != nil {
		b.Fatal(err)
	}
	db := s.(*boltStore).db
	ctx := context.Background()
	start := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	i := 0
	flow := func() (string, func(*store.Code) (*store.Grant, []store.IssuedToken, error)) {
		at := start.Add(time.Duration(i) * time.Millisecond)
		i++
		key := fmt.Sprintf("%016x", at.UnixNano())
		c := &store.Code{Request: store.AuthRequest{ClientID: "member-app", RedirectURI: "http://127.0.0.1:9999/cb",
			Scopes: []string{"openid", "profile", "offline_access"}, Resource: "https://school.example",
			CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", Audience: store.AudienceMember},
			Identity: store.Identity{Subject: fmt.Sprintf("member-%d", i%500), Email: "student@demo.school"},
			AuthTime: at, ExpiresAt: at.Add(time.Minute)}
		if err := s.PutCode(ctx, key+"-code", c); err != nil {
			b.Fatal(err)
		}
		return key + "-code", func(c *store.Code) (*store.Grant, []store.IssuedToken, error) {
			g := &store.Grant{ID: key + "-grant", ClientID: c.Request.ClientID, Audience: c.Request.Audience,
				Scopes: c.Request.Scopes, Identity: c.Identity, AuthTime: c.AuthTime, CreatedAt: at}
			tok := func(kind string, ttl time.Duration) *store.Token {
				return &store.Token{Kind: kind, GrantID: g.ID, ClientID: g.ClientID, Scopes: g.Scopes,
					IssuedAt: at, ExpiresAt: at.Add(ttl)}
			}
			return g, []store.IssuedToken{{Hash: key + "-access", Token: tok(store.TokenAccess, time.Hour)},
				{Hash: key + "-refresh", Token: tok(store.TokenRefresh, 720*time.Hour)}}, nil
		}
	}
	for range 2000 {
		code, issue := flow()
		if err := s.RedeemCode(ctx, code, issue); err != nil {
			b.Fatal(err)
		}
	}
	var pages int64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		code, issue := flow()
		st := db.Stats()
		before := st.TxStats.GetWrite()
		b.StartTimer()
		if err := s.RedeemCode(ctx, code, issue); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		st = db.Stats()
		pages += st.TxStats.GetWrite() - before
		b.StartTimer()
	}
	b.ReportMetric(float64(pages)/float64(b.N), "pages/op")
}
