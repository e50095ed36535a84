package schooltest

import (
	"bytes"
	"sync"
)

// Buffer keeps what a logger or a process writes, from any goroutine,
// while the test reads it (t.Logf cannot be used from goroutines that may
// outlive a test).
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
