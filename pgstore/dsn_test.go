package pgstore

import (
	"strings"
	"testing"
)

// DatabaseOf gives the spellings of one database one name, without the
// password, and tells different databases apart.
func TestDatabaseOf(t *testing.T) {
	const base = "host=db.example port=5432 dbname=platform user=gate password=s3cret"
	same := []string{
		"dbname=platform password=other user=someone port=5432 host=db.example",
		"postgres://gate:s3cret@db.example:5432/platform",
		"postgres://gate:s3cret@db.example/platform?pool_max_conns=40&sslmode=disable",
		"host=db.example dbname=platform user=gate pool_max_conns=8 application_name=x",
	}
	different := []string{
		"host=db.example port=5432 dbname=other user=gate",
		"host=db.example port=5433 dbname=platform user=gate",
		"host=db2.example port=5432 dbname=platform user=gate",
		"host=db.example port=5432 dbname=platform user=gate search_path=elsewhere",
		"host=db.example port=5432 dbname=platform user=gate options='-c search_path=elsewhere'",
	}
	want, err := DatabaseOf(base)
	if err != nil {
		t.Fatal(err)
	}
	if want != "db.example:5432/platform" {
		t.Errorf("the name of %q is %q", base, want)
	}
	for _, dsn := range same {
		if got, err := DatabaseOf(dsn); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", dsn, got, err, want)
		}
	}
	for _, dsn := range different {
		if got, err := DatabaseOf(dsn); err != nil || got == want {
			t.Errorf("%q: %q, %v; want another name than %q", dsn, got, err, want)
		}
	}
	a, errA := DatabaseOf("postgres://u@a.example,b.example:5433/db")
	b, errB := DatabaseOf("postgres://u@b.example:5433,a.example/db")
	if errA != nil || errB != nil || a != b {
		t.Errorf("the hosts of one database in two orders: %q (%v) and %q (%v)", a, errA, b, errB)
	}
	if _, err := DatabaseOf("postgres://u:pw@[bad/db"); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("a DSN that does not parse: %v", err)
	}
}
