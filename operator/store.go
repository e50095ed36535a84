package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/pgstore"
	"github.com/schoolgate/schoolgate/policy"
)

// The environment variables the store commands read, so that neither a
// password nor the key secret has to appear on a command line (and in the
// shell's history and the process list).
const (
	EnvDatabaseURL = "SCHOOLGATE_DATABASE_URL"
	EnvKeySecret   = "SCHOOLGATE_KEY_SECRET"
)

// CommandTimeout bounds a store command: connecting waits for an
// unreachable database about 15 s, and a large site's copy takes a while.
const CommandTimeout = 10 * time.Minute

// storeCommands are the subcommands that work on a database directly,
// with no running Caddy.
func storeCommands() []*cobra.Command {
	migrateDB := &cobra.Command{
		Use:   "migrate-db",
		Short: "Bring a PostgreSQL database's schoolgate schema up to date (ahead of a rollout)",
		Long: `
Applies the schema migrations this build knows to the database named by
--dsn, else by $` + EnvDatabaseURL + `. Instances starting together would do
the same under a lock; running it first keeps their start quick. A database
migrated by a newer build is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dsn, _ := cmd.Flags().GetString("dsn")
			ctx, cancel := context.WithTimeout(cmd.Context(), CommandTimeout)
			defer cancel()
			return migrateDB(ctx, cmd.OutOrStdout(), OrEnv(dsn, EnvDatabaseURL))
		},
	}
	migrateDB.Flags().String("dsn", "", "the database (default $"+EnvDatabaseURL+")")

	migrateStore := &cobra.Command{
		Use:   "migrate-store --data <dir> --issuer <origin> [--dsn <dsn>]",
		Short: "Move a school from its bbolt file to PostgreSQL (stop Caddy first)",
		Long: `
Copies a school's whole state (signing keys, clients, consents, grants,
tokens, unexpired codes, settings, catalog) from the bbolt file under
--data into the database named by --dsn (else $` + EnvDatabaseURL + `), in
one transaction, with the signing keys encrypted with $` + EnvKeySecret + `.
The bbolt file is opened read-only and never written: going back is the old
Caddyfile. A school that already has data in the database is refused.
Issued tokens and key ids keep working.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			data, _ := fl.GetString("data")
			issuer, _ := fl.GetString("issuer")
			dsn, _ := fl.GetString("dsn")
			ctx, cancel := context.WithTimeout(cmd.Context(), CommandTimeout)
			defer cancel()
			return migrateStore(ctx, cmd.OutOrStdout(), data, issuer, OrEnv(dsn, EnvDatabaseURL), os.Getenv(EnvKeySecret))
		},
	}
	migrateStore.Flags().String("data", "", "the school's data directory (the data option of its site block)")
	migrateStore.Flags().String("issuer", "", "the school, by its origin (e.g. https://school.example)")
	migrateStore.Flags().String("dsn", "", "the database (default $"+EnvDatabaseURL+")")
	return []*cobra.Command{migrateDB, migrateStore}
}

// OrEnv is a flag's value, else the environment variable name's.
func OrEnv(v, name string) string {
	if v != "" {
		return v
	}
	return os.Getenv(name)
}

// migrateDB applies the migrations and says which.
func migrateDB(ctx context.Context, out io.Writer, dsn string) error {
	if dsn == "" {
		return fmt.Errorf("no database: give --dsn or set %s", EnvDatabaseURL)
	}
	applied, err := pgstore.Migrate(ctx, dsn)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(out, "schema up to date")
	}
	for _, m := range applied {
		fmt.Fprintln(out, "applied", m)
	}
	return nil
}

// migrateStore copies the school's bbolt file into the database and
// checks what arrived.
func migrateStore(ctx context.Context, out io.Writer, data, issuer, dsn, secret string) error {
	switch {
	case data == "":
		return errors.New("--data is required: the school's data directory")
	case dsn == "":
		return fmt.Errorf("no database: give --dsn or set %s", EnvDatabaseURL)
	case secret == "":
		return fmt.Errorf("%s is not set: it encrypts the signing keys in the database, and every instance of the school needs the same", EnvKeySecret)
	}
	origin, err := policy.ParseOrigin(issuer)
	if err != nil {
		return fmt.Errorf("--issuer: %v", err)
	}
	dump, err := boltstore.Export(boltstore.Path(data))
	if err != nil {
		return err
	}
	printCounts(out, "read from "+data, dump.Counts())
	pool, err := pgstore.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	site, err := pool.Site(ctx, origin, secret)
	if err != nil {
		return err
	}
	if err := site.Import(ctx, dump); err != nil {
		return err
	}
	stored, err := site.Export(ctx)
	if err != nil {
		return fmt.Errorf("reading back what was copied: %w", err)
	}
	want, got := dump.Counts(), stored.Counts()
	printCounts(out, "in the database for "+origin, got)
	if !maps.Equal(want, got) {
		return errors.New("the counts differ: check the database before switching the site over")
	}
	fmt.Fprintln(out, "done: replace data with store postgres in the site block, then start the instances")
	return nil
}

func printCounts(out io.Writer, where string, n map[string]int) {
	fmt.Fprintf(out, "%s:", where)
	for _, k := range slices.Sorted(maps.Keys(n)) {
		fmt.Fprintf(out, " %s=%d", k, n[k])
	}
	fmt.Fprintln(out)
}
