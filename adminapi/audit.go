package adminapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/school"
	"github.com/schoolgate/schoolgate/store"
)

// WithAudit gives an admin request's context the audit context of the
// admin API: the events it records name it as the actor, from its
// caller's address.
func WithAudit(r *http.Request) context.Context {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return store.WithAudit(r.Context(), &store.Audit{Actor: store.ActorAdminAPI, ClientIP: host})
}

// auditParams are the parameters GET /schoolgate/audit takes.
var auditParams = []string{"issuer", "subject", "client_id", "type", "since", "until", "limit", "cursor"}

// parseAuditQuery reads the query of GET /schoolgate/audit, refusing
// anything it would not use, so that a typo never widens a search.
func parseAuditQuery(q url.Values, now time.Time) (store.AuditQuery, error) {
	var aq store.AuditQuery
	if err := OnlyParams(q, "the audit", auditParams...); err != nil {
		return aq, err
	}
	aq.Subject, aq.ClientID, aq.Type, aq.Cursor = q.Get("subject"), q.Get("client_id"), q.Get("type"), q.Get("cursor")
	if aq.Type != "" && !slices.Contains(store.EventTypes, aq.Type) {
		return aq, fmt.Errorf("type %q is not an event type; one of %s", aq.Type, strings.Join(store.EventTypes, ", "))
	}
	var err error
	if aq.Since, err = parseWhen("since", q.Get("since"), now); err != nil {
		return aq, err
	}
	if aq.Until, err = parseWhen("until", q.Get("until"), now); err != nil {
		return aq, err
	}
	if !aq.Since.IsZero() && !aq.Until.IsZero() && !aq.Since.Before(aq.Until) {
		return aq, errors.New("since must be before until")
	}
	if v := q.Get("limit"); v != "" {
		if aq.Limit, err = strconv.Atoi(v); err != nil || aq.Limit < 1 || aq.Limit > store.MaxAuditPage {
			return aq, fmt.Errorf("limit must be a number from 1 to %d", store.MaxAuditPage)
		}
	}
	return aq, nil
}

// parseWhen reads a time: RFC 3339, or a duration meaning that long ago
// (24h, 90m).
func parseWhen(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%s must be an RFC 3339 time (2026-11-23T10:00:00Z) or a duration ago (24h), not %q", name, v)
}

func (a API) Audit(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return Error{Status: http.StatusMethodNotAllowed, Err: fmt.Errorf("use GET")}
	}
	q, err := parseAuditQuery(r.URL.Query(), time.Now())
	if err != nil {
		return BadRequest(err.Error())
	}
	s, release, err := a.reader(r.Context(), w, r.URL.Query().Get("issuer"))
	if err != nil {
		return err
	}
	defer release()
	page, err := s.Audit(r.Context(), q)
	switch {
	case errors.Is(err, store.ErrBadCursor):
		return BadRequest(`cursor is not one this school's audit gave; start without it, then pass the answer's "next"`)
	case err != nil:
		return s.WriteUnavailable(w, "reading the audit trail", err)
	}
	if page.Events == nil {
		page.Events = []store.AuditEvent{}
	}
	return school.WriteJSON(w, http.StatusOK, page)
}

// errNoSubject is the 404 of a person of whom nothing is stored.
var errNoSubject = Error{Status: http.StatusNotFound,
	Err: errors.New("nothing is stored about this subject at this school (never seen, or erased already); check the sub")}

func (a API) SubjectExport(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return Error{Status: http.StatusMethodNotAllowed, Err: fmt.Errorf("use GET")}
	}
	subject := r.URL.Query().Get("subject")
	if subject == "" {
		return BadRequest(`name the person: subject=<their sub>`)
	}
	s, release, err := a.reader(r.Context(), w, r.URL.Query().Get("issuer"))
	if err != nil {
		return err
	}
	defer release()
	d, err := s.ExportSubject(r.Context(), subject)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errNoSubject
	case err != nil:
		return s.WriteUnavailable(w, "exporting the person's data", err)
	}
	return school.WriteJSON(w, http.StatusOK, d)
}

func (a API) SubjectErase(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Issuer  string `json:"issuer"`
		Subject string `json:"subject"`
	}
	if err := DecodePost(r, &body); err != nil {
		return err
	}
	if body.Subject == "" {
		return BadRequest(`name the person: "subject": "<their sub>"`)
	}
	s, release, err := a.Find(w, body.Issuer)
	if err != nil {
		return err
	}
	defer release()
	n, err := s.Auth().EraseSubject(r.Context(), body.Subject)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errNoSubject
	case err != nil:
		return s.WriteUnavailable(w, "erasing the person's data", err)
	}
	return school.WriteJSON(w, http.StatusOK, map[string]any{"erased": n})
}
