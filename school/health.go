package school

import (
	"context"
	"time"
)

// Health is a school's health as the admin API reports it.
type Health struct {
	Issuer  string `json:"issuer"`
	Healthy bool   `json:"healthy"`
	Store   string `json:"store"`
	Keys    string `json:"keys"`
	Catalog string `json:"catalog"`
	Courses int    `json:"courses"`
	// ClockSkewMS is this host's clock minus the shared database's, for a
	// store that several instances share: they judge expiries and grace
	// windows by their own clocks, so the skew must stay far below
	// refresh_grace.
	ClockSkewMS *int64 `json:"clock_skew_ms,omitempty"`
}

// skewReporter is a store whose clock may differ from this host's.
type skewReporter interface {
	ClockSkew(ctx context.Context) (time.Duration, error)
}

// Health checks the school's store, signing keys and catalog. A catalog
// not imported yet is reported but does not make the school unhealthy
// (everything but the catalog tools works, and the first import may be on
// its way); one whose imports fail with no catalog to fall back on does.
func (s *Site) Health(ctx context.Context) Health {
	h := Health{Issuer: s.cfg.Issuer, Healthy: true, Store: "ok", Keys: "ok", Catalog: "none configured"}
	if err := s.as.CheckStore(ctx); err != nil {
		h.Healthy, h.Store = false, "unreadable: "+err.Error()
	} else if sr, ok := s.cfg.Store.(skewReporter); ok {
		skew, err := sr.ClockSkew(ctx)
		if err != nil {
			h.Healthy, h.Store = false, "unreadable: "+err.Error()
		} else {
			ms := skew.Milliseconds()
			h.ClockSkewMS = &ms
		}
	}
	if !s.as.Keys().CanSign(s.now()) {
		h.Healthy, h.Keys = false, "no key may sign now"
	}
	if s.cfg.Catalog != "" {
		h.Catalog = s.catalogHealth(ctx)
		h.Courses = s.Courses()
		if failed := s.catalogErr.Load(); failed != nil {
			// A school serving an older catalog still answers; one with
			// none has catalog tools that find nothing. A store that did
			// not keep the feed is the store's failure, reported above
			// and retried once it is back.
			if h.Catalog == "not imported yet" && !failed.storing {
				h.Healthy, h.Catalog = false, "import failing: "+failed.msg
			} else {
				h.Catalog += "; the last import failed: " + failed.msg
			}
		}
	}
	return h
}

// catalogHealth says whether the school has a catalog to serve, without
// loading one nobody has asked for.
func (s *Site) catalogHealth(ctx context.Context) string {
	m := s.catalog
	switch {
	case m.Loaded() != nil:
		return "ok"
	case m.LoadError() != "":
		return "unreadable: " + m.LoadError()
	case m.Cold():
		stored, err := m.HasStoredFeed(ctx)
		if err != nil {
			return "unreadable: " + err.Error()
		}
		if stored {
			return "ok (loaded on first use)"
		}
	}
	return "not imported yet"
}
