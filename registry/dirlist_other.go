//go:build !linux

package registry

import (
	"io/fs"
	"os"
	"path/filepath"
)

// listDir calls fn for each regular file of dir (symbolic links
// followed) whose name is a school file's, with its stat.
func listDir(dir string, fn func(name string, st fileStat)) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !recordFile(name) {
			continue
		}
		info, err := e.Info()
		if err == nil && info.Mode()&fs.ModeSymlink != 0 {
			info, err = os.Stat(filepath.Join(dir, name))
		}
		if err != nil || !info.Mode().IsRegular() {
			continue // gone since the listing, a dangling link, a directory
		}
		fn(name, statOf(info))
	}
	return nil
}
