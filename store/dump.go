package store

// Dump is the whole state of one site, as one store exports it and another
// imports it when a site moves (from bbolt to PostgreSQL). Pending consent
// forms are left out: they live ten minutes and a person submits again.
type Dump struct {
	Keys     []StoredKey
	Clients  []*Client
	Consents []DumpConsent
	Codes    []DumpCode
	Grants   []*Grant
	Tokens   []IssuedToken
	Settings map[string][]byte
	// Catalog is the last good feed, nil when none was stored.
	Catalog []byte
}

// DumpConsent is a remembered consent with whom it belongs to.
type DumpConsent struct {
	ClientID, Subject string
	Consent           *Consent
}

// DumpCode is an authorization code under its hash.
type DumpCode struct {
	Hash string
	Code *Code
}

// Counts reports how many records of each kind d holds, for the operator
// to compare before and after a move.
func (d *Dump) Counts() map[string]int {
	return map[string]int{"keys": len(d.Keys), "clients": len(d.Clients),
		"consents": len(d.Consents), "codes": len(d.Codes), "grants": len(d.Grants),
		"tokens": len(d.Tokens), "settings": len(d.Settings)}
}
