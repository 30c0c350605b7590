package dataset_test

import (
	"bytes"
	"fmt"
	"log"

	"browserfl/shared/dataset"
)

// A coordinator serves a shard as IDX bytes; the device parses them back
// into a Set with the same reader.
func Example() {
	images := &dataset.IDX{Type: dataset.Uint8, Dims: []int{4, 2, 2}, Data: []byte{
		0, 255, 255, 0,
		51, 51, 51, 51,
		255, 0, 0, 255,
		0, 0, 0, 0,
	}}
	labels := &dataset.IDX{Type: dataset.Uint8, Dims: []int{4}, Data: []byte{1, 0, 1, 2}}
	var imBuf, labBuf bytes.Buffer
	if err := dataset.WriteIDX(&imBuf, images); err != nil {
		log.Fatal(err)
	}
	if err := dataset.WriteIDX(&labBuf, labels); err != nil {
		log.Fatal(err)
	}

	s, err := dataset.ReadSet("shard", &imBuf, &labBuf, 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Len(), "samples of", s.Features, "features, shape", s.Shape)
	fmt.Println("sample 1:", s.Samples[1].X, "label", s.Samples[1].Label)
	fmt.Println("class counts:", s.ClassCounts())
	// Output:
	// 4 samples of 4 features, shape [2 2]
	// sample 1: [0.2 0.2 0.2 0.2] label 0
	// class counts: [1 2 1]
}

// Errors name the file and the byte where the input went wrong.
func ExampleReadIDX() {
	truncated := []byte{0, 0, 0x08, 1, 0, 0, 0, 5, 7, 7} // claims 5 bytes, has 2
	_, err := dataset.ReadIDX(bytes.NewReader(truncated), "labels.idx")
	fmt.Println(err)
	// Output:
	// dataset: IDX file "labels.idx": byte 10: truncated payload: 2 of 5 bytes
}

// Split 1,000 samples across 3 devices.
func ExampleIID() {
	parts, err := dataset.IID(1000, 3, 1)
	if err != nil {
		log.Fatal(err)
	}
	for j, p := range parts {
		fmt.Println("device", j, "has", len(p), "samples")
	}
	// Output:
	// device 0 has 334 samples
	// device 1 has 333 samples
	// device 2 has 333 samples
}

// Dirichlet(alpha) with a small alpha gives each device few labels; the
// mean per-device label entropy measures how few.
func ExampleDirichlet() {
	labels := make([]int, 10000)
	for i := range labels {
		labels[i] = i % 10
	}
	skewed, err := dataset.Dirichlet(labels, 20, 0.05, 1)
	if err != nil {
		log.Fatal(err)
	}
	iid, err := dataset.IID(len(labels), 20, 1)
	if err != nil {
		log.Fatal(err)
	}
	hSkewed, _ := dataset.MeanLabelEntropy(labels, skewed)
	hIID, _ := dataset.MeanLabelEntropy(labels, iid)
	fmt.Println("Dirichlet(0.05) more skewed than IID:", hSkewed < hIID/2)
	// Output:
	// Dirichlet(0.05) more skewed than IID: true
}

// A scheme chosen by a flag such as -partition=shards:2.
func ExampleParseScheme() {
	sc, err := dataset.ParseScheme("shards:2")
	if err != nil {
		log.Fatal(err)
	}
	labels := []int{0, 0, 1, 1, 2, 2, 3, 3}
	parts, err := sc.Partition(labels, 4, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sc, "gives", len(parts), "devices of", len(parts[0]), "samples")
	// Output:
	// shards:2 gives 4 devices of 2 samples
}
