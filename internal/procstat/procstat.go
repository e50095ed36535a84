// Package procstat reads a process's CPU time and resident memory from
// Linux's /proc, for the benchmark harness and the soak test.
package procstat

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times on Linux.
const clockTicks = 100

// CPU is the user+system CPU time of a process, all threads.
func CPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses and may
	// contain spaces.
	i := strings.LastIndexByte(string(raw), ')')
	f := strings.Fields(string(raw[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, errors.New("procstat: unexpected /proc/<pid>/stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("procstat: unexpected /proc/<pid>/stat")
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// Memory is a process's resident memory in bytes: all of it, anonymous
// (heap, stacks) and file-backed (mapped files, such as bbolt's).
type Memory struct {
	RSS, Anon, File int64
}

// ReadMemory reads a process's resident memory.
func ReadMemory(pid int) (Memory, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	fields := map[string]*int64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	for _, line := range strings.Split(string(raw), "\n") {
		for prefix, dst := range fields {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err != nil {
					return Memory{}, errors.New("procstat: unexpected " + prefix + v)
				}
				*dst = kb << 10
			}
		}
	}
	if m.RSS == 0 {
		return Memory{}, errors.New("procstat: no VmRSS in /proc/<pid>/status")
	}
	return m, nil
}

// WrittenBytes is how many bytes a process has caused to be written to
// storage (write_bytes of /proc/<pid>/io): the pages it dirtied, counted
// when dirtied, whether or not the kernel has flushed them yet. Socket
// writes are not in it, so for a gateway it is what its store wrote.
func WrittenBytes(pid int) (int64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, errors.New("procstat: unexpected write_bytes" + v)
			}
			return n, nil
		}
	}
	return 0, errors.New("procstat: no write_bytes in /proc/<pid>/io")
}

// RunWait is the time a process's threads have spent runnable but waiting
// for a processor (the second field of each /proc/<pid>/task/*/schedstat,
// summed; threads that have ended are not counted). Beside CPU, it tells
// a wall time stretched by a busy machine from one spent waiting for a
// disk or a lock, which is in neither.
func RunWait(pid int) (time.Duration, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, t := range tasks {
		raw, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(raw))
		if len(f) < 2 {
			return 0, errors.New("procstat: unexpected schedstat")
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, errors.New("procstat: unexpected schedstat")
		}
		sum += ns
	}
	return time.Duration(sum), nil
}
