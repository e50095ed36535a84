package pgstore

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// defaultMaxConns replaces pgx's default of max(4, CPUs) connections,
// measured too few for a gateway whose token endpoint holds a connection
// for each request's transaction.
const defaultMaxConns = 16

// ParseDSN parses a connection string (URL or keyword=value) into a pool
// configuration. Unless the DSN sets pool_max_conns, the pool holds up to
// defaultMaxConns connections. Its errors never quote the DSN: it may hold
// a password, and the errors end up in logs.
func ParseDSN(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errDSN(dsn)
	}
	// pgxpool has consumed pool_max_conns by now; only the connection
	// parameters, parsed anew, tell whether the DSN set it.
	conn, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, errDSN(dsn)
	}
	if _, set := conn.RuntimeParams["pool_max_conns"]; !set {
		cfg.MaxConns = defaultMaxConns
	}
	return cfg, nil
}

// errDSN says which form of DSN failed to parse without quoting it: pgx's
// own message masks passwords only on a best-effort basis, and wraps an
// error that may hold the whole string.
func errDSN(dsn string) error {
	form := "keyword=value pairs"
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		form = "a postgres:// URL"
	}
	return errors.New("pgstore: the database DSN does not parse as " + form +
		" (its text is left out of this message, since it may hold a password)")
}

// DatabaseOf names the database a DSN connects to in one spelling,
// whatever the order of the DSN's parameters, its form (URL or keywords),
// its credentials and its pool and TLS settings: its servers (host:port,
// sorted, each once), the database's name, and the settings that choose
// which tables a name finds (search_path, options). Two DSNs with one
// name are one database, so one registry; it holds no password, so it
// may be logged. One database reached by two host names has two names:
// only the server could tell they are one.
func DatabaseOf(dsn string) (string, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", errDSN(dsn)
	}
	hosts := []string{net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	for _, f := range cfg.Fallbacks {
		// sslmode=prefer lists each host twice, with and without TLS.
		hosts = append(hosts, net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))))
	}
	slices.Sort(hosts)
	id := strings.Join(slices.Compact(hosts), ",") + "/" + cfg.Database
	var params []string
	for _, k := range []string{"options", "search_path"} {
		if v := cfg.RuntimeParams[k]; v != "" {
			params = append(params, k+"="+v)
		}
	}
	if len(params) > 0 {
		id += "?" + strings.Join(params, "&")
	}
	return id, nil
}
