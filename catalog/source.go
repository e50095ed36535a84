package catalog

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// fetchTimeout bounds a feed download. Refresh runs in the background, but
// an admin-triggered refresh waits for it, and a feed server that hangs
// must not hold an import slot forever.
const fetchTimeout = 15 * time.Second

// read returns the feed bytes at src, refusing more than MaxFeedBytes.
func (m *Manager) read(ctx context.Context, src string) ([]byte, error) {
	if isHTTPURL(src) {
		return m.fetch(ctx, src)
	}
	return readFile(src)
}

func isHTTPURL(src string) bool {
	u, err := url.Parse(src)
	if err != nil {
		return false
	}
	s := strings.ToLower(u.Scheme)
	return (s == "http" || s == "https") && u.Host != ""
}

func (m *Manager) fetch(ctx context.Context, src string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, fmt.Errorf("catalog URL %s: %v", src, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "schoolgate-catalog")
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the catalog: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the catalog: %s answered %s", src, resp.Status)
	}
	if resp.ContentLength > MaxFeedBytes {
		return nil, tooLarge(src)
	}
	return readCapped(resp.Body, src)
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the catalog: %v", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxFeedBytes {
		return nil, tooLarge(path)
	}
	return readCapped(f, path)
}

// readCapped reads one byte more than the cap so that an oversize feed is
// detected without reading all of it.
func readCapped(r io.Reader, src string) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxFeedBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the catalog from %s: %v", src, err)
	}
	if len(raw) > MaxFeedBytes {
		return nil, tooLarge(src)
	}
	return raw, nil
}

func tooLarge(src string) error {
	return fmt.Errorf("the catalog at %s is larger than %d bytes", src, MaxFeedBytes)
}
