package pki

import (
	"crypto/ecdsa"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Init writes the service-account pair; a folder without it gets one key
// however many apiservers start on it at once, and keeps it afterwards.
func TestServiceAccountKey(t *testing.T) {
	dir := t.TempDir()
	if err := Init(InitOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	key, err := LoadSigningKey(filepath.Join(dir, ServiceAccountKey))
	if err != nil {
		t.Fatal(err)
	}
	pubs, err := LoadPublicKeys(filepath.Join(dir, ServiceAccountPubKey))
	if err != nil || len(pubs) != 1 || !key.Public().(*ecdsa.PublicKey).Equal(pubs[0]) {
		t.Fatalf("sa.pub: %v %v", pubs, err)
	}

	old := t.TempDir() // a bundle made before the key existed
	var wg sync.WaitGroup
	paths := make([]string, 8)
	errs := make([]error, 8)
	for i := range paths {
		wg.Add(1)
		go func() { defer wg.Done(); paths[i], errs[i] = EnsureServiceAccountKey(old) }()
	}
	wg.Wait()
	first, err := os.ReadFile(filepath.Join(old, ServiceAccountKey))
	if err != nil {
		t.Fatal(err)
	}
	for i := range paths {
		if errs[i] != nil || paths[i] != filepath.Join(old, ServiceAccountKey) {
			t.Fatalf("EnsureServiceAccountKey %d: %q %v", i, paths[i], errs[i])
		}
	}
	if _, err := EnsureServiceAccountKey(old); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(old, ServiceAccountKey))
	if string(again) != string(first) {
		t.Error("the key changed on a later start")
	}
	if fi, _ := os.Stat(filepath.Join(old, ServiceAccountKey)); fi.Mode().Perm() != 0o600 {
		t.Errorf("sa.key mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := LoadPublicKeys(filepath.Join(old, ServiceAccountKey)); err != nil {
		t.Errorf("a private key file as --service-account-key-file: %v", err)
	}
}
