package pages

import (
	"slices"
	"strconv"
	"time"

	"github.com/schoolgate/schoolgate/authserver"
	"github.com/schoolgate/schoolgate/sitepath"
)

// Views of the admin area: what its templates (pages/admin*.html) show.

// adminPage is what every admin page carries.
type adminPage struct {
	// Title is the page's, School the school's name: every page names
	// the school, so that an operator of several knows where they are.
	Title, School, Person, CSRF string
	// Notice confirms a completed action; Error explains a refused form.
	Notice, Error string
	// Now is when the page is rendered, which times are relative to.
	Now time.Time
}

// Paths lets templates name the area's routes.
func (adminPage) Paths() adminPaths { return theAdminPaths }

type adminPaths struct {
	Overview, Switch, New, Edit, Secret, Delete, Review, People, Disconnect, Activity, Usage, Doctor string
	// Authorize is where the area's applications are sent to authorize.
	Authorize string
}

var theAdminPaths = adminPaths{
	Overview: sitepath.AdminApplications, Switch: adminPathSwitch, New: adminPathNew,
	Edit: adminPathEdit, Secret: adminPathSecret, Delete: adminPathDelete, Review: adminPathReview,
	People: adminPathPeople, Disconnect: adminPathDisconnect, Activity: adminPathActivity, Usage: adminPathUsage,
	Doctor:    adminPathDoctor,
	Authorize: sitepath.Authorize,
}

// adminOverview is one page of each of the overview's lists.
type adminOverview struct {
	adminPage
	Enabled        bool
	Apps, Loopback []authserver.ClientInfo
	// Metadata is sorted by use, as Connected is.
	Metadata []metadataRow
	// Connected is the applications people are connected to, with how
	// many people each.
	Connected                                               []authserver.ConnectedApp
	ConnectedPages, AppsPages, MetadataPages, LoopbackPages pager
}

// adminPeopleView is the people connected to one application, one row
// each however many grants they hold.
type adminPeopleView struct {
	adminPage
	ClientID, Name, Kind string
	// People and Grants are the application's counts.
	People, Grants int
	Connections    []authserver.ConnectionInfo
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
	Confidential, DPoPBound      bool
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
	Client   authserver.ClientInfo
	Loopback bool
}

type adminReviewView struct {
	adminPage
	Client   authserver.ClientInfo
	Scopes   []scopeChoice
	Reviewed bool
}

// page is what every admin page shows; its title is the message key
// (with its placeholders' name-value pairs).
func (a *adminCtx) page(key string, args ...any) adminPage {
	return adminPage{Title: a.t(key, args...), School: a.p.schoolName(), Person: authserver.PersonLabel(a.id),
		CSRF: a.csrf, Now: a.p.cfg.Now()}
}

// scopeChoices are the scopes to choose from, described in lang.
func scopeChoices(lang string, checked []string) []scopeChoice {
	var out []scopeChoice
	for i, sc := range authserver.MemberAppScopes() {
		out = append(out, scopeChoice{ID: "scope-" + strconv.Itoa(i), Name: sc,
			Words: scopeWords(lang, sc), Checked: slices.Contains(checked, sc)})
	}
	return out
}
