package admission

// cooledSlot is a slot given back, its school's until its time.
type cooledSlot struct {
	until int64
	s     *School
}

// coolingHeap holds the cooled slots, the one whose time ends first on
// top. Their times differ by more than the order they were given back
// in: a request that a store charged for a group commit's work cools for
// that too, and a discovery document given back after it must not wait
// for it to end.
type coolingHeap struct{ items []cooledSlot }

func (h *coolingHeap) len() int { return len(h.items) }

func (h *coolingHeap) head() cooledSlot { return h.items[0] }

func (h *coolingHeap) push(c cooledSlot) {
	h.items = append(h.items, c)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h.items[p].until <= h.items[i].until {
			break
		}
		h.items[p], h.items[i] = h.items[i], h.items[p]
		i = p
	}
}

func (h *coolingHeap) pop() cooledSlot {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items[last] = cooledSlot{}
	h.items = h.items[:last]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < last && h.items[l].until < h.items[small].until {
			small = l
		}
		if r := l + 1; r < last && h.items[r].until < h.items[small].until {
			small = r
		}
		if small == i {
			return top
		}
		h.items[i], h.items[small] = h.items[small], h.items[i]
		i = small
	}
}
