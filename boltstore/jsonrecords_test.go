package boltstore

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// TestAppendEventMatchesEncodingJSON: the hand-written audit record is
// encoding/json's, byte for byte, over odd strings and times.
func TestAppendEventMatchesEncodingJSON(t *testing.T) {
	zone := time.FixedZone("odd", -(9*3600 + 30*60 + 15))
	times := []time.Time{
		{}, time.Date(2026, 11, 28, 9, 44, 41, 123456789, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 0, zone),
		time.Date(2026, 1, 2, 3, 4, 5, 100, time.FixedZone("east", 14*3600)), time.Now(),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 24*3600)),
	}
	strs := []string{"", "plain", `q " b \`, "<a>&", "ctl \x00\x1f\t", "Zoë 学生", "\u2028", "bad \xff", "del \x7f"}
	for _, tm := range times {
		for _, s := range strs {
			for _, grants := range []int{0, 3, -1} {
				e := store.AuditEvent{ID: s, Time: tm, Type: store.EventCodeRedeemed, Subject: s, ClientID: s,
					Actor: store.ActorClient, ActorSub: s, Target: s, Outcome: s, Grants: grants, Detail: s,
					RequestID: s, ClientIP: s}
				want, wantErr := json.Marshal(&e)
				got, err := appendEvent(nil, &e)
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("%v %q: error %v, encoding/json's %v", tm, s, err, wantErr)
				}
				if err == nil && !bytes.Equal(got, want) {
					t.Errorf("%v %q:\n got %s\nwant %s", tm, s, got, want)
				}
			}
		}
	}
}

// TestAppendCodeMatchesEncodingJSON: the hand-written code record is
// encoding/json's, byte for byte, over odd strings, slices and times.
func TestAppendCodeMatchesEncodingJSON(t *testing.T) {
	times := []time.Time{{}, time.Date(2026, 11, 28, 9, 53, 0, 120, time.FixedZone("x", 5*3600+1800)), time.Now(),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	strs := []string{"", "plain", `q " b \`, "<a>&", "ctl \x00\n", "Zoë 学生", "\u2029", "bad \xfe"}
	for _, tm := range times {
		for _, s := range strs {
			for _, list := range [][]string{nil, {}, {s}, {"openid", s, "email"}} {
				for _, used := range []bool{false, true} {
					c := store.Code{Request: store.AuthRequest{ClientID: s, RedirectURI: s, Scopes: list, Resource: s,
						State: s, Nonce: s, CodeChallenge: s, Audience: s, DPoPJKT: s},
						Identity: store.Identity{Subject: s, Email: s, Name: s, OrgID: s, Roles: list},
						AuthTime: tm, ExpiresAt: times[1], Used: used, GrantID: s}
					want, wantErr := json.Marshal(&c)
					got, err := appendCode(nil, &c)
					if (err != nil) != (wantErr != nil) {
						t.Fatalf("%v %q: error %v, encoding/json's %v", tm, s, err, wantErr)
					}
					if err == nil && !bytes.Equal(got, want) {
						t.Errorf("%v %q %v:\n got %s\nwant %s", tm, s, list, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkRecordJSON compares an exchange's audit event and redeemed
// code encoded by encoding/json and by hand.
func BenchmarkRecordJSON(b *testing.B) {
	now := time.Now().UTC()
	e := &store.AuditEvent{ID: "18eaa440dfca40000000000000000001", Time: now, Type: store.EventCodeRedeemed,
		Subject: "member-1", ClientID: "member-app", Actor: store.ActorClient, Target: "0006283d1e5c0c00AbCdEfGhIjKlMnOpQrStUv",
		RequestID: "5d3c1e9a-8a4b-4c53-9a0e-0b9f5e2f7a11", ClientIP: "192.0.2.1"}
	c := &store.Code{Request: store.AuthRequest{ClientID: "member-app", RedirectURI: "http://127.0.0.1:9999/callback",
		Scopes: []string{"openid", "profile", "email", "account:read"}, Resource: "https://school.example",
		State: "s-123", Nonce: "n-456", CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", Audience: store.AudienceMember},
		Identity: store.Identity{Subject: "member-1", Email: "student@demo.school", Name: "Sam Student", OrgID: "demo",
			Roles: []string{"student"}}, AuthTime: now, ExpiresAt: now.Add(time.Minute), Used: true,
		GrantID: "0006283d1e5c0c00AbCdEfGhIjKlMnOpQrStUv"}
	for _, r := range []struct {
		name string
		v    any
		fn   func() ([]byte, error)
	}{
		{"event", e, func() ([]byte, error) { return appendEvent(make([]byte, 0, eventSize(e)), e) }},
		{"code", c, func() ([]byte, error) { return appendCode(make([]byte, 0, codeSize(c)), c) }},
	} {
		b.Run(r.name+"-encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(r.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(r.name+"-by-hand", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
