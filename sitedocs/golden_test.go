package sitedocs

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/schoolgate/schoolgate/catalog"
	"github.com/schoolgate/schoolgate/sitepath"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current renderings")

// TestGoldenDocuments holds every rendered document against its reviewed
// copy in testdata/golden, so a change of wording or structure shows as a
// diff there. After an intended change: go test ./sitedocs -run Golden -update
func TestGoldenDocuments(t *testing.T) {
	bare := testSite()
	bare.SchoolName, bare.AdminPrefix, bare.MCPConnections = "", "", false
	unread := bare
	unread.CatalogUnread = true
	required := testSite()
	required.DPoP, required.DPoPNonce = "required", true
	off := bare
	off.DPoP = "off"
	variants := []struct {
		dir   string
		site  Site
		feed  *catalog.Feed
		paths []string
	}{
		{"school", testSite(), testFeed(), []string{sitepath.OpenAPI, sitepath.AuthGuide, sitepath.LLMs, sitepath.Pricing}},
		{"bare", bare, nil, []string{sitepath.AuthGuide, sitepath.LLMs, sitepath.Pricing}},
		{"unread", unread, nil, []string{sitepath.LLMs, sitepath.Pricing}},
		{"dpop-required", required, testFeed(), []string{sitepath.OpenAPI, sitepath.AuthGuide}},
		{"dpop-off", off, nil, []string{sitepath.OpenAPI, sitepath.AuthGuide}},
	}
	for _, v := range variants {
		set := mustBuild(t, v.site, v.feed)
		for _, p := range v.paths {
			t.Run(v.dir+p, func(t *testing.T) {
				got := body(t, set, p)
				file := filepath.Join("testdata", "golden", v.dir, filepath.Base(p))
				if *update {
					if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from %s; diff them after running with -update", p, file)
				}
			})
		}
	}
}
