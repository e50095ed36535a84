package boltstore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
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

// BenchmarkRecordJSON compares an exchange's audit event encoded by
// encoding/json and by hand, and its redeemed code by encoding/json (as
// builds before schema version 6 stored it) and "by hand" in its binary
// form.
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
		{"code", c, func() ([]byte, error) { return appendCode(make([]byte, 0, codeSize(c)), c), nil }},
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

// codeRecords are code records as encoding/json writes them (as builds
// before schema version 6 stored them) and as they might otherwise be: with white space, other orders,
// escapes, nulls, wrong types, truncated or followed by more.
func codeRecords(t testing.TB) [][]byte {
	now := time.Date(2026, 11, 28, 10, 8, 38, 123456789, time.UTC)
	var out [][]byte
	for _, s := range []string{"", "plain", "member-app", `q " b \`, "<a>&", "Zoë", "bad \xfe", "\x7f"} {
		for _, list := range [][]string{nil, {}, {s}, {"openid", s}} {
			for _, tm := range []time.Time{{}, now, now.In(time.FixedZone("x", -3*3600))} {
				c := store.Code{Request: store.AuthRequest{ClientID: s, RedirectURI: s, Scopes: list, Resource: s,
					State: s, Nonce: s, CodeChallenge: s, Audience: s, DPoPJKT: s},
					Identity: store.Identity{Subject: s, Email: s, Name: s, OrgID: s, Roles: list},
					AuthTime: tm, ExpiresAt: now, Used: s != "", GrantID: s}
				raw, err := json.Marshal(&c)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, raw)
			}
		}
	}
	plain := `{"request":{"client_id":"a","redirect_uri":"r","scopes":["openid"],"resource":"https://s","code_challenge":"c","audience":"member"},"identity":{"sub":"m"},"auth_time":"2026-11-28T10:08:38Z","expires_at":"2026-11-28T10:09:38.5+01:00"}`
	for _, v := range []string{
		plain,
		strings.Replace(plain, `"scopes":["openid"]`, `"scopes":null`, 1),
		strings.Replace(plain, `"scopes":["openid"]`, `"scopes":[]`, 1),
		strings.Replace(plain, `"scopes":["openid"]`, `"scopes":["a","b",]`, 1),
		strings.Replace(plain, `"scopes":["openid"]`, `"scopes":"openid"`, 1),
		strings.Replace(plain, `"sub":"m"`, `"sub":"m","roles":[]`, 1),
		strings.Replace(plain, `"sub":"m"`, `"sub":"m","roles":null`, 1),
		strings.Replace(plain, `"sub":"m"`, `"sub":"m\u00e9"`, 1),
		strings.Replace(plain, `"sub":"m"`, `"sub":"m\n"`, 1),
		strings.Replace(plain, `"sub":"m"`, `"sub": "m"`, 1),
		strings.Replace(plain, `"sub":"m"`, `"Sub":"m"`, 1),
		strings.Replace(plain, `"sub":"m"`, `"sub":"m","sub":"n"`, 1),
		strings.Replace(plain, `"sub":"m"`, `"sub":"m","extra":1`, 1),
		strings.Replace(plain, `"client_id":"a","redirect_uri":"r"`, `"redirect_uri":"r","client_id":"a"`, 1),
		strings.Replace(plain, `"2026-11-28T10:08:38Z"`, `"2026-11-28T25:08:38Z"`, 1),
		strings.Replace(plain, `"2026-11-28T10:08:38Z"`, `"2026-11-28 10:08:38Z"`, 1),
		strings.Replace(plain, `"2026-11-28T10:08:38Z"`, `null`, 1),
		strings.Replace(plain, `"2026-11-28T10:08:38Z"`, `"2026-11-28T10:08:38\u005a"`, 1),
		strings.Replace(plain, `}`, `},"used":false`, 1),
		strings.TrimSuffix(plain, "}") + `,"used":true,"grant_id":"g"}`,
		strings.TrimSuffix(plain, "}") + `,"used":false}`,
		strings.TrimSuffix(plain, "}") + `,"used":true}`,
		plain + " ", plain + "x", plain[:len(plain)-1], plain[:40], "", "{}", "null", "[]",
	} {
		out = append(out, []byte(v))
	}
	return out
}

// TestDecodeCodeMatchesEncodingJSON: what decodeCode reads is what
// json.Unmarshal reads, and it fails where json.Unmarshal does.
func TestDecodeCodeMatchesEncodingJSON(t *testing.T) {
	for _, raw := range codeRecords(t) {
		checkDecodeCode(t, raw)
	}
}

func FuzzDecodeCode(f *testing.F) {
	for _, raw := range codeRecords(f) {
		f.Add(raw)
	}
	f.Fuzz(checkDecodeCode)
}

func checkDecodeCode(t *testing.T, raw []byte) {
	var want, got store.Code
	wantErr := json.Unmarshal(raw, &want)
	err := decodeCode(raw, &got)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, json.Unmarshal's %v", raw, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %#v\nwant %#v", raw, got, want)
	}
}

// TestDecodeCodeFastTakesTokenFlows: a code as the authorization
// endpoint of a build before schema version 6 stored it, before and after
// redemption, is read without encoding/json.
func TestDecodeCodeFastTakesTokenFlows(t *testing.T) {
	now := time.Now()
	c := store.Code{Request: store.AuthRequest{ClientID: "member-app", RedirectURI: "http://127.0.0.1:9999/cb",
		Scopes: []string{"openid", "profile"}, Resource: "https://school.example", State: "s", Nonce: "n",
		CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", Audience: store.AudienceMember, DPoPJKT: "jkt"},
		Identity: store.Identity{Subject: "member-1", Email: "student@demo.school", Name: "Sam Student", OrgID: "demo",
			Roles: []string{"student"}}, AuthTime: now, ExpiresAt: now.Add(time.Minute).UTC()}
	for _, used := range []bool{false, true} {
		c.Used = used
		if used {
			c.GrantID = "0006283d1e5c0c00AbCdEfGhIjKlMnOpQrStUv"
		}
		raw, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		var got store.Code
		if !decodeCodeFast(raw, &got) {
			t.Fatalf("the fast path gave up on %s", raw)
		}
		checkDecodeCode(t, raw)
	}
}

// BenchmarkDecodeCode compares reading a redeemed code with
// json.Unmarshal, decodeCode on its JSON (a file of schema version 5)
// and decodeCode on its binary form.
func BenchmarkDecodeCode(b *testing.B) {
	now := time.Now().UTC()
	c := &store.Code{Request: store.AuthRequest{ClientID: "member-app", RedirectURI: "http://127.0.0.1:9999/callback",
		Scopes: []string{"openid", "profile", "email", "account:read"}, Resource: "https://school.example",
		State: "s-123", Nonce: "n-456", CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", Audience: store.AudienceMember},
		Identity: store.Identity{Subject: "member-1", Email: "student@demo.school", Name: "Sam Student", OrgID: "demo",
			Roles: []string{"student"}}, AuthTime: now, ExpiresAt: now.Add(time.Minute)}
	raw, err := json.Marshal(c)
	if err != nil {
		b.Fatal(err)
	}
	bin := appendCode(nil, c)
	for _, r := range []struct {
		name string
		fn   func(*store.Code) error
	}{
		{"encoding-json", func(got *store.Code) error { return json.Unmarshal(raw, got) }},
		{"by-hand", func(got *store.Code) error { return decodeCode(raw, got) }},
		{"binary", func(got *store.Code) error { return decodeCode(bin, got) }},
	} {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var got store.Code
				if err := r.fn(&got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
