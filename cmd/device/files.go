package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"browserfl/device"
)

// The device's data files (shard.bin, rows.csv fetched from the
// coordinator) are kept with a digest file beside them, PATH.sha256:
// "LENGTH HEX\n", the file's length and SHA-256, the coordinator's when
// it states one (wire.DigestHeader). Each is written atomically
// (device.WriteAtomic), the digest first: a crash between the two leaves
// a digest the file does not match, and the file is fetched again. A
// file that does not match its digest is never trusted: it is moved
// aside (PATH.bad-TIME, kept for a look) and fetched again.

// errDamaged is wrapped when a kept file does not match its digest.
var errDamaged = errors.New("damaged")

// keep writes b to path, with its digest beside it. stated is the
// coordinator's digest of b (empty if it stated none): a download that
// does not match it is refused (and may be asked again).
func keep(path string, b []byte, stated string) error {
	sum := sha(b)
	if stated != "" && stated != sum {
		return fmt.Errorf("%s: the coordinator states SHA-256 %s, %d bytes arrived with %s", path, stated, len(b), sum)
	}
	if err := keepDigest(path, b); err != nil {
		return err
	}
	if err := device.WriteAtomic(path, b); err != nil {
		return keepFailed(path, err)
	}
	return nil
}

// keepFailed is the error of a file the device could not write in its
// folder (-dir): full, read-only, gone. Fetching the data again would not
// help, so it wraps errPermanent: the device stops and says so.
func keepFailed(path string, err error) error {
	return fmt.Errorf("keep %s (in the device's folder, -dir): %w: %w", path, err, errPermanent)
}

// keepDigest writes the digest file of b, kept at path.
func keepDigest(path string, b []byte) error {
	if err := device.WriteAtomic(path+".sha256", []byte(strconv.Itoa(len(b))+" "+sha(b)+"\n")); err != nil {
		return keepFailed(path, err)
	}
	return nil
}

// readKept reads a kept file and checks it against its digest file:
// os.ErrNotExist if it is absent, errDamaged if it does not match. A
// file without a digest file (put there by its owner, or kept before
// digests were) is returned with sidecar false, for the caller to check
// as it can.
func readKept(path string) (b []byte, sidecar bool, err error) {
	b, err = os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	want, err := os.ReadFile(path + ".sha256")
	if errors.Is(err, os.ErrNotExist) {
		return b, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	n, sum, ok := bytes.Cut(bytes.TrimSpace(want), []byte(" "))
	switch {
	case !ok:
		return nil, true, fmt.Errorf("%s: %w: its digest file reads %q", path, errDamaged, want)
	case string(n) != strconv.Itoa(len(b)):
		return nil, true, fmt.Errorf("%s: %w: %d bytes, its digest file says %s", path, errDamaged, len(b), n)
	case string(sum) != sha(b):
		return nil, true, fmt.Errorf("%s: %w: SHA-256 %s, its digest file says %s", path, errDamaged, sha(b), sum)
	}
	return b, true, nil
}

// sha is the hex SHA-256 of b.
func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// setAside moves a damaged file (and its digest file) out of the way,
// to PATH.bad-TIME, and says so.
func setAside(path string, why error, log *slog.Logger) error {
	bad := path + ".bad-" + time.Now().UTC().Format("20060102T150405.000000000")
	if err := os.Rename(path, bad); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("set aside %s: %w", path, err)
	}
	if err := os.Remove(path + ".sha256"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("set aside %s: %w", path, err)
	}
	log.Warn("a kept file is damaged: set aside, not trusted", "file", path, "kept_as", bad, "why", why.Error())
	return nil
}

// removeTemps removes the temporary files a device killed while writing
// left in dir (device.WriteAtomic's ".NAME.tmp-*"): never read, only
// in the way.
func removeTemps(dir string, log *slog.Logger) {
	left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	for _, p := range left {
		if err := os.Remove(p); err != nil {
			log.Warn("a temporary file left by a crash", "file", p, "err", err)
		}
	}
}

// checkState checks the state file (device.CheckStateFile). A damaged
// one is never trusted: it is set aside with the demo data kept beside
// it, and the device starts afresh, a new device with a new demo shard
// (the old shard's samples were used under the identity and the privacy
// ledger the file held, so they are not used again). With the owner's
// own rows (-rows) it stops instead and says why: those rows cannot be
// replaced, and training on them again with a fresh ledger would spend
// their privacy a second time unseen.
func checkState(path, dir, rowsFile string, log *slog.Logger) error {
	err := device.CheckStateFile(path)
	if !errors.Is(err, device.ErrBadState) {
		return err
	}
	if rowsFile != "" {
		return fmt.Errorf("%w: this device's privacy ledger and the count of its rows already used are lost; "+
			"training on the same rows (-rows %s) again would spend their privacy a second time, so it stops. "+
			"To start afresh knowingly, move %s away", err, rowsFile, path)
	}
	log.Error("the state file is damaged: the device starts afresh, with new demo data", "err", err)
	for _, p := range []string{path, filepath.Join(dir, "shard.bin"), filepath.Join(dir, "rows.csv")} {
		if _, serr := os.Stat(p); serr != nil {
			continue
		}
		if err := setAside(p, err, log); err != nil {
			return err
		}
	}
	return nil
}
