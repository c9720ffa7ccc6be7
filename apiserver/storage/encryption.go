package storage

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Encryption encrypts values of some kinds at rest with AES-GCM, so a
// reader of etcd (etcdctl get) sees ciphertext, and binds each ciphertext
// to its storage key: the GCM additional data is the full etcd key
// (/registry/secrets/<namespace>/<name>), so a value copied or moved to
// another key in etcd fails to decrypt instead of appearing under another
// name or namespace.
//
// Stored values are "tugboat:enc:aesgcm:v2:<key name>:" + nonce +
// ciphertext. Values written before the binding ("…:v1:…", additional data
// the word "secrets") are still read, and are rewritten in the v2 form by
// Reencrypt — as are values under a key other than the first and values
// written before encryption was turned on. The first key encrypts; every
// key decrypts. To rotate: put the new key first, restart the apiserver
// (at start it re-encrypts everything with the new key and logs how many
// values it rewrote), then drop the old key and restart again.
type Encryption struct {
	kinds map[string]bool // plural names, e.g. "secrets"
	keys  []namedKey
}

type namedKey struct {
	name string
	aead cipher.AEAD
}

const (
	encPrefix = "tugboat:enc:aesgcm:v2:"
	// legacyPrefix marks values whose additional data is only the plural
	// name: readable, rewritten by Reencrypt.
	legacyPrefix = "tugboat:enc:aesgcm:v1:"
)

// LoadEncryption reads a key file: one key per line, "name:base64-of-32-bytes";
// blank lines and lines starting with # are skipped. The first key encrypts.
func LoadEncryption(path string, kinds ...string) (*Encryption, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--encryption-key-file: %w", err)
	}
	e := &Encryption{kinds: map[string]bool{}}
	for _, k := range kinds {
		e.kinds[k] = true
	}
	seen := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, b64, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, ": ") {
			return nil, fmt.Errorf("--encryption-key-file %s line %d: want name:base64-key", path, i+1)
		}
		if seen[name] {
			return nil, fmt.Errorf("--encryption-key-file %s line %d: key name %q appears twice", path, i+1, name)
		}
		seen[name] = true
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("--encryption-key-file %s line %d: key %q must be 32 bytes, base64 (head -c 32 /dev/urandom | base64)", path, i+1, name)
		}
		block, _ := aes.NewCipher(raw)
		aead, _ := cipher.NewGCM(block)
		e.keys = append(e.keys, namedKey{name: name, aead: aead})
	}
	if len(e.keys) == 0 {
		return nil, fmt.Errorf("--encryption-key-file %s: no keys", path)
	}
	return e, nil
}

// WriteKey is the name of the key that encrypts ("" without encryption).
func (e *Encryption) WriteKey() string {
	if e == nil {
		return ""
	}
	return e.keys[0].name
}

func (e *Encryption) applies(plural string) bool { return e != nil && e.kinds[plural] }

// encrypt seals plain for the etcd key it is stored at.
func (e *Encryption) encrypt(plural string, key []byte, plain []byte) ([]byte, error) {
	if !e.applies(plural) {
		return plain, nil
	}
	k := e.keys[0]
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := []byte(encPrefix + k.name + ":")
	out = append(out, nonce...)
	return k.aead.Seal(out, nonce, plain, key), nil
}

// decrypt opens a value read at key. stale says the value is not in the
// form encrypt writes today (plaintext of an encrypted kind, the v1 form,
// or a key other than the first): Reencrypt rewrites such values.
func (e *Encryption) decrypt(plural string, key, stored []byte) (plain []byte, stale bool, err error) {
	aad, prefix := key, encPrefix
	switch {
	case bytes.HasPrefix(stored, []byte(encPrefix)):
	case bytes.HasPrefix(stored, []byte(legacyPrefix)):
		aad, prefix, stale = []byte(plural), legacyPrefix, true
	default:
		return stored, e.applies(plural), nil // written before encryption was turned on
	}
	if e == nil {
		return nil, false, fmt.Errorf("%s: value is encrypted but the apiserver has no --encryption-key-file", key)
	}
	rest := stored[len(prefix):]
	i := bytes.IndexByte(rest, ':')
	if i < 0 {
		return nil, false, fmt.Errorf("%s: malformed encryption header", key)
	}
	name, body := string(rest[:i]), rest[i+1:]
	for n, k := range e.keys {
		if k.name != name {
			continue
		}
		ns := k.aead.NonceSize()
		if len(body) < ns {
			return nil, false, fmt.Errorf("%s: encrypted value is truncated", key)
		}
		plain, err := k.aead.Open(nil, body[:ns], body[ns:], aad)
		if err != nil {
			if prefix == legacyPrefix {
				return nil, false, fmt.Errorf("%s: cannot decrypt with key %q: the value is corrupt", key, name)
			}
			return nil, false, fmt.Errorf("%s: cannot decrypt with key %q: the value was not encrypted for this storage key (copied or moved in etcd?) or is corrupt", key, name)
		}
		return plain, stale || n > 0 || !e.applies(plural), nil
	}
	return nil, false, fmt.Errorf("%s: value is encrypted with key %q, which is not in --encryption-key-file", key, name)
}

// ReencryptResult counts what Reencrypt did.
type ReencryptResult struct {
	// Rewritten values are now encrypted with the first key in the v2 form.
	Rewritten int
	// Conflicts were written by someone else meanwhile (so already current).
	Conflicts int
	// Failed could not be decrypted; FailedKeys names up to ten of them.
	Failed     int
	FailedKeys []string
}

// Reencrypt rewrites every stored value of the encrypted kinds that is not
// in the form written today: plaintext, the v1 form, or another key than
// the first. Each rewrite is a compare-and-swap on the value's mod revision
// that keeps its lease, so a concurrent update is never overwritten.
func (s *Store) Reencrypt(ctx context.Context) (ReencryptResult, error) {
	var res ReencryptResult
	if s.enc == nil {
		return res, nil
	}
	for plural := range s.enc.kinds {
		prefix := Prefix + plural + "/"
		end := clientv3.GetPrefixRangeEnd(prefix)
		for start := prefix; ; {
			resp, err := s.cli.Get(ctx, start, clientv3.WithRange(end), clientv3.WithLimit(listChunk))
			if err != nil {
				return res, unavailable(err)
			}
			for _, kv := range resp.Kvs {
				plain, stale, err := s.enc.decrypt(plural, kv.Key, kv.Value)
				if err != nil {
					res.Failed++
					if len(res.FailedKeys) < 10 {
						res.FailedKeys = append(res.FailedKeys, string(kv.Key))
					}
					continue
				}
				if !stale {
					continue
				}
				val, err := s.enc.encrypt(plural, kv.Key, plain)
				if err != nil {
					return res, err
				}
				txn, err := s.cli.Txn(ctx).
					If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
					Then(clientv3.OpPut(string(kv.Key), string(val), clientv3.WithIgnoreLease())).
					Commit()
				if err != nil {
					return res, unavailable(err)
				}
				if txn.Succeeded {
					res.Rewritten++
				} else {
					res.Conflicts++
				}
			}
			if !resp.More || len(resp.Kvs) == 0 {
				break
			}
			start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
	return res, nil
}
