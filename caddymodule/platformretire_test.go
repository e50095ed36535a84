package caddymodule

import (
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// buildHold makes a platform's builds wait while on, each until the
// channel it sends on entered is sent to: a build finds its proxy under
// the school's build lock, which it keeps meanwhile.
type buildHold struct {
	on      atomic.Bool
	entered chan chan struct{}
}

func newBuildHold() *buildHold { return &buildHold{entered: make(chan chan struct{})} }

// install puts the hold in tp's builds (before it starts).
func (h *buildHold) install(tp *testPlatform) {
	next := tp.platform.upstream
	tp.platform.upstream = func(g *Gateway) (caddyhttp.Handler, func(), error) {
		if h.on.Load() {
			release := make(chan struct{})
			h.entered <- release
			<-release
		}
		return next(g)
	}
}

// waitForLockWaiter waits until a goroutine waits for a school's build
// lock (in activate) and the school e's is free: a request that waited
// for e has moved on to the school that replaced it (e nil: any waiter).
func waitForLockWaiter(t *testing.T, e *platformSchool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		waiting := false
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "[sync.Mutex.Lock") && strings.Contains(g, "platform.(*School[...]).activate") {
				waiting = true
			}
		}
		if waiting && (e == nil || !e.Building()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no request waits for a school's build")
		}
		time.Sleep(time.Millisecond)
	}
}

// A request whose school's record changes twice while it waits for the
// school to be built (once for the record it found, once for the one
// that replaced it) is served by the school of the newest record, not
// answered 503 as if the platform were ending.
func TestPlatformRecordChangedTwiceDuringARequest(t *testing.T) {
	hold := newBuildHold()
	tp := newTestPlatform(t, 10, hold.install)
	const a = "https://a.example"
	tp.put(t, a, nil, "")
	serve := func() <-chan *httptest.ResponseRecorder {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			rec := httptest.NewRecorder()
			if err := tp.serve(rec, platformRequest(a+discoveryPath)); err != nil {
				t.Error(err)
			}
			done <- rec
		}()
		return done
	}
	hold.on.Store(true)
	// The first request builds the school; the second waits for it.
	first := serve()
	releaseFirst := <-hold.entered
	old := tp.school(a)
	second := serve()
	waitForLockWaiter(t, nil)
	// Changed: the second request meets the old school retired and
	// turns to the new one, which a third request is building.
	tp.put(t, a, nil, `,"code_ttl":"30s"`)
	third := serve()
	releaseThird := <-hold.entered
	releaseFirst <- struct{}{}
	<-first
	waitForLockWaiter(t, old)
	// Changed again before the second request got the new school.
	tp.put(t, a, nil, `,"code_ttl":"40s"`)
	hold.on.Store(false)
	releaseThird <- struct{}{}
	<-third
	if rec := <-second; rec.Code != 200 || issuerOf(rec) != a {
		t.Errorf("the request whose school changed twice: %d %s", rec.Code, rec.Body)
	}
}

// A request that waits for its school's build when the platform ends is
// answered 503 (the config that replaces it serves the next one), not
// sent round looking for a newer school.
func TestPlatformEndsDuringARequest(t *testing.T) {
	hold := newBuildHold()
	tp := newTestPlatform(t, 10, hold.install)
	const a = "https://a.example"
	tp.put(t, a, nil, "")
	hold.on.Store(true)
	results := make(chan *httptest.ResponseRecorder, 2)
	for range 2 {
		go func() {
			rec := httptest.NewRecorder()
			if err := tp.serve(rec, platformRequest(a+discoveryPath)); err != nil {
				t.Error(err)
			}
			results <- rec
		}()
	}
	release := <-hold.entered // one builds, the other waits for it
	waitForLockWaiter(t, nil)
	tp.end(t)
	hold.on.Store(false)
	release <- struct{}{}
	codes := []int{(<-results).Code, (<-results).Code}
	if !slices.Contains(codes, 200) || !slices.Contains(codes, 503) {
		t.Errorf("the request building the school and the one waiting for it as the platform ends: %v", codes)
	}
}
