package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/registry"
)

// schoolsCall answers as Caddy's admin server does: a handler's APIError
// becomes its status and {"error": message}.
func schoolsCall(t *testing.T, h func(http.ResponseWriter, *http.Request) error, method, target, body string) adminAnswer {
	t.Helper()
	rec := httptest.NewRecorder()
	err := h(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
	if err != nil {
		var apiErr caddy.APIError
		if !errors.As(err, &apiErr) {
			t.Fatalf("%s %s: %v, not an APIError (a 500)", method, target, err)
		}
		raw, _ := json.Marshal(map[string]string{"error": apiErr.Err.Error()})
		return adminAnswer{code: apiErr.HTTPStatus, body: string(raw), header: rec.Header()}
	}
	return adminAnswer{code: rec.Code, body: rec.Body.String(), header: rec.Header()}
}

func decodeView(t *testing.T, a adminAnswer) adminapi.SchoolView {
	t.Helper()
	var v adminapi.SchoolView
	if err := json.Unmarshal([]byte(a.body), &v); err != nil {
		t.Fatalf("%s: %v", a.body, err)
	}
	return v
}

// A school written through the admin API is checked with the directive's
// rules (400 naming the option), refused a host another school has (409
// naming both), routed at once, shown with its configuration, listed
// with its state, and removed (404 from then on).
func TestSchoolsAPIWrite(t *testing.T) {
	tp := newTestPlatform(t, 10)
	tp.put(t, "https://a.example", []string{"www.a.example"}, "")
	runningAs(t, tp.app)

	for _, tt := range []struct{ name, body, want string }{
		{"an unknown option", `{"issuer":"https://b.example","config":{"upstream":"http://127.0.0.1:9","upstreem":"x"}}`, "upstreem"},
		{"a bad option", `{"issuer":"https://b.example","config":{"upstream":"http://127.0.0.1:9","rules":[{"path":"/x","audience":"everyone"}]}}`, "audience"},
		{"no upstream", `{"issuer":"https://b.example","config":{}}`, "upstream"},
		{"a store", `{"issuer":"https://b.example","config":{"upstream":"http://127.0.0.1:9","store":{"postgres":{"dsn":"x"}}}}`, "store"},
		{"another issuer", `{"issuer":"https://b.example","config":{"upstream":"http://127.0.0.1:9","issuer":"https://c.example"}}`, "issuer"},
		{"no config", `{"issuer":"https://b.example"}`, "config"},
		{"a bad issuer", `{"issuer":"https://b.example/path","config":{"upstream":"http://127.0.0.1:9"}}`, "issuer"},
		{"a bad host", `{"issuer":"https://b.example","hosts":["a b"],"config":{"upstream":"http://127.0.0.1:9"}}`, "hosts"},
		{"a misspelt field", `{"issuer":"https://b.example","host":["x.example"],"config":{"upstream":"http://127.0.0.1:9"}}`, "host"},
		{"no JSON", `issuer=b`, "JSON"},
	} {
		a := schoolsCall(t, handleSchools, http.MethodPost, "/schoolgate/schools", tt.body)
		if a.code != http.StatusBadRequest || !strings.Contains(a.body, tt.want) {
			t.Errorf("%s: %d %s, want 400 naming %s", tt.name, a.code, a.body, tt.want)
		}
	}
	if tp.school("https://b.example") != nil {
		t.Fatal("a refused record was written")
	}

	a := schoolsCall(t, handleSchools, http.MethodPost, "/schoolgate/schools",
		`{"issuer":"https://b.example","hosts":["WWW.A.example"],"config":{"upstream":"http://127.0.0.1:9"}}`)
	if a.code != http.StatusConflict || !strings.Contains(a.body, "www.a.example") || !strings.Contains(a.body, "https://a.example") {
		t.Errorf("a host taken: %d %s, want 409 naming the host and its school", a.code, a.body)
	}

	a = schoolsCall(t, handleSchools, http.MethodPost, "/schoolgate/schools",
		`{"issuer":"HTTPS://B.example","hosts":["www.b.example"],"config":{"upstream":"http://127.0.0.1:9"}}`)
	if v := decodeView(t, a); a.code != http.StatusCreated || v.Issuer != "https://b.example" || v.Version != 1 || v.State != "idle" {
		t.Fatalf("added: %d %s", a.code, a.body)
	}
	if got := issuerOf(tp.do(t, "https://www.b.example"+discoveryPath)); got != "https://b.example" {
		t.Errorf("the school added is not served at once: %q", got)
	}

	a = schoolsCall(t, handleSchools, http.MethodGet, "/schoolgate/schools?issuer=https://B.example", "")
	if v := decodeView(t, a); a.code != http.StatusOK || v.State != "active" || !strings.Contains(string(v.Config), "127.0.0.1:9") {
		t.Errorf("shown: %d %s", a.code, a.body)
	}
	a = schoolsCall(t, handleSchools, http.MethodGet, "/schoolgate/schools", "")
	var page adminapi.SchoolsPage
	err := json.Unmarshal([]byte(a.body), &page)
	list := page.Schools
	if err != nil || a.code != http.StatusOK || len(list) != 2 || page.Next != "" ||
		list[0].Issuer != "https://a.example" || list[0].State != "idle" || list[0].Hosts[0] != "www.a.example" ||
		list[1].State != "active" || list[0].Config != nil || list[0].Platform != "dir "+tp.root {
		t.Errorf("listed: %d %s", a.code, a.body)
	}

	a = schoolsCall(t, handleSchoolRemove, http.MethodPost, "/schoolgate/schools/remove", `{"issuer":"https://b.example"}`)
	if a.code != http.StatusOK {
		t.Fatalf("removed: %d %s", a.code, a.body)
	}
	checkNoSchool(t, "removed", tp.do(t, "https://www.b.example"+discoveryPath))
	for _, tt := range []struct {
		h            func(http.ResponseWriter, *http.Request) error
		method, path string
		body         string
		code         int
	}{
		{handleSchoolRemove, http.MethodPost, "/schoolgate/schools/remove", `{"issuer":"https://b.example"}`, http.StatusNotFound},
		{handleSchools, http.MethodGet, "/schoolgate/schools?issuer=https://b.example", "", http.StatusNotFound},
		{handleSchoolRemove, http.MethodPost, "/schoolgate/schools/remove", `{"issuer":"https://b.example","if_version":1}`, http.StatusNotFound},
		{handleSchoolRemove, http.MethodPost, "/schoolgate/schools/remove", `{}`, http.StatusBadRequest},
		{handleSchools, http.MethodGet, "/schoolgate/schools?issuer=b.example", "", http.StatusBadRequest},
		{handleSchoolRemove, http.MethodGet, "/schoolgate/schools/remove", "", http.StatusMethodNotAllowed},
		{handleSchools, http.MethodDelete, "/schoolgate/schools", "", http.StatusMethodNotAllowed},
	} {
		if a := schoolsCall(t, tt.h, tt.method, tt.path, tt.body); a.code != tt.code {
			t.Errorf("%s %s %s: %d %s, want %d", tt.method, tt.path, tt.body, a.code, a.body, tt.code)
		}
	}
}

// if_version makes a write conditional, so that two operators do not
// overwrite each other: 0 adds only, a version replaces only that one.
func TestSchoolsAPIIfVersion(t *testing.T) {
	tp := newTestPlatform(t, 10)
	runningAs(t, tp.app)
	post := func(body string) adminAnswer {
		return schoolsCall(t, handleSchools, http.MethodPost, "/schoolgate/schools", body)
	}
	const cfg = `"config":{"upstream":"http://127.0.0.1:9"}`
	if a := post(`{"issuer":"https://a.example","if_version":0,` + cfg + `}`); a.code != http.StatusCreated {
		t.Fatalf("an add: %d %s", a.code, a.body)
	}
	if a := post(`{"issuer":"https://a.example","if_version":0,` + cfg + `}`); a.code != http.StatusConflict || !strings.Contains(a.body, "exists already") {
		t.Errorf("a second add: %d %s, want 409", a.code, a.body)
	}
	if a := post(`{"issuer":"https://a.example","if_version":1,"disabled":true,` + cfg + `}`); a.code != http.StatusOK || decodeView(t, a).Version != 2 {
		t.Errorf("a change of version 1: %d %s", a.code, a.body)
	}
	// The second operator read version 1 too.
	if a := post(`{"issuer":"https://a.example","if_version":1,` + cfg + `}`); a.code != http.StatusConflict || !strings.Contains(a.body, "version 2, not 1") {
		t.Errorf("a change of a version replaced: %d %s, want 409", a.code, a.body)
	}
	if !tp.school("https://a.example").rec.Disabled {
		t.Error("the refused write was applied")
	}
	if a := post(`{"issuer":"https://z.example","if_version":3,` + cfg + `}`); a.code != http.StatusConflict {
		t.Errorf("a change of a school that has no record: %d %s, want 409", a.code, a.body)
	}
	a := schoolsCall(t, handleSchoolRemove, http.MethodPost, "/schoolgate/schools/remove", `{"issuer":"https://a.example","if_version":1}`)
	if a.code != http.StatusConflict || tp.school("https://a.example") == nil {
		t.Errorf("a removal of a version replaced: %d %s, want 409", a.code, a.body)
	}
	a = schoolsCall(t, handleSchoolRemove, http.MethodPost, "/schoolgate/schools/remove", `{"issuer":"https://a.example","if_version":2}`)
	if a.code != http.StatusOK || tp.school("https://a.example") != nil {
		t.Errorf("a removal of the version stored: %d %s", a.code, a.body)
	}
}

// A registry that does not answer is a 503 with Retry-After, never a
// 500; one never read makes the listing 503 too.
func TestSchoolsAPIRegistryDown(t *testing.T) {
	tp := newTestPlatform(t, 10, func(tp *testPlatform) {
		tp.open = func(context.Context) (*openedRegistry, error) {
			return &openedRegistry{Registry: writesDown{tp.flaky}, place: placeInDir(tp.dataDir), release: func() error { return nil }}, nil
		}
	})
	tp.put(t, "https://a.example", nil, "")
	runningAs(t, tp.app)
	tp.flaky.down.Store(true)
	for _, tt := range []struct {
		h            func(http.ResponseWriter, *http.Request) error
		method, path string
		body         string
	}{
		{handleSchools, http.MethodPost, "/schoolgate/schools", `{"issuer":"https://b.example","config":{"upstream":"http://127.0.0.1:9"}}`},
		{handleSchools, http.MethodPost, "/schoolgate/schools", `{"issuer":"https://a.example","if_version":1,"config":{"upstream":"http://127.0.0.1:9"}}`},
		{handleSchoolRemove, http.MethodPost, "/schoolgate/schools/remove", `{"issuer":"https://a.example"}`},
		{handleSchools, http.MethodGet, "/schoolgate/schools?issuer=https://a.example", ""},
		{handleSchoolRemove, http.MethodPost, "/schoolgate/schools/remove", `{"issuer":"https://a.example","if_version":1}`},
	} {
		a := schoolsCall(t, tt.h, tt.method, tt.path, tt.body)
		if a.code != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" ||
			strings.Contains(a.body, "connection refused") || !strings.Contains(a.body, "temporarily_unavailable") {
			t.Errorf("%s %s: %d %v %s, want 503 with Retry-After", tt.method, tt.path, a.code, a.header, a.body)
		}
	}
	// A refused record is refused before the registry is reached.
	if a := schoolsCall(t, handleSchools, http.MethodPost, "/schoolgate/schools", `{"issuer":"https://b.example","config":{}}`); a.code != http.StatusBadRequest {
		t.Errorf("a bad record while the registry is down: %d %s, want 400", a.code, a.body)
	}
	// The listing is the table served, which the registry being down
	// leaves as it was.
	if a := schoolsCall(t, handleSchools, http.MethodGet, "/schoolgate/schools", ""); a.code != http.StatusOK {
		t.Errorf("the listing while the registry is down: %d %s", a.code, a.body)
	}

	never := newTestPlatform(t, 10, func(tp *testPlatform) { tp.flaky.down.Store(true) })
	runningAs(t, never.app)
	for _, target := range []string{"/schoolgate/schools", "/schoolgate/schools?issuer=https://a.example"} {
		a := schoolsCall(t, handleSchools, http.MethodGet, target, "")
		if a.code != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
			t.Errorf("%s of a registry never read: %d %v %s, want 503 with Retry-After", target, a.code, a.header, a.body)
		}
	}
}

// With several platforms in the config, a request about one school names
// its platform; a listing shows them all, or the one named.
func TestSchoolsAPISeveralPlatforms(t *testing.T) {
	one, two := newTestPlatform(t, 10), newTestPlatform(t, 10)
	one.put(t, "https://a.example", nil, "")
	two.put(t, "https://b.example", nil, "")
	runningAs(t, &App{platforms: []*platform{one.platform, two.platform}})

	const body = `{"issuer":"https://c.example","config":{"upstream":"http://127.0.0.1:9"}`
	a := schoolsCall(t, handleSchools, http.MethodPost, "/schoolgate/schools", body+`}`)
	if a.code != http.StatusBadRequest || !strings.Contains(a.body, "platform") || !strings.Contains(a.body, two.root) {
		t.Errorf("a write naming no platform: %d %s, want 400 naming the platforms", a.code, a.body)
	}
	a = schoolsCall(t, handleSchools, http.MethodPost, "/schoolgate/schools", body+`,"platform":"dir /nowhere"}`)
	if a.code != http.StatusNotFound {
		t.Errorf("a write naming no platform of the config: %d %s, want 404", a.code, a.body)
	}
	a = schoolsCall(t, handleSchools, http.MethodPost, "/schoolgate/schools", body+`,"platform":"dir `+two.root+`"}`)
	if a.code != http.StatusCreated || two.school("https://c.example") == nil || one.school("https://c.example") != nil {
		t.Errorf("a write naming its platform: %d %s", a.code, a.body)
	}
	var page adminapi.SchoolsPage
	a = schoolsCall(t, handleSchools, http.MethodGet, "/schoolgate/schools", "")
	if err := json.Unmarshal([]byte(a.body), &page); err != nil || len(page.Schools) != 3 {
		t.Errorf("the listing of both: %s", a.body)
	}
	a = schoolsCall(t, handleSchools, http.MethodGet, "/schoolgate/schools?platform=dir+"+one.root, "")
	if err := json.Unmarshal([]byte(a.body), &page); err != nil || len(page.Schools) != 1 || page.Schools[0].Issuer != "https://a.example" {
		t.Errorf("the listing of one: %s", a.body)
	}

	runningAs(t, &App{})
	if a := schoolsCall(t, handleSchools, http.MethodGet, "/schoolgate/schools", ""); a.code != http.StatusNotFound {
		t.Errorf("no platform: %d %s, want 404", a.code, a.body)
	}
}

// writesDown is a flaky registry whose writes fail too while it is down.
type writesDown struct{ *flakyRegistry }

func (w writesDown) Put(ctx context.Context, r registry.Record) (registry.Record, error) {
	if w.down.Load() {
		return registry.Record{}, errRegistryDown
	}
	return w.Memory.Put(ctx, r)
}

func (w writesDown) PutIf(ctx context.Context, r registry.Record, version int64) (registry.Record, error) {
	if w.down.Load() {
		return registry.Record{}, errRegistryDown
	}
	return w.Memory.PutIf(ctx, r, version)
}

func (w writesDown) Remove(ctx context.Context, issuer string) error {
	if w.down.Load() {
		return errRegistryDown
	}
	return w.Memory.Remove(ctx, issuer)
}

func (w writesDown) RemoveIf(ctx context.Context, issuer string, version int64) error {
	if w.down.Load() {
		return errRegistryDown
	}
	return w.Memory.RemoveIf(ctx, issuer, version)
}
