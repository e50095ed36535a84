// Package cputime reads the processor time the process and the calling
// thread have used, for the fair share of the instance between schools
// (package admission) and the stores that spend it on a request's
// behalf (a group commit's leader).
package cputime

import (
	"os"

	"golang.org/x/sys/unix"
)

// Process is the CPU time the process has used, user and system, in
// nanoseconds.
func Process() (int64, bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0, false
	}
	return ts.Nano(), true
}

// Thread is the CPU time the calling thread has used, and the thread. A
// reading taken around some work is the work's only when it ends on the
// thread it began on (a goroutine keeps its thread through a blocking
// system call, and a short piece of work is rarely moved), and then at
// most the time it took.
func Thread() (ns int64, thread int32, ok bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0, 0, false
	}
	return ts.Nano(), int32(unix.Gettid()), true
}

// System is the machine's processors' time since boot, every process
// together, from /proc/stat: busy (user, nice, system, interrupts,
// stolen by the hypervisor) and total (busy, idle and waiting on I/O), in
// the kernel's ticks, and how many processors it counts.
func System() (busy, total int64, cpus int, ok bool) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	return parseStat(string(raw))
}
