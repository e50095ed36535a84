package registry_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schoolgate/schoolgate/registry"
)

// The file names docs/registry-files.md gives, the one description of
// the files a deploy tool writes, are those a Dir reads and writes.
func TestRegistryFilesPageNames(t *testing.T) {
	page, err := os.ReadFile("../docs/registry-files.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "## The file's name")
	section, _, _ = strings.Cut(section, "\n## ")
	if !ok {
		t.Fatal("docs/registry-files.md: no section on the file's name")
	}
	dir := t.TempDir()
	d, err := registry.OpenDir(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rows := 0
	for line := range strings.Lines(section) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) != 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		issuer, file := strings.Trim(strings.TrimSpace(cells[1]), "`"), strings.Trim(strings.TrimSpace(cells[2]), "`")
		if issuer == "issuer" {
			continue
		}
		rows++
		if got := filepath.Base(d.DataDir(issuer)) + ".json"; got != file {
			t.Errorf("the page names %s's file %s; a Dir, %s", issuer, file, got)
		}
	}
	if rows == 0 {
		t.Fatal("docs/registry-files.md: no table of issuers and file names")
	}
}
