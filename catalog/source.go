package catalog

import (
	"context"

	"github.com/schoolgate/schoolgate/internal/source"
)

// feedDoc is the feed as internal/source reads it: a file or a URL, at
// most MaxFeedBytes.
var feedDoc = source.Doc{What: "the catalog", Max: MaxFeedBytes, UserAgent: "schoolgate-catalog"}

// read returns the feed bytes at src, refusing more than MaxFeedBytes.
func (m *Manager) read(ctx context.Context, src string) ([]byte, error) {
	return source.Read(ctx, m.client, src, feedDoc)
}
