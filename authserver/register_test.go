package authserver

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

func (f *fixture) register(ctype, body string) (int, map[string]any) {
	rec := f.serve("POST", sitepath.Register, strings.NewReader(body), map[string]string{"Content-Type": ctype})
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		f.t.Fatalf("registration answered non-JSON %d: %s", rec.Code, rec.Body.String())
	}
	return rec.Code, m
}

func TestRegistrationRules(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		code       string
		desc       string // part of error_description
	}{
		{"loopback v4", `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/callback"]}`, 201, "", ""},
		{"loopback v6", `{"redirect_uris":["http://[::1]:8976/cb"],"token_endpoint_auth_method":"none"}`, 201, "", ""},
		{"localhost", `{"client_name":"x","redirect_uris":["http://localhost:3000/cb"],"application_type":"native","extra":1}`, 201, "", ""},
		{"vendor with its redirect", `{"client_name":"Member App","redirect_uris":["` + memberRedirect + `"]}`, 201, "", ""},
		{"vendor name, foreign redirect", `{"client_name":"Member App","redirect_uris":["https://evil.example/cb"]}`, 400, "invalid_redirect_uri", ""},
		{"vendor name, loopback redirect", `{"client_name":"Member App","redirect_uris":["http://127.0.0.1:1/cb"]}`, 400, "invalid_redirect_uri", ""},
		{"unregistered https callback", `{"client_name":"Some Tool","redirect_uris":["https://tool.example/cb"]}`, 400, "invalid_redirect_uri", ""},
		{"unknown name, plain http", `{"client_name":"Some Tool","redirect_uris":["http://tool.example/cb"]}`, 400, "invalid_client_metadata", ""},
		{"custom scheme", `{"client_name":"x","redirect_uris":["com.example:/cb"]}`, 400, "invalid_redirect_uri", ""},
		{"fragment", `{"redirect_uris":["http://127.0.0.1:1/cb#frag"]}`, 400, "invalid_redirect_uri", ""},
		{"no redirect", `{"client_name":"cli"}`, 400, "invalid_redirect_uri", ""},
		{"redirects not an array", `{"redirect_uris":"http://127.0.0.1:1/cb"}`, 400, "invalid_redirect_uri", ""},
		{"malformed JSON", `{"redirect_uris":[`, 400, "invalid_client_metadata", ""},
		{"not an object", `[1,2]`, 400, "invalid_client_metadata", ""},
		{"loopback with client_secret_post", `{"redirect_uris":["http://127.0.0.1:1/cb"],"token_endpoint_auth_method":"client_secret_post"}`, 201, "", ""},
		{"loopback with client_secret_basic", `{"redirect_uris":["http://127.0.0.1:1/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, 400, "invalid_client_metadata", "use none or client_secret_post"},
		{"loopback with private_key_jwt", `{"redirect_uris":["http://127.0.0.1:1/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, 400, "invalid_client_metadata", "private_key_jwt is not supported"},
		{"implicit grant", `{"redirect_uris":["http://127.0.0.1:1/cb"],"grant_types":["implicit"]}`, 400, "invalid_client_metadata", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			status, m := f.register("application/json", tc.body)
			if status != tc.status || (tc.code != "" && m["error"] != tc.code) {
				t.Fatalf("got %d %v, want %d %s", status, m, tc.status, tc.code)
			}
			if d, _ := m["error_description"].(string); !strings.Contains(d, tc.desc) {
				t.Errorf("error_description %q does not say %q", d, tc.desc)
			}
			if status == 201 {
				for _, k := range []string{"client_id", "redirect_uris", "token_endpoint_auth_method", "grant_types", "response_types", "client_id_issued_at"} {
					if _, ok := m[k]; !ok {
						t.Errorf("response lacks %s: %v", k, m)
					}
				}
			}
		})
	}
}

func TestRegistrationShape(t *testing.T) {
	f := newFixture(t)
	if status, m := f.register("text/plain", `{"redirect_uris":["http://127.0.0.1:1/cb"]}`); status != 400 || m["error"] != "invalid_client_metadata" {
		t.Errorf("wrong content type: %d %v", status, m)
	}
	big := `{"client_name":"` + strings.Repeat("a", 100<<10) + `","redirect_uris":["http://127.0.0.1:1/cb"]}`
	if status, m := f.register("application/json", big); status != 400 {
		t.Errorf("oversized body: %d %v", status, m)
	}
}

func TestLoopbackRegistrationIsIdempotentAndUsable(t *testing.T) {
	f := newFixture(t)
	body := `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/callback"]}`
	_, a := f.register("application/json", body)
	_, b := f.register("application/json", body)
	if a["client_id"] != b["client_id"] {
		t.Errorf("identical registrations gave %v and %v", a["client_id"], b["client_id"])
	}
	if a["token_endpoint_auth_method"] != "none" {
		t.Errorf("loopback clients are public: %v", a)
	}
	c, err := f.srv.client(context.Background(), a["client_id"].(string))
	if err != nil || c.Audience != store.AudienceOperator {
		t.Fatalf("client: %+v %v", c, err)
	}
	if !MatchRedirect(c, "http://127.0.0.1:40000/callback") || MatchRedirect(c, "http://127.0.0.1:40000/other") ||
		MatchRedirect(c, "https://127.0.0.1:40000/callback") || MatchRedirect(c, "http://10.0.0.1:8976/callback") {
		t.Error("loopback matching must ignore the port only")
	}
}

func FuzzParseRegistration(f *testing.F) {
	f.Add([]byte(`{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/callback"]}`))
	f.Add([]byte(`{"redirect_uris":"x"}`))
	f.Add([]byte(`{"redirect_uris":["http://[::1]:1/#"],"grant_types":[1]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := parseRegistration(body)
		if (req == nil) == (e == nil) {
			t.Fatalf("exactly one of request and error expected: %v %v", req, e)
		}
		if e != nil && e.Code != "invalid_client_metadata" && e.Code != "invalid_redirect_uri" {
			t.Fatalf("unexpected error code %s", e.Code)
		}
	})
}

// Vendor names match without regard to case and surrounding white space.
func TestVendorNameMatching(t *testing.T) {
	for _, name := range []string{"Member App", "member app", "  MEMBER APP\t", "\nMember App "} {
		f := newFixture(t)
		status, m := f.register("application/json", `{"client_name":`+strconv.Quote(name)+`,"redirect_uris":["`+memberRedirect+`"]}`)
		if status != 201 || m["client_id"] != memberClient {
			t.Errorf("client_name %q: %d %v, want the vendor %s", name, status, m, memberClient)
		}
	}
	f := newFixture(t)
	if status, m := f.register("application/json", `{"client_name":"Member  App","redirect_uris":["`+memberRedirect+`"]}`); status == 201 && m["client_id"] == memberClient {
		t.Error("white space inside the name must still differ")
	}
}

// RFC 8252 §8.5, RFC 7591 §3.2.1: a loopback registration asking for
// client_secret_post gets a secret of its own, shown once and kept only as
// a hash; a confidential registration always creates a client, while an
// identical public one still returns the client it created.
func TestConfidentialLoopbackRegistration(t *testing.T) {
	f := newFixture(t)
	public := `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/cb"]}`
	confidential := `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/cb"],"token_endpoint_auth_method":"client_secret_post"}`

	_, p1 := f.register("application/json", public)
	status, a := f.register("application/json", confidential)
	secret, _ := a["client_secret"].(string)
	if status != 201 || !strings.HasPrefix(secret, prefixSecret) || a["client_secret_expires_at"] != float64(0) ||
		a["token_endpoint_auth_method"] != "client_secret_post" {
		t.Fatalf("confidential registration: %d %v", status, a)
	}
	_, b := f.register("application/json", confidential)
	_, p2 := f.register("application/json", public)
	if a["client_id"] == b["client_id"] || a["client_secret"] == b["client_secret"] || b["client_secret"] == nil {
		t.Errorf("a repeated confidential registration must create a client with a new secret: %v %v", a, b)
	}
	if p1["client_id"] != p2["client_id"] || p1["client_id"] == a["client_id"] || p1["client_id"] == b["client_id"] {
		t.Errorf("identical public registrations return their own client: %v %v (confidential %v %v)",
			p1["client_id"], p2["client_id"], a["client_id"], b["client_id"])
	}
	if _, ok := p2["client_secret"]; ok || p2["token_endpoint_auth_method"] != "none" {
		t.Errorf("a public registration has no secret: %v", p2)
	}

	c, err := f.store.GetClient(context.Background(), a["client_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(c)
	if c.SecretHash != hashSecret(secret) || strings.Contains(string(raw), secret) || c.Public() {
		t.Errorf("the stored client must hold the secret's hash only: %s", raw)
	}
}

// Confidential registrations count against the per-address and per-site
// bounds as public ones do.
func TestConfidentialRegistrationsAreBounded(t *testing.T) {
	confidential := func(port int) string {
		return `{"client_name":"cli","redirect_uris":["http://127.0.0.1:` + strconv.Itoa(port) + `/cb"],"token_endpoint_auth_method":"client_secret_post"}`
	}
	t.Run("per address", func(t *testing.T) {
		f := limitedFixture(t, RateLimits{NewClients: Per(2, time.Hour, 2)})
		for i := 0; i < 2; i++ {
			if status, m := f.register("application/json", confidential(1)); status != 201 {
				t.Fatalf("registration %d: %d %v", i, status, m)
			}
		}
		if status, m := f.register("application/json", confidential(1)); status != 429 || m["error"] != "temporarily_unavailable" {
			t.Errorf("third new client from the address: %d %v", status, m)
		}
	})
	t.Run("per site", func(t *testing.T) {
		f := newFixture(t)
		f.srv.limits = newLimiters(RateLimits{})
		var fill []*store.Client
		for i := 0; i < maxLoopbackClients-1; i++ {
			fill = append(fill, &store.Client{ID: "sgc_fill" + strconv.Itoa(i), Kind: store.KindLoopback, AuthMethod: "none"})
		}
		err := boltstore.Fill(f.store, fill, nil)
		if err != nil {
			t.Fatal(err)
		}
		if status, m := f.register("application/json", confidential(1)); status != 201 {
			t.Fatalf("the last client the site may hold: %d %v", status, m)
		}
		for _, body := range []string{confidential(2), `{"redirect_uris":["http://127.0.0.1:2/cb"]}`} {
			if status, m := f.register("application/json", body); status != 400 || m["error"] != "invalid_client_metadata" {
				t.Errorf("beyond the site's bound: %d %v", status, m)
			}
		}
	})
}

// OpenID Connect Dynamic Client Registration §2: a native application's
// redirect URIs are on the user's machine, a web application's are not.
// Left out, a loopback client registers as native, and the answer says
// what was registered.
func TestRegistrationApplicationType(t *testing.T) {
	const loop = `"redirect_uris":["http://127.0.0.1:8976/cb"]`
	cases := []struct {
		name, body string
		status     int
		code, desc string
		appType    any // application_type of a 201; nil when absent
	}{
		{"loopback, native", `{` + loop + `,"application_type":"native"}`, 201, "", "", "native"},
		{"loopback, left out", `{` + loop + `}`, 201, "", "", "native"},
		{"loopback, confidential, left out", `{` + loop + `,"token_endpoint_auth_method":"client_secret_post"}`, 201, "", "", "native"},
		{"loopback, web", `{` + loop + `,"application_type":"web"}`, 400, "invalid_redirect_uri", "a web application cannot have", nil},
		{"loopback, unknown type", `{` + loop + `,"application_type":"browser"}`, 400, "invalid_client_metadata", "use native or web", nil},
		{"loopback, type in capitals", `{` + loop + `,"application_type":"NATIVE"}`, 400, "invalid_client_metadata", "use native or web", nil},
		{"vendor https, web", `{"client_name":"Member App","redirect_uris":["` + memberRedirect + `"],"application_type":"web"}`, 201, "", "", nil},
		{"vendor https, left out", `{"client_name":"Member App","redirect_uris":["` + memberRedirect + `"]}`, 201, "", "", nil},
		{"vendor https, native", `{"client_name":"Member App","redirect_uris":["` + memberRedirect + `"],"application_type":"native"}`, 400, "invalid_redirect_uri", "which a native application needs", nil},
		{"vendor loopback, native", `{"client_name":"Ops CLI","redirect_uris":["` + opsRedirect + `"],"application_type":"native"}`, 201, "", "", nil},
		{"vendor loopback, web", `{"client_name":"Ops CLI","redirect_uris":["` + opsRedirect + `"],"application_type":"web"}`, 400, "invalid_redirect_uri", "register as native", nil},
		{"unknown https, native", `{"client_name":"Tool","redirect_uris":["https://tool.example/cb"],"application_type":"native"}`, 400, "invalid_redirect_uri", "not a loopback address", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			status, m := f.register("application/json", tc.body)
			if status != tc.status || (tc.code != "" && m["error"] != tc.code) {
				t.Fatalf("got %d %v, want %d %s", status, m, tc.status, tc.code)
			}
			if d, _ := m["error_description"].(string); !strings.Contains(d, tc.desc) {
				t.Errorf("error_description %q does not say %q", d, tc.desc)
			}
			if status == 201 && m["application_type"] != tc.appType {
				t.Errorf("application_type %v, want %v", m["application_type"], tc.appType)
			}
		})
	}
}
