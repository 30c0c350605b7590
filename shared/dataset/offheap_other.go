//go:build !unix

package dataset

// offHeap returns n zeroed bytes (on the heap: no anonymous mappings here).
func offHeap(n int) []byte { return make([]byte, n) }
