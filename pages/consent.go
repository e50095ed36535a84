package pages

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/sitepath"
	"github.com/schoolgate/schoolgate/store"
)

// The consent page: the authorization server parks the request and
// decides what the page says (authserver.ConsentPage); the page words it
// in the person's language, and its form posts the decision back to the
// server (sitepath.Consent), which records it.

// Consent shows the consent page of a parked request.
func (p *Pages) Consent(w http.ResponseWriter, r *http.Request, c *authserver.ConsentPage) {
	view := consentView{
		School:       p.schoolName(),
		Origin:       p.as.Issuer(),
		ClientName:   c.Client.Name,
		ClientHost:   clientHost(c.Client, c.RedirectURI),
		RedirectHost: hostOf(c.RedirectURI),
		Person:       authserver.PersonLabel(c.Person),
		Action:       sitepath.Consent,
		RequestID:    c.RequestID,
		CSRF:         c.CSRF,
		Approved:     c.Approved,
		AskEachTime:  c.AskEachTime,
		Trust:        trustOf(c.Client),
		Applications: sitepath.AccountApplications,
	}
	lang := p.pageLang(r)
	for _, sc := range c.Scopes {
		view.Scopes = append(view.Scopes, scopeView{sc, scopeWords(lang, sc), slices.Contains(c.Prior, sc)})
	}
	page, err := renderPage(consentTmpl.in(lang), view)
	if err != nil {
		p.cfg.Logger.Error("rendering the consent page", "error", err)
		p.errorPage(w, r, http.StatusInternalServerError, "error.not_shown")
		return
	}
	setPageHeaders(w, " "+originOf(c.RedirectURI))
	setLanguageHeaders(w, lang)
	_, _ = w.Write(page)
}

// consentView is what the consent page shows: who asks (the client, and
// the host that vouches for it), for which school and person, and what.
type consentView struct {
	// School is the school's name, Origin the site it is asked for.
	School, Origin                               string
	ClientName, ClientHost, RedirectHost, Person string
	Scopes                                       []scopeView
	Action, RequestID, CSRF                      string
	// Approved: the person approved every scope before. AskEachTime: the
	// redirect URI does not prove the client, which is why they are asked
	// again.
	Approved, AskEachTime bool
	// Trust is who vouches for the application (trustOf); Applications
	// is the page where the person can remove its access later.
	Trust, Applications string
}

// The consent page's trust cues: an application the school set up (a
// vendor in the configuration, a member application an operator
// created), a metadata-document client an operator reviewed, or one
// nobody at the school looked at (self-registered, or a metadata
// document not reviewed), which the page warns about, naming the host it
// comes from (clientHost).
const (
	trustSchool     = "school"
	trustReviewed   = "reviewed"
	trustUnreviewed = "unreviewed"
)

func trustOf(c authserver.ClientInfo) string {
	switch {
	case c.Kind == store.KindVendor, c.Kind == store.KindApp:
		return trustSchool
	case c.Kind == store.KindMetadata && c.Reviewed:
		return trustReviewed
	}
	return trustUnreviewed
}

// scopeView is one requested scope; Before marks one approved before.
type scopeView struct {
	Name, Words string
	Before      bool
}

// clientHost is the host that vouches for the client: the document host
// of a metadata-document client, else the redirect host.
func clientHost(c authserver.ClientInfo, redirectURI string) string {
	if c.Kind == store.KindMetadata {
		return hostOf(c.ClientID)
	}
	return hostOf(redirectURI)
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}

func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
