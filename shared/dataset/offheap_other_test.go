//go:build !unix

package dataset

const offHeapMinForTest = 1 << 20
