package policy

import (
	"net/http"
	"testing"
)

func FuzzForwardedProto(f *testing.F) {
	for _, s := range []string{"for=1.2.3.4;proto=https", `for="a,b;c";proto="http"`, `proto="\"`, "proto=https, proto=http", ";;,,=", `"`} {
		f.Add(s, "https")
	}
	f.Fuzz(func(t *testing.T, forwarded, xfp string) {
		h := http.Header{"Forwarded": {forwarded}, "X-Forwarded-Proto": {xfp}}
		if proto, ok := ForwardedProto(h); ok != (proto != "") || (ok && proto != "http" && proto != "https") {
			t.Errorf("ForwardedProto(%q, %q) = %q, %v", forwarded, xfp, proto, ok)
		}
	})
}
