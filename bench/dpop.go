package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schoolgate/schoolgate/internal/dpopclient"
	"github.com/schoolgate/schoolgate/policy"
)

// DPoP (RFC 9449) beside bearer tokens: a member token bound to an ES256
// key (what oauth4webapi and openid-client make by default), used at the
// Account API with a new proof per request, and code exchanges with a
// proof (-dpop-alg picks another algorithm). Proofs are signed before each run, never during it: the bench's
// signing would otherwise share the CPU with the gateway it measures, and
// a client signs on its own machine.

var errProofsRanOut = errors.New("the run used every proof signed for it; sign more")

// proofPool hands out proofs signed before a run.
type proofPool struct {
	proofs []string
	next   atomic.Int64
}

func (p *proofPool) take() (string, bool) {
	i := p.next.Add(1) - 1
	if p == nil || i >= int64(len(p.proofs)) {
		return "", false
	}
	return p.proofs[i], true
}

// signProofs signs n proofs of k for method and url (with ath for token
// when not empty), on every CPU. Their iat is when the signing is
// expected to end, so that they are fresh when the run uses them
// however long signing takes (an RSA key's proofs are slow to make): a
// first few are timed to tell.
func signProofs(k *dpopclient.Key, n int, method, url, token string) *proofPool {
	p := &proofPool{proofs: make([]string, n)}
	const sample = 64
	start := time.Now()
	sign := func(from int, iat time.Time) {
		var next atomic.Int64
		next.Store(int64(from))
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < n && (from > 0 || i < sample); i = int(next.Add(1) - 1) {
					p.proofs[i] = k.Proof(method, url, token, iat)
				}
			})
		}
		wg.Wait()
	}
	sign(0, start)
	if n > sample {
		perProof := time.Since(start) / sample
		sign(sample, time.Now().Add(perProof*time.Duration(n-sample)))
	}
	return p
}

// dpopSetup makes the bench's DPoP key and a member token bound to it.
func (b *bench) dpopSetup(ctx context.Context) error {
	key, err := dpopclient.NewKey(b.cfg.dpopAlg)
	if err != nil {
		return err
	}
	b.dpopKey = key
	o := *b.oauth
	o.dpop = key
	b.dpopOAuth = &o
	code, err := o.authorize(ctx)
	if err != nil {
		return err
	}
	b.dpopMember, err = o.exchange(ctx, code)
	b.grants++
	if err != nil {
		return fmt.Errorf("a DPoP code exchange: %v", err)
	}
	return nil
}

// dpopTarget is the protected request with the DPoP-bound token: a new
// proof each, from proofs signed before the run, as many as the fastest
// target so far answered in a run's time, and half again.
func (b *bench) dpopTarget(url string) target {
	var proofs atomic.Pointer[proofPool]
	return target{
		name: "gateway (member token, DPoP " + b.cfg.dpopAlg + ")",
		prepare: func(rate float64) {
			n := int(rate*b.cfg.duration.Seconds()*1.5) + 1000
			proofs.Store(signProofs(b.dpopKey, n, http.MethodPost, url, b.dpopMember.Access))
		},
		req: func(ctx context.Context, _ int) error {
			proof, ok := proofs.Load().take()
			if !ok {
				return errProofsRanOut
			}
			return b.post(ctx, url, "", viewerQuery,
				map[string]string{"Authorization": "DPoP " + b.dpopMember.Access, "DPoP": proof}, `"viewer"`)
		},
	}
}

// dpopNote states the DPoP target against the bearer one, and what the
// replay cache holds at the rate measured.
func (b *bench) dpopNote(bearer, dpop []stats) {
	rate := median(dpop, stats.rps)
	entries := rate * replayKept.Seconds()
	fmt.Fprintf(&b.notes, "\nprotected: DPoP (%s) ÷ bearer in this run: %.2f× (target ≥ 0.85×), p99 %.2f× (target ≤ 1.15×); "+
		"Caddy CPU a request %s against %s. At %.0f proofs a second the replay cache holds at most %.0f proofs "+
		"(%.0f s of them), %.1f MB at %d bytes a proof (BenchmarkReplayCacheMemory)\n",
		b.cfg.dpopAlg, rate/median(bearer, stats.rps), p99(dpop)/p99(bearer),
		us(median(dpop, func(s stats) float64 { return float64(s.cpuPerRequest()) })),
		us(median(bearer, func(s stats) float64 { return float64(s.cpuPerRequest()) })),
		rate, entries, replayKept.Seconds(), entries*replayBytes/1e6, replayBytes)
}

// replayKept is the longest a proof stays in the replay cache: its
// window either way and one bucket (policy/dpopreplay.go); replayBytes
// what one takes, as BenchmarkReplayCacheMemory measured it.
const (
	replayKept  = 2*policy.ProofWindow + 10*time.Second
	replayBytes = 27
)

// addProof adds a DPoP proof for the token endpoint to req, from pool
// when one is given, else signed now.
func (o *oauthClient) addProof(req *http.Request) error {
	if o.dpop == nil {
		return nil
	}
	if o.proofs != nil {
		p, ok := o.proofs.take()
		if !ok {
			return errProofsRanOut
		}
		req.Header.Set("DPoP", p)
		return nil
	}
	req.Header.Set("DPoP", o.dpop.Proof(http.MethodPost, o.origin+"/api/oauth/token", "", time.Now()))
	return nil
}

// checkTokenType checks that a DPoP client got DPoP tokens, a bearer
// one bearer tokens.
func (o *oauthClient) checkTokenType(body []byte) error {
	want := `"token_type":"Bearer"`
	if o.dpop != nil {
		want = `"token_type":"DPoP"`
	}
	if o.peer || strings.Contains(string(body), want) {
		return nil
	}
	return fmt.Errorf("not %s: %.200s", want, body)
}

// dpopRound measures a round of code exchanges with a DPoP proof.
func (b *bench) dpopRound(t *tokenSite) error {
	d, err := b.dpopExchanges(t, b.cfg.exchanges)
	if err != nil {
		return fmt.Errorf("code exchange with DPoP: %v", err)
	}
	t.exchDPoP = append(t.exchDPoP, d)
	return nil
}

// dpopExchanges authorizes n codes, signs n proofs and exchanges the
// codes with them at full concurrency, measured.
func (b *bench) dpopExchanges(t *tokenSite, n int) (stats, error) {
	codes, _, err := b.codesAt(t.oauth, n)
	if err != nil {
		return stats{}, err
	}
	o := *b.dpopOAuth
	o.proofs = signProofs(b.dpopKey, len(codes.items), http.MethodPost, o.origin+"/api/oauth/token", "")
	s, err := b.fixedWorkAt(t.pid(), b.cfg.concurrency, len(codes.items), func(ctx context.Context, _ int) error {
		code, ok := codes.take()
		if !ok {
			return errPoolEmpty
		}
		_, err := o.exchange(ctx, code)
		return err
	})
	b.grants += s.requests - s.failures
	return s, err
}
