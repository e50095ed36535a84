package pages

import (
	"context"
	"errors"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/schoolgate/schoolgate/store"
)

// usageRows reads the page's table: each row's id and its figures.
func usageRows(page string) map[string][]string {
	rows := map[string][]string{}
	row := regexp.MustCompile(`(?s)<tr id="usage-([a-z0-9_-]+)"[^>]*>(.*?)</tr>`)
	cell := regexp.MustCompile(`(?s)<td[^>]*class="figure">(.*?)</td>`)
	for _, m := range row.FindAllStringSubmatch(page, -1) {
		for _, c := range cell.FindAllStringSubmatch(m[2], -1) {
			rows[m[1]] = append(rows[m[1]], c[1])
		}
	}
	return rows
}

// The usage page shows each window's figures: counts in the operator's
// way of writing numbers, every cause under its status, the response
// times, when the school last served; a school that served nothing says
// so.
func TestAdminUsage(t *testing.T) {
	f := newFixture(t)
	get := func(lang string) (int, string) {
		rec := f.serve("GET", adminPathUsage, nil, map[string]string{"Cookie": "session=owner", "Accept-Language": lang})
		return rec.Code, html.UnescapeString(rec.Body.String())
	}
	status, page := get("en")
	if status != http.StatusOK || !strings.Contains(page, msg("en", "admin.usage_never")) {
		t.Fatalf("a school that served nothing: %d\n%s", status, page)
	}
	if rows := usageRows(page); strings.Join(rows["requests"], " ") != "0 0 0" || strings.Join(rows["p50"], " ") != "— — —" {
		t.Errorf("nothing served: %v", rows)
	}

	now := f.clock.Now()
	recent := store.UsageDelta{Minute: now, LastActive: now.Add(-2 * time.Minute)}
	recent.Latency[store.LatencyBin(3*time.Millisecond)] = 1200
	recent.Latency[store.LatencyBin(2*time.Second)] = 34
	recent.Tokens, recent.Refused = 5, 7
	recent.Causes[store.CauseFairShare] = 3
	recent.Causes[store.CauseLegacyTimeout] = 2
	earlier := store.UsageDelta{Minute: now.Add(-30 * time.Minute)}
	earlier.Latency[store.LatencyBin(200*time.Microsecond)] = 1000
	earlier.Causes[store.CauseRateLimited] = 4
	if err := f.store.AddUsage(context.Background(), []store.UsageDelta{earlier, recent}); err != nil {
		t.Fatal(err)
	}
	status, page = get("en")
	if text := regexp.MustCompile(`<[^>]+>`).ReplaceAllString(page, ""); status != http.StatusOK ||
		!strings.Contains(text, "Last request served: 2 minutes ago.") {
		t.Fatalf("= %d\n%s", status, page)
	}
	rows := usageRows(page)
	for id, want := range map[string]string{
		"requests":             "1,234 2,234 2,234",
		"tokens":               "5 5 5",
		"refused":              "7 7 7",
		"status-429":           "0 4 4",
		"cause-rate_limited":   "0 4 4",
		"status-503":           "3 3 3",
		"cause-fair_share":     "3 3 3",
		"cause-legacy_busy":    "0 0 0",
		"status-504":           "2 2 2",
		"cause-legacy_timeout": "2 2 2",
		"p50":                  "2.8 ms 2.8 ms 2.8 ms", // 3 ms within 12.5 %
		"p99":                  "2.0 s 2.0 s 2.0 s",
	} {
		if got := strings.Join(rows[id], " "); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	for c := range store.NumCauses {
		if len(rows["cause-"+c.String()]) != 3 {
			t.Errorf("no row for the cause %s", c)
		}
	}
	_, page = get("de")
	if rows := usageRows(page); rows["requests"][1] != "2.234" || rows["p50"][0] != "2,8 ms" {
		t.Errorf("in German: %v %v", rows["requests"], rows["p50"])
	}
}

// The page reads what the school gives it (the store and what the
// instance has not stored yet); a read that fails is the 503 page.
func TestAdminUsageReader(t *testing.T) {
	f := newFixture(t)
	var pending store.Usage
	d := store.UsageDelta{Minute: f.clock.Now(), LastActive: f.clock.Now()}
	d.Latency[0] = 42
	pending.Add([]store.UsageDelta{d})
	f.pages.cfg.Usage = func(context.Context) (*store.Usage, error) { return &pending, nil }
	rec := f.serve("GET", adminPathUsage, nil, map[string]string{"Cookie": "session=owner"})
	if rows := usageRows(rec.Body.String()); rec.Code != 200 || rows["requests"][0] != "42" {
		t.Errorf("= %d %v", rec.Code, rows["requests"])
	}
	f.pages.cfg.Usage = func(context.Context) (*store.Usage, error) { return nil, errors.New("database down") }
	rec = f.serve("GET", adminPathUsage, nil, map[string]string{"Cookie": "session=owner"})
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
		strings.Contains(rec.Body.String(), "database down") {
		t.Errorf("a failed read = %d %s", rec.Code, rec.Body)
	}
	if rec := f.serve("GET", adminPathUsage, nil, map[string]string{"Cookie": "session=student"}); rec.Code != http.StatusForbidden {
		t.Errorf("a member = %d", rec.Code)
	}
}
