//go:build !linux

// Package cputime reads the processor time the process and the calling
// thread have used. Where they are not read, both report false, and the
// fair share counts the gateway's own work alone.
package cputime

// Process is not read on this system.
func Process() (int64, bool) { return 0, false }

// Thread is not read on this system.
func Thread() (int64, int32, bool) { return 0, 0, false }

// System is not read on this system.
func System() (busy, total int64, cpus int, ok bool) { return 0, 0, 0, false }
