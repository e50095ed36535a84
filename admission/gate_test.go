package admission

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type result struct {
	slot Slot
	err  error
}

// admitAsync admits a request of s in the background.
func admitAsync(ctx context.Context, s *School) <-chan result {
	ch := make(chan result, 1)
	go func() {
		sl, err := s.Admit(ctx)
		ch <- result{sl, err}
	}()
	return ch
}

// waitQueued waits until n requests wait at the gate.
func waitQueued(t *testing.T, g *Gate, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for g.Waiting() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiting, want %d", g.Waiting(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// sharedGate is a gate whose instance counts as shared for the whole
// test, as after two schools were asked, with no overhead measured.
func sharedGate(o Options) *Gate {
	g := NewGate(o)
	g.sharedFor = int64(time.Hour)
	g.sharedAt.Store(now())
	return g
}

func mustAdmit(t *testing.T, s *School) Slot {
	t.Helper()
	sl, err := s.Admit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sl
}

// A school alone on the instance is never held: however many of its
// requests are in flight, the next is let in at once.
func TestLoneSchoolIsNeverHeld(t *testing.T) {
	g := NewGate(Options{Concurrency: 1})
	a := g.School(1)
	var held []Slot
	for range 5 {
		held = append(held, mustAdmit(t, a))
	}
	if g.shared(now()) {
		t.Fatal("shared with one school")
	}
	for i := range held {
		held[i].Release()
		held[i].Release() // twice is once
	}
	if g.InFlight() != 0 || a.InFlight() != 0 {
		t.Fatalf("in flight %d (school %d) after release", g.InFlight(), a.InFlight())
	}
}

// A second school makes the instance shared: from then on, slots count,
// and while another school holds one, a school holds all but one at most.
func TestSecondSchoolSharesTheInstance(t *testing.T) {
	g := NewGate(Options{Concurrency: 2, Wait: time.Minute})
	a, b := g.School(1), g.School(1)
	lone1, lone2 := mustAdmit(t, a), mustAdmit(t, a)
	if g.shared(now()) {
		t.Fatal("shared with one school asked")
	}
	hb := mustAdmit(t, b) // the lone school's requests were not counted
	if !g.shared(now()) {
		t.Fatal("not shared once a second school was asked")
	}
	lone1.Release()
	lone2.Release()
	ha := mustAdmit(t, a) // one of two while b holds the other: its most
	wa := admitAsync(context.Background(), a)
	waitQueued(t, g, 1)
	select {
	case <-wa:
		t.Fatal("a took the last slot while b held one")
	case <-time.After(2 * presentFor):
	}
	hb.Release() // a asks alone now: it may hold both
	ra := <-wa
	if ra.err != nil {
		t.Fatal(ra.err)
	}
	ra.slot.Release()
	ha.Release()
	if g.InFlight() != 0 || g.Waiting() != 0 {
		t.Fatalf("in flight %d, waiting %d at the end", g.InFlight(), g.Waiting())
	}
}

// Among schools with as many slots, a freed slot goes to the one served
// least lately, not to the oldest waiter: a school with one request
// waiting behind a flood's many gets every other turn.
func TestTurnsAlternate(t *testing.T) {
	g := sharedGate(Options{Concurrency: 1, Wait: time.Minute})
	flood, quiet := g.School(1), g.School(1)
	ctx := context.Background()
	h := mustAdmit(t, flood)
	var floodWaits []<-chan result
	for i := range 3 {
		floodWaits = append(floodWaits, admitAsync(ctx, flood))
		waitQueued(t, g, i+1)
	}
	q := admitAsync(ctx, quiet)
	waitQueued(t, g, 4)
	h.Release()
	// The flood was served last: the quiet school's one waiter goes
	// first, however many of the flood's queued before it.
	r := <-q
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.slot.Release()
	for _, w := range floodWaits {
		f := <-w
		if f.err != nil {
			t.Fatal(f.err)
		}
		f.slot.Release()
	}
	if g.InFlight() != 0 || g.Waiting() != 0 {
		t.Fatalf("in flight %d, waiting %d at the end", g.InFlight(), g.Waiting())
	}
}

// Turns share processor time, not requests: a school whose request held
// its slot for long is served after another's quick requests, however
// many of those queued after it.
func TestTurnsShareTime(t *testing.T) {
	g := sharedGate(Options{Concurrency: 1, Wait: 5 * time.Second})
	slow, quick := g.School(1), g.School(1)
	ctx := context.Background()
	sl := mustAdmit(t, slow)
	// Long against the quick school's own hold below, which lasts while
	// the test queues four requests: on a loaded machine that takes
	// milliseconds, and it is charged too.
	time.Sleep(200 * time.Millisecond)
	sl.Release()
	h := mustAdmit(t, quick)
	ws := admitAsync(ctx, slow)
	waitQueued(t, g, 1)
	var wq []<-chan result
	for i := range 3 {
		wq = append(wq, admitAsync(ctx, quick))
		waitQueued(t, g, i+2)
	}
	h.Release()
	for i, w := range wq {
		r := <-w
		if r.err != nil {
			t.Fatal(r.err)
		}
		select {
		case <-ws:
			t.Fatalf("the slow school was served before the quick one's request %d", i+1)
		default:
		}
		r.slot.Release()
	}
	r := <-ws
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.slot.Release()
	if g.InFlight() != 0 || g.Waiting() != 0 {
		t.Fatalf("in flight %d, waiting %d at the end", g.InFlight(), g.Waiting())
	}
}

// A freed slot goes to the waiting school with the fewest in flight.
func TestFewestInFlightFirst(t *testing.T) {
	g := sharedGate(Options{Concurrency: 3, Wait: time.Minute})
	busy, quiet := g.School(1), g.School(1)
	ctx := context.Background()
	b1, b2 := mustAdmit(t, busy), mustAdmit(t, busy)
	q1 := mustAdmit(t, quiet)
	wb := admitAsync(ctx, busy)
	waitQueued(t, g, 1)
	wq := admitAsync(ctx, quiet)
	waitQueued(t, g, 2)
	b1.Release() // busy 1, quiet 1: the tie goes to quiet, served less lately
	rq := <-wq
	if rq.err != nil {
		t.Fatal(rq.err)
	}
	if busy.InFlight() != 1 || quiet.InFlight() != 2 {
		t.Fatalf("busy %d, quiet %d in flight", busy.InFlight(), quiet.InFlight())
	}
	q1.Release() // busy 1 < quiet 1 after this... busy waits: it gets it
	rb := <-wb
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	for _, sl := range []*Slot{&b2, &rq.slot, &rb.slot} {
		sl.Release()
	}
	if g.InFlight() != 0 {
		t.Fatalf("in flight %d at the end", g.InFlight())
	}
}

func TestWeights(t *testing.T) {
	g := sharedGate(Options{Concurrency: 5, Wait: time.Minute})
	heavy, light := g.School(3), g.School(1)
	ctx := context.Background()
	held := make([]Slot, 4)
	for i := range held {
		held[i] = mustAdmit(t, light)
	}
	// Both schools keep 8 requests waiting, each holding its slot until
	// done is closed.
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range []*School{heavy, light} {
		for range 8 {
			wg.Go(func() {
				sl, err := s.Admit(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				<-done
				sl.Release()
			})
		}
	}
	// The fifth slot went to heavy at once, light being at its most.
	waitQueued(t, g, 15)
	// As light's four slots free, heavy gets three for light's one:
	// heavy 4/3 against light 1/1... the shares settle at 4 and 1.
	for i := range held {
		held[i].Release()
	}
	deadline := time.Now().Add(5 * time.Second)
	for heavy.InFlight() != 4 || light.InFlight() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("heavy %d, light %d in flight, want 4 and 1", heavy.InFlight(), light.InFlight())
		}
		time.Sleep(time.Millisecond)
	}
	close(done)
	wg.Wait()
	if g.InFlight() != 0 || g.Waiting() != 0 {
		t.Fatalf("in flight %d, waiting %d at the end", g.InFlight(), g.Waiting())
	}
}

func TestQueueBound(t *testing.T) {
	g := sharedGate(Options{Concurrency: 2, Queue: 2, Wait: 2 * time.Second})
	a, b, c := g.School(1), g.School(1), g.School(1)
	ctx := context.Background()
	hb := mustAdmit(t, b)
	h := mustAdmit(t, a) // a at its most while b holds a slot: one of two
	waits := make(chan result, 2)
	for range 2 {
		go func() {
			sl, err := a.Admit(ctx)
			waits <- result{sl, err}
		}()
	}
	waitQueued(t, g, 2)
	_, err := a.Admit(ctx)
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Cause != CauseQueueFull || ref.RetryAfter <= 0 {
		t.Fatalf("a third waiter: %v, want a queue_full refusal", err)
	}
	// The bound is the school's: c waits its turn.
	wc := admitAsync(ctx, c)
	waitQueued(t, g, 3)
	hb.Release()
	if r := <-wc; r.err != nil {
		t.Fatal(r.err)
	} else {
		r.slot.Release()
	}
	h.Release()
	for range 2 {
		r := <-waits
		if r.err != nil {
			t.Fatal(r.err)
		}
		r.slot.Release()
	}
}

func TestWaitBound(t *testing.T) {
	g := sharedGate(Options{Concurrency: 1, Wait: 20 * time.Millisecond})
	a := g.School(1)
	h := mustAdmit(t, a)
	defer h.Release()
	t0 := time.Now()
	_, err := a.Admit(context.Background())
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Cause != CauseWait {
		t.Fatalf("%v, want a wait refusal", err)
	}
	if waited := time.Since(t0); waited < 20*time.Millisecond {
		t.Fatalf("refused after %s, before the bound", waited)
	}
	if g.Waiting() != 0 || a.queue.len() != 0 || len(g.waiting) != 0 {
		t.Fatalf("the refused waiter is still queued: %d", g.Waiting())
	}
}

// A school past its wait bound with less than its share under way was
// kept waiting by the others' long requests, not by its own excess: it
// waits on, and is admitted when a slot is freed; up to hardWaits bounds.
func TestWaitBoundWithinShare(t *testing.T) {
	g := sharedGate(Options{Concurrency: 1, Wait: 20 * time.Millisecond})
	a, b := g.School(1), g.School(1)
	h := mustAdmit(t, b)
	ch := admitAsync(context.Background(), a)
	time.Sleep(50 * time.Millisecond) // past the bound
	h.Release()
	r := <-ch
	if r.err != nil {
		t.Fatalf("a school with nothing under way refused: %v", r.err)
	}
	r.slot.Release()

	// Never a hang: refused all the same after hardWaits bounds.
	h = mustAdmit(t, b)
	defer h.Release()
	t0 := time.Now()
	_, err := a.Admit(context.Background())
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Cause != CauseWait {
		t.Fatalf("%v, want a wait refusal", err)
	}
	if waited := time.Since(t0); waited < hardWaits*20*time.Millisecond {
		t.Fatalf("refused after %s, before %d bounds", waited, hardWaits)
	}
	if g.Waiting() != 0 || a.queue.len() != 0 || len(g.waiting) != 0 {
		t.Fatalf("the refused waiter is still queued: %d", g.Waiting())
	}
}

// A school's requests paused on I/O (a commit, a query) are under way
// all the same: a flood whose requests wait on its store has its share,
// and is refused at the bound.
func TestPausedCountForTheShare(t *testing.T) {
	g := sharedGate(Options{Concurrency: 1, Wait: 20 * time.Millisecond})
	a, b := g.School(1), g.School(1)
	p := mustAdmit(t, a)
	p.Pause() // in its commit: the slot is free
	h := mustAdmit(t, b)
	t0 := time.Now()
	_, err := a.Admit(context.Background())
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Cause != CauseWait {
		t.Fatalf("%v, want a wait refusal", err)
	}
	if waited := time.Since(t0); waited >= 2*20*time.Millisecond {
		t.Fatalf("refused after %s: its paused request was not counted", waited)
	}
	h.Release()
	p.Release() // given back while paused
	if n := a.paused.Load(); n != 0 {
		t.Fatalf("%d paused after release", n)
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	g := sharedGate(Options{Concurrency: 1, Wait: time.Minute})
	a := g.School(1)
	h := mustAdmit(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	w := admitAsync(ctx, a)
	waitQueued(t, g, 1)
	cancel()
	if r := <-w; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", r.err)
	}
	h.Release()
	if g.InFlight() != 0 || g.Waiting() != 0 || len(g.waiting) != 0 {
		t.Fatalf("in flight %d, waiting %d", g.InFlight(), g.Waiting())
	}
}

// A panic in the request's work gives its slot back through the
// deferred Release.
func TestReleaseOnPanic(t *testing.T) {
	g := sharedGate(Options{Concurrency: 1})
	a := g.School(1)
	func() {
		defer func() { _ = recover() }()
		sl := mustAdmit(t, a)
		defer sl.Release()
		panic("the handler failed")
	}()
	if g.InFlight() != 0 {
		t.Fatalf("in flight %d after a panic", g.InFlight())
	}
}

func TestOff(t *testing.T) {
	g := sharedGate(Options{Off: true, Concurrency: 1})
	a := g.School(1)
	for range 10 {
		mustAdmit(t, a)
	}
	if g.InFlight() != 0 {
		t.Fatalf("off counts %d", g.InFlight())
	}
}

// While shared, a slot given back is free for the others at once, and
// still its school's for the overhead: the school's next request waits
// for it to cool.
func TestCooling(t *testing.T) {
	g := sharedGate(Options{Concurrency: 1, Wait: time.Minute})
	g.cost.ns.Store(int64(30 * time.Millisecond))
	a, b := g.School(1), g.School(1)
	h := mustAdmit(t, a)
	t0 := time.Now()
	h.Release()
	if g.InFlight() != 0 || a.InFlight() != 1 {
		t.Fatalf("right after the release: gate %d, school %d in flight; want 0 and the cooling 1", g.InFlight(), a.InFlight())
	}
	hb := mustAdmit(t, b)
	if waited := time.Since(t0); waited >= 30*time.Millisecond {
		t.Fatalf("another school waited %s for a cooling slot", waited)
	}
	g.cost.ns.Store(0)
	hb.Release()
	sl := mustAdmit(t, a) // waits for its slot to cool, the timer frees it
	if waited := time.Since(t0); waited < 30*time.Millisecond {
		t.Fatalf("the school's next request admitted after %s, before its slot cooled", waited)
	}
	sl.Release()
	if g.InFlight() != 0 || a.InFlight() != 0 {
		t.Fatalf("in flight %d, school %d at the end", g.InFlight(), a.InFlight())
	}
}

// A slot charged for work a store did on the request's behalf while it
// was paused (a group commit's) cools that much longer: the school's next
// request waits for it, another school's does not.
func TestChargeCools(t *testing.T) {
	g := sharedGate(Options{Concurrency: 1, Wait: time.Minute})
	a, b := g.School(1), g.School(1)
	h := mustAdmit(t, a)
	h.Pause()
	h.Charge(30 * time.Millisecond)
	h.Resume()
	t0 := time.Now()
	h.Release()
	if g.InFlight() != 0 || a.InFlight() != 1 {
		t.Fatalf("right after the release: gate %d, school %d in flight; want 0 and the charge cooling 1", g.InFlight(), a.InFlight())
	}
	hb := mustAdmit(t, b)
	if waited := time.Since(t0); waited >= 30*time.Millisecond {
		t.Fatalf("another school waited %s for a charged slot", waited)
	}
	hb.Release()
	sl := mustAdmit(t, a)
	if waited := time.Since(t0); waited < 30*time.Millisecond {
		t.Fatalf("the school's next request admitted after %s, before its charge cooled", waited)
	}
	sl.Release()
}

// Cooling slots end in the order of their times, not the order they were
// given back in: a long charge given back first holds no slot given back
// after it with a shorter time.
func TestCoolingEndsInTimeOrder(t *testing.T) {
	g := sharedGate(Options{Concurrency: 4, Wait: time.Minute})
	a, b := g.School(1), g.School(1)
	ha := mustAdmit(t, a)
	ha.Charge(time.Hour)
	ha.Release()
	g.cost.ns.Store(int64(time.Millisecond))
	hb := mustAdmit(t, b)
	hb.Release()
	deadline := time.Now().Add(5 * time.Second)
	for g.InFlight(); b.InFlight() != 0; g.InFlight() {
		if time.Now().After(deadline) {
			t.Fatal("a slot cooling for a millisecond still counted behind one cooling for an hour")
		}
		time.Sleep(time.Millisecond)
	}
	if a.InFlight() != 1 {
		t.Fatalf("the school charged an hour has %d in flight, want its slot still cooling", a.InFlight())
	}
}

// A slot left free by the caps goes to the fairest waiting school when
// every waiting school has its most under way and more than one waits;
// with one school waiting, its cap keeps the slot free.
func TestFreeSlotToFairestWhenAllAtCap(t *testing.T) {
	g := sharedGate(Options{Concurrency: 2, Wait: time.Minute})
	flood, victim := g.School(1), g.School(1)
	ctx := context.Background()
	held := mustAdmit(t, flood)
	g.cost.ns.Store(int64(time.Minute))
	first := mustAdmit(t, victim)
	first.Release() // cooling a minute: the victim has its one under way
	g.cost.ns.Store(0)
	flood.pass.Store(victim.pass.Load() + uint64(time.Hour)) // the flood had more
	wf := admitAsync(ctx, flood)
	waitQueued(t, g, 1)
	select {
	case r := <-wf:
		t.Fatalf("the flood, alone waiting, took the slot its cap keeps free (%v)", r.err)
	case <-time.After(50 * time.Millisecond):
	}
	wv := admitAsync(ctx, victim)
	select {
	case r := <-wv:
		if r.err != nil {
			t.Fatal(r.err)
		}
		r.slot.Release()
	case <-time.After(5 * time.Second):
		t.Fatal("the victim waited for its cooling slot beside a free one")
	}
	held.Release()
	r := <-wf
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.slot.Release()
}

// Configure changes the bound for the requests that follow.
func TestConfigure(t *testing.T) {
	g := sharedGate(Options{Concurrency: 1, Wait: time.Minute})
	a, b := g.School(1), g.School(1)
	h := mustAdmit(t, a)
	w := admitAsync(context.Background(), b)
	waitQueued(t, g, 1)
	g.Configure(Options{Concurrency: 2, Wait: time.Minute})
	r := <-w
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.slot.Release()
	h.Release()
}

// Many schools admitting and giving back at once leave nothing taken or
// queued (run with -race).
func TestNoLeakUnderChurn(t *testing.T) {
	g := sharedGate(Options{Concurrency: 3, Queue: 4, Wait: 5 * time.Millisecond})
	schools := []*School{g.School(1), g.School(2), g.School(1)}
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			s := schools[i%len(schools)]
			for j := range 300 {
				if j == 150 && i == 0 {
					g.cost.ns.Store(int64(20 * time.Microsecond))
				}
				ctx, cancel := context.WithCancel(context.Background())
				if j%7 == 0 {
					cancel()
				}
				sl, err := s.Admit(ctx)
				if err == nil {
					time.Sleep(time.Duration(j%3) * 10 * time.Microsecond)
					sl.Release()
				}
				cancel()
			}
		})
	}
	wg.Wait()
	// The last slots cool for the overhead at the machine's scale, which
	// calibration may have set from this busy process after a second.
	for deadline := time.Now().Add(5 * time.Second); g.InFlight() != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if g.InFlight() != 0 || g.Waiting() != 0 || len(g.waiting) != 0 {
		t.Fatalf("in flight %d, waiting %d, schools listed %d", g.InFlight(), g.Waiting(), len(g.waiting))
	}
	for _, s := range schools {
		for deadline := time.Now().Add(5 * time.Second); s.InFlight() != 0 && time.Now().Before(deadline); g.InFlight() {
			time.Sleep(time.Millisecond)
		}
		if s.InFlight() != 0 || s.queue.len() != 0 {
			t.Fatalf("school: in flight %d, queued %d", s.InFlight(), s.queue.len())
		}
	}
}

// A paused slot is free for others while its request waits on I/O; the
// request resumes before its school's requests that wait to begin.
func TestPauseResume(t *testing.T) {
	g := sharedGate(Options{Concurrency: 2, Wait: time.Minute})
	a, b := g.School(1), g.School(1)
	ctx := context.Background()
	sl := mustAdmit(t, a)
	sl.Pause()
	sl.Pause() // nested: one slot given back
	if a.InFlight() != 0 || g.InFlight() != 0 {
		t.Fatalf("paused: school %d, gate %d in flight", a.InFlight(), g.InFlight())
	}
	hb := mustAdmit(t, b)
	ha := mustAdmit(t, a) // a's most, one of two
	newer := admitAsync(ctx, a)
	waitQueued(t, g, 1)
	sl.Resume() // still paused once
	resumed := make(chan struct{})
	go func() { sl.Resume(); close(resumed) }()
	waitQueued(t, g, 2)
	ha.Release()
	<-resumed // first: it was under way
	select {
	case r := <-newer:
		t.Fatalf("a request that had not begun went first: %v", r.err)
	case <-time.After(20 * time.Millisecond):
	}
	sl.Release()
	r := <-newer
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.slot.Release()
	hb.Release()
	if g.InFlight() != 0 || g.Waiting() != 0 {
		t.Fatalf("in flight %d, waiting %d at the end", g.InFlight(), g.Waiting())
	}
}

// A request whose context ended while it waited to resume goes on
// without a slot, and gives nothing back at the end.
func TestResumeAfterCancel(t *testing.T) {
	g := sharedGate(Options{Concurrency: 1, Wait: time.Minute})
	a, b := g.School(1), g.School(1)
	ctx, cancel := context.WithCancel(context.Background())
	sl, err := a.Admit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sl.Pause()
	hb := mustAdmit(t, b)
	done := make(chan struct{})
	go func() { sl.Resume(); close(done) }()
	waitQueued(t, g, 1)
	cancel()
	<-done
	sl.Release()
	hb.Release()
	if g.InFlight() != 0 || g.Waiting() != 0 || a.InFlight() != 0 {
		t.Fatalf("in flight %d, waiting %d, a %d at the end", g.InFlight(), g.Waiting(), a.InFlight())
	}
}

// A lone school's slot is not counted: pausing it changes nothing.
func TestPauseLone(t *testing.T) {
	g := NewGate(Options{Concurrency: 1})
	a := g.School(1)
	sl := mustAdmit(t, a)
	sl.Pause()
	sl.Resume()
	sl.Release()
	if g.InFlight() != 0 {
		t.Fatalf("in flight %d", g.InFlight())
	}
}

// A request resuming after a pause waits at most what is left of its
// hardWaits bounds, then goes on without a slot: never held without end
// behind another school's long request.
func TestResumeWaitBounded(t *testing.T) {
	const bound = 10 * time.Millisecond
	g := sharedGate(Options{Concurrency: 1, Wait: bound})
	a, b := g.School(1), g.School(1)
	sl := mustAdmit(t, a)
	sl.Pause()
	hb := mustAdmit(t, b) // holds the only slot past a's bounds
	t0 := time.Now()
	done := make(chan struct{})
	go func() { sl.Resume(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the resumed request is held past its bounds")
	}
	if waited := time.Since(t0); waited < hardWaits*bound {
		t.Fatalf("went on after %s, before %d bounds", waited, hardWaits)
	}
	if sl.Counted() {
		t.Fatal("went on past its bounds holding a slot")
	}
	if g.Waiting() != 0 || a.queue.len() != 0 || len(g.waiting) != 0 {
		t.Fatalf("the resumed waiter is still queued: %d", g.Waiting())
	}
	sl.Release()
	hb.Release()
	if g.InFlight() != 0 || a.InFlight() != 0 || a.paused.Load() != 0 {
		t.Fatalf("in flight %d, a %d, paused %d at the end", g.InFlight(), a.InFlight(), a.paused.Load())
	}

	// What a request waited to begin counts against the same bounds.
	sl2 := mustAdmit(t, a)
	sl2.waited = int64(hardWaits * bound) // as if it had waited them to begin
	sl2.Pause()
	hb = mustAdmit(t, b)
	t0 = time.Now()
	sl2.Resume()
	if waited := time.Since(t0); waited >= bound || sl2.Counted() {
		t.Fatalf("waited %s more past its bounds (counted %v)", waited, sl2.Counted())
	}
	sl2.Release()
	hb.Release()
	if g.InFlight() != 0 || a.InFlight() != 0 {
		t.Fatalf("in flight %d, a %d at the end", g.InFlight(), a.InFlight())
	}
}
