// Package local turns what a person gives the page into samples: picked
// files (IDX arrays, raw or gzipped, or images whose file name starts with
// their label), drawings read from a canvas, and the demo shard; and it
// encodes sample sets for the page's storage (as IDX arrays, so a stored
// shard is byte-for-byte what a dataset loader reads).
//
// It is portable Go (no syscall/js) so it is tested natively; the browser
// build only moves bytes between the page and these functions.
//
// Invariants:
//   - Every sample produced has exactly Features = 28*28 values in [0, 1]
//     (white strokes on black, the MNIST convention) and a label in
//     [0, Classes).
//   - Nothing here panics on a malformed file: bad input is an error that
//     names the file.
package local
