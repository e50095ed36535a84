package policy

import (
	"hash/maphash"
	"sync"
	"time"
)

// A proof is good once (RFC 9449 §11.1): the replay cache remembers the
// proofs a school accepted while their iat is within ProofWindow, and a
// second one with the same key and jti is refused. It lives in the
// instance's memory: a proof replayed at another instance of the school
// is accepted there once within its window (docs/scale-out.md). What it
// holds is bounded by time, not by a count: proofs are kept in buckets by
// their iat, ten seconds each, and a bucket is dropped whole once every
// iat it can hold is outside the window, so nothing is swept entry by
// entry; a proof stays at most 130 seconds. A proof takes 8 bytes of key
// in a map, about 27 with the map's own overhead
// (BenchmarkReplayCacheMemory). The cap refuses new proofs (503) rather
// than forget ones still inside the window: 2,097,152 proofs, about 55
// MiB, which is 16,000 proofs a second kept for 130 seconds, more than one
// instance verifies for one school.

const (
	// replayBucket is the seconds of iat one bucket holds.
	replayBucket = 10
	// replayBuckets is the ring's length: more than the buckets an
	// accepted iat can fall in (2×ProofWindow/replayBucket + 1).
	replayBuckets = 16
	// maxReplayEntries caps what the cache holds.
	maxReplayEntries = 1 << 21
)

type replayCache struct {
	mu    sync.Mutex
	seed  maphash.Seed
	ring  [replayBuckets]replaySlot
	count int
	max   int
}

type replaySlot struct {
	slot int64 // iat / replayBucket, of the proofs it holds
	seen map[uint64]struct{}
}

func newReplayCache() *replayCache {
	return &replayCache{seed: maphash.MakeSeed(), max: maxReplayEntries}
}

// Replay outcomes.
const (
	replayFresh = iota
	replaySeen
	replayFull
)

// check records p and reports whether it was fresh, seen before, or
// could not be recorded. p's iat is within ProofWindow of now. A proof is
// known by its key and jti, hashed with a seed of this process's: equal
// hashes of two different proofs (one chance in 2^64 per pair) refuse the
// second, which its client answers with a new proof.
func (c *replayCache) check(p *Proof, now time.Time) int {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(p.JKT)
	h.WriteByte(0)
	h.WriteString(p.JTI)
	key := h.Sum64()
	slot := floorDiv(p.IssuedAt, replayBucket)
	oldest := floorDiv(now.Unix()-int64(ProofWindow/time.Second), replayBucket)

	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.ring {
		if s := &c.ring[i]; s.seen != nil && s.slot < oldest {
			c.count -= len(s.seen)
			*s = replaySlot{}
		}
	}
	s := &c.ring[int(slot%replayBuckets+replayBuckets)%replayBuckets]
	if s.seen == nil || s.slot != slot {
		c.count -= len(s.seen)
		*s = replaySlot{slot: slot, seen: map[uint64]struct{}{}}
	}
	if _, ok := s.seen[key]; ok {
		return replaySeen
	}
	if c.count >= c.max {
		return replayFull
	}
	s.seen[key] = struct{}{}
	c.count++
	return replayFresh
}

// size is how many proofs the cache holds.
func (c *replayCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

// floorDiv divides rounding towards minus infinity, so that buckets of
// negative times (a hostile iat) are whole too.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
