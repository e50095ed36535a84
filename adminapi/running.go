package adminapi

import "time"

// The answers of the routes about what an instance runs, whose lists the
// adapter makes from its App and platforms.

// SchoolStatus is a running school as GET /schoolgate/running lists it:
// a site block's, or a platform's (built or not).
type SchoolStatus struct {
	Issuer string `json:"issuer"`
	// State is serving (something of the school has been used since it
	// was built), lazy (nothing has: no index, MCP server or documents
	// in memory) or failed (its data did not load; Reason says why).
	State       string   `json:"state"`
	Reason      string   `json:"reason,omitempty"`
	Data        string   `json:"data"`
	KeyIDs      []string `json:"key_ids"`
	CanSign     bool     `json:"can_sign"`
	CatalogFrom string   `json:"catalog,omitempty"`
	Courses     int      `json:"courses"`
	// LiveGrants counts the grants with a live token, over all clients.
	LiveGrants *int `json:"live_grants,omitempty"`
	// Since is when the school's state was built; a reload that leaves the
	// school's configuration alike keeps it, and this time.
	Since time.Time `json:"since"`
	// CatalogRefreshed is the last successful fetch of the catalog feed.
	CatalogRefreshed *time.Time `json:"catalog_refreshed,omitempty"`
	// StoreBytes is the size of the school's bbolt file; a database
	// reports its own.
	StoreBytes int64 `json:"store_bytes,omitempty"`
	// NextTry is when a failed school is next built again.
	NextTry *time.Time `json:"next_try,omitempty"`
	// Platform names the registry of a school of a school_platform
	// (dir <path>, or postgres); its State is then active (built),
	// idle (not built: nothing but its record is in memory), failed or
	// disabled.
	Platform string `json:"platform,omitempty"`
}

// PlatformSummary is a school_platform as GET /schoolgate/health
// reports it.
type PlatformSummary struct {
	// Registry names the registry: dir <path>, or postgres.
	Registry string `json:"registry"`
	// Schools is the registry's size: its records, disabled included.
	Schools int `json:"schools"`
	// Active counts the built schools, Failed those that failed to
	// build (their entries in "sites" say why).
	Active    int `json:"active"`
	Failed    int `json:"failed"`
	Disabled  int `json:"disabled"`
	MaxActive int `json:"max_active"`
	// RegistryError is why the registry could not be read last, with
	// NextTry, when it is read again; built schools keep serving
	// meanwhile.
	RegistryError string     `json:"registry_error,omitempty"`
	NextTry       *time.Time `json:"next_try,omitempty"`
}
