package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// errNoServer is BinDir's error when nothing says where PostgreSQL is and
// it is in none of the usual places: the one that lets a test skip.
var errNoServer = errors.New("pgcluster: no PostgreSQL server found (initdb and postgres): install it with apt-get install postgresql (scripts/prereqs.sh does), or set PG_BINDIR")

// BinDir finds the directory that holds initdb and postgres: $PG_BINDIR if
// set (and then only it), else pg_config --bindir, else the newest
// /usr/lib/postgresql/<version>/bin, where Debian's packages put them.
func BinDir() (string, error) {
	if dir := os.Getenv("PG_BINDIR"); dir != "" {
		if !hasServer(dir) {
			return "", fmt.Errorf("pgcluster: PG_BINDIR=%s has no initdb and postgres; unset it to look for PostgreSQL elsewhere", dir)
		}
		return dir, nil
	}
	// pg_config may come from a client-only package (libpq-dev) whose
	// bindir has no server, so its answer is checked like any other.
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); hasServer(dir) {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	var dirs []string
	for _, m := range matches {
		if dir := filepath.Dir(m); hasServer(dir) {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		return "", errNoServer
	}
	// Versions compare as numbers: 9.6 is older than 15.
	sort.Slice(dirs, func(i, j int) bool { return versionLess(dirs[i], dirs[j]) })
	return dirs[len(dirs)-1], nil
}

func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionLess orders /usr/lib/postgresql/<version>/bin directories.
func versionLess(a, b string) bool {
	va := strings.Split(filepath.Base(filepath.Dir(a)), ".")
	vb := strings.Split(filepath.Base(filepath.Dir(b)), ".")
	for i := 0; i < len(va) && i < len(vb); i++ {
		na, errA := strconv.Atoi(va[i])
		nb, errB := strconv.Atoi(vb[i])
		if errA != nil || errB != nil {
			if va[i] != vb[i] {
				return va[i] < vb[i]
			}
			continue
		}
		if na != nb {
			return na < nb
		}
	}
	return len(va) < len(vb)
}
