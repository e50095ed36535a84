package policy

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestTokenAssertionSlot(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var signed atomic.Int32
	signer := func(exp time.Time, err error) AssertionSigner {
		return func() (string, time.Time, error) {
			n := signed.Add(1)
			return fmt.Sprintf("sig-%d", n), exp, err
		}
	}
	tests := []struct {
		name      string
		calls     []string // audiences, in order, each at now + i seconds
		expiresIn time.Duration
		want      []string
		signs     int32
	}{
		{"cached for the same audience", []string{"a", "a", "a"}, time.Minute, []string{"sig-1", "sig-1", "sig-1"}, 1},
		{"another audience signs anew", []string{"a", "b", "b"}, time.Minute, []string{"sig-1", "sig-2", "sig-2"}, 2},
		{"an expired assertion signs anew", []string{"a", "a", "a"}, time.Second, []string{"sig-1", "sig-2", "sig-3"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signed.Store(0)
			tok := &Token{}
			for i, aud := range tt.calls {
				at := now.Add(time.Duration(i) * time.Second)
				got, err := tok.Assertion(aud, at, signer(at.Add(tt.expiresIn), nil))
				if err != nil || got != tt.want[i] {
					t.Errorf("call %d: %q %v, want %q", i, got, err, tt.want[i])
				}
			}
			if n := signed.Load(); n != tt.signs {
				t.Errorf("signed %d times, want %d", n, tt.signs)
			}
		})
	}
}

func TestTokenAssertionErrorsAreNotCached(t *testing.T) {
	now := time.Now()
	tok := &Token{}
	boom := errors.New("no key")
	if _, err := tok.Assertion("a", now, func() (string, time.Time, error) { return "", time.Time{}, boom }); !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	got, err := tok.Assertion("a", now, func() (string, time.Time, error) { return "ok", now.Add(time.Minute), nil })
	if err != nil || got != "ok" {
		t.Errorf("after a failure: %q %v, want a fresh signature", got, err)
	}
}

// Concurrent first requests sign once; the others wait for that signature.
func TestTokenAssertionSignsOnceConcurrently(t *testing.T) {
	now := time.Now()
	tok := &Token{}
	var signed atomic.Int32
	sign := func() (string, time.Time, error) {
		signed.Add(1)
		time.Sleep(time.Millisecond) // a signature takes time; let the others pile up
		return "sig", now.Add(time.Minute), nil
	}
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			if got, err := tok.Assertion("a", now, sign); err != nil || got != "sig" {
				t.Errorf("%q %v", got, err)
			}
		})
	}
	wg.Wait()
	if n := signed.Load(); n != 1 {
		t.Errorf("signed %d times, want 1", n)
	}
}
