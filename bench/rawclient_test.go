package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The lean generator reads what a real Go server writes: lengths,
// chunks, Retry-After, a closed connection, and it sends what the spec
// says.
func TestRawClientRoundTrips(t *testing.T) {
	big := strings.Repeat("course-x ", 2000) // past net/http's buffer: chunked
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/small":
			fmt.Fprintf(w, "%s %s %s %s %s", r.Method, r.Host, r.Header.Get("X-Test"), body, r.URL.RawQuery)
		case "/big":
			io.WriteString(w, big)
		case "/busy":
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		}
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	rc := newRawClients(port, 1)
	defer rc.closeAll()
	host := fmt.Sprintf("school.localhost:%d", port)
	cases := []struct {
		spec       requestSpec
		status     int
		retryAfter bool
		body       string
	}{
		{requestSpec{Method: "POST", URL: "http://" + host + "/small?q=1", Body: "hello", Header: map[string]string{"X-Test": "t"}},
			200, false, "POST " + host + " t hello q=1"},
		{requestSpec{Method: "GET", URL: "http://" + host + "/big"}, 200, false, big},
		{requestSpec{Method: "GET", URL: "http://" + host + "/busy"}, 503, true, ""},
		{requestSpec{Method: "GET", URL: "http://" + host + "/close"}, 200, false, "bye"},
		{requestSpec{Method: "GET", URL: "http://" + host + "/small"}, 200, false, "GET " + host + "   "},
	}
	ctx := context.Background()
	for i := 0; i < 2; i++ { // twice: the same connection again, or a new one after close
		for _, c := range cases {
			req, err := buildRaw(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			a, err := rc.conns[0].do(ctx, req)
			if err != nil {
				t.Fatalf("%s: %v", c.spec.URL, err)
			}
			if a.status != c.status || a.retryAfter != c.retryAfter || string(a.body) != c.body {
				t.Fatalf("%s: %d %v %.60q, want %d %v %.60q", c.spec.URL, a.status, a.retryAfter, a.body, c.status, c.retryAfter, c.body)
			}
		}
	}
}

// A run's end cuts off a request under way with the context's error.
func TestRawClientCutOff(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	rc := newRawClients(srv.Listener.Addr().(*net.TCPAddr).Port, 1)
	defer rc.closeAll()
	req, _ := buildRaw(requestSpec{Method: "GET", URL: srv.URL + "/"})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := rc.conns[0].do(ctx, req); err != context.DeadlineExceeded {
		t.Fatalf("%v, want the context's deadline", err)
	}
}
