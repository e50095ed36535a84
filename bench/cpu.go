package main

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Where the CPU goes during one measured run of the store scenario: on a
// small machine the database shares the CPUs with Caddy and the load
// generator, so a store that is slower may just be one more process
// wanting the same CPUs. All figures come from /proc.

// clockTick is USER_HZ, the unit of the times in /proc/<pid>/stat and
// /proc/stat on Linux.
const clockTick = time.Second / 100

// cpuSample is a snapshot of the CPU time spent so far.
type cpuSample struct {
	caddy, db, harness time.Duration
	// dbWritten is what PostgreSQL's processes have written to storage.
	dbWritten int64
	// Machine-wide, all CPUs together: busy is neither idle nor waiting
	// for I/O; iowait is idle with a disk write or read outstanding.
	busy, iowait, total time.Duration
}

// cpuUse is what one run used: per answered request for the processes,
// shares of the machine's CPU time for busy and iowait, and rest, the
// share busy outside Caddy, PostgreSQL and the bench's own processes (the
// kernel's network and disk work not charged to a process, and anything
// else running on the machine).
type cpuUse struct {
	caddy, db, harness time.Duration
	busy, iowait, rest float64
	// dbWritten is PostgreSQL's bytes written to storage per request.
	dbWritten float64
}

// sampleCPU reads the CPU time of Caddy, of PostgreSQL, of the bench's
// own processes (the load generator in this one, the upstream and the
// no-op MCP server) and of the machine.
func (s *stack) sampleCPU() cpuSample {
	c := cpuSample{caddy: treeCPU(s.caddyPID(), false), harness: treeCPU(os.Getpid(), false)}
	for _, o := range s.others {
		c.harness += treeCPU(o.Process.Pid, false)
	}
	if s.postmaster != 0 {
		c.db = treeCPU(s.postmaster, true)
		c.dbWritten = treeWritten(s.postmaster)
	}
	c.busy, c.iowait, c.total = machineCPU()
	return c
}

// use is the CPU used between two samples by a run that answered n
// requests.
func (a cpuSample) use(b cpuSample, n int) cpuUse {
	var u cpuUse
	if n > 0 {
		per := func(x, y time.Duration) time.Duration { return (y - x) / time.Duration(n) }
		u.caddy, u.db, u.harness = per(a.caddy, b.caddy), per(a.db, b.db), per(a.harness, b.harness)
		u.dbWritten = float64(b.dbWritten-a.dbWritten) / float64(n)
	}
	if t := b.total - a.total; t > 0 {
		u.busy, u.iowait = float64(b.busy-a.busy)/float64(t), float64(b.iowait-a.iowait)/float64(t)
		ours := (b.caddy - a.caddy) + (b.db - a.db) + (b.harness - a.harness)
		u.rest = max(0, float64(b.busy-a.busy-ours)/float64(t))
	}
	return u
}

// postmasterPID finds the PostgreSQL server's main process: the parent of
// the backend that serves a connection.
func postmasterPID(ctx context.Context, dsn string) (int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0, err
	}
	st, err := readStat(backend)
	if err != nil {
		return 0, err
	}
	return st.ppid, nil
}

// procStat is what the bench reads of /proc/<pid>/stat.
type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime int64 // clock ticks
}

func readStat(pid int) (procStat, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The fields after the command name, which is in parentheses and may
	// contain anything.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return procStat{}, errors.New("unexpected /proc/<pid>/stat")
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 15 {
		return procStat{}, errors.New("unexpected /proc/<pid>/stat")
	}
	var st procStat
	var errs [5]error
	st.ppid, errs[0] = strconv.Atoi(f[1])
	st.utime, errs[1] = strconv.ParseInt(f[11], 10, 64)
	st.stime, errs[2] = strconv.ParseInt(f[12], 10, 64)
	st.cutime, errs[3] = strconv.ParseInt(f[13], 10, 64)
	st.cstime, errs[4] = strconv.ParseInt(f[14], 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return procStat{}, errors.New("unexpected /proc/<pid>/stat")
	}
	return st, nil
}

// treeCPU is a process's user+system CPU time; with children, also that
// of its children, live (PostgreSQL's backends, one per connection, and
// its background workers) and exited (counted by the kernel in the
// parent's cutime and cstime once reaped), so that a backend ending
// between two samples is counted once. 0 where /proc cannot tell.
func treeCPU(pid int, children bool) time.Duration {
	st, err := readStat(pid)
	if err != nil {
		return 0
	}
	ticks := st.utime + st.stime
	if children {
		ticks += st.cutime + st.cstime
		for _, cs := range childrenOf(pid) {
			ticks += cs.utime + cs.stime + cs.cutime + cs.cstime
		}
	}
	return time.Duration(ticks) * clockTick
}

// child is a live child process and what /proc/<pid>/stat says of it.
type child struct {
	pid int
	procStat
}

// childrenOf lists a process's live children.
func childrenOf(pid int) []child {
	var out []child
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil || c == pid {
			continue
		}
		if cs, err := readStat(c); err == nil && cs.ppid == pid {
			out = append(out, child{pid: c, procStat: cs})
		}
	}
	return out
}

// treeWritten is what a process and its live children have written to
// storage: PostgreSQL's backends, WAL writer and checkpointer. A backend
// that exited between two samples takes its count with it, so the bench
// keeps its connections open across a run.
func treeWritten(pid int) int64 {
	n := processWritten(pid)
	for _, c := range childrenOf(pid) {
		n += processWritten(c.pid)
	}
	return n
}

// machineCPU reads the machine's CPU time, all CPUs together, from the
// first line of /proc/stat: user nice system idle iowait irq softirq
// steal (guest time is already in user).
func machineCPU() (busy, iowait, total time.Duration) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0
	}
	var v [8]int64
	for i := range v {
		v[i], _ = strconv.ParseInt(f[i+1], 10, 64)
	}
	var all int64
	for _, x := range v {
		all += x
	}
	idle, wait := v[3], v[4]
	return time.Duration(all-idle-wait) * clockTick, time.Duration(wait) * clockTick, time.Duration(all) * clockTick
}
