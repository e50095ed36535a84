package authserver

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// What the keys sign without jws.Sign is standard ES256 compact JWS: jwx
// parses it, reads alg, kid and typ from its protected header and
// verifies it against the published JWKS, for every typ signed and over
// enough signatures that some r or s has a leading zero byte (padded to
// 32 bytes, or the signature would not verify). A changed payload does
// not verify.
func TestES256CompactJWS(t *testing.T) {
	f := newFixture(t)
	keys, now := f.srv.keys, f.clock.Now()
	raw, err := keys.JWKS(now)
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	kid := keys.signer(now).KID
	for _, typ := range signedTypes {
		for i := range 300 {
			payload := fmt.Appendf(nil, `{"sub":"member-%d","typ_test":%q}`, i, typ)
			tok, err := keys.signTyped(payload, typ, now)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jws.Verify(tok, jws.WithKeySet(set, jws.WithRequireKid(true)))
			if err != nil || string(got) != string(payload) {
				t.Fatalf("%s #%d: %v, payload %s", typ, i, err, got)
			}
			msg, err := jws.Parse(tok)
			if err != nil {
				t.Fatal(err)
			}
			h := msg.Signatures()[0].ProtectedHeaders()
			alg, _ := h.Algorithm()
			gotKid, _ := h.KeyID()
			gotTyp, _ := h.Type()
			if alg != jwa.ES256() || gotKid != kid || gotTyp != typ {
				t.Fatalf("header alg %v kid %q typ %q, want ES256 %q %q", alg, gotKid, gotTyp, kid, typ)
			}
			parts := strings.Split(string(tok), ".")
			if sig, err := base64.RawURLEncoding.DecodeString(parts[2]); err != nil || len(sig) != 64 {
				t.Fatalf("signature %q: %d bytes, %v; want r || s, 64", parts[2], len(sig), err)
			}
			if i == 0 {
				parts[1] = base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"someone-else"}`))
				if _, err := jws.Verify([]byte(strings.Join(parts, ".")), jws.WithKeySet(set)); err == nil {
					t.Fatal("a changed payload verified")
				}
			}
		}
	}
}

// rawSignature takes r and s from the DER that ecdsa.SignASN1 makes: a
// DER zero before a high bit dropped, a short integer padded, anything
// else than a SEQUENCE of two positive INTEGERs of at most 32 bytes
// refused.
func TestRawSignature(t *testing.T) {
	seq := func(parts ...[]byte) []byte {
		var body []byte
		for _, p := range parts {
			body = append(append(body, 0x02, byte(len(p))), p...)
		}
		return append([]byte{0x30, byte(len(body))}, body...)
	}
	full := bytes.Repeat([]byte{0x11}, 32)
	high := append([]byte{0x00, 0x80}, bytes.Repeat([]byte{0x22}, 31)...)
	short := bytes.Repeat([]byte{0x33}, 30)
	want := func(r, s []byte) []byte {
		out := make([]byte, 64)
		copy(out[32-len(r):32], r)
		copy(out[64-len(s):], s)
		return out
	}
	tests := []struct {
		name string
		der  []byte
		want []byte // nil: refused
	}{
		{"32 and 32 bytes", seq(full, full), want(full, full)},
		{"a zero before a high bit", seq(high, full), want(high[1:], full)},
		{"a short s", seq(full, short), want(full, short)},
		{"zero", seq([]byte{0}, full), want(nil, full)},
		{"negative", seq([]byte{0x80, 1}, full), nil},
		{"33 bytes", seq(append([]byte{0x01}, full...), full), nil},
		{"one integer", seq(full), nil},
		{"three integers", seq(full, full, full), nil},
		{"trailing bytes", append(seq(full, full), 0), nil},
		{"empty integer", seq(nil, full), nil},
		{"not a sequence", append([]byte{0x31}, seq(full, full)[1:]...), nil},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		dst := bytes.Repeat([]byte{0xff}, 64)
		ok := rawSignature(dst, tt.der)
		if ok != (tt.want != nil) || ok && !bytes.Equal(dst, tt.want) {
			t.Errorf("%s: %v %x, want %x", tt.name, ok, dst, tt.want)
		}
	}
}
