package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/schoolgate/schoolgate/store"
)

// A method added to Store would reach the real store through the
// embedded interface and never fail, and the tests built on Failing
// would pass without exercising it: every method but Close must fail, and
// fail before it touches the store beneath (here none, which would panic).
func TestFailingStoreFailsEveryMethod(t *testing.T) {
	fs := &Failing{}
	fs.Fail()
	ctxType := reflect.TypeFor[context.Context]()
	errType := reflect.TypeFor[error]()
	v := reflect.ValueOf(fs)
	st := reflect.TypeFor[store.Store]()
	for i := range st.NumMethod() {
		m := st.Method(i)
		if m.Name == "Close" {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			fn := v.MethodByName(m.Name)
			args := make([]reflect.Value, fn.Type().NumIn())
			for j := range args {
				in := fn.Type().In(j)
				if in == ctxType {
					args[j] = reflect.ValueOf(context.Background())
				} else {
					args[j] = reflect.Zero(in)
				}
			}
			var out []reflect.Value
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("reached the real store (%v): Failing must override %s", p, m.Name)
					}
				}()
				out = fn.Call(args)
			}()
			last := out[len(out)-1]
			if last.Type() != errType {
				t.Fatalf("%s does not return an error last", m.Name)
			}
			if err, _ := last.Interface().(error); !errors.Is(err, ErrStoreDown) {
				t.Errorf("%s returned %v, want %v: Failing must override it", m.Name, err, ErrStoreDown)
			}
		})
	}
}
