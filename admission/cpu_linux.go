package admission

import "golang.org/x/sys/unix"

// processCPU is the CPU time the process has used, user and system, in
// nanoseconds.
func processCPU() (int64, bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0, false
	}
	return ts.Nano(), true
}

// threadCPU is the CPU time the calling thread has used, and the thread:
// a request's reading is kept only when it ends on the thread it began
// on, when the thread ran nothing else in between as far as a short
// request goes.
func threadCPU() (ns int64, thread int32, ok bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0, 0, false
	}
	return ts.Nano(), int32(unix.Gettid()), true
}
