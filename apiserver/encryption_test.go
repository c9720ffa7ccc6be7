package apiserver_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/apiserver/storage"
)

const (
	testKey1 = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // "0123456789abcdef0123456789abcdef"
	testKey2 = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="
)

// withKeys encrypts Secrets with a key file of these lines.
func withKeys(t *testing.T, lines ...string) apiservertest.Option {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	enc, err := storage.LoadEncryption(path, "secrets")
	if err != nil {
		t.Fatal(err)
	}
	return func(c *apiserver.Config) { c.Encryption = enc }
}

// onDataDir reuses another server's embedded etcd data.
func onDataDir(dir string) apiservertest.Option {
	return func(c *apiserver.Config) { c.DataDir = dir }
}

// TestSecretCiphertextBoundToKey copies a Secret's stored value to other
// keys in etcd, as someone with write access to etcd (or to a backup)
// might: it must not decrypt there, and the error must say why.
func TestSecretCiphertextBoundToKey(t *testing.T) {
	s := apiservertest.StartSecure(t, withKeys(t, "k1:"+testKey1))
	ctx := ctxT(t)
	secrets := client.For[*v1.Secret](s.Client)
	if _, err := secrets.Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "hunter2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.Namespace](s.Client).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	etcd := s.Etcd()
	raw, err := etcd.Get(ctx, "/registry/secrets/default/db")
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw get: %v", err)
	}
	if !bytes.HasPrefix(raw.Kvs[0].Value, []byte("tugboat:enc:aesgcm:v2:k1:")) {
		t.Errorf("stored value: %.40q", raw.Kvs[0].Value)
	}
	for _, to := range []struct{ ns, name string }{{"default", "copy"}, {"other", "db"}} {
		if _, err := etcd.Put(ctx, "/registry/secrets/"+to.ns+"/"+to.name, string(raw.Kvs[0].Value)); err != nil {
			t.Fatal(err)
		}
		got, err := secrets.Get(ctx, to.ns, to.name)
		if err == nil {
			t.Fatalf("secret copied to %s/%s decrypts: %v", to.ns, to.name, got.Data)
		}
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "not encrypted for this storage key") ||
			!strings.Contains(err.Error(), "/registry/secrets/"+to.ns+"/"+to.name) {
			t.Fatalf("copy at %s/%s: want Internal naming the key and the cause, got %v", to.ns, to.name, err)
		}
	}
	if got, err := secrets.Get(ctx, "default", "db"); err != nil || string(got.Data["password"]) != "hunter2" {
		t.Fatalf("original: %v %v", err, got)
	}
}

// TestSecretsReencryptedAtStart stores values as earlier versions did —
// plaintext (before encryption was on) and the v1 form whose additional
// data is only "secrets" — reads them, restarts, and finds them rewritten
// in the bound form; then a key rotation rewrites everything with the new
// key, and the old key can be dropped.
func TestSecretsReencryptedAtStart(t *testing.T) {
	s := apiservertest.StartSecure(t, withKeys(t, "k1:"+testKey1))
	ctx := ctxT(t)
	etcd := s.Etcd()
	secret := func(name, pw string) []byte {
		b, err := proto.Marshal(&v1.Secret{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default", Uid: "uid-" + name}, Data: map[string][]byte{"password": []byte(pw)}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := etcd.Put(ctx, "/registry/secrets/default/legacy", string(legacySeal(t, testKey1, "k1", secret("legacy", "old-form")))); err != nil {
		t.Fatal(err)
	}
	if _, err := etcd.Put(ctx, "/registry/secrets/default/plain", string(secret("plain", "not-encrypted"))); err != nil {
		t.Fatal(err)
	}
	secrets := client.For[*v1.Secret](s.Client)
	want := map[string]string{"legacy": "old-form", "plain": "not-encrypted"}
	check := func(c *client.Client) {
		t.Helper()
		for name, pw := range want {
			got, err := client.For[*v1.Secret](c).Get(ctx, "default", name)
			if err != nil || string(got.Data["password"]) != pw {
				t.Fatalf("secret %s: %v %v", name, err, got)
			}
		}
	}
	check(s.Client)
	if _, err := secrets.Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Name: "current"}, StringData: map[string]string{"password": "new-form"}}); err != nil {
		t.Fatal(err)
	}
	want["current"] = "new-form"
	waitStored := func(prefix string) {
		t.Helper()
		wait.Eventually(t, 30*time.Second, "every Secret stored as "+prefix, func() error {
			resp, err := etcd.Get(ctx, "/registry/secrets/default/", clientv3.WithPrefix())
			if err != nil {
				return err
			}
			var off []string
			for _, kv := range resp.Kvs {
				if !bytes.HasPrefix(kv.Value, []byte(prefix)) {
					off = append(off, string(kv.Key))
				}
			}
			if len(off) > 0 || len(resp.Kvs) != len(want) {
				return fmt.Errorf("%d values, not in that form: %v", len(resp.Kvs), off)
			}
			return nil
		})
	}
	// A restart re-encrypts the old forms with the bound one.
	dir := s.Config().DataDir
	s.Stop()
	s = apiservertest.StartSecure(t, withKeys(t, "k1:"+testKey1), onDataDir(dir))
	etcd = s.Etcd()
	waitStored("tugboat:enc:aesgcm:v2:k1:")
	check(s.Client)

	// Rotation: the new key first, restart; everything moves to k2 ...
	s.Stop()
	s = apiservertest.StartSecure(t, withKeys(t, "k2:"+testKey2, "k1:"+testKey1), onDataDir(dir))
	etcd = s.Etcd()
	waitStored("tugboat:enc:aesgcm:v2:k2:")
	check(s.Client)
	// ... and the old key can go.
	s.Stop()
	s = apiservertest.StartSecure(t, withKeys(t, "k2:"+testKey2), onDataDir(dir))
	check(s.Client)
}

// legacySeal encrypts plain as apiservers before the key binding did:
// prefix v1, additional data "secrets".
func legacySeal(t *testing.T, keyB64, name string, plain []byte) []byte {
	t.Helper()
	raw, _ := base64.StdEncoding.DecodeString(keyB64)
	block, err := aes.NewCipher(raw)
	if err != nil {
		t.Fatal(err)
	}
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := append([]byte("tugboat:enc:aesgcm:v1:"+name+":"), nonce...)
	return aead.Seal(out, nonce, plain, []byte("secrets"))
}
