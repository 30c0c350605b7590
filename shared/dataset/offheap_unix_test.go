//go:build unix

package dataset

const offHeapMinForTest = offHeapMin
