package bus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"
)

// The cluster bus's credentials (docs/cluster.md, "Credentials"). Every
// component has its own NATS user nkey (an Ed25519 key pair in the
// nkeys encoding, github.com/nats-io/nkeys: NATS's own authentication,
// no crypto of ours). The NATS server holds only the public keys; a
// client proves it holds the seed by signing the server's nonce. Each
// key may publish and subscribe only on its own subjects:
//
//	session        publish <prefix>.down.*     subscribe <prefix>.up.*
//	edge <id>      publish <prefix>.up.<id>    subscribe <prefix>.down.<id>
//
// so an edge can neither read another edge's traffic nor speak as
// another edge, and nobody but the session reads what edges send.
// Nothing uses request/reply, so no key may touch _INBOX.> either.

// ErrKeys wraps every error about the bus's credential files.
var ErrKeys = errors.New("cluster credentials")

// Keys are the cluster's NATS credentials as the session process
// knows them: its seed file and every edge's public key.
type Keys struct {
	// Dir holds the seed files (0700; each file 0600).
	Dir string
	// Session is the session process's public key.
	Session string
	// Edges maps each edge id to its public key.
	Edges map[string]string
}

// SessionSeedFile is the session process's seed file in dir.
func SessionSeedFile(dir string) string { return filepath.Join(dir, "session.nk") }

// EdgeSeedFile is edge id's seed file in dir: the file the operator
// copies to the edge's machine and gives it as -nats-nkey.
func EdgeSeedFile(dir, id string) string { return filepath.Join(dir, "edge-"+id+".nk") }

// EnsureKeys loads the session's and each named edge's seed from dir,
// generating (from crypto/rand, through nkeys) and writing those
// missing with mode 0600 in a directory of mode 0700. Seeds already
// there are kept, so an edge's file stays valid across restarts; an edge
// left out of edges gets no NATS user (its key is revoked). A seed file
// that others may read is refused.
func EnsureKeys(dir string, edges []string) (*Keys, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeys, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeys, err)
	}
	k := &Keys{Dir: dir, Edges: map[string]string{}}
	var err error
	if k.Session, err = ensureSeed(SessionSeedFile(dir), "the session process"); err != nil {
		return nil, err
	}
	for _, id := range edges {
		if err := CheckEdgeID(id); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrKeys, err)
		}
		if _, dup := k.Edges[id]; dup {
			return nil, fmt.Errorf("%w: edge %q named twice", ErrKeys, id)
		}
		if k.Edges[id], err = ensureSeed(EdgeSeedFile(dir, id), fmt.Sprintf("edge %q", id)); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// ensureSeed returns the public key of the user seed in path, writing a
// new one first if there is none.
func ensureSeed(path, who string) (string, error) {
	pub, err := SeedPublicKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return pub, err
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrKeys, err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrKeys, err)
	}
	body := fmt.Sprintf("# browserfl NATS credentials of %s: whoever holds this file can speak on the cluster bus as %s.\n"+
		"# Keep it 0600 on that component's machine only (docs/cluster.md).\n%s\n", who, who, seed)
	// O_EXCL: two processes generating at once do not overwrite each
	// other's seed.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrKeys, err)
	}
	_, werr := f.WriteString(body)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("%w: write %s: %v", ErrKeys, path, err)
	}
	return kp.PublicKey()
}

// SeedPublicKey checks that path is a user seed file that only its owner
// can read and returns its public key.
func SeedPublicKey(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrKeys, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%w: %s is readable by others (mode %v): chmod 600 it", ErrKeys, path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrKeys, err)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(b)
	clear(b)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrKeys, path, err)
	}
	defer kp.Wipe()
	return kp.PublicKey()
}
