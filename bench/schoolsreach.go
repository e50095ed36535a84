package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// How the -schools benchmark reaches Caddy and its schools: the admin API,
// tokens, the requests to every school, the process's figures.

// adminGet sends a GET to Caddy's admin API and discards the answer.
func (r *schoolsRun) adminGet(path string) { adminGet(r.admin, path) }

// adminGet sends a GET to the admin API at admin and discards the answer.
func adminGet(admin, path string) {
	resp, err := http.Get("http://" + admin + path)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// goroutines reads Caddy's goroutine count from its admin API.
func (r *schoolsRun) goroutines() int {
	resp, err := http.Get("http://" + r.admin + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var total int
	if _, err := fmt.Fscanf(resp.Body, "goroutine profile: total %d", &total); err != nil {
		return -1
	}
	return total
}

// tokens gets a member access token from every school: the consent of
// the bench's vendor client, then the code exchange.
func (r *schoolsRun) tokens(n int) ([]string, error) {
	toks := make([]string, n)
	err := r.eachSchool(n, func(ctx context.Context, i int) error {
		o := &oauthClient{origin: "http://" + r.host(i), http: r.noRedirect}
		c, err := o.authorize(ctx)
		if err != nil {
			return fmt.Errorf("school %d: %v", i, err)
		}
		t, err := o.exchange(ctx, c)
		if err != nil {
			return fmt.Errorf("school %d: %v", i, err)
		}
		toks[i] = t.Access
		return nil
	})
	return toks, err
}

// protected sends one Account API request with the school's token.
func (r *schoolsRun) protected(ctx context.Context, i int, token string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.host(i)+"/account/graphql",
		strings.NewReader(`{"query":"{ me { email } }"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	return r.expect200(r.client.Do(req))
}

// call sends one request to a school (a GET, or a POST of body to /mcp).
func (r *schoolsRun) call(ctx context.Context, i int, path, body string) error {
	method := http.MethodGet
	if body != "" {
		method = http.MethodPost
	}
	req, _ := http.NewRequestWithContext(ctx, method, "http://"+r.host(i)+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		for k, v := range mcpHeaders {
			req.Header.Set(k, v)
		}
	}
	return r.expect200(r.client.Do(req))
}

func (r *schoolsRun) expect200(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return statusError{status: resp.StatusCode, what: resp.Request.Method + " " + resp.Request.URL.String()}
	}
	return nil
}

// statusError is an answer other than 200.
type statusError struct {
	status int
	what   string
}

func (e statusError) Error() string { return fmt.Sprintf("%s: HTTP %d", e.what, e.status) }

// allServe waits until every school answers path (a GET, or a POST of
// body to /mcp) with 200.
func (r *schoolsRun) allServe(n int, path, body string) error {
	return r.eachSchool(n, func(ctx context.Context, i int) error {
		for {
			err := r.call(ctx, i, path, body)
			if err == nil {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("school %d never answered %s: %v", i, path, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// eachSchool runs fn for every school, 16 at a time, and returns the first
// error.
func (r *schoolsRun) eachSchool(n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

func freePort() (int, error) {
	a, err := freeAddr()
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(a[strings.LastIndex(a, ":")+1:])
}

func openFiles(pid int) int {
	entries, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	return len(entries)
}
