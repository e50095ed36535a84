package school

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/schoolgate/schoolgate/admission"
	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/mcpserver"
	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// Every request is admitted once its route is known: under the anonymous
// /mcp limit of its address, the school's budget (429 when spent), and
// the school's share of the instance (package admission; 503 past its
// turn). A refusal is answered here in the shape of the endpoint asked,
// with Retry-After, and counted by cause; it writes nothing to the store
// and takes nothing from another school.

// route is what a request is for its admission: which limits count it,
// and the shape of its refusal.
type route uint8

const (
	routeAuth      route = iota // the authorization server's paths
	routePublic                 // its public documents: no budget counts them
	routeMCP                    // /mcp
	routeDocument               // the generated documents
	routeProtected              // the protected API
	routeLegacy                 // everything else: the legacy site
)

// routeOf is the route of a canonical path.
func routeOf(path string, protected bool) route {
	switch {
	case sitepath.IsAuthServer(path):
		if authserver.IsPublicDocument(path) {
			return routePublic
		}
		return routeAuth
	case sitepath.IsMCP(path):
		return routeMCP
	case sitepath.IsDocument(path):
		return routeDocument
	case protected:
		return routeProtected
	}
	return routeLegacy
}

// The causes of a refusal, as Observer.Refusal counts them; a client
// that went away while it waited is not counted.
const (
	refusedFairShare  = store.CauseFairShare
	refusedBudget     = store.CauseBudgetRequests
	refusedBudgetMCP  = store.CauseBudgetMCPAnonymous
	refusedMCPAddress = store.CauseMCPAnonymousAddress
	refusedClientGone = store.NumCauses
)

// The statuses of a refusal: a limit reached is the caller's or the
// school's own doing (429); a turn that did not come in time is the
// instance's (503).
const (
	statusBudgetSpent   = http.StatusTooManyRequests
	statusTurnNotComing = http.StatusServiceUnavailable
)

// budgets are the school's buckets (budget.go); nil ones limit nothing.
type budgets struct {
	requests, mcpAnonymous *bucket
}

func newBudgets(b *Budget, instances func() int) budgets {
	if b == nil {
		return budgets{}
	}
	return budgets{requests: newBucket(authserver.LimitOf(b.Requests), instances),
		mcpAnonymous: newBucket(authserver.LimitOf(b.MCPAnonymous), instances)}
}

// admit lets the request in, or answers it and reports false. The slot
// is the request's hold on the instance, to release once the gateway's
// own work for it is done.
func (s *Site) admit(w http.ResponseWriter, r *http.Request, rt route) (admission.Slot, bool) {
	anonymousMCP := rt == routeMCP && r.Method != http.MethodOptions && r.Header.Get("Authorization") == ""
	if anonymousMCP {
		if ok, wait := s.as.AllowAnonymousMCP(r); !ok {
			s.refuse(w, r, rt, statusBudgetSpent, wait, refusedMCPAddress)
			return admission.Slot{}, false
		}
	}
	budgeted := s.budget.requests != nil || s.budget.mcpAnonymous != nil
	if s.cfg.Admission == nil {
		return admission.Slot{}, !budgeted || s.takeBudget(w, r, rt, anonymousMCP)
	}
	// Read before the wait for a turn, taken once admitted: a spent
	// budget waits for nothing, and a refused turn spends nothing.
	if budgeted && !s.budgetLeft(w, r, rt, anonymousMCP) {
		return admission.Slot{}, false
	}
	slot, err := s.admitTraced(r.Context())
	if err == nil && budgeted && !s.takeBudget(w, r, rt, anonymousMCP) {
		slot.Release()
		return admission.Slot{}, false
	}
	if err != nil {
		var ref *admission.Refusal
		if errors.As(err, &ref) {
			s.refuse(w, r, rt, statusTurnNotComing, ref.RetryAfter, refusedFairShare)
		} else {
			// The client went away while it waited: nobody reads this.
			s.refuse(w, r, rt, statusTurnNotComing, time.Second, refusedClientGone)
		}
		return admission.Slot{}, false
	}
	return slot, true
}

// budgetLeft reads the school's budget: whether the request may go on,
// taking nothing, and answers it 429 when not.
func (s *Site) budgetLeft(w http.ResponseWriter, r *http.Request, rt route, anonymousMCP bool) bool {
	now := s.now()
	if rt != routePublic {
		if ok, wait := s.budget.requests.ready(now); !ok {
			s.refuse(w, r, rt, statusBudgetSpent, wait, refusedBudget)
			return false
		}
	}
	if anonymousMCP {
		if ok, wait := s.budget.mcpAnonymous.ready(now); !ok {
			s.refuse(w, r, rt, statusBudgetSpent, wait, refusedBudgetMCP)
			return false
		}
	}
	return true
}

// takeBudget takes the request's events from the school's budget, or
// answers it 429: an anonymous /mcp call refused by its own budget gives
// back the event it took from the school's requests, so that a refused
// request spends nothing.
func (s *Site) takeBudget(w http.ResponseWriter, r *http.Request, rt route, anonymousMCP bool) bool {
	now := s.now()
	var taken *rate.Reservation
	if rt != routePublic {
		res, ok, wait := s.budget.requests.reserve(now)
		if !ok {
			s.refuse(w, r, rt, statusBudgetSpent, wait, refusedBudget)
			return false
		}
		taken = res
	}
	if anonymousMCP {
		if ok, wait := s.budget.mcpAnonymous.allow(now); !ok {
			if taken != nil {
				taken.CancelAt(now)
			}
			s.refuse(w, r, rt, statusBudgetSpent, wait, refusedBudgetMCP)
			return false
		}
	}
	return true
}

// refuse answers a request not admitted, in its endpoint's shape: the
// error page in the person's language for pages, RFC 6749 JSON at the
// authorization server's other endpoints, a JSON-RPC error at /mcp, the
// JSON error of the protected API, plain text for the documents and for
// the legacy site's non-page requests. Every one carries Retry-After.
func (s *Site) refuse(w http.ResponseWriter, r *http.Request, rt route, status int, wait time.Duration, cause store.Cause) {
	if cause != refusedClientGone {
		s.observe.Refusal(cause)
	}
	secs := authserver.RetryAfterSeconds(wait)
	why := "the school is busy"
	if status == statusBudgetSpent {
		why = "the school's budget of requests is spent"
		if cause == refusedMCPAddress {
			why = "too many anonymous requests from this address"
		}
	}
	msg := fmt.Sprintf("%s; retry after %d s", why, secs)
	h := w.Header()
	switch {
	case rt == routeAuth || rt == routePublic:
		s.as.WriteBusy(w, r, status, wait)
		return
	case rt == routeLegacy && wantsPage(r):
		s.as.WriteBusyPage(w, r, status, wait)
		return
	}
	h.Set("Retry-After", strconv.Itoa(secs))
	h.Set("Cache-Control", "no-store")
	switch rt {
	case routeMCP:
		policy.AllowCORS(h, "")
		mcpserver.WriteBusy(w, status, msg)
	case routeProtected:
		policy.AllowCORS(h, "")
		_ = WriteJSON(w, status, map[string]string{"error": "temporarily_unavailable", "error_description": msg})
	default:
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, msg+"\n")
	}
}

// wantsPage reports whether a request is a browser's for a page: a GET
// or HEAD that accepts HTML.
func wantsPage(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		strings.Contains(r.Header.Get("Accept"), "text/html")
}

// pausingTransport pauses the request's slot (store.Waiter) while a
// call of the school's own waits on the legacy server (a session lookup,
// an Account API call): from before it waits for a place within the
// school's bound until its body is closed, when the place has been given
// back. So a request never waits for a place while holding a slot, nor
// for its turn while holding a place: a slot's holder waiting for the
// place of one that waits for a slot would hold both until the bound's
// wait ran out.
type pausingTransport struct{ base http.RoundTripper }

func (t pausingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w := store.WaiterOf(r.Context())
	if w == nil {
		return t.base.RoundTrip(r)
	}
	w.Pause()
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		w.Resume()
		return nil, err
	}
	resp.Body = &resumingBody{ReadCloser: resp.Body, resume: w.Resume}
	return resp, nil
}

// resumingBody resumes the request once its body is closed, and the
// place it held with it given back.
type resumingBody struct {
	io.ReadCloser
	once   sync.Once
	resume func()
}

func (b *resumingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.resume)
	return err
}
