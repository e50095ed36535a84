package authserver

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/i18n"
	"github.com/schoolgate/schoolgate/store"
)

// docServer serves metadata documents over TLS on loopback.
type docServer struct {
	*httptest.Server
	docs  map[string]string // path -> body ("%s" is the document URL)
	hits  atomic.Int64
	ctype string
	// onRequest, when set, runs as each request arrives.
	onRequest func()
}

func newDocServer(t *testing.T) *docServer {
	d := &docServer{docs: map[string]string{}, ctype: "application/json"}
	d.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.hits.Add(1)
		if d.onRequest != nil {
			d.onRequest()
		}
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/client.json", http.StatusFound)
			return
		case "/big":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"client_id":%q,"pad":"%s"}`, d.URL+r.URL.Path, strings.Repeat("x", 20<<10))
			return
		}
		body, ok := d.docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", d.ctype)
		fmt.Fprintf(w, body, d.URL+r.URL.Path)
	}))
	t.Cleanup(d.Close)
	return d
}

func (f *fixture) useMetadata(d *docServer, cfg MetadataDocumentsConfig) {
	pool := x509.NewCertPool()
	pool.AddCert(d.Certificate())
	cfg.RootCAs = pool
	f.srv.metadata = newMetadataResolver(cfg, f.clock.Now)
}

func metadataAuthParams(clientID, redirect, scope string) map[string][]string {
	_, ch := pkce()
	q := authParams(ch)
	q.Set("client_id", clientID)
	q.Set("redirect_uri", redirect)
	q.Set("scope", scope)
	return q
}

func TestMetadataDocumentClient(t *testing.T) {
	f := newFixture(t)
	d := newDocServer(t)
	host := strings.TrimPrefix(d.URL, "https://")
	d.docs["/client.json"] = `{"client_id":"%s","client_name":"Doc Agent","redirect_uris":["https://` + host + `/cb","http://127.0.0.1/cb"],"token_endpoint_auth_method":"none","extra":1}`
	f.useMetadata(d, MetadataDocumentsConfig{AllowPrivateNetworks: true})
	id := d.URL + "/client.json"

	// Read and identity scopes are allowed while unreviewed.
	rec := f.authorize(metadataAuthParams(id, "https://"+host+"/cb", "openid profile email account:read"), "student")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Doc Agent") {
		t.Fatalf("authorize: %d %s", rec.Code, rec.Body)
	}
	// Loopback redirects match on any port.
	rec = f.authorize(metadataAuthParams(id, "http://127.0.0.1:49152/cb", "openid account:read"), "student")
	if rec.Code != http.StatusOK {
		t.Fatalf("loopback redirect: %d %s", rec.Code, rec.Body)
	}
	// Write scopes are not, until an operator reviews the client.
	rec = f.authorize(metadataAuthParams(id, "https://"+host+"/cb", "openid account:write"), "student")
	if loc := rec.Header().Get("Location"); !strings.Contains(loc, "error=invalid_scope") {
		t.Fatalf("unreviewed write scope: %d %s", rec.Code, loc)
	}
	c, err := f.store.GetClient(context.Background(), id)
	if err != nil || c.Kind != store.KindMetadata || c.Audience != store.AudienceMember || c.Name != "Doc Agent" {
		t.Fatalf("stored client %+v, %v", c, err)
	}
	c.Reviewed = true
	if err := f.store.PutClient(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	rec = f.authorize(metadataAuthParams(id, "https://"+host+"/cb", "openid account:write"), "student")
	if rec.Code != http.StatusOK {
		t.Fatalf("reviewed write scope: %d %s", rec.Code, rec.Header().Get("Location"))
	}
	// The document is cached: four authorizations, one fetch.
	if n := d.hits.Load(); n != 1 {
		t.Errorf("document fetched %d times, want 1", n)
	}
	f.clock.Advance(metadataCacheTTL + time.Second)
	f.authorize(metadataAuthParams(id, "https://"+host+"/cb", "openid"), "student")
	if n := d.hits.Load(); n != 2 {
		t.Errorf("after expiry fetched %d times, want 2", n)
	}
}

func TestMetadataDocumentRejections(t *testing.T) {
	d := newDocServer(t)
	host := strings.TrimPrefix(d.URL, "https://")
	ok := `"client_id":"%s","redirect_uris":["https://` + host + `/cb"]`
	d.docs["/wrong-id.json"] = `{"client_id":"https://elsewhere.example/client.json","note":"%s","redirect_uris":["https://` + host + `/cb"]}`
	d.docs["/foreign-redirect.json"] = `{"client_id":"%s","redirect_uris":["https://evil.example/cb"]}`
	d.docs["/secret.json"] = `{` + ok + `,"client_secret":"x"}`
	d.docs["/basic.json"] = `{` + ok + `,"token_endpoint_auth_method":"client_secret_basic"}`
	d.docs["/no-redirects.json"] = `{"client_id":"%s"}`
	d.docs["/string-redirects.json"] = `{"client_id":"%s","redirect_uris":"https://` + host + `/cb"}`
	d.docs["/fragment.json"] = `{"client_id":"%s","redirect_uris":["https://` + host + `/cb#x"]}`
	d.docs["/not-json.json"] = `<html>`
	d.docs["/trailing.json"] = `{` + ok + `} {}`
	tests := []struct {
		name, id, want string
		allow          []string
		private        bool
	}{
		{"http scheme", "http://" + host + "/c.json", "https URL", nil, true},
		{"no path", d.URL, "path", nil, true},
		{"dot segment", d.URL + "/a/../c.json", "dot segments", nil, true},
		{"credentials", "https://u:p@" + host + "/c.json", "credentials", nil, true},
		{"host not allowed", d.URL + "/wrong-id.json", "does not accept", []string{"agents.example"}, true},
		{"loopback without opt-in", d.URL + "/wrong-id.json", "address", nil, false},
		{"client_id mismatch", d.URL + "/wrong-id.json", "must equal its URL", nil, true},
		{"foreign redirect", d.URL + "/foreign-redirect.json", "must be on", nil, true},
		{"secret", d.URL + "/secret.json", "client_secret", nil, true},
		{"auth method", d.URL + "/basic.json", "must be none", nil, true},
		{"no redirects", d.URL + "/no-redirects.json", "redirect_uris", nil, true},
		{"string redirects", d.URL + "/string-redirects.json", "redirect_uris", nil, true},
		{"fragment", d.URL + "/fragment.json", "fragment", nil, true},
		{"not json", d.URL + "/not-json.json", "JSON", nil, true},
		{"trailing data", d.URL + "/trailing.json", "after", nil, true},
		{"missing", d.URL + "/missing.json", "HTTP 404", nil, true},
		{"redirect", d.URL + "/redirect", "redirect", nil, true},
		{"oversize", d.URL + "/big", "larger", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.useMetadata(d, MetadataDocumentsConfig{AllowHosts: tt.allow, AllowPrivateNetworks: tt.private})
			rec := f.authorize(metadataAuthParams(tt.id, "https://"+host+"/cb", "openid"), "student")
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
				t.Fatalf("want an error page, got %d Location=%q", rec.Code, rec.Header().Get("Location"))
			}
			body := rec.Body.String()
			if !strings.Contains(body, "invalid_client_metadata") || !strings.Contains(body, tt.want) {
				t.Errorf("error page lacks %q:\n%s", tt.want, body)
			}
			if _, err := f.store.GetClient(context.Background(), tt.id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a refused document left a client record: %v", err)
			}
		})
	}
	// The wrong content type.
	f := newFixture(t)
	d.ctype = "text/html"
	d.docs["/good.json"] = `{` + ok + `}`
	f.useMetadata(d, MetadataDocumentsConfig{AllowPrivateNetworks: true})
	rec := f.authorize(metadataAuthParams(d.URL+"/good.json", "https://"+host+"/cb", "openid"), "student")
	if !strings.Contains(rec.Body.String(), "application/json") {
		t.Errorf("content type not checked: %d %s", rec.Code, rec.Body)
	}
}

func TestPublicAddress(t *testing.T) {
	blocked := []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"100.64.0.1", "100.127.255.254", "198.18.0.1", "198.19.255.255", "0.0.0.0", "224.0.0.1",
		"255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd12::1", "64:ff9b::7f00:1",
		"2002:7f00:1::", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "2001:db8::1", "ff02::1", "192.0.0.8"}
	public := []string{"8.8.8.8", "1.1.1.1", "100.128.0.1", "198.20.0.1", "2606:4700:4700::1111", "2a00:1450::1"}
	for _, s := range blocked {
		if publicAddress(netip.MustParseAddr(s)) {
			t.Errorf("%s must be blocked", s)
		}
	}
	for _, s := range public {
		if !publicAddress(netip.MustParseAddr(s)) {
			t.Errorf("%s must be allowed", s)
		}
	}
}

// A name that resolves to a private address is refused at dial time,
// whatever the name says.
func TestGuardedDialerChecksTheDialedAddress(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	c := fetchClient(false, nil)
	for _, u := range []string{"http://localhost" + port + "/", srv.URL + "/"} {
		_, err := c.Get(u)
		if err == nil || !errors.Is(err, errBlockedAddress) {
			t.Errorf("GET %s: %v, want a blocked-address error", u, err)
		}
	}
	if _, err := fetchClient(true, nil).Get(srv.URL + "/"); err != nil {
		t.Errorf("with private networks allowed: %v", err)
	}
}

func FuzzParseMetadataDoc(f *testing.F) {
	f.Add([]byte(`{"client_id":"https://a.example/c.json","redirect_uris":["https://a.example/cb"]}`))
	f.Add([]byte(`{"client_id":"https://a.example/c.json","redirect_uris":["http://[::1]:80/cb"],"client_name":"x"}`))
	from, _ := (&metadataResolver{}).checkURL("https://a.example/c.json")
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, err := parseMetadataDoc(body, from)
		if err != nil {
			var me *metadataError
			if !errors.As(err, &me) {
				t.Fatalf("error is not a metadata error: %v", err)
			}
			return
		}
		for _, ru := range doc.redirectURIs {
			if checkMetadataRedirect(ru, "a.example") != nil {
				t.Fatalf("accepted redirect %q", ru)
			}
		}
	})
}

var _ = context.Background

// Unsupported grant and response types in a document are ignored; a
// refused document is not cached, so a fixed one works at once.
func TestMetadataDocumentLenientAndUncachedFailures(t *testing.T) {
	f := newFixture(t)
	d := newDocServer(t)
	host := strings.TrimPrefix(d.URL, "https://")
	d.docs["/grants.json"] = `{"client_id":"%s","redirect_uris":["https://` + host + `/cb"],` +
		`"grant_types":["client_credentials","urn:ietf:params:oauth:grant-type:device_code"],"response_types":["token"]}`
	d.docs["/later.json"] = `{"client_id":"https://elsewhere.example/","note":"%s"}`
	f.useMetadata(d, MetadataDocumentsConfig{AllowPrivateNetworks: true})

	rec := f.authorize(metadataAuthParams(d.URL+"/grants.json", "https://"+host+"/cb", "openid"), "student")
	if rec.Code != http.StatusOK {
		t.Fatalf("document with extra grant types: %d %s", rec.Code, rec.Body)
	}
	later := d.URL + "/later.json"
	rec = f.authorize(metadataAuthParams(later, "https://"+host+"/cb", "openid"), "student")
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("bad document: %d", rec.Code)
	}
	d.docs["/later.json"] = `{"client_id":"%s","redirect_uris":["https://` + host + `/cb"]}`
	rec = f.authorize(metadataAuthParams(later, "https://"+host+"/cb", "openid"), "student")
	if rec.Code != http.StatusOK {
		t.Fatalf("fixed document still refused (failure cached?): %d %s", rec.Code, rec.Body)
	}
}

// A refused document's error page says why in the person's words (the
// message key) and gives the developer's English detail apart, never
// inside that sentence (package pages' test has it in German).
func TestMetadataRejectionDetailApart(t *testing.T) {
	d := newDocServer(t)
	host := strings.TrimPrefix(d.URL, "https://")
	f := newFixture(t)
	f.useMetadata(d, MetadataDocumentsConfig{AllowPrivateNetworks: true})
	q := url.Values(metadataAuthParams(d.URL+"/missing.json", "https://"+host+"/cb", "openid"))
	rec := f.authorize(q, "student")
	body := htmlUnescape(rec.Body.String())
	sentence := regexp.MustCompile(`<p id="error" class="error">([^<]*)</p>`).FindStringSubmatch(body)
	if rec.Code != http.StatusBadRequest || sentence == nil || sentence[1] != i18n.Msg("en", "error.client_metadata") {
		t.Fatalf("the error page = %d\n%s", rec.Code, body)
	}
	if !regexp.MustCompile(`<code id="detail">invalid_client_metadata: [^<]*HTTP 404[^<]*</code>`).MatchString(body) {
		t.Errorf("the English detail is not apart:\n%s", body)
	}
}

// pauseCounter is a request's slot (store.Waiter) that counts its pauses.
type pauseCounter struct{ paused, pauses, resumes atomic.Int64 }

func (w *pauseCounter) Pause()               { w.paused.Add(1); w.pauses.Add(1) }
func (w *pauseCounter) Resume()              { w.paused.Add(-1); w.resumes.Add(1) }
func (w *pauseCounter) Charge(time.Duration) {}

// A request gives its slot of the instance back while the school fetches
// its client's metadata document, found or not, and takes it again once
// the fetch is over: a client_id naming a slow host holds no processor's
// share meanwhile.
func TestMetadataFetchPausesTheSlot(t *testing.T) {
	f := newFixture(t)
	d := newDocServer(t)
	d.docs["/client.json"] = `{"client_id":"%s","client_name":"Doc Agent","redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none"}`
	f.useMetadata(d, MetadataDocumentsConfig{AllowPrivateNetworks: true})
	for _, c := range []struct {
		path  string
		found bool
	}{{"/client.json", true}, {"/missing.json", false}} {
		w := &pauseCounter{}
		var during atomic.Int64
		d.onRequest = func() { during.Store(w.paused.Load()) }
		_, _, err := f.srv.metadata.resolve(store.WithWaiter(context.Background(), w), d.URL+c.path)
		if (err == nil) != c.found {
			t.Fatalf("%s: %v", c.path, err)
		}
		if during.Load() != 1 || w.pauses.Load() != 1 || w.resumes.Load() != 1 || w.paused.Load() != 0 {
			t.Errorf("%s: paused %d during the fetch, %d pauses and %d resumes", c.path, during.Load(), w.pauses.Load(), w.resumes.Load())
		}
	}
}
