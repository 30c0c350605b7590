package dataset

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// A demo shard travels as one blob: the length of the images IDX file
// (uint32, little-endian), the images IDX file, then the labels IDX file
// (both raw, uint8). The coordinator encodes it (/api/demo/shard) and the
// native device decodes it. Demo only: a real deployment has its data on
// the device already.

// MaxShardBytes bounds a demo shard blob (the whole of Fashion-MNIST's
// training set is 47 MB).
const MaxShardBytes = 64 << 20

// EncodeShard encodes s as a demo shard blob.
func EncodeShard(s Set) ([]byte, error) {
	im, lab, err := s.EncodeIDX()
	if err != nil {
		return nil, err
	}
	var a, b bytes.Buffer
	if err := WriteIDX(&a, im); err != nil {
		return nil, err
	}
	if err := WriteIDX(&b, lab); err != nil {
		return nil, err
	}
	out := binary.LittleEndian.AppendUint32(nil, uint32(a.Len()))
	out = append(out, a.Bytes()...)
	return append(out, b.Bytes()...), nil
}

// DecodeShard decodes a demo shard blob with the given number of classes.
func DecodeShard(blob []byte, classes int) (Set, error) {
	if len(blob) < 4 || len(blob) > MaxShardBytes {
		return Set{}, fmt.Errorf("dataset: shard of %d bytes", len(blob))
	}
	n := binary.LittleEndian.Uint32(blob)
	if uint64(n) > uint64(len(blob)-4) {
		return Set{}, fmt.Errorf("dataset: shard images length %d exceeds blob", n)
	}
	im, lab := blob[4:4+n], blob[4+n:]
	s, err := ReadSet("shard", bytes.NewReader(im), bytes.NewReader(lab), classes)
	if err != nil {
		return Set{}, fmt.Errorf("dataset: shard: %w", err)
	}
	return s, nil
}
