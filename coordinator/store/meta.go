package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var keySessionStart = []byte("session_start")

// SessionStart returns when this store's session started: the time kept
// in the store, or, the first time it is asked, the earliest of now, the
// first committed round and the first registered device, which it then
// keeps.
func (s *Store) SessionStart(now time.Time) (time.Time, error) {
	var start time.Time
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keySessionStart); len(v) == 8 {
			start = time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
			return nil
		}
		start = now.UTC()
		if _, v := tx.Bucket(bucketRounds).Cursor().First(); v != nil {
			var rec RoundRecord
			if json.Unmarshal(v, &rec) == nil && !rec.Started.IsZero() && rec.Started.Before(start) {
				start = rec.Started.UTC()
			}
		}
		tx.Bucket(bucketDevices).ForEach(func(_, v []byte) error {
			var d deviceRecord
			if json.Unmarshal(v, &d) == nil && !d.Created.IsZero() && d.Created.Before(start) {
				start = d.Created.UTC()
			}
			return nil
		})
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(start.UnixNano()))
		return meta.Put(keySessionStart, b[:])
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("session start: %w", err)
	}
	return start, nil
}

// Meta returns the value kept under key in the store's meta bucket (nil
// if none). The session core keeps its lifecycle there.
func (s *Store) Meta(key string) ([]byte, error) {
	var v []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v = append([]byte(nil), tx.Bucket(bucketMeta).Get([]byte(key))...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if len(v) == 0 {
		return nil, nil
	}
	return v, nil
}

// PutMeta keeps v under key in the store's meta bucket, durably.
func (s *Store) PutMeta(key string, v []byte) error {
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte(key), v) }); err != nil {
		return fmt.Errorf("store %s: %w", key, err)
	}
	return nil
}

// NoSync turns off fsync on commit and shortens the batching of
// registrations (10 ms by default) to a microsecond: for fuzzing, where
// durability is not under test and speed is. A session never calls it.
func (s *Store) NoSync() {
	s.db.NoSync = true
	s.db.MaxBatchDelay = time.Microsecond
}
