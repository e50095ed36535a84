package registry

import (
	"context"
	"errors"
	"log/slog"
)

// Dir is a stand-in for the directory registry, which is written
// elsewhere; it is dropped when that one is merged.
type Dir struct{}

var errDirNotBuilt = errors.New("not built yet")

// OpenDir opens the registry kept in dir.
func OpenDir(dir string, validate Validator, logger *slog.Logger) (*Dir, error) {
	return nil, errDirNotBuilt
}

// DataDir is the directory of the issuer's bbolt store under the registry.
func (d *Dir) DataDir(issuer string) string { return "" }

func (d *Dir) List(context.Context) ([]Record, error)      { return nil, errDirNotBuilt }
func (d *Dir) Get(context.Context, string) (Record, error) { return Record{}, errDirNotBuilt }
func (d *Dir) Put(context.Context, Record) (Record, error) { return Record{}, errDirNotBuilt }
func (d *Dir) Remove(context.Context, string) error        { return errDirNotBuilt }
func (d *Dir) Watch(func(Change)) (stop func())            { return func() {} }
func (d *Dir) Close() error                                { return nil }
