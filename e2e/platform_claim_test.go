package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Two school_platform handlers of one Caddy, on two addresses, whose
// registries both have a record of one issuer: the registry first by name
// serves the school, at either address the request comes to its handler;
// the other answers 503 for it and the admin API lists its record failed,
// naming both registries, while its other schools serve. Once the first
// record is removed, the other serves the school without a reload.
func TestPlatformsOfOneIssuer(t *testing.T) {
	sch := startSchool(t)
	dir := t.TempDir()
	regA, regB := filepath.Join(dir, "a-registry"), filepath.Join(dir, "b-registry")
	a, b := openRegistryDir(t, regA), openRegistryDir(t, regB)
	portA, portB := freePort(t), freePort(t)
	twice := fmt.Sprintf("http://twice.test:%d", portA)
	onlyB := fmt.Sprintf("http://only-b.test:%d", portB)
	putSchool(t, a, twice, sch.URL, false, "")
	putSchool(t, b, twice, sch.URL, false, "")
	putSchool(t, b, onlyB, sch.URL, false, "")
	block := "http://:%d {\n\tschool_platform {\n\t\tregistry dir %s\n\t}\n}\n"
	admin := startPlatform(t, dir, "", fmt.Sprintf(block, portA, regA)+fmt.Sprintf(block, portB, regB))
	atA, atB := platformClient(fmt.Sprintf("127.0.0.1:%d", portA)), platformClient(fmt.Sprintf("127.0.0.1:%d", portB))
	discovery := twice + "/.well-known/oauth-authorization-server"

	waitFor(t, "the first registry's school to serve", func() bool {
		r, err := tryFetch(atA, discovery)
		return err == nil && r.status == 200 && jsonOf(t, r.body)["issuer"] == twice
	})
	if r := fetch(t, atB, discovery); r.status != 503 || strings.Contains(string(r.body), "registry") {
		t.Errorf("the second registry's record of the issuer: %d %s", r.status, r.body)
	}
	if r := fetch(t, atB, onlyB+"/.well-known/oauth-authorization-server"); r.status != 200 || jsonOf(t, r.body)["issuer"] != onlyB {
		t.Errorf("the second registry's other school: %d %s", r.status, r.body)
	}
	status, _, body := get(t, "http://"+admin+"/schoolgate/schools")
	var page struct {
		Schools []struct{ Issuer, Platform, State, Reason string }
	}
	if status != 200 || json.Unmarshal(body, &page) != nil {
		t.Fatalf("schools: %d %s", status, body)
	}
	states := map[string]string{}
	for _, v := range page.Schools {
		if v.Issuer == twice {
			states[v.Platform] = v.State
			if v.State == "failed" && (!strings.Contains(v.Reason, "dir "+regA) || !strings.Contains(v.Reason, "dir "+regB)) {
				t.Errorf("the failed record's reason names not both registries: %s", v.Reason)
			}
		}
	}
	if states["dir "+regA] != "active" || states["dir "+regB] != "failed" {
		t.Errorf("the records of the issuer: %v", states)
	}

	if err := a.Remove(context.Background(), twice); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second registry's school to serve once the first record is gone", func() bool {
		r, err := tryFetch(atB, discovery)
		return err == nil && r.status == 200 && jsonOf(t, r.body)["issuer"] == twice
	})
}
