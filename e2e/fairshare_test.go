package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// anonymousSearch is one anonymous search at origin (soak_test.go's
// mcpSearch call).
func anonymousSearch(ctx context.Context, c *http.Client, origin string) (int, http.Header, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", origin+"/mcp", strings.NewReader(mcpSearch))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body, nil
}

// answers counts a load's answers.
type answers struct {
	mu       sync.Mutex
	statuses map[int]int
	longest  time.Duration
	bad      []string // answers of the wrong shape
	errs     int
}

func (t *answers) add(status int, took time.Duration, bad string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.statuses == nil {
		t.statuses = map[int]int{}
	}
	t.statuses[status]++
	t.longest = max(t.longest, took)
	if bad != "" && len(t.bad) < 5 {
		t.bad = append(t.bad, bad)
	}
}

// A real Caddy serves two schools; one is flooded with searches by many
// clients while a few ask the other's discovery document. The flooded
// school's excess is answered 503 with Retry-After and a JSON-RPC error
// (never a hang, never another 5xx); the other school is served
// throughout, none of its requests refused; the refusals are counted by
// cause for the flooding school only.
func TestFairShareFlood(t *testing.T) {
	sch := startSchool(t)
	victimPort, floodPort := freePort(t), freePort(t)
	dir := t.TempDir()
	// Short bounds, so that a flood of 48 clients on a shared machine
	// overflows the flooding school's queue.
	global := "\tschoolgate {\n\t\tfair_share {\n\t\t\tqueue 8\n\t\t\twait 200ms\n\t\t}\n\t}\n"
	admin := startPlatform(t, dir, global,
		siteBlock(victimPort, sch.URL, dir+"/victim", "\t\trate_limit off\n")+
			siteBlock(floodPort, sch.URL, dir+"/flood", "\t\trate_limit off\n"))
	victim, flood := fmt.Sprintf("http://127.0.0.1:%d", victimPort), fmt.Sprintf("http://127.0.0.1:%d", floodPort)
	waitHTTP(t, victim+"/.well-known/oauth-authorization-server")
	waitHTTP(t, flood+"/.well-known/oauth-authorization-server")
	client := &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 128, DisableCompression: true}}
	// The flooding school's catalog is in before the flood.
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, _, body, err := anonymousSearch(context.Background(), client, flood)
		if err == nil && status == 200 && strings.Contains(string(body), "result") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the flooded school never searched: %d %s %v", status, body, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var floods, victims answers
	var wg sync.WaitGroup
	for range 48 {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				status, h, body, err := anonymousSearch(ctx, client, flood)
				if err != nil {
					if ctx.Err() == nil {
						floods.mu.Lock()
						floods.errs++
						floods.mu.Unlock()
					}
					continue
				}
				bad := ""
				switch {
				case status == 200:
				case status != http.StatusServiceUnavailable:
					bad = fmt.Sprintf("%d %.200s", status, body)
				case h.Get("Retry-After") == "" || !json.Valid(body) || !strings.Contains(string(body), `"jsonrpc":"2.0"`):
					bad = fmt.Sprintf("503 without Retry-After or a JSON-RPC error: %v %.200s", h, body)
				}
				floods.add(status, time.Since(t0), bad)
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // the flood first
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				req, _ := http.NewRequestWithContext(ctx, "GET", victim+"/.well-known/openid-configuration", nil)
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						victims.mu.Lock()
						victims.errs++
						victims.mu.Unlock()
					}
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				bad := ""
				if resp.StatusCode != 200 {
					bad = fmt.Sprintf("%d %.200s", resp.StatusCode, body)
				}
				victims.add(resp.StatusCode, time.Since(t0), bad)
			}
		})
	}
	wg.Wait()
	t.Logf("flood: %v, longest %s; victim: %v, longest %s", floods.statuses, floods.longest, victims.statuses, victims.longest)
	if len(victims.bad) > 0 || victims.errs > 0 || victims.statuses[200] < 100 {
		t.Errorf("the other school: %v (%d errors), first wrong answers %q", victims.statuses, victims.errs, victims.bad)
	}
	if len(floods.bad) > 0 || floods.errs > 0 {
		t.Errorf("the flooded school: %d errors, wrong answers %q", floods.errs, floods.bad)
	}
	if floods.statuses[http.StatusServiceUnavailable] == 0 || floods.statuses[200] == 0 {
		t.Errorf("the flooded school: %v, want searches served and the excess refused", floods.statuses)
	}
	// Nobody waits long: the queue's bound, a search, the machine.
	if floods.longest > 5*time.Second || victims.longest > 5*time.Second {
		t.Errorf("longest waits: flood %s, victim %s", floods.longest, victims.longest)
	}
	_, _, metrics := get(t, "http://"+admin+"/metrics")
	refused := regexp.MustCompile(`schoolgate_school_requests_refused_total\{cause="fair_share",site="([^"]+)"\} (\d+)`).
		FindAllStringSubmatch(string(metrics), -1)
	if len(refused) != 1 || refused[0][1] != flood {
		t.Errorf("refusals counted: %q, want the flooded school's only", refused)
	} else if n, _ := strconv.Atoi(refused[0][2]); n < floods.statuses[http.StatusServiceUnavailable] {
		// A refusal answered as the run ended may reach no client.
		t.Errorf("counted %d refusals, the clients saw %d", n, floods.statuses[http.StatusServiceUnavailable])
	}
}

// A school's budget in its site block: once spent, its requests are
// answered 429 with Retry-After in their endpoint's shape (a sign-in page
// in the person's language, RFC 6749 JSON at the token endpoint), while
// its discovery documents and JWKS are still served, and another school
// of the same Caddy is not refused.
func TestBudgetSiteBlock(t *testing.T) {
	sch := startSchool(t)
	budgeted, other := freePort(t), freePort(t)
	dir := t.TempDir()
	g := startGateway(t, dir,
		siteBlock(budgeted, sch.URL, dir+"/budgeted", "\t\trate_limit off\n\t\tbudget {\n\t\t\trequests 5/m\n\t\t}\n"),
		siteBlock(other, sch.URL, dir+"/other", "\t\trate_limit off\n"))
	origin := g.origins[0]
	// startGateway asked for the discovery document, which the budget
	// does not count; five requests are left.
	for i := range 5 {
		if status, _, body := get(t, origin+"/llms.txt"); status != 200 {
			t.Fatalf("request %d of the budget: %d %s", i+1, status, body)
		}
	}
	req := mustRequest(t, "GET", origin+"/oauth/authorize?client_id=x")
	req.Header.Set("Accept-Language", "de")
	page := doWith(t, noFollow, req)
	if page.status != http.StatusTooManyRequests || page.header.Get("Retry-After") == "" ||
		!strings.Contains(string(page.body), "Die Schule ist gerade ausgelastet") {
		t.Errorf("sign-in page with the budget spent: %d %v %.300s", page.status, page.header, page.body)
	}
	resp, err := http.PostForm(origin+"/api/oauth/token", map[string][]string{"grant_type": {"authorization_code"}, "code": {"x"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var oauthErr struct{ Error string }
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		json.Unmarshal(body, &oauthErr) != nil || oauthErr.Error != "temporarily_unavailable" {
		t.Errorf("token endpoint with the budget spent: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	for _, path := range []string{"/.well-known/openid-configuration", "/.well-known/oauth-authorization-server",
		"/.well-known/oauth-protected-resource", "/.well-known/jwks.json"} {
		if status, _, body := get(t, origin+path); status != 200 {
			t.Errorf("%s with the budget spent: %d %s", path, status, body)
		}
	}
	if status, _, body := get(t, g.origins[1]+"/llms.txt"); status != 200 {
		t.Errorf("the other school: %d %s", status, body)
	}
	_, _, metrics := get(t, "http://"+g.AdminAddr+"/metrics")
	want := fmt.Sprintf(`schoolgate_school_requests_refused_total{cause="budget_requests",site=%q} 2`, origin)
	if !strings.Contains(string(metrics), want) {
		t.Errorf("metrics lack %s", want)
	}
}

// With a PostgreSQL registry, a school's budget holds across its
// instances: two Caddy processes, each asked by its own clients as fast
// as they can, admit the school's 100 requests a second between them,
// within 10 %.
func TestBudgetAcrossInstances(t *testing.T) {
	p := startPgPlatform(t, 100)
	p.put(t, "budget", false, `,"budget":{"requests":{"events":100,"period":"1s","burst":10}}`)
	host := "budget.test"
	p.waitAtBoth(t, "the school at A and B", p.servedAs("budget", host))
	// Both instances have built the school (the discovery above) and
	// count each other within a few beats (2 s each).
	time.Sleep(7 * time.Second)
	measure := func(d time.Duration) (admitted, refused int64) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var ok, no atomic.Int64
		var wg sync.WaitGroup
		for i := range p.addrs {
			c := keepAliveClient(p.addrs[i])
			for range 8 {
				wg.Go(func() {
					for ctx.Err() == nil {
						req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+host+"/llms.txt", nil)
						resp, err := c.Do(req)
						if err != nil {
							continue
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if ctx.Err() != nil {
							return
						}
						switch resp.StatusCode {
						case 200:
							ok.Add(1)
						case http.StatusTooManyRequests:
							no.Add(1)
						default:
							t.Errorf("status %d", resp.StatusCode)
						}
					}
				})
			}
		}
		wg.Wait()
		return ok.Load(), no.Load()
	}
	measure(time.Second) // the bursts
	const seconds = 10
	admitted, refused := measure(seconds * time.Second)
	rate := float64(admitted) / seconds
	t.Logf("admitted %.1f/s between A and B (%d refused)", rate, refused)
	if rate < 90 || rate > 110 {
		t.Errorf("admitted %.1f requests a second between two instances, want 90–110", rate)
	}
	if refused == 0 {
		t.Error("nothing refused: the load did not reach the budget")
	}
}

// keepAliveClient is platformClient keeping its connections: a load of
// many small requests.
func keepAliveClient(addr string) *http.Client {
	c := platformClient(addr)
	tr := c.Transport.(*http.Transport).Clone()
	tr.DisableKeepAlives, tr.MaxIdleConnsPerHost = false, 64
	c.Transport = tr
	return c
}
