package demoschool

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/schoolgate/schoolgate/schooltest"
)

const (
	testIssuer   = "https://school.example"
	testAudience = "http://127.0.0.1:9080"
)

// gatewayKeys stands for the gateway: ES256 keys it signs with and the
// JWKS it publishes, counting fetches.
type gatewayKeys struct {
	mu        sync.Mutex
	published jwk.Set
	fetches   atomic.Int32
	srv       *httptest.Server
}

func newGatewayKeys(t *testing.T) *gatewayKeys {
	t.Helper()
	gk := &gatewayKeys{published: jwk.NewSet()}
	gk.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		gk.fetches.Add(1)
		gk.mu.Lock()
		defer gk.mu.Unlock()
		_ = json.NewEncoder(w).Encode(gk.published)
	}))
	t.Cleanup(gk.srv.Close)
	return gk
}

func (gk *gatewayKeys) publish(t *testing.T, k jwk.Key) {
	t.Helper()
	pub, err := k.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	gk.mu.Lock()
	defer gk.mu.Unlock()
	if err := gk.published.AddKey(pub); err != nil {
		t.Fatal(err)
	}
}

// claims are a valid member assertion's, changed by edit.
func claims(edit func(map[string]any)) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": testIssuer, "aud": testAudience, "sub": "member-1",
		"email": "student@demo.school", "name": "Sam Student", "org_id": "demo", "roles": []string{"student"},
		"scope": "openid account:read", "client_id": "member-app", "token_audience": "member",
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}
	if edit != nil {
		edit(c)
	}
	return c
}

// settableClock is the school's clock, for the key set's refetch timing.
type settableClock struct{ now atomic.Int64 }

func (c *settableClock) Now() time.Time          { return time.Unix(0, c.now.Load()) }
func (c *settableClock) Advance(d time.Duration) { c.now.Add(int64(d)) }

func newVerifyingSchool(t *testing.T, gk *gatewayKeys) (http.Handler, *settableClock) {
	t.Helper()
	clk := &settableClock{}
	clk.now.Store(time.Now().UnixNano())
	return New(Options{Now: clk.Now, Assertion: &AssertionConfig{
		JWKSURL: gk.srv.URL, Issuer: testIssuer, Audience: testAudience}}), clk
}

const viewerQuery = `{"query":"{ viewer { id email } }"}`

func TestAssertionRequired(t *testing.T) {
	gk := newGatewayKeys(t)
	key := schooltest.ES256Key(t, "k1")
	gk.publish(t, key)
	h, _ := newVerifyingSchool(t, gk)

	unsigned := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"school-assertion+jwt","kid":"k1"}`)) + "." +
		base64.RawURLEncoding.EncodeToString(mustMarshal(t, claims(nil))) + "."
	operator := func(c map[string]any) {
		c["sub"], c["email"], c["roles"], c["token_audience"] = "operator-1", "owner@demo.school", []string{"owner"}, "operator"
		c["scope"] = "courses:read"
	}
	tests := []struct {
		name, method, path string
		header             http.Header
		status             int
		wantEmail          string // for the Account API: whose data came back
	}{
		{"member with a valid assertion", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt", claims(nil))}}, 200, "student@demo.school"},
		{"identity from the claims, not the forged headers", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt", claims(nil))},
				"X-School-Subject": {"operator-1"}, "X-School-Audience": {"operator"}}, 200, "student@demo.school"},
		{"missing: forged headers alone", "POST", "/account/graphql",
			http.Header{"X-School-Subject": {"member-1"}, "X-School-Audience": {"member"}}, 401, ""},
		{"two assertions", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt", claims(nil)), schooltest.SignJWS(t, key, "school-assertion+jwt", claims(nil))}}, 401, ""},
		{"forged: another key under the published kid", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, schooltest.ES256Key(t, "k1"), "school-assertion+jwt", claims(nil))}}, 401, ""},
		{"forged: another key under an unknown kid", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, schooltest.ES256Key(t, "k9"), "school-assertion+jwt", claims(nil))}}, 401, ""},
		{"tampered payload", "POST", "/account/graphql",
			http.Header{assertionHeader: {tamper(t, schooltest.SignJWS(t, key, "school-assertion+jwt", claims(nil)))}}, 401, ""},
		{"unsigned (alg none)", "POST", "/account/graphql", http.Header{assertionHeader: {unsigned}}, 401, ""},
		{"expired", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt", claims(func(c map[string]any) {
				c["iat"], c["exp"] = time.Now().Add(-10*time.Minute).Unix(), time.Now().Add(-5*time.Minute).Unix()
			}))}}, 401, ""},
		{"without exp", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt", claims(func(c map[string]any) { delete(c, "exp") }))}}, 401, ""},
		{"wrong audience", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt", claims(func(c map[string]any) { c["aud"] = "http://other:9080" }))}}, 401, ""},
		{"an ID token (aud a client, typ JWT)", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "JWT", claims(func(c map[string]any) { c["aud"] = "member-app" }))}}, 401, ""},
		{"wrong typ", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "JWT", claims(nil))}}, 401, ""},
		{"no typ", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "", claims(nil))}}, 401, ""},
		{"wrong issuer", "POST", "/account/graphql",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt", claims(func(c map[string]any) { c["iss"] = "https://evil.example" }))}}, 401, ""},
		{"not a JWS", "POST", "/account/graphql", http.Header{assertionHeader: {"member-1"}}, 401, ""},
		{"operator at the admin API", "GET", "/admin/api/courses",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt", claims(operator))}}, 200, ""},
		{"member assertion with a forged operator header at the admin API", "GET", "/admin/api/courses",
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt", claims(nil))}, "X-School-Audience": {"operator"}}, 403, ""},
		{"admin API with forged headers alone", "GET", "/admin/api/courses",
			http.Header{"X-School-Subject": {"operator-1"}, "X-School-Audience": {"operator"}}, 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body *strings.Reader
			if tt.method == "POST" {
				body = strings.NewReader(viewerQuery)
			} else {
				body = strings.NewReader("")
			}
			rec := call(t, h, tt.method, tt.path, body, tt.header)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			m := decode(t, rec)
			switch {
			case tt.status == 401 && m["error"] != "invalid_assertion":
				t.Errorf("body %v, want error invalid_assertion", m)
			case tt.wantEmail != "" && !strings.Contains(rec.Body.String(), `"email":"`+tt.wantEmail+`"`):
				t.Errorf("body %s, want the data of %s", rec.Body, tt.wantEmail)
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tamper swaps the payload for another subject's, keeping the signature.
func tamper(t *testing.T, compact string) string {
	parts := strings.Split(compact, ".")
	parts[1] = base64.RawURLEncoding.EncodeToString(mustMarshal(t, claims(func(c map[string]any) { c["sub"] = "member-2" })))
	return strings.Join(parts, ".")
}

// A key the gateway rotated in is fetched when its kid first shows up;
// unknown kids do not make the school fetch the key set on every request.
func TestAssertionKeyRotation(t *testing.T) {
	gk := newGatewayKeys(t)
	k1, k2 := schooltest.ES256Key(t, "k1"), schooltest.ES256Key(t, "k2")
	gk.publish(t, k1)
	h, clk := newVerifyingSchool(t, gk)
	post := func(key jwk.Key) int {
		t.Helper()
		return call(t, h, "POST", "/account/graphql", strings.NewReader(viewerQuery),
			http.Header{assertionHeader: {schooltest.SignJWS(t, key, "school-assertion+jwt", claims(nil))}}).Code
	}
	if got := post(k1); got != 200 || gk.fetches.Load() != 1 {
		t.Fatalf("k1: %d after %d fetches", got, gk.fetches.Load())
	}
	gk.publish(t, k2)
	forger := schooltest.ES256Key(t, "k-made-up")
	for range 5 {
		if got := post(forger); got != 401 {
			t.Fatalf("made-up kid: %d", got)
		}
	}
	if n := gk.fetches.Load(); n != 1 {
		t.Errorf("unknown kids within %v fetched the key set %d times, want 1 in all", keySetRefetchMin, n)
	}
	clk.Advance(keySetRefetchMin)
	if got := post(k2); got != 200 || gk.fetches.Load() != 2 {
		t.Errorf("rotated-in k2: %d after %d fetches, want 200 after one more fetch", got, gk.fetches.Load())
	}
	if got := post(k1); got != 200 || gk.fetches.Load() != 2 {
		t.Errorf("k1 after the refetch: %d after %d fetches", got, gk.fetches.Load())
	}
}

// A misconfigured school refuses everything instead of trusting headers.
func TestAssertionMisconfiguredRefusesAll(t *testing.T) {
	h := New(Options{Assertion: &AssertionConfig{Issuer: testIssuer}})
	rec := call(t, h, "POST", "/account/graphql", strings.NewReader(viewerQuery),
		http.Header{"X-School-Subject": {"member-1"}})
	if rec.Code != 401 || !strings.Contains(rec.Body.String(), "JWKS URL") {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}

// The backend contract's Go example is verifyAssertion, verbatim, so the code the
// tests above exercise is the code operators copy.
func TestBackendContractShowsVerifyAssertion(t *testing.T) {
	src, err := os.ReadFile("assertion.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../docs/backend-contract.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(src), "func verifyAssertion(")
	end := strings.Index(string(src[start:]), "\n}\n")
	if start < 0 || end < 0 {
		t.Fatal("verifyAssertion not found")
	}
	fn := string(src[start : start+end+2])
	if !strings.Contains(string(readme), fn) {
		t.Errorf("docs/backend-contract.md does not show verifyAssertion as it is in demoschool/assertion.go:\n%s", fn)
	}
}
