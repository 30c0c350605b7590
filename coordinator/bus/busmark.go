package bus

import (
	crand "crypto/rand"
	"encoding/binary"
)

// Mark is where the session's record of a device stands when it asks
// the device for a round.
type Mark struct {
	Gen  uint64 `json:"g"` // the record's generation (random, per record)
	Incl int    `json:"i"` // included updates so far
	Asks int    `json:"a"` // rounds asked so far, this one included
}

// RandomGen draws a record generation (never 0, which marks none yet).
func RandomGen() uint64 {
	var b [8]byte
	crand.Read(b[:]) // never fails (crypto/rand panics rather)
	return binary.LittleEndian.Uint64(b[:]) | 1
}
