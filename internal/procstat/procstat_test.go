package procstat

import (
	"os"
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
	if _, err := CPU(-1); err == nil {
		t.Error("a missing process has no CPU time")
	}
	if _, err := ReadMemory(-1); err == nil {
		t.Error("a missing process has no memory")
	}
}
