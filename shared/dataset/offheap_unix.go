//go:build unix

package dataset

import "syscall"

// offHeapMin is the smallest payload mapped outside the heap.
const offHeapMin = 1 << 20

// offHeap returns n zeroed bytes: for n >= offHeapMin an anonymous private
// mapping, which the garbage collector neither scans nor counts in its
// heap goal, and which is never unmapped (a loaded dataset lives as long
// as the process); a heap slice otherwise, or if the mapping fails.
func offHeap(n int) []byte {
	if n >= offHeapMin {
		if b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON); err == nil {
			return b
		}
	}
	return make([]byte, n)
}
