package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sort"
	"strconv"
	"time"
)

// A lean HTTP/1.1 load generator for -noisy: each client writes one
// request built once, on a keep-alive connection of its own, and reads
// the answer with no more parsing than its status, its framing and
// Retry-After. On two processors shared with the gateway, net/http's
// client spent more processor time a request than the gateway did (top,
// during a discovery flood: Caddy 0.74 CPU, the two generators 0.94), so
// the victim's figures measured the generators' share of the machine as
// much as the gateway's fairness; a load tool in front of a real
// gateway runs elsewhere, or costs little (wrk, h2load).

// rawRequest is a request as the bytes to write, the same every time.
type rawRequest struct {
	wire []byte
	want []byte // what its 200 must contain
}

// buildRaw writes spec as HTTP/1.1 bytes for a keep-alive connection.
func buildRaw(spec requestSpec) (rawRequest, error) {
	u, err := url.Parse(spec.URL)
	if err != nil {
		return rawRequest{}, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: schoolgate-bench\r\n", spec.Method, u.RequestURI(), u.Host)
	keys := make([]string, 0, len(spec.Header))
	for k := range spec.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\r\n", k, spec.Header[k])
	}
	if spec.Body != "" || spec.Method == "POST" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(spec.Body))
	}
	b.WriteString("\r\n")
	b.WriteString(spec.Body)
	return rawRequest{wire: b.Bytes(), want: []byte(spec.Want)}, nil
}

// rawAnswer is what rawConn.do read of an answer.
type rawAnswer struct {
	status     int
	retryAfter bool
	body       []byte // valid until the connection's next request
}

// rawConn is one client's connection, dialled at its first request and
// again after the server closed it.
type rawConn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
	body []byte
	stop func() bool // ends the connection when the run's context does
}

// do sends req and reads its answer; a context ended meanwhile closes
// the connection and returns ctx's error.
func (rc *rawConn) do(ctx context.Context, req rawRequest) (rawAnswer, error) {
	if rc.c == nil {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", rc.addr)
		if err != nil {
			return rawAnswer{}, err
		}
		rc.c = c
		if rc.r == nil {
			rc.r = bufio.NewReaderSize(c, 16<<10)
		} else {
			rc.r.Reset(c)
		}
		rc.stop = context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	}
	a, closeAfter, err := rc.roundTrip(req)
	if err != nil || closeAfter {
		rc.close()
	}
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return a, err
}

func (rc *rawConn) close() {
	if rc.c != nil {
		rc.stop()
		rc.c.Close()
		rc.c = nil
	}
}

func (rc *rawConn) roundTrip(req rawRequest) (a rawAnswer, closeAfter bool, err error) {
	if _, err = rc.c.Write(req.wire); err != nil {
		return a, true, err
	}
	line, err := rc.r.ReadSlice('\n')
	if err != nil {
		return a, true, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return a, true, fmt.Errorf("not an HTTP answer: %.40q", line)
	}
	if a.status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return a, true, fmt.Errorf("status line %.40q", line)
	}
	length, chunked := -1, false
	for {
		line, err = rc.r.ReadSlice('\n')
		if err != nil {
			return a, true, err
		}
		h := bytes.TrimRight(line, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return a, true, fmt.Errorf("header line %.40q", h)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return a, true, fmt.Errorf("Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Retry-After")):
			a.retryAfter = true
		case bytes.EqualFold(name, []byte("Connection")):
			closeAfter = bytes.EqualFold(value, []byte("close"))
		}
	}
	rc.body = rc.body[:0]
	switch {
	case chunked:
		err = rc.readChunked()
	case length >= 0:
		rc.body = grow(rc.body, length)
		_, err = io.ReadFull(rc.r, rc.body)
	default:
		// Neither: the body ends with the connection.
		closeAfter = true
		rc.body, err = appendAll(rc.body, rc.r)
	}
	a.body = rc.body
	return a, closeAfter || err != nil, err
}

// readChunked reads a chunked body into rc.body (trailers skipped).
func (rc *rawConn) readChunked() error {
	for {
		line, err := rc.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseUint(string(bytes.TrimSpace(size)), 16, 31)
		if err != nil {
			return fmt.Errorf("chunk size %.40q", line)
		}
		if n == 0 {
			for { // trailers, to the blank line
				line, err = rc.r.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return nil
				}
			}
		}
		at := len(rc.body)
		rc.body = grow(rc.body, at+int(n))
		if _, err = io.ReadFull(rc.r, rc.body[at:]); err != nil {
			return err
		}
		if _, err = rc.r.Discard(2); err != nil { // the chunk's CRLF
			return err
		}
	}
}

// grow returns b resized to n, keeping its contents.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		nb := make([]byte, n, n*2)
		copy(nb, b)
		return nb
	}
	return b[:n]
}

func appendAll(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// rawClients are a run's connections, one a worker.
type rawClients struct{ conns []rawConn }

func newRawClients(port, workers int) *rawClients {
	rc := &rawClients{conns: make([]rawConn, workers)}
	for i := range rc.conns {
		rc.conns[i].addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	return rc
}

// closeAll closes every worker's connection, at the end of a run.
func (rc *rawClients) closeAll() {
	for i := range rc.conns {
		rc.conns[i].close()
	}
}

// askRaw is ask (noisyflood.go) over worker w's own connection.
func askRaw(ctx context.Context, rc *rawClients, req rawRequest, t *tally, w int) (int, error) {
	a, err := rc.conns[w].do(ctx, req)
	if err != nil {
		if ctx.Err() == nil {
			t.record(w, 0, false)
		}
		return 0, err
	}
	t.record(w, a.status, a.retryAfter)
	if a.status == 200 && !bytes.Contains(a.body, req.want) {
		t.markBad(w)
		return a.status, fmt.Errorf("a 200 without %q: %.200s", req.want, a.body)
	}
	return a.status, nil
}
