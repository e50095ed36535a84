// Package dataroot is the directory that holds the bbolt files of the
// schools that name no data directory of their own: one directory per
// school, named after its issuer's host and port, and the directories an
// earlier version named after the issuer as written, which a school must
// not start beside, empty.
package dataroot

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schoolgate/schoolgate/boltstore"
)

// Name names a file or directory after an origin: its host and
// port, ':' made '_' and an IPv6 address's brackets dropped
// (school.example, 127.0.0.1_8080).
func Name(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	return strings.NewReplacer(":", "_", "[", "", "]", "").Replace(u.Host)
}

// Prepare makes the directory of the school with the issuer under the
// data root, unless a
// directory of another spelling of its issuer holds a store file. Before
// the issuer was kept in one spelling, the directory was named after the
// issuer as written: HTTPS://School.Example:443/ made School.Example_443,
// https://School.Example/ made School.Example. Opening the canonical
// directory beside it would start the school again, empty, with new keys
// and none of its clients, and say nothing; so the school fails to load
// with both paths named, until the operator moves the directory or sets
// data. Nothing is moved here: which copy is the school's is the
// operator's call.
func Prepare(root, issuer string) error {
	name := Name(issuer)
	dir := filepath.Join(root, name)
	scheme, _, _ := strings.Cut(issuer, "://")
	spellings.mu.Lock()
	defer spellings.mu.Unlock()
	others, err := spellings.otherSpellings(root, name, scheme)
	if err != nil {
		return fmt.Errorf("data: %v", err)
	}
	if len(others) == 0 {
		return spellings.mkdir(root, dir)
	}
	_, ownErr := os.Stat(boltstore.Path(dir))
	if len(others) == 1 && ownErr != nil {
		return fmt.Errorf("data: %s holds data of %s under another spelling of the issuer (an earlier version named "+
			"the directory after the issuer as written); the school's directory is now %s: move %s to %s, or set data %s",
			others[0], issuer, dir, others[0], dir, others[0])
	}
	if ownErr == nil {
		others = append([]string{dir}, others...)
	}
	return fmt.Errorf("data: each of %s holds data of %s (an earlier version named the directory after the issuer "+
		"as written): decide which is the school's, make it %s and move the others away, or set data to it",
		strings.Join(others, ", "), issuer, dir)
}

// spellings is the default data root's listing as far as
// Prepare needs it: read once, and again only when the
// directory changed, so that a thousand schools starting do not read a
// thousand entries a thousand times (a second at start).
var spellings spellingIndex

type spellingIndex struct {
	mu      sync.Mutex
	root    string
	modTime time.Time
	// others maps a scheme and a directory name to the entries that
	// stand for it under another spelling: "https school.example" →
	// School.Example_443.
	others map[string][]string
}

// readDataRoot lists the data root; a variable for the test that counts
// the reads.
var readDataRoot = os.ReadDir

// otherSpellings lists the directories under root, other than name
// itself, that an earlier version made for another spelling of the origin
// whose directory is name, and that hold a store file. The caller holds
// x.mu.
func (x *spellingIndex) otherSpellings(root, name, scheme string) ([]string, error) {
	if err := x.refresh(root); err != nil {
		return nil, err
	}
	candidates := x.others[scheme+" "+name]
	if len(candidates) == 0 {
		return nil, nil
	}
	own, ownErr := os.Stat(filepath.Join(root, name))
	var out []string
	for _, e := range candidates {
		dir := filepath.Join(root, e)
		if _, err := os.Stat(boltstore.Path(dir)); err != nil {
			continue
		}
		// On a file system that ignores case, School.Example is the
		// school's own directory.
		if st, err := os.Stat(dir); err == nil && ownErr == nil && os.SameFile(st, own) {
			continue
		}
		out = append(out, dir)
	}
	return out, nil
}

// refresh reads root again unless the listing is of root as it is.
func (x *spellingIndex) refresh(root string) error {
	st, err := os.Stat(root)
	if errors.Is(err, fs.ErrNotExist) {
		x.root, x.modTime, x.others = root, time.Time{}, nil
		return nil
	}
	if err != nil {
		return err
	}
	if x.root == root && x.modTime.Equal(st.ModTime()) {
		return nil
	}
	entries, err := readDataRoot(root)
	if err != nil {
		return err
	}
	x.root, x.modTime, x.others = root, st.ModTime(), map[string][]string{}
	for _, e := range entries {
		x.add(e.Name())
	}
	return nil
}

// add notes an entry of the root under the names it stands for.
func (x *spellingIndex) add(entry string) {
	for _, scheme := range []string{"https", "http"} {
		if n := spelledName(entry, scheme); n != entry {
			x.others[scheme+" "+n] = append(x.others[scheme+" "+n], entry)
		}
	}
}

// mkdir makes a school's directory under the listed root and keeps the
// listing current through this change of its own. The caller holds x.mu.
func (x *spellingIndex) mkdir(root, dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data: creating data directory: %v", err)
	}
	st, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("data: %v", err)
	}
	if x.others == nil {
		x.others = map[string][]string{}
	}
	x.root, x.modTime = root, st.ModTime()
	x.add(filepath.Base(dir))
	return nil
}

// spelledName is the directory name that an earlier version's directory
// name stands for now: the host in lower case, and a trailing port
// written without leading zeros, or dropped when it is the scheme's
// default or empty (School.Example_443 and school.example_ are
// school.example for https).
func spelledName(name, scheme string) string {
	name = strings.ToLower(name)
	i := strings.LastIndexByte(name, '_')
	if i < 0 {
		return name
	}
	host, port := name[:i], name[i+1:]
	if port == "" {
		return host
	}
	n, err := strconv.ParseUint(port, 10, 16)
	switch {
	case err != nil:
		return name // no port: a host or an IPv6 address's last group
	case scheme == "https" && n == 443, scheme == "http" && n == 80:
		return host
	}
	return host + "_" + strconv.FormatUint(n, 10)
}
