package boltstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// fill sets every field of the struct v points to, recursing into nested
// structs, to a value of its own (strings and times differ from field to
// field), so that a field the codec drops or swaps changes the record.
// A field of a kind it does not know fails the test: a new field of the
// records needs the codec, and this test, to learn it.
func fill(t *testing.T, v reflect.Value, n *int, emptySlices bool) {
	t.Helper()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		*n++
		switch {
		case f.Type() == reflect.TypeOf(time.Time{}):
			f.Set(reflect.ValueOf(time.Date(2026, 11, 26, 9, *n, *n, 123456789+*n, time.UTC)))
		case f.Kind() == reflect.String:
			f.SetString(fmt.Sprintf("%s-%d-é\x00", name, *n))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			if emptySlices {
				f.Set(reflect.MakeSlice(f.Type(), 0, 0))
			} else {
				f.Set(reflect.ValueOf([]string{name + "-a", fmt.Sprint(*n), ""}))
			}
		case f.Kind() == reflect.Struct:
			fill(t, f, n, emptySlices)
		default:
			t.Fatalf("field %s of %s: kind %s unknown to the codec's test", name, v.Type(), f.Kind())
		}
	}
}

// viaJSON is what an earlier build's record of v reads back as.
func viaJSON[T any](t *testing.T, v *T) *T {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func fullToken(t *testing.T, emptySlices bool) *store.Token {
	var tok store.Token
	n := 0
	fill(t, reflect.ValueOf(&tok).Elem(), &n, emptySlices)
	return &tok
}

func fullGrant(t *testing.T, emptySlices bool) *store.Grant {
	var g store.Grant
	n := 0
	fill(t, reflect.ValueOf(&g).Elem(), &n, emptySlices)
	return &g
}

func fullCode(t *testing.T, emptySlices bool) *store.Code {
	var c store.Code
	n := 0
	fill(t, reflect.ValueOf(&c).Elem(), &n, emptySlices)
	return &c
}

// Every field of a token, a grant and a code survives the binary form, which reads
// back what JSON reads back: the same values, times in UTC, nil and empty
// Scopes apart (JSON writes null and []), empty Roles as nil (JSON omits
// them).
func TestRecordsRoundTrip(t *testing.T) {
	tokens := map[string]*store.Token{
		"full": fullToken(t, false), "empty slices": fullToken(t, true), "zero": {},
		"one scope": {Kind: store.TokenRefresh, Scopes: []string{"openid"},
			IssuedAt: time.Unix(-5, 7).UTC(), ExpiresAt: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
	}
	for name, tok := range tokens {
		t.Run("token/"+name, func(t *testing.T) {
			raw := appendToken(nil, tok)
			if raw[0] == '{' || len(raw) > tokenSize(tok) {
				t.Fatalf("encoding % x starts with '{' or outgrows its bound %d", raw, tokenSize(tok))
			}
			var got store.Token
			if err := decodeToken(raw, &got); err != nil {
				t.Fatal(err)
			}
			if want := viaJSON(t, tok); !reflect.DeepEqual(&got, want) {
				t.Errorf("decoded %#v\nwant     %#v", got, *want)
			}
		})
	}
	grants := map[string]*store.Grant{
		"full": fullGrant(t, false), "empty slices": fullGrant(t, true), "zero": {},
		"nil scopes, one role": {ID: "g", Identity: store.Identity{Subject: "ada", Roles: []string{"student"}},
			CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	for name, g := range grants {
		t.Run("grant/"+name, func(t *testing.T) {
			raw := appendGrant(nil, g)
			if raw[0] == '{' || len(raw) > grantSize(g) {
				t.Fatalf("encoding % x starts with '{' or outgrows its bound %d", raw, grantSize(g))
			}
			var got store.Grant
			if err := decodeGrant(raw, &got); err != nil {
				t.Fatal(err)
			}
			if want := viaJSON(t, g); !reflect.DeepEqual(&got, want) {
				t.Errorf("decoded %#v\nwant     %#v", got, *want)
			}
		})
	}
	codes := map[string]*store.Code{
		"full": fullCode(t, false), "empty slices": fullCode(t, true), "zero": {},
		"nil scopes, one role": {Request: store.AuthRequest{ClientID: "app"},
			Identity:  store.Identity{Subject: "ada", Roles: []string{"student"}},
			ExpiresAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	for name, c := range codes {
		t.Run("code/"+name, func(t *testing.T) {
			raw := appendCode(nil, c)
			if raw[0] != formatCode || len(raw) > codeSize(c) {
				t.Fatalf("encoding % x does not start with its format or outgrows its bound %d", raw, codeSize(c))
			}
			var got store.Code
			if err := decodeCode(raw, &got); err != nil {
				t.Fatal(err)
			}
			if want := viaJSON(t, c); !reflect.DeepEqual(&got, want) {
				t.Errorf("decoded %#v\nwant     %#v", got, *want)
			}
		})
	}
}

// Records an earlier build wrote as JSON read back as encoding/json reads
// them, into a record that may hold another's fields.
func TestRecordsReadJSON(t *testing.T) {
	oldToken := `{"kind":"refresh","grant_id":"g1","client_id":"app","scopes":["openid","profile"],` +
		`"iat":"2026-11-24T09:00:00.5Z","exp":"2026-12-24T09:00:00Z","rotated_at":"0001-01-01T00:00:00Z"}`
	got := fullToken(t, false)
	if err := decodeToken([]byte(oldToken), got); err != nil {
		t.Fatal(err)
	}
	want := store.Token{Kind: "refresh", GrantID: "g1", ClientID: "app", Scopes: []string{"openid", "profile"},
		IssuedAt:  time.Date(2026, 11, 24, 9, 0, 0, 5e8, time.UTC),
		ExpiresAt: time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("token %#v\nwant  %#v", *got, want)
	}
	for _, g := range []*store.Grant{fullGrant(t, false), fullGrant(t, true), {}} {
		raw, _ := json.Marshal(g)
		got := fullGrant(t, false)
		if err := decodeGrant(raw, got); err != nil {
			t.Fatal(err)
		}
		if want := viaJSON(t, g); !reflect.DeepEqual(got, want) {
			t.Errorf("grant %s read as %#v\nwant %#v", raw, *got, *want)
		}
	}
}

// A binary token record written before tokens could be bound to a DPoP
// key ends after Revoked, and reads back unbound.
func TestRecordsReadEarlierBinary(t *testing.T) {
	tok := fullToken(t, false)
	tok.JKT = ""
	raw := appendToken(nil, tok)
	earlier := raw[:len(raw)-1] // without the empty JKT's length
	got := fullToken(t, false)
	if err := decodeToken(earlier, got); err != nil {
		t.Fatal(err)
	}
	if want := viaJSON(t, tok); !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %#v\nwant     %#v", *got, *want)
	}
}

// A malformed record is an error, never a panic or a record: every cut of
// a good one, one with bytes left over, the other type's, and fields out
// of range.
func TestRecordsRejectMalformed(t *testing.T) {
	full := fullToken(t, false)
	tok, g := appendToken(nil, full), appendGrant(nil, fullGrant(t, false))
	zero := appendToken(nil, &store.Token{})
	// A token cut right before its JKT is an earlier build's record
	// (TestRecordsReadEarlierBinary), not a malformed one.
	unbound := len(tok) - len(appendString(nil, full.JKT))
	bad := map[string][]byte{
		"empty":           {},
		"unknown format":  {0x7f},
		"bad JSON":        []byte(`{"kind":`),
		"token as grant":  tok,
		"bad bool":        append(zero[:len(zero)-2], 2, 0),
		"bad time flag":   {formatToken, 0, 0, 0, 0, 2},
		"nanoseconds 1e9": append(binary.AppendUvarint([]byte{formatToken, 0, 0, 0, 0, 1, 0}, 1e9), 0, 0, 0),
		"huge string":     {formatToken, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge count":      {formatToken, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"varint overflow": {formatToken, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
	}
	for i := range tok {
		if i != unbound {
			bad[fmt.Sprintf("token cut at %d", i)] = tok[:i]
		}
	}
	for i := range g {
		bad[fmt.Sprintf("grant cut at %d", i)] = g[:i]
	}
	code := appendCode(nil, fullCode(t, false))
	for i := 1; i < len(code); i++ {
		bad[fmt.Sprintf("code cut at %d", i)] = code[:i]
	}
	bad["code with a byte more"] = append(append([]byte(nil), code...), 0)
	bad["token with a byte more"] = append(append([]byte(nil), tok...), 0)
	bad["grant with a byte more"] = append(append([]byte(nil), g...), 0)
	for name, raw := range bad {
		var err error
		if name == "token as grant" || len(raw) > 0 && raw[0] == formatGrant {
			err = decodeGrant(raw, new(store.Grant))
		} else if len(raw) > 0 && raw[0] == formatCode {
			err = decodeCode(raw, new(store.Code))
		} else {
			err = decodeToken(raw, new(store.Token))
		}
		if err == nil {
			t.Errorf("%s: % x decoded without an error", name, raw)
		}
	}
	// The well-formed ones the cases above are cut from.
	if decodeToken(tok, new(store.Token)) != nil || decodeGrant(g, new(store.Grant)) != nil ||
		decodeCode(code, new(store.Code)) != nil {
		t.Fatal("a good record is refused")
	}
}

// FuzzDecodeRecords: any bytes decode to an error or to a record whose
// encoding reads back the same; never a panic.
func FuzzDecodeRecords(f *testing.F) {
	f.Add(appendToken(nil, &store.Token{Kind: "access", Scopes: []string{"a"}, IssuedAt: time.Unix(1, 2)}))
	f.Add(appendGrant(nil, &store.Grant{ID: "g", Identity: store.Identity{Roles: []string{"r"}}, Revoked: true}))
	f.Add([]byte(`{"kind":"access","scopes":null}`))
	f.Add(appendCode(nil, &store.Code{Request: store.AuthRequest{Scopes: []string{"openid"}},
		Identity: store.Identity{Roles: []string{"r"}}, ExpiresAt: time.Unix(1, 2), Used: true}))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var tok store.Token
		if decodeToken(raw, &tok) == nil {
			var again store.Token
			if err := decodeToken(appendToken(nil, &tok), &again); err != nil || !sameRecord(raw, &again, &tok) {
				t.Fatalf("token %#v read back as %#v, %v", tok, again, err)
			}
		}
		var g store.Grant
		if decodeGrant(raw, &g) == nil {
			var again store.Grant
			if err := decodeGrant(appendGrant(nil, &g), &again); err != nil || !sameRecord(raw, &again, &g) {
				t.Fatalf("grant %#v read back as %#v, %v", g, again, err)
			}
		}
		var c store.Code
		if decodeCode(raw, &c) == nil && len(raw) > 0 && raw[0] == formatCode {
			var again store.Code
			if err := decodeCode(appendCode(nil, &c), &again); err != nil || !reflect.DeepEqual(&again, &c) {
				t.Fatalf("code %#v read back as %#v, %v", c, again, err)
			}
		}
	})
}

// FuzzRecordsRoundTrip: a record of any field values reads back as it was
// (its times in UTC, empty Roles as nil).
func FuzzRecordsRoundTrip(f *testing.F) {
	f.Add("access", "g1", "app", "openid", 2, int64(1764000000), int64(5), true)
	f.Add("", "", "", "", -1, int64(-62135596800), int64(0), false)
	f.Fuzz(func(t *testing.T, s1, s2, s3, scope string, n int, sec, nsec int64, b bool) {
		var scopes []string
		if n >= 0 {
			scopes = make([]string, n%8)
			for i := range scopes {
				scopes[i] = scope + fmt.Sprint(i)
			}
		}
		at := time.Unix(sec, nsec).UTC()
		tok := store.Token{Kind: s1, GrantID: s2, ClientID: s3, Scopes: scopes, IssuedAt: at,
			ExpiresAt: at.Add(time.Hour), RotatedAt: at.Add(-time.Nanosecond), Revoked: b}
		var gotTok store.Token
		if err := decodeToken(appendToken(nil, &tok), &gotTok); err != nil || !equalTimes(&gotTok, &tok) {
			t.Fatalf("token %#v read back as %#v, %v", tok, gotTok, err)
		}
		g := store.Grant{ID: s1, ClientID: s2, Audience: s3, Scopes: scopes, Resource: scope,
			Identity: store.Identity{Subject: s2, Email: s3, Name: s1, OrgID: scope, Roles: scopes},
			AuthTime: at, CreatedAt: at.Add(time.Second), RefreshedAt: at.Add(time.Minute), Revoked: b}
		var gotG store.Grant
		if err := decodeGrant(appendGrant(nil, &g), &gotG); err != nil {
			t.Fatal(err)
		}
		if len(g.Identity.Roles) == 0 {
			g.Identity.Roles = nil
		}
		if !equalTimes(&gotG, &g) {
			t.Fatalf("grant %#v read back as %#v", g, gotG)
		}
	})
}

// sameRecord compares a record decoded from raw with its encoding read
// back: the same, or for a JSON record, whose times may be in any zone,
// the same instants.
func sameRecord[T any](raw []byte, again, was *T) bool {
	if raw[0] == '{' {
		return equalTimes(again, was)
	}
	return reflect.DeepEqual(again, was)
}

// equalTimes compares records with their times as instants: the zero
// time stays zero, any other is read back in UTC.
func equalTimes[T any](a, b *T) bool {
	x, y := *a, *b
	normalize(reflect.ValueOf(&x).Elem())
	normalize(reflect.ValueOf(&y).Elem())
	return reflect.DeepEqual(x, y)
}

func normalize(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		if t, ok := f.Interface().(time.Time); ok {
			if t.IsZero() {
				f.Set(reflect.ValueOf(time.Time{}))
			} else {
				f.Set(reflect.ValueOf(t.UTC()))
			}
		} else if f.Kind() == reflect.Struct {
			normalize(f)
		}
	}
}

// BenchmarkRecords compares the binary form with JSON on a refresh's
// records: a token and its grant, each encoded and decoded.
func BenchmarkRecords(b *testing.B) {
	now := time.Date(2026, 11, 26, 9, 0, 0, 123456789, time.UTC)
	tok := &store.Token{Kind: store.TokenRefresh, GrantID: "01JDG7Y3K2M4N5P6Q7R8S9T0VW", ClientID: "member-app",
		Scopes: []string{"openid", "profile", "email", "courses:read"}, IssuedAt: now, ExpiresAt: now.Add(720 * time.Hour)}
	g := &store.Grant{ID: "01JDG7Y3K2M4N5P6Q7R8S9T0VW", ClientID: "member-app", Audience: store.AudienceMember,
		Scopes: tok.Scopes, Resource: "https://demo.school/",
		Identity: store.Identity{Subject: "member-1", Email: "student@demo.school", Name: "Sam Student",
			OrgID: "demo", Roles: []string{"student"}}, AuthTime: now, CreatedAt: now}
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rt, _ := json.Marshal(tok)
			rg, _ := json.Marshal(g)
			var t2 store.Token
			var g2 store.Grant
			if json.Unmarshal(rt, &t2) != nil || json.Unmarshal(rg, &g2) != nil {
				b.Fatal("decoding")
			}
		}
	})
	b.Run("binary", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rt := appendToken(make([]byte, 0, tokenSize(tok)), tok)
			rg := appendGrant(make([]byte, 0, grantSize(g)), g)
			var t2 store.Token
			var g2 store.Grant
			if decodeToken(rt, &t2) != nil || decodeGrant(rg, &g2) != nil {
				b.Fatal("decoding")
			}
		}
	})
}

// A record's key and value come from one allocation, the key whole after
// the value is appended.
func TestKeyAndValueOneAllocation(t *testing.T) {
	tok := fullToken(t, false)
	var k, v []byte
	n := testing.AllocsPerRun(20, func() {
		k, v = keyAndValue("0006283d1e5c0c00-key", tokenSize(tok))
		v = appendToken(v, tok)
	})
	if n != 1 || string(k) != "0006283d1e5c0c00-key" || !bytes.Equal(v, appendToken(nil, tok)) {
		t.Errorf("%v allocations, key %q, value % x", n, k, v)
	}
}
