package sitedocs

import (
	"encoding/json"
	"fmt"
	"github.com/schoolgate/schoolgate/policy"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/catalog"
)

const testIssuer = "https://school.example"

// testNow is between the sample feed's past and upcoming events.
var testNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// testScopes are the scopes the gateway documents: the table, from the
// one place that holds it, and offline_access.
var testScopes = policy.RequestableScopes

func testSite() Site {
	return Site{
		Issuer:                  testIssuer,
		SchoolName:              "Demo School of Photography",
		AdminPrefix:             "/admin/api/",
		Scopes:                  testScopes,
		ProtectedResourceScopes: []string{"openid", "profile", "email", "account:read"},
		Endpoints:               authServerEndpoints(),
		GrantTypes:              authserver.GrantTypes(),
		MCPConnections:          true,
	}
}

// authServerEndpoints are the authorization server's endpoints as the
// school gives them: the documents are tested against its real table.
func authServerEndpoints() []Endpoint {
	var out []Endpoint
	for _, e := range authserver.Endpoints() {
		out = append(out, Endpoint{Path: e.Path, Title: e.Title})
	}
	return out
}

func eur(a float64) *catalog.Price { return &catalog.Price{Amount: a, Currency: "EUR"} }

func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func testFeed() *catalog.Feed {
	return &catalog.Feed{
		School: catalog.School{
			Name:        "Demo School of Photography",
			Description: "Online photography courses,\nworkshops and photo walks.",
		},
		Courses: []catalog.Course{
			{Slug: "photography-fundamentals", Title: "Photography Fundamentals",
				Summary: "Exposure, focus and composition.", Price: eur(49)},
			{Slug: "smartphone-photography", Title: "Smartphone Photography", Price: eur(0)},
			{Slug: "hosted-elsewhere", Title: "Hosted Elsewhere", Price: &catalog.Price{Amount: 1200, Currency: "JPY"},
				Extra: map[string]json.RawMessage{"url": rawJSON("https://courses.example.org/hosted")}},
			{Slug: "bad-url", Title: "Bad URL", Price: eur(10),
				Extra: map[string]json.RawMessage{"url": rawJSON("javascript:alert(1)")}},
			{Slug: "no-price", Title: "No Price"},
		},
		Events: []catalog.Event{
			{Slug: "old-walk", Title: "Spring Walk 2026", StartsAt: "2026-03-01T10:00:00+01:00",
				EndsAt: "2026-03-01T12:00:00+01:00", Price: eur(15)},
			{Slug: "workshop", Title: "Portrait Lighting Workshop", StartsAt: "2027-03-13T10:00:00+01:00",
				EndsAt: "2027-03-14T16:00:00+01:00", Price: eur(290)},
			{Slug: "winter-walk", Title: "Winter Light Photo Walk, Berlin", StartsAt: "2026-12-12T14:00:00+01:00",
				EndsAt: "2026-12-12T17:00:00+01:00", Price: eur(25)},
			{Slug: "webinar", Title: "Portfolio Review", StartsAt: "2027-01-20T18:00:00Z", Price: eur(0)},
		},
		MembershipPlans: []catalog.MembershipPlan{
			{Slug: "monthly", Name: "All Courses, Monthly", Price: eur(19), Interval: "month"},
			{Slug: "yearly", Name: "All Courses, Yearly", Price: eur(190), Interval: "year"},
		},
		DigitalProducts: []catalog.DigitalProduct{
			{Slug: "presets", Title: "Lightroom Preset Pack", Price: eur(12.5)},
		},
	}
}

func mustBuild(t testing.TB, s Site, feed *catalog.Feed) *Set {
	t.Helper()
	set, err := Build(s, feed, testNow)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return set
}

// get performs one request against the set and returns the response.
func get(t testing.TB, set *Set, method, path string, header http.Header) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	set.ServeHTTP(rec, req)
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func body(t testing.TB, set *Set, path string) string {
	t.Helper()
	resp, b := get(t, set, http.MethodGet, path, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	return b
}

// dig walks a decoded JSON document by keys.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func asStrings(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		out = append(out, fmt.Sprint(x))
	}
	return out
}
