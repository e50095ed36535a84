package caddymodule

import (
	platformcore "github.com/schoolgate/schoolgate/platform"
	"github.com/schoolgate/schoolgate/registry"
)

// hostTable is the platform's host table (platform.Table) of its
// schools: an immutable value, replaced at each registry change by a copy
// that shares all it did not change, so a request reads it without a
// lock.
type hostTable = platformcore.Table[*platformSchool]

func newHostTable(size int) *hostTable { return platformcore.NewTable[*platformSchool](size) }

// Record is the school's record, as the host table routes to it.
func (e *platformSchool) Record() *registry.Record { return e.rec }

// hostName is a host key without its port (platform.HostName).
func hostName(key string) string { return platformcore.HostName(key) }
