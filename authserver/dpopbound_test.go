package authserver

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
)

// A client registering with dpop_bound_access_tokens (RFC 9449 §5.2),
// dynamically or by its metadata document, is recorded so, which makes
// the token endpoint refuse its requests without a proof; the answer
// echoes it; a registration asking for it is another client than the
// same one without; a school with DPoP off refuses it, as it would
// otherwise hand the client bearer tokens it does not expect.
func TestDPoPBoundRegistration(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const plain = `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/callback"]}`
	const bound = `{"client_name":"cli","redirect_uris":["http://127.0.0.1:8976/callback"],"dpop_bound_access_tokens":true}`
	status, b := f.register("application/json", bound)
	if status != http.StatusCreated || b["dpop_bound_access_tokens"] != true {
		t.Fatalf("bound registration: %d %v", status, b)
	}
	_, again := f.register("application/json", bound)
	_, p := f.register("application/json", plain)
	if again["client_id"] != b["client_id"] || p["client_id"] == b["client_id"] || p["dpop_bound_access_tokens"] != nil {
		t.Errorf("bound %v, again %v, plain %v: want the bound one twice and another for the plain one", b["client_id"], again["client_id"], p)
	}
	c, err := f.srv.client(ctx, b["client_id"].(string))
	if err != nil || !c.DPoPBound || !f.srv.requiresDPoP(c) {
		t.Fatalf("stored %+v %v, want a client that gets bound tokens only", c, err)
	}

	// The metadata document's flag, and a change of it, are the client's.
	d := newDocServer(t)
	host := strings.TrimPrefix(d.URL, "https://")
	doc := func(flag string) string {
		return `{"client_id":"%s","client_name":"Doc Agent","redirect_uris":["https://` + host + `/cb"]` + flag + `}`
	}
	d.docs["/client.json"] = doc(`,"dpop_bound_access_tokens":true`)
	f.useMetadata(d, MetadataDocumentsConfig{AllowPrivateNetworks: true})
	id := d.URL + "/client.json"
	if rec := f.authorize(metadataAuthParams(id, "https://"+host+"/cb", "openid"), "student"); rec.Code != http.StatusOK {
		t.Fatalf("authorize: %d %s", rec.Code, rec.Body)
	}
	if c, err := f.store.GetClient(ctx, id); err != nil || !c.DPoPBound {
		t.Fatalf("metadata client %+v %v, want dpop_bound_access_tokens", c, err)
	}
	v, ch := pkce()
	q := url.Values(metadataAuthParams(id, "https://"+host+"/cb", "openid"))
	q.Set("code_challenge", ch)
	form := exchangeForm(f.code(q, v), v)
	form.Set("client_id", id)
	form.Set("redirect_uri", "https://"+host+"/cb")
	if m := decode(t, f.postDPoP(sitepath.Token, form)); m["error"] != "invalid_dpop_proof" {
		t.Errorf("the bound metadata client without a proof: %v", m)
	}
	d.docs["/client.json"] = doc("")
	f.srv.metadata.cache.Purge()
	f.authorize(metadataAuthParams(id, "https://"+host+"/cb", "openid"), "student")
	if c, _ := f.store.GetClient(ctx, id); c.DPoPBound {
		t.Errorf("the document dropped the flag; the client kept it")
	}

	off := newFixtureWith(t, func(c *Config) { c.DPoP = policy.DPoPOff })
	if status, m := off.register("application/json", bound); status != http.StatusBadRequest || m["error"] != "invalid_client_metadata" ||
		!strings.Contains(m["error_description"].(string), "dpop_bound_access_tokens") {
		t.Errorf("dpop off: %d %v, want invalid_client_metadata naming dpop_bound_access_tokens", status, m)
	}
	if status, _ := off.register("application/json", plain); status != http.StatusCreated {
		t.Errorf("dpop off, a plain registration: %d", status)
	}
}
