package caddymodule

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	platformcore "github.com/schoolgate/schoolgate/platform"
)

// BenchmarkCertificateRefused measures a refused on-demand handshake's
// permission among 10,000 schools: "logged" is a host's first refusal of
// a minute (the lookup, the reason looked for through every record, the
// log line, to a discarded writer), "flood" a refusal once the minute's
// hosts are logged (the lookup and the refusal log's map).
func BenchmarkCertificateRefused(b *testing.B) {
	tp := platformOf(b, 10_000, "")
	perm := new(CertificatePermission)
	if err := perm.Provision(tp.platform.ctx); err != nil {
		b.Fatal(err)
	}
	perm.log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	b.Run("logged", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			perm.refusals.Reset() // a new minute each time
			i++
			_ = perm.CertificateAllowed(b.Context(), fmt.Sprintf("random-%d.example", i))
		}
	})
	b.Run("flood", func(b *testing.B) {
		for i := range platformcore.HostsLoggedPerMinute + 1 {
			_ = perm.CertificateAllowed(b.Context(), fmt.Sprintf("filler-%d.example", i))
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			_ = perm.CertificateAllowed(b.Context(), fmt.Sprintf("random-%d.example", i))
		}
	})
}
