package caddymodule

import (
	"path/filepath"

	"github.com/caddyserver/caddy/v2"

	"github.com/schoolgate/schoolgate/boltstore"
	"github.com/schoolgate/schoolgate/dataroot"
)

// dataPath is the site's bbolt file.
func (g *Gateway) dataPath() string {
	dir := g.Data
	if dir == "" {
		dir = filepath.Join(defaultDataRoot(), hostFileName(g.Issuer))
	}
	abs, err := filepath.Abs(boltstore.Path(dir))
	if err != nil {
		return boltstore.Path(dir)
	}
	return abs
}

// defaultDataRoot holds the data directories of the schools that set no
// data option, one per school.
func defaultDataRoot() string {
	root := filepath.Join(caddy.AppDataDir(), "schoolgate")
	if abs, err := filepath.Abs(root); err == nil {
		return abs
	}
	return root
}

// hostFileName names a file or directory after an origin (dataroot.Name).
func hostFileName(origin string) string { return dataroot.Name(origin) }

// prepareDefaultDir makes the school's default data directory, unless a
// directory of another spelling of its issuer holds a store file
// (dataroot.Prepare).
func (g *Gateway) prepareDefaultDir() error { return dataroot.Prepare(defaultDataRoot(), g.Issuer) }
