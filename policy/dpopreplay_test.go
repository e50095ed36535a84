package policy

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

func proofAt(jti string, iat time.Time) *Proof {
	return &Proof{JKT: "key", JTI: jti, IssuedAt: iat.Unix()}
}

// A proof is remembered while its iat is inside the window, and
// forgotten, bucket by bucket, once it is out: what the cache holds is
// the last two minutes' proofs, whatever came before.
func TestReplayCacheWindow(t *testing.T) {
	c := newReplayCache()
	now := dpopNow
	for i := range 100 {
		if got := c.check(proofAt(fmt.Sprint(i), now), now); got != replayFresh {
			t.Fatalf("proof %d: %d, want fresh", i, got)
		}
	}
	if got := c.check(proofAt("7", now), now.Add(ProofWindow)); got != replaySeen {
		t.Errorf("a replay at the window's end: %d, want seen", got)
	}
	// A proof from the far edges of the window lands in its own bucket.
	if c.check(proofAt("early", now.Add(-ProofWindow)), now) != replayFresh ||
		c.check(proofAt("late", now.Add(ProofWindow)), now) != replayFresh {
		t.Error("proofs at the window's edges refused")
	}
	if c.size() != 102 {
		t.Errorf("%d remembered, want 102", c.size())
	}
	// Once the window has moved past them, the first hundred are gone
	// (their iat could no longer be accepted) and the late one is kept.
	later := now.Add(ProofWindow + 2*replayBucket*time.Second)
	if c.check(proofAt("new", later), later) != replayFresh {
		t.Fatal("a new proof refused")
	}
	if c.size() != 2 {
		t.Errorf("%d remembered after the window moved, want the late one and the new one", c.size())
	}
	if c.check(proofAt("late", now.Add(ProofWindow)), later) != replaySeen {
		t.Error("the late proof was forgotten while its iat is inside the window")
	}
}

// A full cache refuses new proofs rather than forget ones inside the
// window.
func TestReplayCacheFull(t *testing.T) {
	c := newReplayCache()
	c.max = 3
	for i := range 3 {
		c.check(proofAt(fmt.Sprint(i), dpopNow), dpopNow)
	}
	if got := c.check(proofAt("one more", dpopNow), dpopNow); got != replayFull {
		t.Errorf("%d, want full", got)
	}
	if got := c.check(proofAt("1", dpopNow), dpopNow); got != replaySeen {
		t.Errorf("a replay into a full cache: %d, want seen", got)
	}
}

// BenchmarkReplayCacheMemory measures what a remembered proof costs: the
// heap of a cache holding 2^20 proofs spread over the window, per proof.
func BenchmarkReplayCacheMemory(b *testing.B) {
	const n = 1 << 20
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := newReplayCache()
		for i := range n {
			// Spread over 2 minutes of iat, as a steady rate would.
			iat := dpopNow.Add(time.Duration(i%120-60) * time.Second)
			c.check(&Proof{JKT: "k", JTI: fmt.Sprint(i), IssuedAt: iat.Unix()}, dpopNow)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/proof")
		runtime.KeepAlive(c)
	}
}

func BenchmarkReplayCheck(b *testing.B) {
	c := newReplayCache()
	p := &Proof{JKT: "k", IssuedAt: dpopNow.Unix()}
	jtis := make([]string, b.N)
	for i := range jtis {
		jtis[i] = fmt.Sprint(i)
	}
	b.ResetTimer()
	for i := range b.N {
		p.JTI = jtis[i]
		c.check(p, dpopNow)
	}
}
