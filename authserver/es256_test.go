package authserver

import (
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
