package store

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Store is the coordinator's durable state in one bbolt file: the server
// half's state with its committed round counter, one record per committed
// round, and the device registry (id and secret hash). A round is
// committed by exactly one transaction (CommitRound), which is what makes
// inclusion acknowledgements safe to send.
type Store struct {
	db *bolt.DB
}

var (
	bucketMeta    = []byte("meta")
	bucketRounds  = []byte("rounds")
	bucketDevices = []byte("devices")
	bucketStates  = []byte("states")
	// bucketRemoved holds the ids the teacher removed from the session
	// (Coordinator.Remove): id -> removedRecord.
	bucketRemoved = []byte("removed")

	keyServer    = []byte("server_state")
	keyCommitted = []byte("committed")
	keySession   = []byte("session")
	keyStarted   = []byte("rounds_started")
)

// ErrInUse is wrapped by Open when another process holds the
// store file (bbolt's file lock).
var ErrInUse = errors.New("the store is in use")

// ErrUnknownDevice is returned by Authenticate for a device id the store
// has never issued.
var ErrUnknownDevice = errors.New("coordinator: unknown device")

// ErrBadSecret is returned by Authenticate for a wrong secret.
var ErrBadSecret = errors.New("coordinator: wrong device secret")

// Open opens (creating if needed) the store at path.
func Open(path string) (*Store, error) {
	db, err := openBolt(path)
	if errors.Is(err, ErrDamaged) {
		return nil, fmt.Errorf("open store %s: %w: restore a copy of the data folder, or give this coordinator another one (-data)", path, err)
	}
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: %w: another coordinator holds it; stop that one or give this one another data folder (-data)", path, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := readAll(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w: restore a copy of the data folder, or give this coordinator another one (-data)", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketRounds, bucketDevices, bucketStates, bucketRemoved} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("init store %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// ErrDamaged is wrapped by Open when a page of the store cannot be read.
var ErrDamaged = errors.New("the store is damaged")

// openBolt opens the bbolt file at path; a damaged meta or freelist page,
// on which bbolt panics, is ErrDamaged. bbolt then leaves the file open
// and locked by this process: a caller that may open it again (a host
// listing old sessions) remembers the refusal instead.
func openBolt(path string) (db *bolt.DB, err error) {
	defer func() {
		if p := recover(); p != nil {
			db, err = nil, fmt.Errorf("%w (%v)", ErrDamaged, p)
		}
	}()
	return bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
}

// readAll walks every page of db's tree, each key once (ErrDamaged if a page
// cannot be read): bbolt trusts its pages
// and panics on one that is not what its parent says, and a store
// damaged on disk must be refused at start, not take down each request
// that reads it later. (bbolt's own Tx.Check runs in a goroutine of its
// own, where such a panic cannot be recovered.)
func readAll(db *bolt.DB) (err error) {
	return db.View(func(tx *bolt.Tx) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%w (%v)", ErrDamaged, p)
			}
		}()
		var walk func(b *bolt.Bucket) error
		walk = func(b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v == nil {
					if nested := b.Bucket(k); nested != nil {
						return walk(nested)
					}
				}
				return nil
			})
		}
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walk(b) })
	})
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// RoundRecord is what the store keeps of a committed round.
type RoundRecord struct {
	T         int       `json:"t"`
	Cohort    []string  `json:"cohort"`
	Included  []string  `json:"included"`
	Started   time.Time `json:"started"`
	Committed time.Time `json:"committed"`
	// DeadlineHit is true when the round closed because its deadline
	// passed, false when every cohort member still counted had answered
	// (members that left or disconnected are dropped at once) or the
	// session ended.
	DeadlineHit bool `json:"deadline_hit,omitempty"`
	// BytesIn and BytesOut are the round's update and assignment bytes.
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
	// Accuracy and Loss of the global model after the round, when it
	// was evaluated (Evaluated).
	Evaluated bool    `json:"evaluated,omitempty"`
	Accuracy  float64 `json:"accuracy,omitempty"`
	Loss      float64 `json:"loss,omitempty"`
	// EvalSamples is the number of test samples evaluated
	// (Config.EvalSamples).
	EvalSamples int `json:"eval_samples,omitempty"`
}

// Includes reports whether id is among rec's included devices.
func (rec RoundRecord) Includes(id string) bool {
	for _, x := range rec.Included {
		if x == id {
			return true
		}
	}
	return false
}

func roundKey(t int) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(t))
	return k[:]
}

// CommitRound stores, in one transaction, the server state after round
// rec.T, the round's record and the new committed counter. It refuses a
// round that is not the successor of the committed one.
func (s *Store) CommitRound(rec RoundRecord, serverState []byte) error {
	rb, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("commit round %d: %w", rec.T, err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		prev := 0
		if v := meta.Get(keyCommitted); v != nil {
			prev = int(binary.BigEndian.Uint64(v))
		}
		if rec.T != prev+1 {
			return fmt.Errorf("round %d does not follow committed round %d", rec.T, prev)
		}
		if err := tx.Bucket(bucketRounds).Put(roundKey(rec.T), rb); err != nil {
			return err
		}
		// The committed state is states[committed] (State); keyServer,
		// where an older store kept a second copy, goes.
		if meta.Get(keyServer) != nil {
			if err := meta.Delete(keyServer); err != nil {
				return err
			}
		}
		states := tx.Bucket(bucketStates)
		if err := putState(states, rec.T, serverState); err != nil {
			return err
		}
		if rec.T > KeepStates {
			if err := deleteState(states, rec.T-KeepStates); err != nil {
				return err
			}
		}
		return meta.Put(keyCommitted, roundKey(rec.T))
	})
	if err != nil {
		return fmt.Errorf("commit round %d: %w", rec.T, err)
	}
	return nil
}

// keyState is the key of the state inside its round's bucket.
var keyState = []byte("s")

// Each kept state is a bucket of its own, under its round's key in
// bucketStates, holding one value. With the states as plain values of
// one bucket, every leaf of that bucket held at least two of them (bbolt
// splits no page below two keys), so a commit, which adds one state and
// deletes the oldest, rewrote about four (1.3 MB a round at d = 7,850,
// most of the coordinator's allocation); now it writes the new state and
// frees the oldest's pages. A store written before keeps its states as
// plain values: getState reads and deleteState deletes either form.

// getState returns the state kept for round t, nil if none.
func getState(states *bolt.Bucket, t int) []byte {
	if b := states.Bucket(roundKey(t)); b != nil {
		return b.Get(keyState)
	}
	return states.Get(roundKey(t))
}

// putState keeps v as the state of round t, replacing any.
func putState(states *bolt.Bucket, t int, v []byte) error {
	if err := deleteState(states, t); err != nil {
		return err
	}
	b, err := states.CreateBucket(roundKey(t))
	if err != nil {
		return err
	}
	return b.Put(keyState, v)
}

// deleteState deletes the state of round t, if any.
func deleteState(states *bolt.Bucket, t int) error {
	k := roundKey(t)
	if states.Bucket(k) != nil {
		return states.DeleteBucket(k)
	}
	return states.Delete(k)
}

// KeepStates is the number of most recent committed rounds whose server
// state the store keeps, so that RollBack can return to any of them.
const KeepStates = 16

// RollBackRange returns the rounds RollBack can return to: from oldest to
// committed (oldest is 0 while round KeepStates has not been committed:
// round 0 is the initial state).
func (s *Store) RollBackRange() (oldest, committed int, err error) {
	committed, _, err = s.State()
	if err != nil {
		return 0, 0, err
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketStates).Cursor().First()
		oldest = committed
		if k != nil {
			oldest = int(binary.BigEndian.Uint64(k))
		}
		if oldest <= 1 {
			oldest = 0
		}
		return nil
	})
	return oldest, committed, err
}

// RollBack makes round to the last committed round: it restores the
// server state kept for round to (to = 0: the initial state) and deletes
// the records and states of every later round. Devices keep what they
// committed: a device included in a discarded round keeps its newer
// noise, which the restored aggregate does not contain, so that noise is
// never cancelled (it stays in the model as extra noise; no device's
// privacy is lost in the untrusted modes, whose charges are the devices'
// own). In the trusted mode it is not free: the rounds after to were
// published, and rerunning them releases q_t, which holds every sample of
// the rounds up to to, again with fresh server noise, beyond the T
// releases the plan charges (docs/privacy.md, section 3). Use it only to
// recover from a state that cannot be served.
func (s *Store) RollBack(to int) error {
	oldest, committed, err := s.RollBackRange()
	if err != nil {
		return err
	}
	if to < oldest || to > committed {
		return fmt.Errorf("roll back to round %d: the store keeps rounds %d to %d", to, oldest, committed)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		meta, states, rounds := tx.Bucket(bucketMeta), tx.Bucket(bucketStates), tx.Bucket(bucketRounds)
		if err := meta.Delete(keyServer); err != nil {
			return err
		}
		if to > 0 && getState(states, to) == nil {
			return fmt.Errorf("no state kept for round %d", to)
		}
		for t := to + 1; t <= committed; t++ {
			if err := rounds.Delete(roundKey(t)); err != nil {
				return err
			}
			if err := deleteState(states, t); err != nil {
				return err
			}
		}
		return meta.Put(keyCommitted, roundKey(to))
	})
	if err != nil {
		return fmt.Errorf("roll back to round %d: %w", to, err)
	}
	return nil
}

// UpdateRecord rewrites the record of an already committed round (to add
// its evaluation); it never changes which devices were included.
func (s *Store) UpdateRecord(rec RoundRecord) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRounds)
		old := b.Get(roundKey(rec.T))
		if old == nil {
			return fmt.Errorf("update record: round %d not committed", rec.T)
		}
		var prev RoundRecord
		if err := json.Unmarshal(old, &prev); err != nil {
			return fmt.Errorf("update record %d: %w", rec.T, err)
		}
		rec.Included, rec.Cohort = prev.Included, prev.Cohort
		rb, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return b.Put(roundKey(rec.T), rb)
	})
}

// State returns the committed round counter and the server state (nil
// when nothing was committed yet).
func (s *Store) State() (committed int, serverState []byte, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyCommitted); v != nil {
			committed = int(binary.BigEndian.Uint64(v))
		}
		// The state of the committed round is kept among the last
		// KeepStates; a store written before that kept it under keyServer
		// as well.
		if committed > 0 {
			if v := getState(tx.Bucket(bucketStates), committed); v != nil {
				serverState = append([]byte(nil), v...)
				return nil
			}
		}
		if v := meta.Get(keyServer); v != nil {
			serverState = append([]byte(nil), v...)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("read store state: %w", err)
	}
	return committed, serverState, nil
}

// Round returns the record of committed round t; ok is false if round t
// was never committed.
func (s *Store) Round(t int) (rec RoundRecord, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketRounds).Get(roundKey(t))
		if v == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(v, &rec)
	})
	if err != nil {
		return RoundRecord{}, false, fmt.Errorf("read round %d: %w", t, err)
	}
	return rec, ok, nil
}

// Rounds returns the records of rounds > after, in order, at most limit.
func (s *Store) Rounds(after, limit int) ([]RoundRecord, error) {
	var out []RoundRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRounds).Cursor()
		for k, v := c.Seek(roundKey(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var rec RoundRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read rounds: %w", err)
	}
	return out, nil
}

// IncludedCounts returns, for every device id, the committed rounds
// that included it.
func (s *Store) IncludedCounts() (map[string]int, error) {
	counts := map[string]int{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRounds).ForEach(func(k, v []byte) error {
			var rec struct {
				T        int      `json:"t"`
				Included []string `json:"included"`
			}
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("%w: the record under key %x does not read: %w", ErrDamaged, k, err)
			}
			for _, id := range rec.Included {
				counts[id]++
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("count inclusions: %w", err)
	}
	return counts, nil
}

// SessionParams returns the stored session definition (nil if none).
func (s *Store) SessionParams() ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keySession); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	return out, err
}

// MarkRoundsStarted records, durably, that a round of the session has
// been sent to devices (idempotent).
func (s *Store) MarkRoundsStarted() error {
	err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyStarted, []byte{1}) })
	if err != nil {
		return fmt.Errorf("mark rounds started: %w", err)
	}
	return nil
}

// RoundsStarted reports whether MarkRoundsStarted was ever called on the
// store: if not, no device has been asked for a round of the session.
func (s *Store) RoundsStarted() (bool, error) {
	started := false
	err := s.db.View(func(tx *bolt.Tx) error {
		started = tx.Bucket(bucketMeta).Get(keyStarted) != nil
		return nil
	})
	return started, err
}

// PutSessionParams stores the session definition.
func (s *Store) PutSessionParams(b []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySession, b) })
}

type deviceRecord struct {
	SecretHash []byte    `json:"secret_sha256"`
	Created    time.Time `json:"created"`
}

// AddDevice registers a new device id with the SHA-256 of its secret
// (the secret itself is never stored). Registrations are batched.
func (s *Store) AddDevice(id, secret string) error {
	h := sha256.Sum256([]byte(secret))
	return s.AddDeviceHash(id, h[:])
}

// AddDeviceHash is AddDevice with the secret's SHA-256 (what an edge
// forwards: the secret itself never crosses the cluster bus).
func (s *Store) AddDeviceHash(id string, secretHash []byte) error {
	if len(secretHash) != sha256.Size {
		return fmt.Errorf("register device: secret hash of %d bytes", len(secretHash))
	}
	b, err := json.Marshal(deviceRecord{SecretHash: secretHash, Created: time.Now().UTC()})
	if err != nil {
		return err
	}
	err = s.db.Batch(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketDevices)
		if bk.Get([]byte(id)) != nil {
			return fmt.Errorf("device id collision")
		}
		return bk.Put([]byte(id), b)
	})
	if err != nil {
		return fmt.Errorf("register device: %w", err)
	}
	return nil
}

// Known reports whether id is a registered device.
func (s *Store) Known(id string) (bool, error) {
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		found = tx.Bucket(bucketDevices).Get([]byte(id)) != nil
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("look up device: %w", err)
	}
	return found, nil
}

// Authenticate checks secret against the stored hash for id in constant
// time.
func (s *Store) Authenticate(id, secret string) error {
	h := sha256.Sum256([]byte(secret))
	return s.AuthenticateHash(id, h[:])
}

// AuthenticateHash is Authenticate with the secret's SHA-256.
func (s *Store) AuthenticateHash(id string, secretHash []byte) error {
	var rec deviceRecord
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketDevices).Get([]byte(id))
		if v == nil {
			return nil
		}
		found = true
		return json.Unmarshal(v, &rec)
	})
	if err != nil {
		return fmt.Errorf("authenticate: %w", err)
	}
	if !found {
		return ErrUnknownDevice
	}
	if subtle.ConstantTimeCompare(secretHash, rec.SecretHash) != 1 {
		return ErrBadSecret
	}
	return nil
}

// Devices returns the number of registered devices.
func (s *Store) Devices() (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketDevices).Stats().KeyN
		return nil
	})
	return n, err
}

type removedRecord struct {
	At time.Time `json:"at"`
}

// MarkRemoved records durably that the teacher removed device id from the
// session: its hello is refused for the rest of the session, across
// restarts. It returns after the write is on disk.
func (s *Store) MarkRemoved(id string) error {
	b, err := json.Marshal(removedRecord{At: time.Now().UTC()})
	if err != nil {
		return err
	}
	err = s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketRemoved).Put([]byte(id), b) })
	if err != nil {
		return fmt.Errorf("mark device removed: %w", err)
	}
	return nil
}

// Removed returns the ids the teacher removed from the session.
func (s *Store) Removed() (map[string]bool, error) {
	out := map[string]bool{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRemoved).ForEach(func(k, _ []byte) error {
			out[string(k)] = true
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("removed devices: %w", err)
	}
	return out, nil
}
