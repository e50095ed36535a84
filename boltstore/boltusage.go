package boltstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/schoolgate/schoolgate/store"
)

// The usage buckets (store.UsageStore) in bucketUsage: a minute's bucket
// under 'm' and an hour's under 'h', each followed by its start in Unix
// seconds, big-endian, so that a span's buckets are in time order; the
// value is the counts' stored form as JSON. The last activity is under
// keyLastActive, in Unix nanoseconds. An addition joins the group commit
// of the hot paths: a flush a minute per school is one more writer in a
// commit that may be under way anyway.
var (
	bucketUsage   = []byte("usage")
	keyLastActive = []byte("last_active")
)

const (
	usageMinutes = 'm'
	usageHours   = 'h'
)

func usagePrefix(span time.Duration) byte {
	if span == store.UsageHour {
		return usageHours
	}
	return usageMinutes
}

// usageKey is a bucket's key. No bucket starts before 1970, so the
// unsigned seconds order as the times do.
func usageKey(span time.Duration, start time.Time) []byte {
	return binary.BigEndian.AppendUint64([]byte{usagePrefix(span)}, uint64(start.Unix()))
}

// AddUsage implements store.UsageStore.
func (s *boltStore) AddUsage(ctx context.Context, deltas []store.UsageDelta) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := store.PlanUsage(deltas)
	if len(p.Buckets) == 0 && p.LastActive.IsZero() {
		return nil
	}
	return s.write(ctx, func(tx *bolt.Tx) error {
		b := rare(tx, bucketUsage)
		for i := range p.Buckets {
			pb := &p.Buckets[i]
			k := usageKey(pb.Span, pb.Start)
			c := pb.UsageCounts // each run adds to what is stored anew
			if v := b.Get(k); v != nil {
				stored, err := readUsage(v)
				if err != nil {
					return err
				}
				c.Add(&stored)
			}
			raw, err := json.Marshal(c.Stored())
			if err != nil {
				return err
			}
			if err := b.Put(k, raw); err != nil {
				return err
			}
		}
		if last := p.LastActive; !last.IsZero() && last.After(lastActive(b)) {
			if err := b.Put(keyLastActive, binary.BigEndian.AppendUint64(nil, uint64(last.UnixNano()))); err != nil {
				return err
			}
		}
		if len(p.Buckets) == 0 {
			return nil
		}
		if err := purgeUsage(b, usageMinutes, p.KeepMinutesFrom); err != nil {
			return err
		}
		return purgeUsage(b, usageHours, p.KeepHoursFrom)
	})
}

func readUsage(v []byte) (store.UsageCounts, error) {
	var st store.UsageStored
	if err := json.Unmarshal(v, &st); err != nil {
		return store.UsageCounts{}, fmt.Errorf("reading a usage bucket: %w", err)
	}
	return st.Counts(), nil
}

// lastActive is the stored last activity, zero if none.
func lastActive(b *bolt.Bucket) time.Time {
	v := b.Get(keyLastActive)
	if len(v) != 8 {
		return time.Time{}
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
}

// purgeUsage deletes the buckets under prefix that start before from.
func purgeUsage(b *bolt.Bucket, prefix byte, from time.Time) error {
	end := binary.BigEndian.AppendUint64([]byte{prefix}, uint64(from.Unix()))
	var old [][]byte
	c := b.Cursor()
	for k, _ := c.Seek([]byte{prefix}); k != nil && k[0] == prefix && string(k) < string(end); k, _ = c.Next() {
		old = append(old, k)
	}
	for _, k := range old {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// LoadUsage implements store.UsageStore.
func (s *boltStore) LoadUsage(ctx context.Context) (*store.Usage, error) {
	u := &store.Usage{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := rare(tx, bucketUsage)
		u.Buckets, u.LastActive = nil, lastActive(b)
		for _, span := range []time.Duration{store.UsageMinute, store.UsageHour} {
			prefix := usagePrefix(span)
			c := b.Cursor()
			for k, v := c.Seek([]byte{prefix}); k != nil && k[0] == prefix; k, v = c.Next() {
				if len(k) != 9 {
					continue
				}
				counts, err := readUsage(v)
				if err != nil {
					return err
				}
				start := time.Unix(int64(binary.BigEndian.Uint64(k[1:])), 0).UTC()
				u.Buckets = append(u.Buckets, store.UsageBucket{Span: span, Start: start, UsageCounts: counts})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}
