package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestUpstreamBlock: the school_gateway's upstream block is reverse_proxy's
// own. Two upstreams, one of them down: with an active health check every
// request reaches the live one; without, round robin sends some to the
// dead one (so the health check is what makes the difference).
func TestUpstreamBlock(t *testing.T) {
	live := startSchool(t)
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t)) // nothing listens
	dir := t.TempDir()
	checked, unchecked := freePort(t), freePort(t)
	gw := startGateway(t, dir,
		siteBlock(checked, live.URL, filepath.Join(dir, "a"), fmt.Sprintf(`		upstream %s {
			lb_policy round_robin
			health_uri /healthz
			health_interval 100ms
		}
`, dead)),
		siteBlock(unchecked, live.URL, filepath.Join(dir, "b"), fmt.Sprintf(`		upstream %s {
			lb_policy round_robin
		}
`, dead)))
	_ = gw
	count := func(port int) (ok, bad int) {
		for range 10 {
			status, _, _ := get(t, fmt.Sprintf("http://127.0.0.1:%d/courses/photography-fundamentals", port))
			if status == 200 {
				ok++
			} else {
				bad++
			}
		}
		return ok, bad
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, bad := count(checked)
		if bad == 0 && ok == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with a health check: %d ok, %d failed; the dead upstream is still chosen", ok, bad)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ok, bad := count(unchecked); ok == 0 || bad == 0 {
		t.Errorf("without a health check, round robin over a live and a dead upstream: %d ok, %d failed", ok, bad)
	}
}
