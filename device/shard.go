package device

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"browserfl/shared/dataset"
)

// A demo shard travels as one blob: the length of the images IDX file
// (uint32, little-endian), the images IDX file, then the labels IDX file
// (both raw, uint8). Demo only: a real deployment has its data on the
// device already.

// MaxShardBytes bounds a demo shard blob (the whole of Fashion-MNIST's
// training set is 47 MB).
const MaxShardBytes = 64 << 20

// EncodeShard encodes s as a demo shard blob.
func EncodeShard(s dataset.Set) ([]byte, error) {
	im, lab, err := s.EncodeIDX()
	if err != nil {
		return nil, err
	}
	var a, b bytes.Buffer
	if err := dataset.WriteIDX(&a, im); err != nil {
		return nil, err
	}
	if err := dataset.WriteIDX(&b, lab); err != nil {
		return nil, err
	}
	out := binary.LittleEndian.AppendUint32(nil, uint32(a.Len()))
	out = append(out, a.Bytes()...)
	return append(out, b.Bytes()...), nil
}

// DecodeShard decodes a demo shard blob with the given number of classes.
func DecodeShard(blob []byte, classes int) (dataset.Set, error) {
	if len(blob) < 4 || len(blob) > MaxShardBytes {
		return dataset.Set{}, fmt.Errorf("device: shard of %d bytes", len(blob))
	}
	n := binary.LittleEndian.Uint32(blob)
	if uint64(n) > uint64(len(blob)-4) {
		return dataset.Set{}, fmt.Errorf("device: shard images length %d exceeds blob", n)
	}
	im, lab := blob[4:4+n], blob[4+n:]
	s, err := dataset.ReadSet("shard", bytes.NewReader(im), bytes.NewReader(lab), classes)
	if err != nil {
		return dataset.Set{}, fmt.Errorf("device: shard: %w", err)
	}
	return s, nil
}
