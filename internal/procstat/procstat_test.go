package procstat

import (
	"os"
	"strconv"
	"testing"
)

func TestOwnProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	m, err := ReadMemory(os.Getpid())
	if err != nil || m.RSS <= 0 || m.Anon <= 0 || m.Anon+m.File > m.RSS+(1<<20) {
		t.Fatalf("memory %+v, %v", m, err)
	}
	if _, err := CPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/schedstat"); err == nil {
		if w, err := RunWait(os.Getpid()); err != nil || w < 0 {
			t.Errorf("RunWait = %v, %v", w, err)
		}
		if _, err := RunWait(-1); err == nil {
			t.Error("a missing process has no wait")
		}
	}
	if _, err := CPU(-1); err == nil {
		t.Error("a missing process has no CPU time")
	}
	if _, err := ReadMemory(-1); err == nil {
		t.Error("a missing process has no memory")
	}
}

func TestWrittenBytes(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc/<pid>/io")
	}
	before, err := WrittenBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(t.TempDir() + "/w")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	after, err := WrittenBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// tmpfs writes nothing to storage; a disk-backed directory counts
	// the 64 KB written.
	if after < before {
		t.Fatalf("write_bytes went down: %d → %d", before, after)
	}
	if _, err := WrittenBytes(-1); err == nil {
		t.Error("a missing process has written nothing")
	}
}
