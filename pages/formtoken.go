package pages

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/schoolgate/schoolgate/policy"
)

// Forms of the admin area and the person's area carry a token bound to
// the person and to the time the page was rendered, derived from the
// site's key (authserver's FormKey), and a browser's word that they were
// sent from this site is checked before anything else.

// adminCSRFMaxAge bounds how long a rendered form stays valid; adminCSRFSkew
// tolerates the clocks of several gateway instances.
const (
	adminCSRFMaxAge = 12 * time.Hour
	adminCSRFSkew   = 5 * time.Minute
)

// sameOriginForm refuses a form a browser says came from another site.
// "Origin: null" is what browsers send for this area's own forms, whose
// pages carry Referrer-Policy: no-referrer, so it is left to the CSRF
// token; Sec-Fetch-Site, where sent, must be same-origin.
func sameOriginForm(r *http.Request, issuer string) bool {
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !policy.SameOrigin(o, issuer) {
		return false
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

// Form tokens bind a form to the person it was rendered for (their
// subject) and to the time it was rendered: "<unix time>.<HMAC-SHA256>".
// The purpose is part of the MAC, so that neither area's token passes for
// the other's.
const (
	purposeAdmin   = "schoolgate admin form"
	purposeAccount = "schoolgate account form"
)

// adminCSRFToken is the token of the operator's admin forms.
func adminCSRFToken(key []byte, subject string, now time.Time) string {
	return formToken(key, purposeAdmin, subject, now)
}

// checkAdminCSRF verifies an admin form's token in constant time.
func checkAdminCSRF(key []byte, subject, token string, now time.Time) bool {
	return checkFormToken(key, purposeAdmin, subject, token, now)
}

func formToken(key []byte, purpose, subject string, now time.Time) string {
	ts := strconv.FormatInt(now.Unix(), 10)
	return ts + "." + formMAC(key, purpose, subject, ts)
}

func formMAC(key []byte, purpose, subject, ts string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose + "\x00" + subject + "\x00" + ts))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkFormToken verifies a token in constant time: issued to subject for
// purpose, not in the future beyond the skew, not older than the maximum.
func checkFormToken(key []byte, purpose, subject, token string, now time.Time) bool {
	ts, mac, ok := strings.Cut(token, ".")
	if !ok || len(token) > 128 {
		return false
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	issued := time.Unix(secs, 0)
	if issued.After(now.Add(adminCSRFSkew)) || now.Sub(issued) > adminCSRFMaxAge {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(formMAC(key, purpose, subject, ts)))
}

// formIssued checks a POSTed form's token: issued to this operator, and
// not long ago. A refused form is answered here.
func (a *adminCtx) formIssued(key []byte, now time.Time) bool {
	if checkAdminCSRF(key, a.id.Subject, a.r.PostForm.Get("csrf_token"), now) {
		return true
	}
	a.fail(http.StatusForbidden, "admin.error.form_expired")
	return false
}
