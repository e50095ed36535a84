package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// eraseCrashGrants is how many grants the person has when the erasure
// starts: enough tokens, codes and events that the erasure's one
// transaction takes long enough for the kill to land inside it some of
// the time.
const eraseCrashGrants = 400

// TestCrashMidErase kills Caddy (bbolt) with SIGKILL while an erasure of a
// person with hundreds of grants is in flight through the admin API, and
// proves after the restart that the erasure was all or nothing: either
// every grant, token and event of the person is there and works and no
// subject_erased event exists, or none is and exactly one subject_erased
// event does. An erasure answered with 200 before the kill must have been
// kept.
func TestCrashMidErase(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a Caddy process")
	}
	sch := startSchool(t)
	port := freePort(t)
	dir := t.TempDir()
	redirect := "https://load-app.example/callback"
	extra := vendorBlock("Load App", "load-app", redirect, "member", loadScope) + "\t\trate_limit off\n"
	gw := startGateway(t, dir, siteBlockOn(t, "bbolt", port, sch.URL, filepath.Join(dir, "site"), extra))
	o := signInForLoad(t, gw.URL, "load-app", redirect, loadScope, "student@demo.school", "student")
	ctx := t.Context()

	// Each grant: a code issued and redeemed, then one refresh, so the
	// person has a consent, 400 grants, their tokens and their events.
	pairs := make([]tokenPair, eraseCrashGrants)
	parallel(eraseCrashGrants, 16, func(i int) {
		code, verifier, r := o.authorize(ctx)
		if code == "" {
			t.Errorf("authorize %d: %v", i, r)
			return
		}
		p, ok := o.exchange(ctx, code, verifier).pair()
		if !ok {
			t.Errorf("exchange %d failed", i)
			return
		}
		r = o.refresh(ctx, p.Refresh)
		if pairs[i], ok = r.pair(); !ok {
			t.Errorf("refresh %d: %v", i, r)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	// The erasure goes out; the kill follows after a random delay of up to
	// 250 ms, which lands before, inside or after its transaction.
	school := url.QueryEscape(gw.URL)
	body, _ := json.Marshal(map[string]string{"issuer": gw.URL, "subject": studentSubject})
	var (
		answered atomic.Bool
		wg       sync.WaitGroup
	)
	wg.Go(func() {
		resp, err := http.Post("http://"+gw.AdminAddr+"/schoolgate/subject/erase", "application/json", bytes.NewReader(body))
		if err != nil {
			return // cut off by the kill
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the erasure answered %d", resp.StatusCode)
			return
		}
		answered.Store(true)
	})
	delay := time.Duration(rand.IntN(250)) * time.Millisecond
	time.Sleep(delay)
	gw.kill()
	wg.Wait()
	gw.restart()

	st, _, exported := get(t, "http://"+gw.AdminAddr+"/schoolgate/subject?issuer="+school+"&subject="+studentSubject)
	erasedEvents := auditCount(t, gw, "&type=subject_erased")
	switch {
	case st == http.StatusNotFound:
		t.Logf("killed %v after sending the erasure (answered before the kill: %v): after the restart everything was erased",
			delay, answered.Load())
		if erasedEvents != 1 {
			t.Errorf("the person is erased but %d subject_erased events exist", erasedEvents)
		}
		if n := auditCount(t, gw, "&subject="+studentSubject); n != 0 {
			t.Errorf("the person is erased but %d events still name them", n)
		}
		parallel(len(pairs), 8, func(i int) {
			for _, tok := range []string{pairs[i].Access, pairs[i].Refresh} {
				if r := o.introspect(ctx, tok); r.status != 200 || strings.Contains(string(r.body), `"active":true`) {
					t.Errorf("grant %d: a token of the erased person: %v", i, r)
				}
			}
		})
		if r := o.request(ctx, http.MethodPost, "/account/graphql", pairs[0].Access, viewerQuery, nil); r.status != 401 {
			t.Errorf("the account API with an erased person's token: %v", r)
		}
	case st == http.StatusOK:
		t.Logf("killed %v after sending the erasure (answered before the kill: %v): after the restart nothing was erased",
			delay, answered.Load())
		if answered.Load() {
			t.Errorf("the erasure answered 200 before the kill, yet the person's data is back")
		}
		if erasedEvents != 0 {
			t.Errorf("the person's data is all there, yet %d subject_erased events exist", erasedEvents)
		}
		var d struct {
			Grants []json.RawMessage `json:"grants"`
			Tokens int               `json:"tokens"`
			Events []json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(exported, &d); err != nil {
			t.Fatalf("export: %v: %s", err, exported)
		}
		// Each grant keeps its access and refresh token pair and its
		// events (code issued, redeemed, refreshed at least).
		if len(d.Grants) != eraseCrashGrants || d.Tokens < 2*eraseCrashGrants || len(d.Events) < 3*eraseCrashGrants {
			t.Errorf("after the restart the export holds %d grants, %d tokens, %d events; want %d grants and all their tokens and events",
				len(d.Grants), d.Tokens, len(d.Events), eraseCrashGrants)
		}
		parallel(len(pairs), 8, func(i int) {
			if r := o.introspect(ctx, pairs[i].Access); r.status != 200 || !strings.Contains(string(r.body), `"active":true`) {
				t.Errorf("grant %d: the access token is not active: %v", i, r)
			}
			if r := o.refresh(ctx, pairs[i].Refresh); r.status != 200 {
				t.Errorf("grant %d: the refresh token is refused: %v", i, r)
			}
		})
		// The erasure, asked again, completes.
		began := time.Now()
		if r := postJSON(t, "http://"+gw.AdminAddr+"/schoolgate/subject/erase", map[string]any{"issuer": gw.URL, "subject": studentSubject}); r.status != 200 {
			t.Errorf("the erasure after the restart: %d %s", r.status, r.body)
		}
		t.Logf("the erasure asked again after the restart answered in %v", time.Since(began).Round(time.Millisecond))
		if n := auditCount(t, gw, "&type=subject_erased"); n != 1 {
			t.Errorf("after the erasure completed, %d subject_erased events", n)
		}
	default:
		t.Fatalf("export after the restart: %d %s", st, exported)
	}
	// The admin API logs the export's 404 of an erased person as an error.
	lines := slices.DeleteFunc(errorLogs(gw.proc.out.String()), func(l string) bool {
		return strings.Contains(l, `"status_code":404`)
	})
	if len(lines) > 0 {
		t.Errorf("the restarted Caddy logged errors:\n%s", strings.Join(lines, "\n"))
	}
}

// auditCount counts the events of the gateway's first school matching the
// query (a string of &name=value pairs), over every page.
func auditCount(t *testing.T, gw *gateway, query string) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		u := fmt.Sprintf("http://%s/schoolgate/audit?issuer=%s%s&limit=1000", gw.AdminAddr, url.QueryEscape(gw.URL), query)
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		st, _, body := get(t, u)
		var page struct {
			Events []json.RawMessage `json:"events"`
			Next   string            `json:"next"`
		}
		if st != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("audit query %s: %d %s", query, st, body)
		}
		n += len(page.Events)
		if page.Next == "" {
			return n
		}
		cursor = page.Next
	}
}
