package authserver

import (
	"slices"
	"strconv"
	"time"

	"github.com/schoolgate/schoolgate/policy"
	"github.com/schoolgate/schoolgate/sitepath"
)

// Views of the admin area: what its templates (pages/admin*.html) show.

// adminPage is what every admin page carries.
type adminPage struct {
	Title, Person, CSRF string
	// Notice confirms a completed action; Error explains a refused form.
	Notice, Error string
}

// Paths lets templates name the area's routes.
func (adminPage) Paths() adminPaths { return theAdminPaths }

type adminPaths struct {
	Overview, Switch, New, Edit, Secret, Delete, Review, People, Disconnect string
	// Authorize is where the area's applications are sent to authorize.
	Authorize string
}

var theAdminPaths = adminPaths{
	Overview: sitepath.AdminApplications, Switch: adminPathSwitch, New: adminPathNew,
	Edit: adminPathEdit, Secret: adminPathSecret, Delete: adminPathDelete, Review: adminPathReview,
	People: adminPathPeople, Disconnect: adminPathDisconnect, Authorize: sitepath.Authorize,
}

type adminOverview struct {
	adminPage
	Enabled                  bool
	Apps, Metadata, Loopback []ClientInfo
	// Connected is every application people are connected to, with how
	// many people each.
	Connected []ConnectedApp
}

// ConnectedApp is an application with how many people are connected to
// it, and by how many live grants (a person who allowed it on two devices
// is one person and two grants).
type ConnectedApp struct {
	ClientID string `json:"client_id"`
	Name     string `json:"client_name"`
	// Kind is empty for a client no longer known.
	Kind   string `json:"kind,omitempty"`
	People int    `json:"people"`
	Grants int    `json:"grants"`
}

// KindWords says what kind of application it is.
func (c ConnectedApp) KindWords() string {
	return GrantInfo{Kind: c.Kind, ClientID: c.ClientID}.KindWords()
}

// KindWords says what kind of application it is.
func (v adminPeopleView) KindWords() string {
	return GrantInfo{Kind: v.Kind, ClientID: v.ClientID}.KindWords()
}

// adminPeopleView is the people connected to one application, one row
// each however many grants they hold.
type adminPeopleView struct {
	adminPage
	ClientID, Name, Kind string
	// People and Grants are the application's counts.
	People, Grants int
	Connections    []ConnectionInfo
	Next           string
	More           bool
}

type scopeChoice struct {
	ID, Name, Words string
	Checked         bool
}

type adminAppForm struct {
	adminPage
	// ClientID is set when editing.
	ClientID, Name, RedirectURIs string
	Confidential                 bool
	Scopes                       []scopeChoice
	FormNonce                    string
}

type adminSecretView struct {
	adminPage
	ClientID, Name, Secret, AuthMethod, Issuer string
	Scopes, RedirectURIs                       []string
	Created                                    bool
}

type adminDeleteView struct {
	adminPage
	Client   ClientInfo
	Loopback bool
}

type adminReviewView struct {
	adminPage
	Client   ClientInfo
	Scopes   []scopeChoice
	Reviewed bool
}

// page is what every admin page shows.
func (a *adminCtx) page(title string) adminPage {
	return adminPage{Title: title, Person: personLabel(a.id), CSRF: a.csrf}
}

func formatAdminTime(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func scopeChoices(checked []string) []scopeChoice {
	var out []scopeChoice
	for i, sc := range memberAppScopes() {
		out = append(out, scopeChoice{ID: "scope-" + strconv.Itoa(i), Name: sc,
			Words: policy.ScopeDescription(sc), Checked: slices.Contains(checked, sc)})
	}
	return out
}
