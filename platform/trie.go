package platform

import (
	"hash/maphash"
	"iter"
	"math/bits"
)

// trie is a persistent map of strings: a hash array mapped trie. A
// change copies the nodes on the path to its key (a few, whatever the
// number of keys) and shares the rest with the map it was made from, so
// a table of 100,000 schools changes as fast as one of ten, and a table
// that serves is never written: a reader needs no lock.
//
// Nodes made or copied under one edit token are the changing map's own
// and are written in place by its further changes (a burst of changes to
// one table copies each node once); a map given a new token (a clone)
// copies them again before its first write.
type trie[V any] struct {
	root *trieNode[V]
	n    int
}

// editToken tells the nodes one changing map owns. It is never empty, so
// that each allocation has its own address.
type editToken struct{ _ byte }

const (
	trieBits  = 5
	trieWidth = 1 << trieBits
	// trieBucket is the most entries a leaf keeps before it splits by the
	// next bits of the hash; past the hash's bits (trieDepth) a leaf
	// holds any number, which only keys of one hash reach.
	trieBucket = 8
	trieDepth  = 64 / trieBits
)

// trieNode is a leaf (its entries) or an inner node (a child for each
// set bit of bitmap, in the order of the bits).
type trieNode[V any] struct {
	edit    *editToken
	leaf    bool
	bitmap  uint32
	kids    []*trieNode[V]
	entries []trieEntry[V]
}

// trieEntry is a key and its value. Its hash is not kept: a leaf holds
// a few entries, compared by key (their lengths first), and a leaf that
// splits hashes its keys again; 8 bytes less an entry, for a table that
// keeps 100,000 of them twice.
type trieEntry[V any] struct {
	key string
	val V
}

// trieSeed is the process's seed of the tries' hashes.
var trieSeed = maphash.MakeSeed()

func trieHash(key string) uint64 { return maphash.String(trieSeed, key) }

// get is the value of key, and whether there is one.
func (t *trie[V]) get(key string) (V, bool) {
	var zero V
	n := t.root
	if n == nil {
		return zero, false
	}
	h := trieHash(key)
	for shift := uint(0); ; shift += trieBits {
		if n.leaf {
			for i := range n.entries {
				if e := &n.entries[i]; e.key == key {
					return e.val, true
				}
			}
			return zero, false
		}
		bit := uint32(1) << ((h >> shift) & (trieWidth - 1))
		if n.bitmap&bit == 0 {
			return zero, false
		}
		n = n.kids[bits.OnesCount32(n.bitmap&(bit-1))]
	}
}

// set makes val the value of key, writing in place the nodes edit owns.
func (t *trie[V]) set(key string, val V, edit *editToken) {
	if t.root == nil {
		t.root = &trieNode[V]{edit: edit}
	}
	var added bool
	t.root, added = t.root.set(trieHash(key), key, val, 0, edit)
	if added {
		t.n++
	}
}

// del takes key out, writing in place the nodes edit owns.
func (t *trie[V]) del(key string, edit *editToken) {
	if t.root == nil {
		return
	}
	var removed bool
	t.root, removed = t.root.del(trieHash(key), key, 0, edit)
	if removed {
		t.n--
	}
}

// all are the keys and values, in no order.
func (t *trie[V]) all() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		if t.root != nil {
			t.root.each(yield)
		}
	}
}

// own is n to write under edit: n itself if edit owns it, else a copy.
func (n *trieNode[V]) own(edit *editToken) *trieNode[V] {
	if n.edit == edit && edit != nil {
		return n
	}
	c := *n
	c.edit = edit
	c.kids = append([]*trieNode[V](nil), n.kids...)
	c.entries = append([]trieEntry[V](nil), n.entries...)
	return &c
}

func (n *trieNode[V]) set(h uint64, key string, val V, shift uint, edit *editToken) (*trieNode[V], bool) {
	if n.leaf || (n.bitmap == 0 && shift > 0) {
		for i := range n.entries {
			if n.entries[i].key == key {
				m := n.own(edit)
				m.entries[i].val = val
				return m, false
			}
		}
		if len(n.entries) < trieBucket || shift >= trieDepth*trieBits {
			m := n.own(edit)
			m.leaf = true
			m.entries = append(m.entries, trieEntry[V]{key, val})
			return m, true
		}
		// A full leaf becomes an inner node of its entries, by the
		// hash's next bits.
		inner := &trieNode[V]{edit: edit}
		for _, e := range n.entries {
			inner, _ = inner.setInner(trieHash(e.key), e.key, e.val, shift, edit)
		}
		return inner.setInner(h, key, val, shift, edit)
	}
	return n.setInner(h, key, val, shift, edit)
}

func (n *trieNode[V]) setInner(h uint64, key string, val V, shift uint, edit *editToken) (*trieNode[V], bool) {
	bit := uint32(1) << ((h >> shift) & (trieWidth - 1))
	i := bits.OnesCount32(n.bitmap & (bit - 1))
	m := n.own(edit)
	if n.bitmap&bit == 0 {
		kid := &trieNode[V]{edit: edit, leaf: true, entries: []trieEntry[V]{{key, val}}}
		m.bitmap |= bit
		m.kids = append(m.kids, nil)
		copy(m.kids[i+1:], m.kids[i:])
		m.kids[i] = kid
		return m, true
	}
	kid, added := n.kids[i].set(h, key, val, shift+trieBits, edit)
	m.kids[i] = kid
	return m, added
}

func (n *trieNode[V]) del(h uint64, key string, shift uint, edit *editToken) (*trieNode[V], bool) {
	if n.leaf {
		for i := range n.entries {
			if n.entries[i].key == key {
				m := n.own(edit)
				m.entries = append(m.entries[:i], m.entries[i+1:]...)
				return m, true
			}
		}
		return n, false
	}
	bit := uint32(1) << ((h >> shift) & (trieWidth - 1))
	if n.bitmap&bit == 0 {
		return n, false
	}
	i := bits.OnesCount32(n.bitmap & (bit - 1))
	kid, removed := n.kids[i].del(h, key, shift+trieBits, edit)
	if !removed {
		return n, false
	}
	m := n.own(edit)
	if kid.leaf && len(kid.entries) == 0 {
		// An empty child goes; an inner node left without children
		// stays, empty, until a key comes its way.
		m.bitmap &^= bit
		m.kids = append(m.kids[:i], m.kids[i+1:]...)
	} else {
		m.kids[i] = kid
	}
	return m, true
}

func (n *trieNode[V]) each(yield func(string, V) bool) bool {
	for _, e := range n.entries {
		if !yield(e.key, e.val) {
			return false
		}
	}
	for _, k := range n.kids {
		if !k.each(yield) {
			return false
		}
	}
	return true
}
