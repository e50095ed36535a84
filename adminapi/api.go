// Package adminapi is the operator's admin API over a running school,
// without Caddy: the requests' parsing and checks, the operations on one
// school's authorization server and store, and their answers (JSON,
// errors with their status), and the platforms' registries written and
// read (Schools). The adapter registers its routes in Caddy's admin API,
// finds the school an operation names (API.Find), hands over the running
// platforms (Platform) and answers an Error as Caddy's own.
package adminapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/school"
)

// API answers the admin routes that operate on one school.
type API struct {
	// Find finds the running school with the issuer, however the
	// operator spells it, held until release; a refusal is an error with
	// its status (a school that failed to load answers 503 with
	// Retry-After set on w).
	Find func(w http.ResponseWriter, issuer string) (s *school.Site, release func(), err error)
	// Read, if set, finds the school with the issuer for an operation
	// that only reads its store (the audit trail, a person's export, the
	// clients, the grants, the MCP connections switch) without building
	// a platform's idle school (reader.go); unset, such reads use Find.
	Read func(ctx context.Context, w http.ResponseWriter, issuer string) (r Reader, release func(), err error)
	// BackupAll copies every running school's store into dir, and says
	// which it did not copy and why.
	BackupAll func(ctx context.Context, dir string) ([]BackupResult, []BackupSkip, error)
}

// Error is a refusal of the admin API: its status and what it says.
// The adapter answers it as Caddy's admin API answers its own errors.
type Error struct {
	Status int
	Err    error
}

func (e Error) Error() string { return e.Err.Error() }

func (e Error) Unwrap() error { return e.Err }

// BadRequest is a 400 saying msg.
func BadRequest(msg string) error {
	return Error{Status: http.StatusBadRequest, Err: fmt.Errorf("%s", msg)}
}

// DecodePost reads the JSON body of a POST.
func DecodePost(r *http.Request, v any) error {
	if r.Method != http.MethodPost {
		return Error{Status: http.StatusMethodNotAllowed, Err: fmt.Errorf("use POST")}
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(v); err != nil {
		return Error{Status: http.StatusBadRequest, Err: fmt.Errorf("the body must be a JSON object: %v", err)}
	}
	return nil
}

// OnlyParams refuses a query naming a parameter an admin route does not
// take, or one given twice, so that a typo never widens what a GET reads
// or answers; what names the route in the message ("the audit").
func OnlyParams(q url.Values, what string, allowed ...string) error {
	for k, v := range q {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("unknown parameter %q; %s takes %s", k, what, strings.Join(allowed, ", "))
		}
		if len(v) > 1 {
			return fmt.Errorf("%s is given %d times; give it once", k, len(v))
		}
	}
	return nil
}

// fromBody reads {"issuer": "..."} from a POST and finds that school,
// held until release (Find).
func (a API) fromBody(w http.ResponseWriter, r *http.Request) (s *school.Site, release func(), err error) {
	var body struct {
		Issuer string `json:"issuer"`
	}
	if err := DecodePost(r, &body); err != nil {
		return nil, nil, err
	}
	return a.Find(w, body.Issuer)
}

// RotateKeys answers POST /schoolgate/keys/rotate {"issuer"}: a new
// signing key, published now, signing an hour later.
func (a API) RotateKeys(w http.ResponseWriter, r *http.Request) error {
	s, release, err := a.fromBody(w, r)
	if err != nil {
		return err
	}
	defer release()
	kid, signFrom, err := s.Auth().RotateKeys(r.Context())
	if err != nil {
		// Generating a key does not fail at run time; storing and
		// reloading the keys is what does.
		return s.WriteUnavailable(w, "rotating the signing keys", err)
	}
	return school.WriteJSON(w, http.StatusOK, map[string]any{"kid": kid, "signs_from": signFrom.UTC().Format(time.RFC3339)})
}
