package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/schoolgate/schoolgate/adminapi"
	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/dataroot"
	"github.com/schoolgate/schoolgate/pgstore"
	"github.com/schoolgate/schoolgate/registry"
)

// Moving in: `caddy schoolgate schools import <Caddyfile>` turns the
// school_gateway site blocks of a Caddyfile into records of a registry,
// each keeping its data where it is, so that switching to school_platform
// loses no key, client or token. It writes the registry directly, for it
// runs before the platform serves, with the platform's Validator. The
// adapter reads the site blocks (Caddy's caddyfile adapter) and checks
// the records as its platform does; the rest is here.

// Importer is the import with what the adapter gives it.
type Importer struct {
	// ReadSiteBlocks reads a Caddyfile's school_gateway site blocks, one
	// school each.
	ReadSiteBlocks func(path string) ([]*ImportedSchool, error)
	// ValidateDir and ValidatePostgres check a record as a platform of a
	// registry dir, and of a postgres registry, does.
	ValidateDir, ValidatePostgres registry.Validator
}

// ImportOptions are the import command's flags.
type ImportOptions struct {
	Caddyfile string
	// Kind is dir or postgres; Target its path or DSN.
	Kind, Target, KeySecret string
	DryRun, Partial, Move   bool
}

// ImportedSchool is one school_gateway site block as a record, or why it
// cannot be one.
type ImportedSchool struct {
	Name string // the issuer, or the block's hosts when there is none
	Rec  registry.Record
	// Data is the bbolt school's data directory, "" for a database's.
	Data string
	// Postgres is a PostgreSQL school's store, nil for a bbolt school's.
	Postgres *ImportedPostgres
	Err      error

	// moveTo is where --move puts the bbolt file's directory.
	moveTo string
	// unchanged: the registry has this record already.
	unchanged bool
}

// ImportedPostgres is a PostgreSQL school's store as its block has it,
// its placeholders replaced, or why they could not be.
type ImportedPostgres struct {
	DSN, KeySecret string
	Err            error
}

// Command is `caddy schoolgate schools import`.
func (im Importer) Command() *cobra.Command {
	c := &cobra.Command{
		Use:   "import <Caddyfile> --registry dir <path> | --registry postgres [<dsn>] [--key-secret <secret>]",
		Short: "Turn the school_gateway site blocks of a Caddyfile into registry records (run before the platform serves)",
		Long: `
Reads the school_gateway site blocks of a Caddyfile (through Caddy's caddyfile
adapter) and writes one registry record per school, keeping each school's data:
a bbolt school's record names its data directory (data), or with --move its
` + boltstore.FileName + ` is moved into the registry's directory for it (refused while a Caddy
holds the file); a PostgreSQL school's record is the record only, its rows stay
as they are. The registry is written directly: "--registry dir <path>", or
"--registry postgres <dsn>" (else $` + EnvDatabaseURL + `) with --key-secret
(else $` + EnvKeySecret + `), the one its schools' keys are sealed with.
Each record is checked as the platform checks it. A block that cannot be a
record is refused, naming the school, and nothing is written unless --partial.
A second run changes nothing. Run it as the user Caddy runs as: a block without
data keeps its school under that user's Caddy data directory.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			o := ImportOptions{Caddyfile: args[0]}
			o.Kind, _ = fl.GetString("registry")
			if len(args) == 2 {
				o.Target = args[1]
			}
			o.KeySecret, _ = fl.GetString("key-secret")
			o.DryRun, _ = fl.GetBool("dry-run")
			o.Partial, _ = fl.GetBool("partial")
			o.Move, _ = fl.GetBool("move")
			if o.Kind == "postgres" {
				o.Target, o.KeySecret = OrEnv(o.Target, EnvDatabaseURL), OrEnv(o.KeySecret, EnvKeySecret)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), CommandTimeout)
			defer cancel()
			return im.Run(ctx, cmd.OutOrStdout(), o)
		},
	}
	c.Flags().String("registry", "", "the registry's kind: dir (then its path) or postgres (then its DSN)")
	c.Flags().String("key-secret", "", "a postgres registry's key secret (default $"+EnvKeySecret+")")
	c.Flags().Bool("dry-run", false, "print the records, write nothing")
	c.Flags().Bool("partial", false, "import the schools that can be, when some cannot")
	c.Flags().Bool("move", false, "move each bbolt school's file into the registry directory instead of referencing it")
	return c
}

// Run imports the Caddyfile's schools into the registry.
func (im Importer) Run(ctx context.Context, out io.Writer, o ImportOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	schools, err := im.ReadSiteBlocks(o.Caddyfile)
	if err != nil {
		return err
	}
	if len(schools) == 0 {
		return fmt.Errorf("%s has no school_gateway site block", o.Caddyfile)
	}
	reg, closeReg, err := o.openRegistry(ctx, im.ValidateDir, im.ValidatePostgres)
	if err != nil {
		return err
	}
	defer closeReg()
	validate := im.ValidateDir
	if o.Kind == "postgres" {
		validate = im.ValidatePostgres
	}
	for _, s := range schools {
		if s.Err == nil {
			s.Err = s.shape(o)
		}
		if s.Err == nil {
			s.Err = s.compare(ctx, reg, validate)
		}
	}
	var refused []string
	for _, s := range schools {
		if s.Err != nil {
			refused = append(refused, s.Name)
			fmt.Fprintf(out, "refused %s: %v\n", s.Name, s.Err)
		}
	}
	if len(refused) > 0 && !o.Partial {
		return fmt.Errorf("nothing imported: %d school(s) cannot be a record (%s); correct them, or import the others with --partial",
			len(refused), strings.Join(refused, ", "))
	}
	if o.DryRun {
		return printImport(out, schools)
	}
	written := 0
	for _, s := range schools {
		if s.Err != nil {
			continue
		}
		if s.unchanged {
			fmt.Fprintf(out, "unchanged %s\n", s.Name)
			continue
		}
		if err := s.write(ctx, reg); err != nil {
			return fmt.Errorf("%s: %v (the schools before it are written; run the import again once corrected)", s.Name, err)
		}
		written++
		fmt.Fprintf(out, "imported %s: %s\n", s.Name, s.where())
	}
	fmt.Fprintf(out, "%d imported, %d unchanged, %d refused\n", written, len(schools)-written-len(refused), len(refused))
	return nil
}

func (o *ImportOptions) check() error {
	switch o.Kind {
	case "dir":
		if o.Target == "" {
			return errors.New("--registry dir <path>: the registry's directory is missing")
		}
	case "postgres":
		if o.Target == "" {
			return fmt.Errorf("--registry postgres <dsn>: no database: give the DSN or set %s", EnvDatabaseURL)
		}
		if o.KeySecret == "" {
			return fmt.Errorf("--key-secret (or %s) is required: the registry's schools' keys are sealed with it", EnvKeySecret)
		}
		if o.Move {
			return errors.New("--move is for a registry dir: a postgres registry's schools are in its database")
		}
	case "":
		return errors.New("--registry is required: --registry dir <path> or --registry postgres <dsn>")
	default:
		return fmt.Errorf("--registry: unknown kind %q; the kinds are: dir, postgres", o.Kind)
	}
	return nil
}

// openRegistry opens the registry the import writes. A dry run of a dir
// that does not exist yet reads an empty registry and creates nothing.
func (o *ImportOptions) openRegistry(ctx context.Context, validateDir, validatePostgres registry.Validator) (registry.Registry, func(), error) {
	quiet := slog.New(slog.DiscardHandler)
	if o.Kind == "dir" {
		abs, err := filepath.Abs(o.Target)
		if err != nil {
			return nil, nil, err
		}
		o.Target = abs
		if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) && o.DryRun {
			return registry.NewMemory(validateDir), func() {}, nil
		}
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return nil, nil, fmt.Errorf("registry dir: %v", err)
		}
		d, err := registry.OpenDir(abs, validateDir, quiet)
		if err != nil {
			return nil, nil, err
		}
		return d, func() { d.Close() }, nil
	}
	pool, err := pgstore.Connect(ctx, o.Target)
	if err != nil {
		return nil, nil, fmt.Errorf("registry postgres: %v", err)
	}
	reg, err := pgstore.OpenRegistry(ctx, pool, validatePostgres)
	if err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("registry postgres: %v", err)
	}
	return reg, func() { reg.Close(); pool.Close() }, nil
}

// shape places the school's data as the registry keeps it: a bbolt
// school's directory in a registry dir, referenced or moved; a
// PostgreSQL school's rows in the registry's database, sealed with its
// key secret.
func (s *ImportedSchool) shape(o ImportOptions) error {
	if pg := s.Postgres; pg != nil {
		if o.Kind == "dir" {
			return errors.New("it keeps its state in PostgreSQL, and a registry dir's schools are bbolt files: import it into --registry postgres")
		}
		if pg.Err != nil {
			return pg.Err
		}
		dsn, secret := pg.DSN, pg.KeySecret
		if secret != o.KeySecret {
			return errors.New("its key_secret is not the registry's, which would not open its signing keys")
		}
		if dsn != o.Target {
			return errors.New("its store postgres names another DSN than the registry's (compared as written): its rows would not be found")
		}
		return nil
	}
	if o.Kind == "postgres" {
		return errors.New("it keeps its state in a bbolt file: copy it into the database first (caddy schoolgate migrate-store), " +
			"set store postgres in its block, then import it")
	}
	_, srcErr := os.Stat(boltstore.Path(s.Data))
	if !o.Move {
		if srcErr != nil {
			return fmt.Errorf("%s has no %s: run the import as the user Caddy runs as (a block without data keeps its school under that user's data directory), or set data in the block", s.Data, boltstore.FileName)
		}
		var cfg map[string]json.RawMessage
		_ = json.Unmarshal(s.Rec.Config, &cfg)
		cfg["data"], _ = json.Marshal(s.Data)
		s.Rec.Config, _ = json.Marshal(cfg)
		return nil
	}
	s.moveTo = filepath.Join(o.Target, dataroot.Name(s.Rec.Issuer))
	_, dstErr := os.Stat(boltstore.Path(s.moveTo))
	switch {
	case srcErr == nil && dstErr == nil:
		return fmt.Errorf("both %s and %s hold a %s: which is the school's is yours to say", s.Data, s.moveTo, boltstore.FileName)
	case srcErr != nil && dstErr != nil:
		return fmt.Errorf("%s has no %s: run the import as the user Caddy runs as, or set data in the block", s.Data, boltstore.FileName)
	}
	return nil
}

// compare checks the record as the platform will, and finds whether the
// registry has it already.
func (s *ImportedSchool) compare(ctx context.Context, reg registry.Registry, validate registry.Validator) error {
	if err := s.Rec.Check(); err != nil {
		return err
	}
	if err := validate(&s.Rec); err != nil {
		return err
	}
	have, err := reg.Get(ctx, s.Rec.Issuer)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("reading the registry: %v", err)
	}
	if have.Disabled == s.Rec.Disabled && slices.Equal(have.Hosts, s.Rec.Hosts) && SameJSON(have.Config, s.Rec.Config) {
		s.unchanged = true
		return nil
	}
	return fmt.Errorf("the registry has it already with another record (version %d): remove it there first, or leave it with --partial", have.Version)
}

// write moves the school's file, if asked, and writes its record; the
// file goes back when the record cannot be written.
func (s *ImportedSchool) write(ctx context.Context, reg registry.Registry) error {
	undo := func() error { return nil }
	if s.moveTo != "" {
		var err error
		if undo, err = moveSchoolFile(s.Data, s.moveTo); err != nil {
			return err
		}
	}
	// Written only if it is still new: a record written since it was
	// compared is another's, not to be overwritten.
	if _, err := adminapi.PutRecord(ctx, reg, s.Rec, new(int64)); err != nil {
		if uerr := undo(); uerr != nil {
			return fmt.Errorf("%v; moving its file back failed too: %v", err, uerr)
		}
		return err
	}
	return nil
}

// moveSchoolFile moves a school's bbolt file from the directory from into
// to, unless a running Caddy holds it, and returns how to move it back.
// A file moved already (a second run) is left.
func moveSchoolFile(from, to string) (undo func() error, err error) {
	src, dst := boltstore.Path(from), boltstore.Path(to)
	// A school that runs and has not committed yet is making its file:
	// moving nothing now would leave it to make its file here later.
	held, err := boltstore.Held(src)
	switch {
	case err != nil:
		return nil, err
	case held:
		return nil, fmt.Errorf("%s is held by a running Caddy: stop it first", src)
	}
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		return nil, err
	}
	if _, err := os.Stat(dst); err == nil {
		return nil, fmt.Errorf("%s exists already", dst)
	}
	if err := os.Rename(src, dst); err != nil {
		if errors.Is(err, syscall.EXDEV) {
			return nil, fmt.Errorf("%s is on another file system than the registry: import without --move (the record then names it)", from)
		}
		return nil, err
	}
	return func() error { return os.Rename(dst, src) }, nil
}

// where says where the school's data stays.
func (s *ImportedSchool) where() string {
	switch {
	case s.moveTo != "":
		return "its " + boltstore.FileName + " moved to " + s.moveTo
	case s.Data != "":
		return "data " + s.Data
	}
	return "its rows in the registry's database"
}

// printImport prints the records a dry run would write.
func printImport(out io.Writer, schools []*ImportedSchool) error {
	type dryRecord struct {
		Issuer    string          `json:"issuer"`
		Hosts     []string        `json:"hosts,omitempty"`
		Config    json.RawMessage `json:"config"`
		Unchanged bool            `json:"unchanged,omitempty"`
		MoveFrom  string          `json:"move_from,omitempty"`
		MoveTo    string          `json:"move_to,omitempty"`
	}
	recs := []dryRecord{}
	for _, s := range schools {
		if s.Err != nil {
			continue
		}
		r := dryRecord{Issuer: s.Rec.Issuer, Hosts: s.Rec.Hosts, Config: s.Rec.Config, Unchanged: s.unchanged}
		if s.moveTo != "" && !s.unchanged {
			r.MoveFrom, r.MoveTo = s.Data, s.moveTo
		}
		recs = append(recs, r)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(recs)
}

// SameJSON reports whether two JSON texts are the same value.
func SameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
