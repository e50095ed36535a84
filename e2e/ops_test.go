package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// metricValue reads one series from Prometheus text output (0 if absent).
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+]+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestMetricsAndHealth: the instance's totals and the school's own series appear in Caddy's metrics
// on its admin endpoint, and the health route reports the store, keys and
// catalog.
func TestMetricsAndHealth(t *testing.T) {
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	gw := startGateway(t, dir, siteBlock(port, sch.URL, filepath.Join(dir, "site"), ""))
	admin := "http://" + gw.AdminAddr
	site := `site="` + gw.URL + `"`

	tok := tokenFor(t, gw.URL, registerLoopback(t, gw.URL), "http://127.0.0.1:7777/callback", "courses:read",
		"owner@demo.school", "owner")
	for i := 0; i < 3; i++ {
		if r := call(t, "GET", gw.URL+"/admin/api/courses", tok.AccessToken, "", nil); r.status != 200 {
			t.Fatalf("admin API: %d %s", r.status, r.body)
		}
	}
	call(t, "GET", gw.URL+"/admin/api/courses", "sgat_made-up", "", nil)
	call(t, "POST", gw.URL+"/account/graphql", tok.AccessToken, viewerQuery, nil) // operator token: 403
	postForm(t, gw.URL+"/api/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {"x"},
		"client_id": {"nobody"}, "redirect_uri": {"http://127.0.0.1:1/"}, "code_verifier": {strings.Repeat("a", 43)}})

	_, _, raw := get(t, admin+"/metrics")
	text := string(raw)
	// Each count is in the instance's total and, a config of site blocks
	// showing every school's by default, in the school's own series.
	for series, min := range map[string]float64{
		`tokens_issued_total{grant_type="authorization_code"`:          1,
		`registrations_total{kind="loopback"`:                          1,
		`protected_requests_total{outcome="allowed"`:                   3,
		`protected_requests_total{outcome="invalid_token"`:             1,
		`protected_requests_total{outcome="insufficient_scope"`:        1,
		`oauth_refused_total{endpoint="token",reason="invalid_client"`: 1,
		`token_lookups_total{result="hit"`:                             1,
		`token_lookups_total{result="miss"`:                            1,
	} {
		for _, s := range []string{"schoolgate_" + series + "}", "schoolgate_school_" + series + "," + site + "}"} {
			if got := metricValue(t, text, s); got < min {
				t.Errorf("%s = %v, want ≥ %v", s, got, min)
			}
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", grepLines(text, "schoolgate_"))
	}

	resp, err := http.Get(admin + "/schoolgate/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var health struct {
		Healthy bool
		Sites   []struct {
			Issuer, Store, Keys, Catalog string
			Healthy                      bool
		}
	}
	if err := jsonDecode(resp.Body, &health); err != nil || resp.StatusCode != 200 || !health.Healthy ||
		len(health.Sites) != 1 || health.Sites[0].Issuer != gw.URL || health.Sites[0].Store != "ok" || health.Sites[0].Keys != "ok" {
		t.Errorf("health: %d %+v %v", resp.StatusCode, health, err)
	}
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
