package adminapi

import (
	"encoding/json"
	"time"
)

// The platform's schools written from outside, through the admin API
// (and caddy schoolgate schools, package operator):
//
//	GET  /schoolgate/schools(?limit=&after=)   the schools of the platforms, with their running state, a page at a time
//	GET  /schoolgate/schools?issuer=…          one school as its registry has it, with its config
//	POST /schoolgate/schools                   a record: adds the school or replaces it
//	POST /schoolgate/schools/remove            {"issuer"}: removes the school (its data stays)
//
// A write goes to the registry, which applies it to every instance
// within its delay, this one at once for a registry dir. The running
// table is what a listing shows: the schools as served now.

// SchoolView is a school as /schoolgate/schools shows it.
type SchoolView struct {
	Issuer    string    `json:"issuer"`
	Hosts     []string  `json:"hosts"`
	Disabled  bool      `json:"disabled"`
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
	// Platform names the registry (dir <path>, or postgres).
	Platform string `json:"platform"`
	// State is active (built), idle (its record only), failed (Reason,
	// NextTry) or disabled; pending for a record written but not yet
	// applied here (a database registry's delay).
	State   string     `json:"state"`
	Reason  string     `json:"reason,omitempty"`
	NextTry *time.Time `json:"next_try,omitempty"`
	// Config is the school_gateway options, shown for one school only.
	Config json.RawMessage `json:"config,omitempty"`
}

// SchoolWrite is the body of a POST to /schoolgate/schools, and, issuer
// and if_version only, to /schoolgate/schools/remove.
type SchoolWrite struct {
	Platform string          `json:"platform,omitempty"`
	Issuer   string          `json:"issuer"`
	Hosts    []string        `json:"hosts,omitempty"`
	Disabled bool            `json:"disabled,omitempty"`
	Config   json.RawMessage `json:"config,omitempty"`
	// IfVersion makes the write conditional: refused (409) unless the
	// stored record has this version; 0 means there must be none.
	IfVersion *int64 `json:"if_version,omitempty"`
}

const (
	// DefaultSchoolsPage is a listing's page without limit;
	// MaxSchoolsPage the most a limit may ask for.
	DefaultSchoolsPage = 100
	MaxSchoolsPage     = 1000
)

// SchoolsPage is the answer of GET /schoolgate/schools: a page of
// schools in order, and Next, the cursor of the page that follows (pass
// it as after), empty on the last page.
type SchoolsPage struct {
	Schools []SchoolView `json:"schools"`
	Next    string       `json:"next,omitempty"`
}
