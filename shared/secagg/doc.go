// Package secagg implements the secure aggregation protocol of Bonawitz
// et al. ("Practical Secure Aggregation for Privacy-Preserving Machine
// Learning", CCS 2017) as two pure state machines, Client and Server, and
// the binary encodings of their messages. Nothing here does I/O: a
// transport (websockets, NATS, a wasm Worker) carries the encoded
// messages between the calls.
//
// A round has five steps. Each client advertises two fresh X25519 public
// keys signed with its long-term ed25519 key (AdvertiseKeys); the server
// forwards the list, and each client Shamir-shares its self-mask seed and
// its masking secret key among the listed clients, each share encrypted
// with AES-256-GCM for its recipient (ShareKeys); each client sends its
// input masked with its self mask and with one pairwise mask per other
// client over the ring Z_(2^k) (MaskedInput); each client signs the
// survivor set the server announces (Consistency); and, having checked at
// least t signatures over that same set, each client reveals for every
// other client either its share of the self-mask seed (a survivor) or its
// share of the masking secret key (a client that dropped), never both
// (Unmask). The server then reconstructs what it may and outputs the exact
// sum of the survivors' inputs, and nothing else about any one of them.
//
// Keys are fresh every round; every message names its session and round
// and every signature covers them, so a message of another round is
// refused. Every seed and key carries 256 bits. See docs/secagg.md for the
// protocol step by step, the threat model, the proofs and the costs.
package secagg
