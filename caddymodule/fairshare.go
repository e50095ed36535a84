package caddymodule

import (
	"time"

	"github.com/schoolgate/schoolgate/admission"
)

// fairShare is the process's one gate (package admission): every school
// of every config, site blocks and platforms alike, shares the instance
// through it. It outlives a config reload, so that the requests of the
// config ending and of the one starting are counted together, and each
// config's Start gives it that config's options. A school keeps its
// handle as long as its state lives (sitepool.go), across reloads.
var fairShare = admission.NewGate(admission.Options{})

// options are the gate's options from the global option.
func (f *FairShare) options() admission.Options {
	if f == nil {
		return admission.Options{}
	}
	return admission.Options{Off: f.Off, Concurrency: f.Concurrency, Queue: f.Queue, Wait: time.Duration(f.Wait)}
}
